"""The Python client's scheduling API (PROTOCOL.md §6a), the parts that need no scheduling server:
the frames make/reset/group/hello put on the wire (checked against protocol/schema), the routing of
queued/admitted events to the request they name, hostile values, and sandgym.rollouts' opt-in rerun of
episodes that failed for the infrastructure (§11a), against the real server (a fixture env whose reset
fails with SANDBOX_ERROR; shell-v0 under Docker with its container killed from outside mid-episode).
The scheduling server itself is exercised in test_sched_server.py."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

import sandgym
from _server import REPO
from sandgym import _core
from sandgym._base import ConnectOptions
from sandgym._core import ProtocolCore, QueueProgress, Resolved, Scheduling, ServerEvent
from sandgym.rollouts import RETRY_CODES, Failure, rollout_episode, rollout_group


def _request_validator() -> Draft202012Validator:
    resources = []
    for path in sorted((REPO / "protocol" / "schema").glob("*.json")):
        doc = json.loads(path.read_text("utf-8"))
        resources.append((doc["$id"], Resource.from_contents(doc)))
    registry: Registry = Registry().with_resources(resources)
    return Draft202012Validator(
        {"$ref": f"https://sandgym.dev/protocol/v{_core.PROTOCOL_VERSION}/request.json"}, registry=registry
    )


REQUEST = _request_validator()


def _frame(op: _core.Op) -> dict[str, Any]:
    core: ProtocolCore[str] = ProtocolCore()
    _rid, data = core.request(op.type, op.params, "t")
    frame = json.loads(data)
    assert isinstance(frame, dict)
    return frame


# ------------------------------------------------------------------------------ frames


def test_scheduling_fields_on_make_reset_group_and_hello_are_schema_valid() -> None:
    s = Scheduling(priority="eval", queue_timeout_ms=30_000, preemptible=True)
    frames = [
        _frame(_core.make_op("shell-v0", {"shaping": "none"}, s)),
        _frame(_core.reset_op("s-1", 3, {"task_id": "create-file"}, Scheduling(priority="train"))),
        _frame(_core.group_op("shell-v0", 8, {}, s)),
        _frame(_core.hello_op(client_name="t", client_version="1", token=None, client_group="trainer-a")),
    ]
    for f in frames:
        assert REQUEST.is_valid(f), (f, [e.message for e in REQUEST.iter_errors(f)])
    make, reset, group, hello = frames
    assert (make["priority"], make["queue_timeout_ms"], make["preemptible"]) == ("eval", 30_000, True)
    assert make["kwargs"] == {"shaping": "none"}
    assert reset["priority"] == "train" and "queue_timeout_ms" not in reset and "preemptible" not in reset
    assert (group["type"], group["size"], group["env_id"]) == ("group", 8, "shell-v0") and "kwargs" not in group
    assert hello["client_group"] == "trainer-a"


def test_unset_scheduling_sends_nothing_new() -> None:
    assert _frame(_core.make_op("math-v0", {})) == {"id": 1, "type": "make", "env_id": "math-v0"}
    assert _frame(_core.reset_op("s", None, None, Scheduling())) == {"id": 1, "type": "reset", "session": "s"}
    assert "client_group" not in _frame(_core.hello_op(client_name="t", client_version="1", token=None))


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        ({"priority": ""}, TypeError),
        ({"priority": 3}, TypeError),
        ({"queue_timeout_ms": -1}, ValueError),
        ({"queue_timeout_ms": 1.5}, TypeError),
        ({"queue_timeout_ms": True}, TypeError),
        ({"queue_timeout_ms": "100"}, TypeError),
        ({"preemptible": "yes"}, TypeError),
        ({"preemptible": 1}, TypeError),
    ],
)
def test_hostile_scheduling_values_are_refused_before_anything_is_sent(
    kwargs: dict[str, Any], exc: type[Exception]
) -> None:
    with pytest.raises(exc):
        Scheduling(**kwargs)


@pytest.mark.parametrize(
    "size,exc", [(0, ValueError), (-3, ValueError), (True, TypeError), (2.0, TypeError), ("8", TypeError)]
)
def test_hostile_group_sizes_are_refused(size: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        _core.group_op("shell-v0", size, {})


def test_scheduling_must_be_a_scheduling() -> None:
    with pytest.raises(TypeError):
        _core.make_op("shell-v0", {}, {"priority": "eval"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ConnectOptions(scheduling="eval")  # type: ignore[arg-type]
    for bad in ("", 7):
        with pytest.raises(TypeError):
            ConnectOptions(client_group=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "result",
    [
        {},
        {"group": 1, "sessions": ["a"]},
        {"group": "g", "sessions": []},
        {"group": "g", "sessions": [1]},
        {"group": "g", "sessions": "a"},
        [],
        "x",
    ],
)
def test_malformed_group_results_are_typed_errors(result: Any) -> None:
    op = _core.group_op("shell-v0", 2, {})
    with pytest.raises(sandgym.SandgymError) as ei:
        op.parse(result)
    assert ei.value.code == "INTERNAL"


def test_group_result_parse() -> None:
    op = _core.group_op("shell-v0", 2, {})
    assert op.parse({"group": "g1", "sessions": ["a", "b"], "env_spec": {"id": "shell-v0", "x": 1}}) == (
        "g1",
        ["a", "b"],
        {"id": "shell-v0", "x": 1},
    )
    assert op.parse({"group": "g1", "sessions": ["a"]}) == ("g1", ["a"], {"id": "shell-v0"})


# ------------------------------------------------------------------------------ queued/admitted routing


def _event(core: ProtocolCore[str], event: str, details: Any, session: str | None = None) -> ServerEvent:
    frame: dict[str, Any] = {"type": "event", "event": event, "details": details}
    if session is not None:
        frame["session"] = session
    inc = core.receive(json.dumps(frame))
    assert isinstance(inc, ServerEvent)
    return inc


def test_queue_events_reach_the_callback_of_the_request_they_name_until_its_reply() -> None:
    core: ProtocolCore[str] = ProtocolCore()
    seen: list[QueueProgress] = []
    other: list[QueueProgress] = []
    rid, _ = core.request("make", {"env_id": "shell-v0"}, "a", seen.append)
    rid2, _ = core.request("reset", {"session": "s"}, "b", other.append)
    rid3, _ = core.request("reset", {"session": "t"}, "c")  # no callback
    ev = _event(
        core, "queued", {"request": rid, "position": 3, "units_ahead": 5, "estimated_wait_ms": None, "priority": "eval"}
    )
    hit = core.progress(ev)
    assert hit is not None
    hit[0](hit[1])
    assert seen == [QueueProgress("queued", rid, None, 3, 5, None, "eval", None)]
    assert (
        core.progress(
            _event(core, "queued", {"request": rid3, "position": 0, "units_ahead": 0, "estimated_wait_ms": 0})
        )
        is None
    )
    hit = core.progress(_event(core, "admitted", {"request": rid, "waited_ms": 1200}))
    assert hit is not None and hit[1].event == "admitted" and hit[1].waited_ms == 1200
    hit[0](hit[1])
    assert [p.event for p in seen] == ["queued", "admitted"] and other == []
    # The reply ends the routing: a late event for the id goes nowhere.
    assert isinstance(core.receive(json.dumps({"id": rid, "type": "result", "result": {"session": "s1"}})), Resolved)
    assert core.progress(_event(core, "admitted", {"request": rid, "waited_ms": 1})) is None
    # A batch item's event names the batch's id and the session.
    hit = core.progress(
        _event(core, "queued", {"request": rid2, "position": 1, "units_ahead": 1, "estimated_wait_ms": 10}, "s")
    )
    assert hit is not None and hit[1].session == "s" and hit[1].estimated_wait_ms == 10


@pytest.mark.parametrize(
    "details",
    [
        {},
        {"request": "1"},
        {"request": 1.0},
        {"request": None},
        {"request": True},
        {"request": 99},
    ],
)
def test_queue_events_naming_no_pending_request_are_ignored(details: dict[str, Any]) -> None:
    core: ProtocolCore[str] = ProtocolCore()
    core.request("make", {"env_id": "x"}, "a", lambda p: None)
    assert core.progress(_event(core, "queued", details)) is None


def test_hostile_queue_event_fields_become_none_not_crashes() -> None:
    core: ProtocolCore[str] = ProtocolCore()
    rid, _ = core.request("make", {"env_id": "x"}, "a", lambda p: None)
    hit = core.progress(
        _event(
            core,
            "queued",
            {"request": rid, "position": "1", "units_ahead": -0.5, "estimated_wait_ms": [1], "priority": {"x": 1}},
        )
    )
    assert hit is not None
    assert (hit[1].position, hit[1].units_ahead, hit[1].estimated_wait_ms, hit[1].priority) == (None, None, None, None)


def test_callbacks_are_dropped_when_a_request_is_abandoned_cancelled_or_the_connection_is_lost() -> None:
    core: ProtocolCore[str] = ProtocolCore()
    r1, _ = core.request("make", {"env_id": "x"}, "a", lambda p: None)
    r2, _ = core.request("make", {"env_id": "x"}, "b", lambda p: None)
    r3, _ = core.request("make", {"env_id": "x"}, "c", lambda p: None)
    core.abandon(r1)
    core.cancel(r2)
    for r in (r1, r2):
        assert core.progress(_event(core, "queued", {"request": r})) is None
    core.connection_lost(sandgym.ConnectionClosedError("gone"))
    assert core.progress(ServerEvent("queued", None, {"request": r3})) is None


# ------------------------------------------------------------------------------ rollouts: reruns


@pytest.mark.parametrize(
    "code,infra",
    [
        *[(c, True) for c in sorted(RETRY_CODES)],
        ("ENV_ERROR", False),
        ("INVALID_ARGUMENT", False),
        ("INVALID_ACTION", False),
        ("UNSUPPORTED", False),
        ("RESET_NEEDED", False),
        ("UNKNOWN_ENV", False),
    ],
)
def test_infrastructure_failures_follow_the_outcome_taxonomy(code: str, infra: bool) -> None:
    cls = sandgym.ERROR_CLASSES.get(code, sandgym.SandgymError)
    f = Failure.from_error(cls("x", code=code))
    assert f.infrastructure is infra
    # The §11a codes: PREEMPTED is one of them, ENV_ERROR never.
    assert "PREEMPTED" in RETRY_CODES and "ENV_ERROR" not in RETRY_CODES


def test_connection_and_policy_failures() -> None:
    assert Failure.from_error(sandgym.ConnectionClosedError("gone")).infrastructure
    assert Failure.from_error(sandgym.RequestTimeoutError("slow")).infrastructure
    assert not Failure.from_error(ValueError("the policy's own bug")).infrastructure
    f = Failure.from_error(sandgym.CapacityError("full", code="CAPACITY", details={"retry_after_ms": 250}))
    assert f.retry_after == 0.25 and f.infrastructure


async def test_an_infrastructure_failure_is_rerun_up_to_the_budget_and_no_further(servers: Any) -> None:
    """A real CAPACITY refusal (a server of max_sessions 1 whose one session is held): rerun up to the
    budget, each time from a new make; once the capacity frees, the rerun runs and is scored."""
    url = servers.get({"max_sessions": 1}).url
    async with await sandgym.AsyncClient.connect(url) as client:
        holder = await client.make("wordle-v0")
        made = 0

        async def make() -> sandgym.AsyncEnv:
            nonlocal made
            made += 1
            return await client.make("wordle-v0")

        def crane(m: Any, t: Any, c: Any) -> str:
            return "crane"

        ep = await rollout_episode(make, crane, options={"word": "crane"}, rerun_infra_failures=2)
        assert made == 3 and ep.attempts == 3
        assert ep.failure is not None and ep.failure.code == "CAPACITY" and ep.return_ is None
        assert [f.code for f in ep.rerun_failures] == ["CAPACITY", "CAPACITY"]
        assert ep.to_dict()["rerun_failures"][0]["code"] == "CAPACITY"
        # Off by default: one attempt, the failure reported once.
        made = 0
        ep = await rollout_episode(make, crane, options={"word": "crane"})
        assert made == 1 and ep.attempts == 1 and ep.rerun_failures == []

        async def make_then_free() -> sandgym.AsyncEnv:
            try:
                return await client.make("wordle-v0")
            except sandgym.CapacityError:
                await holder.close()  # the capacity frees: the rerun gets a session
                raise

        ep = await rollout_episode(make_then_free, crane, options={"word": "crane"}, rerun_infra_failures=1)
        assert ep.attempts == 2 and [f.code for f in ep.rerun_failures] == ["CAPACITY"]
        assert ep.ok and ep.return_ is not None and ep.return_ > 0 and ep.terminated
        assert client.open_sessions == 0


async def test_a_request_error_or_a_low_reward_is_never_rerun(url: str) -> None:
    async with await sandgym.AsyncClient.connect(url) as client:
        bad = await rollout_group(
            client,
            "wordle-v0",
            lambda m, t, c: "crane",
            options={"word": "zzzzz"},
            group_size=2,
            rerun_infra_failures=5,
        )
        assert [e.attempts for e in bad.episodes] == [1, 1]
        assert all(e.failure is not None and not e.failure.infrastructure for e in bad.episodes)
        # A wrong answer is a result (reward 0), not a failure: never run again.
        low = await rollout_group(
            client,
            "wordle-v0",
            lambda m, t, c: "slate",
            options={"word": "crane"},
            group_size=2,
            max_turns=2,
            rerun_infra_failures=5,
        )
        assert all(e.ok and e.attempts == 1 for e in low.episodes)
        assert low.returns == [low.returns[0]] * 2


@pytest.mark.parametrize("bad", [-1, True, 1.5, "2"])
async def test_hostile_rerun_budgets_are_refused(url: str, bad: Any) -> None:
    async with await sandgym.AsyncClient.connect(url) as client:
        with pytest.raises(ValueError):
            await rollout_group(
                client,
                "wordle-v0",
                lambda m, t, c: "crane",
                options={"word": "crane"},
                group_size=1,
                rerun_infra_failures=bad,
            )
        with pytest.raises(TypeError):
            await rollout_group(
                client, "wordle-v0", lambda m, t, c: "crane", group_size=1, scheduling={"priority": "eval"}
            )  # type: ignore[arg-type]


async def test_a_sandbox_killed_mid_episode_is_rerun_and_the_rerun_is_graded(docker_url: str) -> None:
    """The real fault: the episode's container is killed from outside (as a daemon or node failure would)
    while the policy thinks; the server closes the session (session_closed, SANDBOX_ERROR), the rollout
    classifies the episode by that cause, runs it again from a new session, and that run is graded."""
    sandboxes: list[str] = []
    killed: list[str] = []

    def policy(messages: list[dict[str, Any]], tools: Any, ctx: Any) -> dict[str, Any]:
        if ctx.turn == 0:
            return _tool_call("bash", {"command": "echo 'hello world' > hello.txt"})
        if ctx.turn == 1 and not killed:
            subprocess.run(["docker", "kill", sandboxes[-1]], capture_output=True, check=True, timeout=60)
            killed.append(sandboxes[-1])
            return _tool_call("bash", {"command": "cat hello.txt"})
        return _tool_call("submit", {})

    async with await sandgym.AsyncClient.connect(docker_url) as client:

        async def make() -> sandgym.AsyncEnv:
            env = await client.make("shell-v0")
            real_reset = env.reset

            async def reset(**kw: Any) -> tuple[Any, dict[str, Any]]:
                obs, info = await real_reset(**kw)
                sandboxes.append(str(info["sandbox"]))  # the container's name
                return obs, info

            env.reset = reset  # type: ignore[method-assign]
            return env

        ep = await rollout_episode(
            make, policy, seed=1, options={"task_id": "create-file"}, rerun_infra_failures=2, max_turns=6
        )
        assert len(killed) == 1 and len(sandboxes) == 2 and sandboxes[0] != sandboxes[1]
        assert ep.attempts == 2 and [f.code for f in ep.rerun_failures] == ["SANDBOX_ERROR"], ep.rerun_failures
        assert ep.ok and ep.return_ == 1.0 and ep.terminated


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c-{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }
