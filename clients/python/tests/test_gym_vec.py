"""Gymnasium's vector API over sandgym (issue #16 item 5), against the real server.

* the text spaces are honest: the declared charset (every code point) is what ``contains`` accepts,
  and gymnasium's ``flatten``, batching and ``AsyncVectorEnv`` shared memory work with it;
* gymnasium's own ``SyncVectorEnv`` and ``AsyncVectorEnv`` run over ``sandgym.gym.make`` with
  default arguments, for every shipped env the adapter supports without a sandbox (math, wordle,
  calculator-tools) and the fixtures with other space types;
* ``sandgym.gym.make_vec`` returns what ``SyncVectorEnv`` over ``make`` returns for the same seeds
  and actions, in every autoreset mode (gymnasium's own autoreset tests, transcribed to the counter
  fixture), with ``final_obs`` / ``final_info``; one frame per step;
* error paths: a sub-env's error, a server killed mid-step, bad arguments: typed errors, no hang.

shell-v0 and code-v0 (same adapter code paths: text observations, tool-call actions) need a sandbox;
``test_gym_vec_sandbox.py`` runs them under Docker.
"""

from __future__ import annotations

import copy
import pickle
import threading
import warnings
from functools import partial
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError
from gymnasium.spaces import Dict as DictSpace, Text
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.vector.utils import (
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    iterate,
    read_from_shared_memory,
    write_to_shared_memory,
)
from gymnasium.wrappers import FlattenObservation, vector as vector_wrappers
from hypothesis import given, settings, strategies as st

import sandgym
import sandgym.gym
from _server import wait_until
from sandgym import errors
from sandgym.spaces import UNICODE_SIZE, CharsetText, UnicodeText

#: a valid action per env (sampled actions may be semantically invalid for tool envs)
ACTIONS: dict[str, Any] = {
    "math-v0": "42",
    "wordle-v0": "crane",
    "calculator-tools-v0": {"name": "calculate", "arguments": {"expression": "6*7"}},
    "test/dict-v0": {"move": np.array([0.25, -0.5]), "say": "hi\nthere"},
    "test/counter-v0": 1,
    "test/tools-v0": {"name": "add", "arguments": {"a": 40, "b": 2}},
}
SHIPPED = ["math-v0", "wordle-v0", "calculator-tools-v0"]
VECTORISERS = {"Sync": SyncVectorEnv, "Async": AsyncVectorEnv}

STRINGS = [
    "",
    "a",
    "line one\nline two\ttab",
    "héllo wörld ✓ 🎉",
    "\x00\x7f\x80",
    "\ud800 lone surrogate",
    "\U0010ffff",
]


# ---------------------------------------------------------------------------------------------- spaces


def test_unicode_text_declares_every_code_point_and_contains_agrees() -> None:
    sp = UnicodeText(64, min_length=0)
    cs = sp.character_set
    assert len(cs) == UNICODE_SIZE == 0x110000 and len(sp.character_list) == UNICODE_SIZE
    for s in STRINGS:
        assert sp.contains(s) and all(c in cs for c in s)
        assert all(sp.character_list[int(sp.character_index(c))] == c for c in s)
    assert "\n" in cs and "ab" not in cs and 10 not in cs
    assert not sp.contains("x" * 65) and not sp.contains(b"abc") and not sp.contains(None)
    assert not UnicodeText(5, min_length=2).contains("a")
    assert sp.characters[:3] == "\x00\x01\x02" and len(sp.characters) == UNICODE_SIZE
    # it is a Text, equal to itself across copies and pickles, not to a narrower Text
    assert isinstance(sp, Text) and sp == copy.deepcopy(sp) == pickle.loads(pickle.dumps(sp))
    assert sp != UnicodeText(63) and sp != Text(64)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40))
def test_unicode_text_flatten_round_trips_any_string(s: str) -> None:
    sp = UnicodeText(40)
    assert sp.contains(s) == all(c in sp.character_set for c in s)
    flat = flatten(sp, s)
    # the registered fast path equals gymnasium's own Text flatten / unflatten
    np.testing.assert_array_equal(flat, flatten.dispatch(Text)(sp, s))
    assert unflatten(sp, flat) == s == unflatten.dispatch(Text)(sp, flat)
    assert flat in flatten_space(sp)


def test_unicode_text_sample_and_masks() -> None:
    sp = UnicodeText(12, min_length=1, seed=3)
    for _ in range(20):
        assert sp.contains(sp.sample())
    mask = np.zeros(UNICODE_SIZE, dtype=np.int8)
    mask[[ord("é"), ord("\n")]] = 1
    s = sp.sample(mask=(5, mask))
    assert len(s) == 5 and set(s) <= {"é", "\n"}
    prob = np.zeros(UNICODE_SIZE, dtype=np.float64)
    prob[ord("🎉")] = 1.0
    assert sp.sample(probability=(None, prob)).strip("🎉") == ""
    with pytest.raises(AssertionError):  # gymnasium's own mask validation applies
        sp.sample(mask=(5, np.zeros(3, dtype=np.int8)))
    assert UnicodeText(4).sample(mask=(None, np.zeros(UNICODE_SIZE, dtype=np.int8))) == ""


def test_shared_memory_carries_any_text_and_reads_live() -> None:
    # The failure: writing an observation with a newline raised KeyError: '\n'.
    space = DictSpace({"text": UnicodeText(32), "code": CharsetText(8, min_length=0, charset="ab\n")})
    mem = create_shared_memory(space, n=2)
    view = read_from_shared_memory(space, mem, n=2)
    write_to_shared_memory(space, 0, {"text": "héllo\nwörld 🎉", "code": "a\nb"}, mem)
    write_to_shared_memory(space, 1, {"text": "\ud800", "code": ""}, mem)
    snap = copy.deepcopy(view)  # what AsyncVectorEnv returns with copy=True
    assert snap == {"text": ("héllo\nwörld 🎉", "\ud800"), "code": ("a\nb", "")}
    assert type(snap["text"]) is tuple and snap in batch_space(space, 2)
    write_to_shared_memory(space, 0, {"text": "next", "code": "b"}, mem)
    assert view["text"][0] == "next" and snap["text"][0] == "héllo\nwörld 🎉"  # the view is live, the copy is not


# ---------------------------------------------------------------------------------------------- gymnasium's vector envs over make


def _fns(url: str, env_id: str, n: int) -> list[Any]:
    return [partial(sandgym.gym.make, url, env_id) for _ in range(n)]


def _batched_action(envs: VectorEnv, env_id: str) -> Any:
    """ACTIONS[env_id] for every sub-env, batched as gymnasium batches the action space."""
    items = [copy.deepcopy(ACTIONS[env_id]) for _ in range(envs.num_envs)]
    return concatenate(envs.single_action_space, items, create_empty_array(envs.single_action_space, envs.num_envs))


@pytest.mark.parametrize("env_id", [*SHIPPED, "test/dict-v0", "test/tools-v0"])
@pytest.mark.parametrize("kind", list(VECTORISERS))
def test_gymnasium_vector_envs_run_with_default_arguments(url: str, env_id: str, kind: str) -> None:
    """Gymnasium's SyncVectorEnv / AsyncVectorEnv (default arguments: shared memory, copy, NEXT_STEP)
    over make(...): the observations are the sessions' real ones (the same as single envs seeded
    alike), in the batched space, through resets and autoresets."""
    n = 2
    singles = [sandgym.gym.make(url, env_id) for _ in range(n)]
    envs = VECTORISERS[kind](_fns(url, env_id, n))
    try:
        obs, _infos = envs.reset(seed=7)
        assert obs in envs.observation_space
        expected = [e.reset(seed=7 + i)[0] for i, e in enumerate(singles)]
        assert data_equivalence(_unbatch(envs, obs), expected)
        done = np.zeros(n, dtype=bool)
        for _ in range(4):
            obs, rew, term, trunc, _infos = envs.step(_batched_action(envs, env_id))
            assert obs in envs.observation_space and rew.dtype == np.float64
            if not done.any():  # until the first autoreset the single envs follow the same path
                steps = [e.step(copy.deepcopy(ACTIONS[env_id])) for e in singles]
                assert data_equivalence(_unbatch(envs, obs), [s[0] for s in steps])
                assert rew.tolist() == [s[1] for s in steps]
            done |= np.logical_or(term, trunc)  # any episode ended: single envs and vector env part ways
    finally:
        envs.close()
        for e in singles:
            e.close()


def _unbatch(envs: VectorEnv, obs: Any) -> list[Any]:
    return list(iterate(envs.observation_space, obs))


@pytest.mark.parametrize("shared_memory", [True, False])
def test_async_vector_env_text_observations_are_not_stale(url: str, shared_memory: bool) -> None:
    """gymnasium's own shared-memory reader for Text decodes once at construction; with the
    registered reader every step's observation is the server's (and without shared memory too)."""
    envs = AsyncVectorEnv(_fns(url, "test/tools-v0", 2), shared_memory=shared_memory)
    try:
        envs.reset(seed=0)
        for k in range(3):
            acts = tuple({"name": "echo", "arguments": {"text": f"step {k}\nenv {i} ✓"}} for i in range(2))
            obs, *_ = envs.step(acts)
            assert all(f"step {k}\nenv {i} ✓" in o for i, o in enumerate(obs)), obs
    finally:
        envs.close()


def test_flatten_wrappers_over_make_and_make_vec(url: str) -> None:
    env = FlattenObservation(sandgym.gym.make(url, "wordle-v0"))
    try:
        obs, _ = env.reset(seed=0)
        assert obs.dtype == np.int32 and obs.shape == (2048,) and obs in env.observation_space
        assert unflatten(env.env.observation_space, obs).startswith("Wordle")
    finally:
        env.close()
    vec = vector_wrappers.RecordEpisodeStatistics(
        vector_wrappers.FlattenObservation(sandgym.gym.make_vec(url, "math-v0", 3))
    )
    try:
        obs, _ = vec.reset(seed=0)
        assert obs.shape == (3, 2048) and obs in vec.observation_space
        obs, _rew, term, _trunc, infos = vec.step(("42",) * 3)
        assert term.all() and infos["_episode"].all() and (infos["episode"]["l"] == 1).all()
    finally:
        vec.close()


# ---------------------------------------------------------------------------------------------- make_vec


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_make_vec_declares_autoreset_mode(url: str, mode: AutoresetMode) -> None:
    for given_mode in (mode, mode.value):
        with sandgym.gym.make_vec(url, "test/counter-v0", 2, autoreset_mode=given_mode) as envs:
            assert isinstance(envs, VectorEnv) and envs.metadata["autoreset_mode"] == mode
            assert envs.num_envs == 2 and envs.single_action_space == gymnasium.spaces.Discrete(2)
    with sandgym.gym.make_vec(url, "test/counter-v0", 1) as envs:
        assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # the default


def _counter_actions(steps: int) -> list[np.ndarray]:
    # sub-env 0 ends every 3 steps, 1 every 6 (half the time action 0), 2 never: different phases
    return [np.array([1, k % 2, 0]) for k in range(steps)]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
@pytest.mark.parametrize("env_id", ["test/counter-v0", "test/truncate-v0"])
def test_make_vec_equals_sync_vector_env(url: str, env_id: str, mode: AutoresetMode) -> None:
    """Same seeds and actions: make_vec and SyncVectorEnv(make) return equal batches (observations,
    rewards, flags, infos with final_obs/final_info and their masks) for 14 steps."""
    vec = sandgym.gym.make_vec(url, env_id, 3, autoreset_mode=mode)
    ref = SyncVectorEnv(_fns(url, env_id, 3), autoreset_mode=mode)
    try:
        assert vec.observation_space == ref.observation_space and vec.action_space == ref.action_space
        assert data_equivalence(vec.reset(seed=1), ref.reset(seed=1))
        ends = 0
        for k, act in enumerate(_counter_actions(14)):
            a, b = vec.step(act), ref.step(act)
            assert data_equivalence(a, b), (k, a, b)
            done = np.logical_or(a[2], a[3])
            ends += int(done.sum())
            if mode == AutoresetMode.DISABLED and done.any():
                assert data_equivalence(
                    vec.reset(options={"reset_mask": done}), ref.reset(options={"reset_mask": done})
                )
        assert ends >= 4  # episodes did end, so the autoreset path was compared
    finally:
        vec.close()
        ref.close()


def test_make_vec_next_step_autoreset_as_gymnasium_defines_it(url: str) -> None:
    """gymnasium's tests/vector/test_autoreset_mode.py::test_autoreset_next_step, on the counter."""
    with sandgym.gym.make_vec(url, "test/counter-v0", 2) as envs:
        obs, info = envs.reset()
        assert obs.tolist() == [0, 0] and info == {}
        expect = [
            ([1, 0], [1, 0], [False, False]),
            ([2, 0], [1, 0], [False, False]),
            ([3, 0], [1, 0], [True, False]),
            ([0, 0], [0, 0], [False, False]),  # the step after the end resets sub-env 0: reward 0
            ([1, 0], [1, 0], [False, False]),
        ]
        for o, r, t in expect:
            obs, rew, term, trunc, info = envs.step(np.array([1, 0]))
            assert (obs.tolist(), rew.tolist(), term.tolist(), trunc.tolist(), info) == (o, r, t, [False, False], {})


def test_make_vec_same_step_final_obs_and_info(url: str) -> None:
    """...::test_autoreset_within_step: the ending step returns the reset observation, the final one
    in infos["final_obs"] (with final_info and the masks)."""
    with sandgym.gym.make_vec(url, "test/counter-v0", 2, autoreset_mode="SameStep") as envs:
        envs.reset()
        envs.step(np.array([1, 0]))
        envs.step(np.array([1, 0]))
        obs, rew, term, _trunc, info = envs.step(np.array([1, 0]))
        assert obs.tolist() == [0, 0] and rew.tolist() == [1, 0] and term.tolist() == [True, False]
        assert info["_final_obs"].tolist() == [True, False] and info["_final_info"].tolist() == [True, False]
        assert info["final_obs"][0] == 3 and info["final_obs"][0] in envs.single_observation_space
        assert info["final_obs"][1] is None
        obs, rew, term, _trunc, info = envs.step(np.array([1, 0]))
        assert obs.tolist() == [1, 0] and term.tolist() == [False, False] and info == {}
    # a text env where every step ends: final_obs is the verdict, obs already the next problem
    with sandgym.gym.make_vec(url, "math-v0", 3, autoreset_mode=AutoresetMode.SAME_STEP) as envs:
        obs0, _ = envs.reset(seed=5)
        obs, _rew, term, _trunc, info = envs.step(("42",) * 3)
        assert term.all() and info["_final_obs"].all()
        assert all(isinstance(f, str) and ("orrect" in f) for f in info["final_obs"]), info["final_obs"]
        assert "reward_components" in info["final_info"] and obs in envs.observation_space and obs != obs0


@pytest.mark.parametrize("env_id", ["wordle-v0", "math-v0", "calculator-tools-v0", "test/dict-v0"])
def test_make_vec_equals_sync_on_shipped_envs(url: str, env_id: str) -> None:
    """Seeded: equal to SyncVectorEnv until the first autoreset (a reset without a seed draws a new
    task on the server, so later episodes differ between any two runs); then still well formed."""
    n = 3
    vec = sandgym.gym.make_vec(url, env_id, n)
    ref = SyncVectorEnv(_fns(url, env_id, n))
    try:
        assert data_equivalence(vec.reset(seed=11), ref.reset(seed=11))
        act = _batched_action(vec, env_id)
        before_reset = True
        for _ in range(8):
            a, b = vec.step(copy.deepcopy(act)), ref.step(copy.deepcopy(act))
            if before_reset:
                assert data_equivalence(a, b)
            assert a[0] in vec.observation_space
            if np.logical_or(a[2], a[3]).any():
                before_reset = False
    finally:
        vec.close()
        ref.close()


def test_make_vec_one_frame_per_step_on_one_connection(url: str) -> None:
    with sandgym.Client(url) as client:
        envs = sandgym.gym.make_vec(client, "wordle-v0", 8)
        assert client.open_sessions == 8
        sent: list[Any] = []
        real_send = client._ws.send
        client._ws.send = lambda data: (sent.append(data), real_send(data))[1]  # count frames, send them
        envs.reset(seed=0)
        envs.step(("crane",) * 8)
        assert len(sent) == 2
        envs.close()
        assert client.open_sessions == 0 and not client.closed  # a passed client stays open
        envs.close()  # idempotent


def test_make_vec_seeds_and_reset_mask(url: str) -> None:
    with sandgym.gym.make_vec(url, "wordle-v0", 3) as envs:
        a, _ = envs.reset(seed=[5, None, 5])
        assert a[0] == a[2]
        b, _ = envs.reset(seed=5)
        assert b[0] == a[0] and b[1] != b[0]
        envs.step(("crane",) * 3)
        obs, info = envs.reset(seed=[None, 6, None], options={"reset_mask": np.array([False, True, False])})
        assert obs[1] == b[1] and "Guesses left: 5" in obs[0] and info["_seed"].tolist() == [False, True, False]


# ---------------------------------------------------------------------------------------------- errors


def test_a_sub_env_error_is_typed_and_loses_nothing(url: str) -> None:
    """test/crash-v0: action 1 throws in the env (ENV_ERROR, the session is failed)."""
    with sandgym.gym.make_vec(url, "test/crash-v0", 3) as envs:
        envs.reset(seed=0)
        with pytest.raises(errors.EnvError) as ei:
            envs.step(np.array([0, 1, 0]))
        assert ei.value.details["env_index"] == 1 and ei.value.scope == "session"
        assert envs.last_errors[1] is ei.value and envs.last_errors[0] is None and envs.last_errors[2] is None
        assert envs.last_result is not None and envs.last_result[0].tolist() == [0, 0, 0]
        with pytest.raises(errors.ResetNeededError) as ri:  # the failed session says so; the others step
            envs.step(np.array([0, 0, 0]))
        assert ri.value.details["env_index"] == 1
        envs.reset(options={"reset_mask": np.array([False, True, False])})
        obs, *_ = envs.step(np.array([0, 0, 0]))
        assert obs.tolist() == [0, 0, 0] and envs.last_errors == [None, None, None]


def test_an_invalid_action_in_one_sub_env(url: str) -> None:
    with sandgym.gym.make_vec(url, "test/counter-v0", 2) as envs:
        envs.reset()
        with pytest.raises(errors.InvalidActionError) as ei:
            envs.step(np.array([1, 5]))
        assert ei.value.details["env_index"] == 1
        assert envs.last_result is not None and envs.last_result[0].tolist() == [1, 0]  # sub-env 0 moved
        obs, *_ = envs.step(np.array([1, 1]))
        assert obs.tolist() == [2, 1]
    # a failed sub-env reports no transition: reward 0 and not done, even right after an episode ended
    with sandgym.gym.make_vec(url, "test/counter-v0", 2, autoreset_mode=AutoresetMode.SAME_STEP) as envs:
        envs.reset()
        for _ in range(3):
            _o, _r, term, _t, _i = envs.step(np.array([1, 1]))
        assert term.tolist() == [True, True]
        with pytest.raises(errors.InvalidActionError):
            envs.step(np.array([5, 1]))
        assert envs.last_result is not None
        obs, rew, term, trunc, _info = envs.last_result
        assert obs.tolist() == [0, 1] and rew.tolist() == [0, 1] and term.tolist() == [False, False] and not trunc.any()


def test_async_vector_env_reraises_the_typed_error(url: str) -> None:
    envs = AsyncVectorEnv(_fns(url, "test/crash-v0", 2))
    try:
        envs.reset(seed=0)
        with pytest.raises(errors.EnvError):
            envs.step(np.array([0, 1]))
    finally:
        envs.close()


def test_server_killed_mid_step_raises_connection_closed(servers: Any) -> None:
    srv = servers.fresh()
    try:
        envs = sandgym.gym.make_vec(srv.url, "test/slow-v0", 2, delay_ms=20_000)
        envs.reset()
        outcome: list[BaseException | None] = []

        def run() -> None:
            try:
                envs.step(np.array([0, 0]))
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - recorded for the assertion below
                outcome.append(exc)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        assert wait_until(lambda: envs.client.pending == 1, timeout=30)  # the step frame is out
        srv.kill()
        t.join(60)
        assert not t.is_alive(), "step hung after the server died"
        assert isinstance(outcome[0], errors.ConnectionClosedError), outcome
        with pytest.raises(errors.ConnectionClosedError):  # and again, at once
            envs.step(np.array([0, 0]))
        envs.close()  # no error, no hang
    finally:
        srv.stop()


def test_bad_arguments_get_typed_errors(url: str, servers: Any) -> None:
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match="num_envs"):
            sandgym.gym.make_vec(url, "test/counter-v0", bad)  # type: ignore[arg-type]
    with pytest.raises(errors.UnknownEnvError):
        sandgym.gym.make_vec(url, "no-such-env-v0", 2)
    with pytest.raises(ValueError):
        sandgym.gym.make_vec(url, "test/counter-v0", 2, autoreset_mode="Sometimes")
    with pytest.raises(errors.InvalidArgumentError):  # bad env kwargs reach the server's schema
        sandgym.gym.make_vec(url, "test/slow-v0", 2, delay_ms=-5)
    envs = sandgym.gym.make_vec(url, "test/counter-v0", 2)
    try:
        with pytest.raises(ValueError, match="length"):
            envs.reset(seed=[1, 2, 3])
        with pytest.raises(TypeError):
            envs.reset(options={"reset_mask": [True, False]})
        with pytest.raises(ValueError):
            envs.reset(options={"reset_mask": np.array([False, False])})
        with pytest.raises(TypeError):
            envs.reset(options={"reset_mask": np.array([1, 0])})
        envs.reset()
        with pytest.raises(ValueError, match="actions"):
            envs.step(np.array([1, 1, 1]))
        with pytest.raises(TypeError):  # a seed that is not an int is refused before sending
            envs.reset(seed=["x", 1])  # type: ignore[list-item]
    finally:
        envs.close()
    with pytest.raises(ClosedEnvironmentError):
        envs.step(np.array([1, 1]))
    # more sessions than the server allows on one connection: CapacityError, none left open
    small = servers.get({"max_sessions_per_connection": 2})
    with sandgym.Client(small.url) as client:
        with pytest.raises(errors.CapacityError):
            sandgym.gym.make_vec(client, "test/counter-v0", 3)
        assert client.open_sessions == 0


def test_disabled_autoreset_steps_an_ended_env_only_after_reset(url: str) -> None:
    with sandgym.gym.make_vec(url, "test/counter-v0", 2, autoreset_mode=AutoresetMode.DISABLED) as envs:
        envs.reset()
        for _ in range(3):
            _obs, _r, term, _t, _i = envs.step(np.array([1, 0]))
        assert term.tolist() == [True, False]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(errors.ResetNeededError):
                envs.step(np.array([1, 0]))


def test_readme_vector_envs_snippet_runs(url: str) -> None:
    """The README's make_vec example, as written (only the URL is the test server's)."""
    from _server import REPO

    readme = (REPO / "clients" / "python" / "README.md").read_text("utf-8")
    section = readme.split("### Vector envs", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "make_vec(" in code and "ws://127.0.0.1:8765/v2/ws" in code
    exec(compile(code.replace("ws://127.0.0.1:8765/v2/ws", url), "README.md", "exec"), {})


def test_malformed_actions_are_refused_not_coerced(url: str) -> None:
    with sandgym.gym.make_vec(url, "test/counter-v0", 2) as envs:
        envs.reset()
        with pytest.raises(TypeError):
            envs.step(None)
        with pytest.raises(ValueError, match="actions"):
            envs.step([1])
        with pytest.raises(errors.InvalidActionError, match=r"1\.5"):  # never truncated to 1
            envs.step(np.array([1.5, 0.0]))
        with pytest.raises(errors.InvalidActionError):
            envs.step(("1", "0"))
        obs, *_ = envs.step(np.array([True, 0]))  # gymnasium's Discrete contains True (== 1)
        assert obs.tolist() == [1, 0]
    env = sandgym.gym.make(url, "test/counter-v0")
    try:
        env.reset()
        with pytest.raises(errors.InvalidActionError):
            env.step(1.5)
        assert env.step(np.int64(1))[0] == 1 and env.step(np.array(1))[0] == 2
    finally:
        env.close()
    with sandgym.gym.make_vec(url, "wordle-v0", 2, encoding="msgpack") as envs:
        envs.reset(seed=0)
        with pytest.raises(errors.InvalidActionError) as ei:
            envs.step(("crane", "x" * 300))  # beyond max_length: the server says so, the other sub-env moved
        assert ei.value.details["env_index"] == 1 and envs.last_result is not None
        assert "Guesses left: 5" in envs.last_result[0][0] and "Guesses left: 6" in envs.last_result[0][1]


def test_msgpack_and_box_actions(url: str) -> None:
    vec = sandgym.gym.make_vec(url, "test/dict-v0", 2, encoding="msgpack")
    ref = SyncVectorEnv(_fns(url, "test/dict-v0", 2))
    try:
        assert data_equivalence(vec.reset(seed=0), ref.reset(seed=0))
        act = {"move": np.array([[0.5, -1.0], [0.25, 0.0]]), "say": ("héllo\n", "🎉")}
        a, b = vec.step(act), ref.step(act)
        assert data_equivalence(a, b) and a[0]["label"] == ("héllo\n", "🎉")
    finally:
        vec.close()
        ref.close()


def test_a_server_that_stops_answering_times_out(url: str) -> None:
    with sandgym.Client(url) as client:
        envs = sandgym.gym.make_vec(client, "test/slow-v0", 2, delay_ms=30_000)
        envs.reset()
        client.timeout = 3.0  # only the step (30 s on the server) is meant to run out; make/reset keep the default
        with pytest.raises(errors.RequestTimeoutError):
            envs.step(np.array([0, 0]))
        envs.close()  # the close frame overtakes nothing: it abandons the running steps (PROTOCOL.md §3)
        assert client.open_sessions == 0


@settings(max_examples=12, deadline=None)
@given(
    mode=st.sampled_from([AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]),
    actions=st.lists(st.lists(st.integers(0, 1), min_size=3, max_size=3), min_size=1, max_size=12),
)
def test_make_vec_equals_sync_for_any_action_sequence(url: str, mode: AutoresetMode, actions: list[list[int]]) -> None:
    vec = sandgym.gym.make_vec(url, "test/counter-v0", 3, autoreset_mode=mode)
    ref = SyncVectorEnv(_fns(url, "test/counter-v0", 3), autoreset_mode=mode)
    try:
        assert data_equivalence(vec.reset(seed=0), ref.reset(seed=0))
        for act in actions:
            a, b = vec.step(np.array(act)), ref.step(np.array(act))
            assert data_equivalence(a, b), (act, a, b)
            done = np.logical_or(a[2], a[3])
            if mode == AutoresetMode.DISABLED and done.any():
                assert data_equivalence(
                    vec.reset(options={"reset_mask": done}), ref.reset(options={"reset_mask": done})
                )
    finally:
        vec.close()
        ref.close()


def test_make_vec_chunks_by_the_servers_max_batch(servers: Any) -> None:
    """More sub-envs than limits.max_batch: each reset/step goes out in ceil(n / max_batch) frames,
    with the same results as SyncVectorEnv."""
    small = servers.get({"max_batch": 2})
    with sandgym.Client(small.url) as client:
        assert client.limits["max_batch"] == 2
        vec = sandgym.gym.make_vec(client, "test/counter-v0", 5, autoreset_mode=AutoresetMode.SAME_STEP)
        ref = SyncVectorEnv(_fns(small.url, "test/counter-v0", 5), autoreset_mode=AutoresetMode.SAME_STEP)
        try:
            sent: list[Any] = []
            real_send = client._ws.send
            client._ws.send = lambda data: (sent.append(data), real_send(data))[1]
            assert data_equivalence(vec.reset(seed=0), ref.reset(seed=0))
            assert len(sent) == 3
            for k in range(7):
                act = np.array([1, 1, k % 2, 0, 1])
                assert data_equivalence(vec.step(act), ref.step(act))
        finally:
            vec.close()
            ref.close()
