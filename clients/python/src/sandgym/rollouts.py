"""Group rollouts for GRPO-style trainers: G episodes of one task, run concurrently, scored by the server.

``await rollout_group(client, "math-v0", policy, seed=7, group_size=8)`` runs 8 episodes of the task
that ``seed`` names (or of ``options``, for envs whose tasks are reset options) over one multiplexed
connection (an :class:`~sandgym.AsyncClient`) or a pool (:class:`~sandgym.AsyncClientPool`), each
episode a conversation (:mod:`sandgym.chat`), and returns a :class:`Group`: per episode the messages,
the reward of each turn (one assistant message), the return, the summed ``reward_components``, and
the group-normalised advantages.

The policy is an OpenAI-compatible chat-completions endpoint (:class:`OpenAIChatPolicy`: vLLM, SGLang,
llama.cpp server, ...; stdlib HTTP, no extra dependency) or any Python callable
``policy(messages, tools, context)`` returning an assistant message (a dict, or a str for its content),
sync or async.

Failures are never rewards (PROTOCOL.md §11a): an episode whose env or connection failed
(``SANDBOX_ERROR``, ``TIMEOUT``, ``ENV_ERROR``, a dropped connection, a refused ``make``/``reset``...) or
whose policy endpoint failed carries a :class:`Failure` (the typed error's code, whether a retry may
succeed, and which side failed), has no return and no advantage, and is left out of its group's
statistics. Malformed model output is not a failure: the chat adapter answers it and the episode goes on
(counted in ``Episode.invalid_actions``).

Opt-in reruns: ``rerun_infra_failures=N`` runs an episode again (a new session, the same seed, options
and policy seed) up to N times when it failed for the infrastructure (``Failure.infrastructure``: the
§11a codes in :data:`RETRY_CODES`, ``PREEMPTED`` among them, a dropped connection or a client-side
timeout), after the server's ``retry_after_ms`` or a backoff. Never for a reward (a low score is a
result), an ``ENV_ERROR`` or a policy failure; ``Episode.attempts`` and ``Episode.rerun_failures`` say
what happened. ``as_group=True`` makes a group's sessions with one ``group`` request (admitted all at
once by the server's scheduler, PROTOCOL.md §6a) and ``scheduling`` passes a
:class:`~sandgym.Scheduling` (priority class, queue timeout, preemptible) to every make.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
import statistics
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ._base import capacity_delay
from ._core import Scheduling
from .chat import AsyncChatEnv
from .errors import ERROR_CLASSES, ConnectionClosedError, SandgymError

if TYPE_CHECKING:
    from .client import AsyncClient, AsyncEnv, AsyncEnvGroup
    from .pool import AsyncClientPool

__all__ = [
    "EpisodeContext",
    "Episode",
    "Failure",
    "Group",
    "OpenAIChatPolicy",
    "PolicyError",
    "Policy",
    "RETRY_CODES",
    "group_advantages",
    "rollout_episode",
    "rollout_group",
    "rollout_groups",
]

#: Failures that are the infrastructure's, per PROTOCOL.md §11a: run the episode again, never score it.
# RESUME_EXPIRED and REPLY_LOST are the connection's (§5a): the episode's sessions or a reply went with
# it; PREEMPTED (§6a): the scheduler reclaimed the sandbox for higher-priority work. The policy did
# nothing wrong in any of them. ENV_ERROR (a bug in the env) is deliberately absent: rerunning repeats it.
RETRY_CODES = frozenset(
    {"SANDBOX_ERROR", "TIMEOUT", "CAPACITY", "SHUTTING_DOWN", "RESUME_EXPIRED", "REPLY_LOST", "PREEMPTED"}
)
#: Longest wait between two attempts of an episode (seconds).
RERUN_MAX_DELAY = 30.0


@dataclass
class EpisodeContext:
    """What a callable policy may use besides the messages: the env, the episode's seeds, a private RNG
    seeded from ``policy_seed`` and a dict for its own state across turns."""

    env_id: str
    member: int
    seed: int | None
    policy_seed: int
    rng: random.Random
    turn: int = 0
    memory: dict[str, Any] = field(default_factory=dict)


PolicyReturn = Mapping[str, Any] | str


class Policy(Protocol):
    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, context: EpisodeContext, /
    ) -> PolicyReturn | Awaitable[PolicyReturn]: ...


class PolicyError(Exception):
    """The policy could not produce a message (HTTP error, unreadable reply, the callable raised)."""


@dataclass(frozen=True)
class Failure:
    """Why an episode has no return. ``source``: ``"server"`` (a protocol error: ``code`` is its code),
    ``"connection"`` (the connection dropped or a request timed out client-side) or ``"policy"``.
    ``retryable``: running the episode again may succeed (infrastructure), per the error's own flag."""

    source: str
    code: str | None
    message: str
    retryable: bool

    #: seconds the server suggested waiting before a retry (``details.retry_after_ms``), if it did
    retry_after: float | None = None

    @classmethod
    def from_error(cls, exc: BaseException) -> Failure:
        if isinstance(exc, ConnectionClosedError):
            return cls("connection", exc.code, str(exc), True)
        if isinstance(exc, SandgymError):
            src = "connection" if exc.code == "REQUEST_TIMEOUT" else "server"
            hint = exc.details.get("retry_after_ms")
            after = (
                hint / 1000.0 if isinstance(hint, (int, float)) and not isinstance(hint, bool) and hint >= 0 else None
            )
            return cls(src, exc.code, exc.message or str(exc), bool(exc.retryable) or exc.code in RETRY_CODES, after)
        return cls("policy", None, f"{type(exc).__name__}: {exc}", False)

    @property
    def infrastructure(self) -> bool:
        """The infrastructure failed (§11a), so running the episode again may succeed: a dropped
        connection or client-side timeout, or a server error in :data:`RETRY_CODES`. Never a policy
        failure or ``ENV_ERROR``."""
        if self.source == "connection":
            return True
        return self.source == "server" and self.code in RETRY_CODES


@dataclass
class Episode:
    """One episode. ``rewards``: one per turn (assistant message), the sum of the env steps it caused.
    ``return_`` is their sum; ``reward_components`` the per-component sums (``info.reward_components``).
    ``failure`` set means the episode is not a sample: ``return_`` and ``advantage`` are None."""

    member: int
    seed: int | None
    options: dict[str, Any] | None
    policy_seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    reward_components: dict[str, float] = field(default_factory=dict)
    return_: float | None = None
    steps: int = 0
    invalid_actions: int = 0
    terminated: bool = False
    truncated: bool = False
    failure: Failure | None = None
    advantage: float | None = None
    reset_info: dict[str, Any] = field(default_factory=dict)
    final_info: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    #: times the episode was run (1 + reruns after infrastructure failures)
    attempts: int = 1
    #: the infrastructure failures that were rerun (oldest first); ``failure`` is the last attempt's
    rerun_failures: list[Failure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (``return`` for ``return_``)."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("return_", "failure")}
        d["return"] = self.return_
        d["failure"] = None if self.failure is None else dict(self.failure.__dict__)
        d["rerun_failures"] = [dict(f.__dict__) for f in self.rerun_failures]
        return d


@dataclass
class Group:
    """G episodes of one task. ``advantages`` of the successful episodes only (None elsewhere)."""

    env_id: str
    seed: int | None
    options: dict[str, Any] | None
    episodes: list[Episode]

    @property
    def ok(self) -> list[Episode]:
        return [e for e in self.episodes if e.ok]

    @property
    def failed(self) -> list[Episode]:
        return [e for e in self.episodes if not e.ok]

    @property
    def returns(self) -> list[float]:
        return [e.return_ for e in self.ok if e.return_ is not None]

    @property
    def mean_return(self) -> float | None:
        r = self.returns
        return statistics.fmean(r) if r else None


def group_advantages(returns: Sequence[float], eps: float = 1e-6, *, scale: bool = True) -> list[float]:
    """GRPO's group-relative advantage: ``(r - mean) / (std + eps)`` with the population std
    (``scale=False``: ``r - mean``, the Dr. GRPO variant). All-equal returns give zeros, never NaN."""
    if not returns:
        return []
    mean = statistics.fmean(returns)
    if not scale:
        return [r - mean for r in returns]
    std = statistics.pstdev(returns) if len(returns) > 1 else 0.0
    return [(r - mean) / (std + eps) for r in returns]


class OpenAIChatPolicy:
    """An OpenAI-compatible ``/chat/completions`` endpoint as the policy (stdlib HTTP in a worker thread).

    ``base_url``: e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended unless present).
    Each request carries the conversation, the env's tools (``tool_choice: "auto"``), ``temperature``,
    ``max_tokens`` when given, the episode's ``policy_seed`` as ``seed``, and ``extra_body``.
    Raises :class:`PolicyError` on HTTP/network errors and replies without ``choices[0].message``.
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        url = base_url.rstrip("/")
        self.url = url if url.endswith("/chat/completions") else url + "/chat/completions"
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.api_key, self.timeout = api_key, timeout
        self.extra_body = dict(extra_body or {})

    def request_body(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, seed: int
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "seed": seed,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        body.update(self.extra_body)
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                reply = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            raise PolicyError(f"policy endpoint {self.url} answered HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise PolicyError(f"policy endpoint {self.url} failed: {exc}") from exc
        if not isinstance(reply, dict):
            raise PolicyError(f"policy endpoint {self.url} sent {type(reply).__name__}, not a completion object")
        return reply

    async def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, context: EpisodeContext
    ) -> dict[str, Any]:
        reply = await asyncio.to_thread(self._post, self.request_body(messages, tools, context.policy_seed))
        try:
            msg = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise PolicyError(
                f"policy endpoint {self.url} reply has no choices[0].message: {str(reply)[:300]}"
            ) from exc
        if not isinstance(msg, dict):
            raise PolicyError(f"policy endpoint {self.url}: choices[0].message is not an object")
        return msg


async def _ask(
    policy: Policy | Callable[..., Any],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    ctx: EpisodeContext,
) -> dict[str, Any]:
    try:
        out = policy(list(messages), tools, ctx)
        if inspect.isawaitable(out):
            out = await out
    except PolicyError:
        raise
    except SandgymError:
        raise
    except Exception as exc:  # a user's policy: any failure of it is the policy's
        raise PolicyError(f"policy raised {type(exc).__name__}: {exc}") from exc
    if isinstance(out, str):
        return {"role": "assistant", "content": out}
    if isinstance(out, Mapping):
        msg = dict(out)
        msg.setdefault("role", "assistant")
        return msg
    raise PolicyError(f"policy returned {type(out).__name__}; expected an assistant message (dict) or its text")


MakeEnv = Callable[[], Awaitable["AsyncEnv"]]


def _failure(exc: BaseException, env: AsyncEnv | None) -> Failure:
    """The failure of an attempt. When the server had closed the session (a ``session_closed`` event:
    its sandbox died, it was preempted while the policy was thinking) the next call on it fails with
    ``UNKNOWN_SESSION``: the event's code is the cause, and what classifies the episode."""
    closed = env.closed_reason if env is not None else None
    if isinstance(exc, SandgymError) and isinstance(closed, Mapping) and isinstance(closed.get("code"), str):
        code = str(closed["code"])
        cls = ERROR_CLASSES.get(code, SandgymError)
        return Failure.from_error(cls(str(closed.get("reason") or exc.message), code=code, details=dict(closed)))
    return Failure.from_error(exc)


async def rollout_episode(
    make_env: MakeEnv,
    policy: Policy | Callable[..., Any],
    *,
    env_id: str = "",
    member: int = 0,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    policy_seed: int = 0,
    max_turns: int = 32,
    system_prompt: str | None = None,
    rerun_infra_failures: int = 0,
) -> Episode:
    """One episode: make a session, reset, then ask the policy and step until the episode ends or
    ``max_turns`` assistant messages were answered (the episode is then neither terminated nor truncated
    by the env; its return is what it earned). Never raises for env, connection or policy failures:
    they become ``Episode.failure``.

    ``rerun_infra_failures``: run the episode again from a new session (``make_env`` is called again),
    up to this many times, while it fails for the infrastructure (:attr:`Failure.infrastructure`);
    a policy failure, an ``ENV_ERROR`` or a finished episode (whatever its reward) is never rerun."""
    if isinstance(rerun_infra_failures, bool) or not isinstance(rerun_infra_failures, int) or rerun_infra_failures < 0:
        raise ValueError(f"rerun_infra_failures must be an int >= 0, got {rerun_infra_failures!r}")
    t0 = time.perf_counter()
    earlier: list[Failure] = []
    while True:
        ep = await _attempt(
            make_env,
            policy,
            env_id=env_id,
            member=member,
            seed=seed,
            options=options,
            policy_seed=policy_seed,
            max_turns=max_turns,
            system_prompt=system_prompt,
        )
        f = ep.failure
        if f is None or not f.infrastructure or len(earlier) >= rerun_infra_failures:
            break
        earlier.append(f)
        delay = (
            f.retry_after
            if f.retry_after is not None
            else capacity_delay(SandgymError(code=f.code or ""), len(earlier), RERUN_MAX_DELAY)
        )
        await asyncio.sleep(min(delay, RERUN_MAX_DELAY))
    ep.attempts = len(earlier) + 1
    ep.rerun_failures = earlier
    ep.seconds = round(time.perf_counter() - t0, 4)
    return ep


async def _attempt(
    make_env: MakeEnv,
    policy: Policy | Callable[..., Any],
    *,
    env_id: str,
    member: int,
    seed: int | None,
    options: dict[str, Any] | None,
    policy_seed: int,
    max_turns: int,
    system_prompt: str | None,
) -> Episode:
    """One run of an episode (see :func:`rollout_episode`)."""
    ep = Episode(member=member, seed=seed, options=options, policy_seed=policy_seed)
    ctx = EpisodeContext(
        env_id=env_id, member=member, seed=seed, policy_seed=policy_seed, rng=random.Random(policy_seed)
    )
    t0 = time.perf_counter()
    env: AsyncEnv | None = None
    chat: AsyncChatEnv | None = None
    try:
        env = await make_env()
        ctx.env_id = env.env_id
        chat = AsyncChatEnv(env, system_prompt=system_prompt)
        await chat.reset(seed=seed, options=options)
        ep.reset_info = chat.reset_info
        for turn in range(max_turns):
            ctx.turn = turn
            msg = await _ask(policy, chat.messages, chat.tools, ctx)
            res = await chat.step(msg)
            ep.rewards.append(res.reward)
            ep.steps += res.steps
            ep.invalid_actions += res.invalid
            if res.steps:
                ep.final_info = res.info
                for k, v in (res.info.get("reward_components") or {}).items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        ep.reward_components[k] = ep.reward_components.get(k, 0.0) + float(v)
            if res.done:
                ep.terminated, ep.truncated = res.terminated, res.truncated
                break
        ep.messages = chat.messages
        ep.return_ = float(sum(ep.rewards))
    except (SandgymError, PolicyError) as exc:
        ep.failure = _failure(exc, env)
        ep.return_ = None
        if chat is not None:
            ep.messages = chat.messages
    finally:
        ep.seconds = round(time.perf_counter() - t0, 4)
        if env is not None:
            try:
                await env.close()
            except SandgymError:
                pass
    return ep


async def rollout_group(
    client: AsyncClient | AsyncClientPool,
    env_id: str,
    policy: Policy | Callable[..., Any],
    *,
    group_size: int = 8,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    same_seed: bool | None = None,
    policy_seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    max_turns: int = 32,
    system_prompt: str | None = None,
    advantages: bool = True,
    eps: float = 1e-6,
    concurrency: int | None = None,
    rerun_infra_failures: int = 0,
    as_group: bool = False,
    scheduling: Scheduling | None = None,
) -> Group:
    """Run ``group_size`` episodes of one task concurrently; see the module doc.

    The task: ``seed`` (envs that derive the task from the seed: math-v0, calculator-tools-v0) or
    ``options`` (envs whose tasks are reset options: wordle-v0's ``{"word": ...}``). ``same_seed``
    (default: True unless ``options`` is given) resets every member with ``seed``; otherwise member g
    resets with ``seed + g``. Each member's policy gets its own ``policy_seed + g``.
    ``advantages``: fill ``Episode.advantage`` with :func:`group_advantages` over the successful
    episodes. ``concurrency``: at most this many episodes at once (default: all).
    ``rerun_infra_failures``: see :func:`rollout_episode`. ``as_group``: make the members' sessions with one
    ``group`` request, admitted all at once (needs a server with ``capabilities.scheduling``; a rerun
    member gets a session of its own); the request itself is retried like an episode when it fails for
    the infrastructure (e.g. ``CAPACITY`` after its queue timeout). ``scheduling``: passed to every make.
    """
    if group_size < 1:
        raise ValueError("group_size must be >= 1")
    if scheduling is not None and not isinstance(scheduling, Scheduling):
        raise TypeError(f"scheduling must be a sandgym.Scheduling, got {type(scheduling).__name__}")
    kwargs = dict(env_kwargs or {})
    if scheduling is not None:
        kwargs["scheduling"] = scheduling
    if same_seed is None:
        same_seed = options is None

    async def make() -> AsyncEnv:
        return await client.make(env_id, **kwargs)

    def member_seed(g: int) -> int | None:
        return seed if same_seed or seed is None else seed + g

    admitted: AsyncEnvGroup | None = None
    if as_group:
        admitted, failure = await _admit_group(client, env_id, group_size, kwargs, rerun_infra_failures)
        if admitted is None:
            assert failure is not None
            episodes = [
                Episode(member=g, seed=member_seed(g), options=options, policy_seed=policy_seed + g, failure=failure)
                for g in range(group_size)
            ]
            return Group(env_id=env_id, seed=seed, options=options, episodes=episodes)

    sem = asyncio.Semaphore(concurrency or group_size)

    async def one(g: int) -> Episode:
        first = [admitted.envs[g]] if admitted is not None else []

        async def make_member() -> AsyncEnv:
            # The group's session on the first run; a rerun gets a session of its own.
            return first.pop() if first else await make()

        async with sem:
            return await rollout_episode(
                make_member,
                policy,
                env_id=env_id,
                member=g,
                seed=member_seed(g),
                options=options,
                policy_seed=policy_seed + g,
                max_turns=max_turns,
                system_prompt=system_prompt,
                rerun_infra_failures=rerun_infra_failures,
            )

    episodes = list(await asyncio.gather(*(one(g) for g in range(group_size))))
    group = Group(env_id=env_id, seed=seed, options=options, episodes=episodes)
    if advantages:
        ok = group.ok
        for e, a in zip(ok, group_advantages([e.return_ or 0.0 for e in ok], eps), strict=True):
            e.advantage = a
    return group


async def _admit_group(
    client: AsyncClient | AsyncClientPool, env_id: str, size: int, kwargs: dict[str, Any], reruns: int
) -> tuple[AsyncEnvGroup | None, Failure | None]:
    """One ``group`` request, retried up to ``reruns`` times while it fails for the infrastructure."""
    attempt = 0
    while True:
        try:
            return await client.group(env_id, size, **kwargs), None
        except SandgymError as exc:
            f = Failure.from_error(exc)
            if not f.infrastructure or attempt >= reruns:
                return None, f
        attempt += 1
        delay = (
            f.retry_after
            if f.retry_after is not None
            else capacity_delay(SandgymError(code=f.code or ""), attempt, RERUN_MAX_DELAY)
        )
        await asyncio.sleep(min(delay, RERUN_MAX_DELAY))


async def rollout_groups(
    client: AsyncClient | AsyncClientPool,
    env_id: str,
    policy: Policy | Callable[..., Any],
    tasks: Sequence[Mapping[str, Any]],
    *,
    group_size: int = 8,
    concurrency: int = 256,
    **kwargs: Any,
) -> list[Group]:
    """Several groups at once: ``tasks`` is a list of ``{"seed": ..., "options": ..., "policy_seed": ...}``
    (each key optional); at most ``concurrency`` episodes run at the same time over all groups."""
    sem = asyncio.Semaphore(max(1, concurrency // max(1, group_size)))

    async def one(task: Mapping[str, Any]) -> Group:
        async with sem:
            return await rollout_group(client, env_id, policy, group_size=group_size, **{**kwargs, **task})

    return list(await asyncio.gather(*(one(t) for t in tasks)))
