"""Gymnasium adapter: a remote sandgym session as a real ``gymnasium.Env``, and N sessions as a
``gymnasium.vector.VectorEnv``.

>>> import sandgym.gym
>>> env = sandgym.gym.make("ws://127.0.0.1:8765/v2/ws", "test/counter-v0")
>>> obs, info = env.reset(seed=0)
>>> envs = sandgym.gym.make_vec("ws://127.0.0.1:8765/v2/ws", "wordle-v0", num_envs=8)
>>> obs, infos = envs.reset(seed=0)  # one batch frame for the 8 sessions

Observations are converted from the wire form to the space's gymnasium form (``box`` -> numpy array
of the space's dtype, ``tuple`` -> tuple, ...) and actions back. The envs are synchronous (over
:class:`sandgym.Client`), so they also work inside a notebook's running event loop.

``make(...)`` works under gymnasium's own ``SyncVectorEnv`` and ``AsyncVectorEnv`` with default
arguments (text spaces declare every code point as their charset, see
:class:`sandgym.spaces.UnicodeText`). ``make_vec(...)`` is faster than both: one connection, one
``batch`` frame per step for all sub-envs, no worker processes (see BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from typing import Any, SupportsFloat

try:
    import gymnasium
    import numpy as np  # the spaces' gymnasium form needs it: say so here, not at first use
except ModuleNotFoundError as _missing:  # pragma: no cover - exercised in a subprocess by test_gym_extra
    if _missing.name not in ("gymnasium", "numpy"):
        raise
    raise ImportError(
        f"sandgym.gym needs the 'gymnasium' extra ({_missing.name} is not installed): pip install 'sandgym[gymnasium]'",
        name=__name__,
    ) from _missing

from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from . import _core, spaces as _spaces
from .errors import SandgymError
from .sync import Client, Env

__all__ = ["SandgymEnv", "SandgymVectorEnv", "make", "make_vec"]


def _done_flags(terminated: bool, truncated: bool, info: dict[str, Any]) -> tuple[bool, bool, dict[str, Any]]:
    """The server flags the step that reaches max_episode_steps as truncated even when it is also
    terminal. A terminal step is not a truncation (nothing to bootstrap from), and gymnasium's
    checker rejects truncation on a 1-step env (math-v0), so terminated takes precedence here;
    ``info["time_limit_reached"]`` keeps the fact."""
    if terminated and truncated:
        return True, False, {**info, "time_limit_reached": True}
    return terminated, truncated, info


class SandgymEnv(gymnasium.Env[Any, Any]):
    """A ``gymnasium.Env`` backed by one remote session.

    When the env created its own :class:`~sandgym.Client` (``make`` without passing a client),
    ``close()`` also closes that connection. ``close()`` may be called any number of times.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - declared as gymnasium.Env declares it

    def __init__(self, remote: Env, *, owns_client: Client | None = None) -> None:
        super().__init__()
        self.remote = remote
        self._owned = owns_client
        self._obs_space = remote.observation_space
        self._act_space = remote.action_space
        self.observation_space = _spaces.to_gym_space(self._obs_space)
        self.action_space = _spaces.to_gym_space(self._act_space)
        self.render_mode = None
        self._closed = False

    @property
    def env_spec(self) -> dict[str, Any]:
        """The server's env_spec (``spec`` is gymnasium's own EnvSpec attribute)."""
        spec: dict[str, Any] = self.remote.spec
        return spec

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = self.remote.reset(seed=seed, options=options)
        return _spaces.from_wire(self._obs_space, obs), info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.remote.step(_spaces.to_wire(self._act_space, action))
        terminated, truncated, info = _done_flags(terminated, truncated, info)
        return _spaces.from_wire(self._obs_space, obs), reward, terminated, truncated, info

    def render(self) -> None:
        return None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if not self.remote.client.closed:
                self.remote.close()
        finally:
            if self._owned is not None:
                self._owned.close()


def make(
    url: str | Client,
    env_id: str,
    *,
    token: str | None = None,
    encoding: str = "json",
    **kwargs: Any,
) -> SandgymEnv:
    """Connect to ``url`` (or reuse a :class:`~sandgym.Client` passed instead of a URL), create
    ``env_id`` with env ``kwargs``, and return a :class:`SandgymEnv`."""
    if isinstance(url, Client):
        return SandgymEnv(url.make(env_id, **kwargs))
    client = Client(url, token=token, encoding=encoding)
    try:
        return SandgymEnv(client.make(env_id, **kwargs), owns_client=client)
    except BaseException:
        client.close()
        raise


class SandgymVectorEnv(VectorEnv[Any, Any, Any]):
    """``num_envs`` sessions of one env on one connection, as a ``gymnasium.vector.VectorEnv``.

    Each ``reset``/``step`` is one ``batch`` frame carrying an item per sub-env (chunked by the
    server's ``limits.max_batch``), so a step costs one round trip whatever ``num_envs`` is; the
    server runs the items concurrently. Batched spaces, observations, ``infos`` and autoreset are
    gymnasium's (``batch_space``, ``concatenate``, ``VectorEnv._add_info``), so the results equal
    ``SyncVectorEnv`` over :func:`make` for the same seeds and actions (tested).

    ``autoreset_mode`` (in ``metadata["autoreset_mode"]``):

    * ``NEXT_STEP`` (default, as gymnasium's vector envs): the step after a sub-env ended resets it
      (its action is ignored, reward 0, flags False, ``infos`` are the reset's); the reset rides in
      the same frame as the other sub-envs' steps.
    * ``SAME_STEP``: a sub-env that ends is reset within the step; its last observation and info
      are in ``infos["final_obs"]`` / ``infos["final_info"]`` (masks ``_final_obs`` /
      ``_final_info``). Costs a second frame on steps where some sub-env ended.
    * ``DISABLED``: the caller resets ended sub-envs with ``reset(options={"reset_mask": mask})``;
      stepping one before that raises :class:`~sandgym.errors.ResetNeededError`.

    Errors are typed and nothing hangs: a sub-env's error (``INVALID_ACTION``, ``ENV_ERROR``, ...)
    is raised as its own class (``exc.details["env_index"]`` names the sub-env; ``last_errors``
    holds one entry per sub-env) after the other sub-envs' results were applied: their
    transitions are in ``last_result`` (the failed ones keep their previous observation, reward
    0, not done). Reset a failed session with ``reset(options={"reset_mask": mask})``. A lost connection
    raises :class:`~sandgym.errors.ConnectionClosedError`; a server that stops answering raises
    :class:`~sandgym.errors.RequestTimeoutError` after the client's ``timeout``.
    """

    def __init__(
        self,
        client: Client,
        env_id: str,
        num_envs: int,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        owns_client: bool = False,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.autoreset_mode = (
            autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        )
        self.client = client
        self._owns_client = owns_client
        self.num_envs = num_envs
        self.copy = copy
        self.remotes: list[Env] = []
        self.closed = False
        try:
            for _ in range(num_envs):
                self.remotes.append(client.make(env_id, **(env_kwargs or {})))
            first = self.remotes[0]
            self._obs_space = first.observation_space
            self._act_space = first.action_space
            self.single_observation_space = _spaces.to_gym_space(self._obs_space)
            self.single_action_space = _spaces.to_gym_space(self._act_space)
        except BaseException:
            self.close()  # the sessions made so far, in one frame
            raise
        self.metadata = {"render_modes": [], "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._max_batch = max(1, int(client.limits.get("max_batch") or 64))
        self._env_obs: list[Any] = [None] * num_envs
        self._observations: Any = create_empty_array(self.single_observation_space, n=num_envs, fn=np.zeros)
        self._rewards = np.zeros((num_envs,), dtype=np.float64)
        self._terminations = np.zeros((num_envs,), dtype=np.bool_)
        self._truncations = np.zeros((num_envs,), dtype=np.bool_)
        self._autoreset_envs = np.zeros((num_envs,), dtype=np.bool_)
        #: per sub-env, the error of the last reset/step (None where it succeeded)
        self.last_errors: list[SandgymError | None] = [None] * num_envs
        #: the last step's batched result, also when the step raised (see the class docstring)
        self.last_result: tuple[Any, Any, Any, Any, dict[str, Any]] | None = None

    @property
    def env_spec(self) -> dict[str, Any]:
        """The server's env_spec of the sub-envs."""
        spec: dict[str, Any] = self.remotes[0].spec
        return spec

    # ------------------------------------------------------------------ wire

    def _send(self, items: list[dict[str, Any]]) -> list[Any]:
        """One batch frame per ``max_batch`` items; one result dict or error instance per item."""
        if self.closed:
            raise ClosedEnvironmentError("SandgymVectorEnv is closed")
        out: list[Any] = []
        for i in range(0, len(items), self._max_batch):
            out.extend(self.client._call(_core.batch_op(items[i : i + self._max_batch])))
        return out

    def _raise_first(self, indices: Sequence[int], results: Sequence[Any]) -> None:
        """Record per-sub-env errors of ``results`` (for sub-envs ``indices``); raise the first."""
        self.last_errors = [None] * self.num_envs
        first: SandgymError | None = None
        for i, res in zip(indices, results, strict=True):
            if isinstance(res, SandgymError):
                res.details["env_index"] = i
                self.last_errors[i] = res
                first = first or res
        if first is not None:
            raise first

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``) in one frame. ``seed``: None,
        an int (sub-env ``i`` gets ``seed + i``) or one seed per sub-env, as ``SyncVectorEnv``."""
        super().reset(seed=seed if isinstance(seed, int) else None)
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"If seeds are passed as a list the length must match num_envs={self.num_envs} but got length={len(seeds)}."
            )
        mask = np.ones((self.num_envs,), dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
            if mask.dtype != np.bool_:
                raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
            if not np.any(mask):
                raise ValueError(
                    f"`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={mask}"
                )
        indices = [i for i in range(self.num_envs) if mask[i]]
        items = [_reset_item(self.remotes[i].session, seeds[i], options) for i in indices]
        results = self._send(items)
        infos: dict[str, Any] = {}
        for i, res in zip(indices, results, strict=True):
            if isinstance(res, SandgymError):
                continue
            self._env_obs[i] = _spaces.from_wire(self._obs_space, res.get("observation"))
            self._terminations[i] = self._truncations[i] = self._autoreset_envs[i] = False
            infos = self._add_info(infos, dict(res.get("info") or {}), i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._raise_first(indices, results)
        return (deepcopy(self._observations) if self.copy else self._observations), infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Step every sub-env in one frame (with NEXT_STEP, sub-envs that ended last step are reset
        in the same frame instead)."""
        n = self.num_envs
        acts = list(iterate(self.action_space, actions))
        if len(acts) != n:
            raise ValueError(f"expected {n} actions, got {len(acts)}")
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        items: list[dict[str, Any]] = []
        for i in range(n):
            session = self.remotes[i].session
            if next_step and self._autoreset_envs[i]:
                items.append({"type": "reset", "session": session})
            else:
                items.append({"type": "step", "session": session, "action": _spaces.to_wire(self._act_space, acts[i])})
        results = self._send(items)
        infos: dict[str, Any] = {}
        ended: list[int] = []
        pending_reset = self._autoreset_envs.copy()
        for i, res in enumerate(results):
            if isinstance(res, SandgymError):
                # no transition: previous observation, reward 0, not done (a pending autoreset stays pending)
                self._rewards[i] = 0.0
                self._terminations[i] = self._truncations[i] = False
                continue
            self._env_obs[i] = _spaces.from_wire(self._obs_space, res.get("observation"))
            if items[i]["type"] == "reset":
                self._rewards[i] = 0.0
                self._terminations[i] = self._truncations[i] = False
                infos = self._add_info(infos, dict(res.get("info") or {}), i)
                continue
            term, trunc, info = _done_flags(
                bool(res.get("terminated", False)), bool(res.get("truncated", False)), dict(res.get("info") or {})
            )
            self._rewards[i] = float(res.get("reward", 0.0))
            self._terminations[i], self._truncations[i] = term, trunc
            if self.autoreset_mode == AutoresetMode.SAME_STEP and (term or trunc):
                infos = self._add_info(infos, {"final_obs": self._env_obs[i], "final_info": info}, i)
                ended.append(i)
            else:
                infos = self._add_info(infos, info, i)
        errors: list[tuple[int, Any]] = [(i, r) for i, r in enumerate(results) if isinstance(r, SandgymError)]
        if ended:  # SAME_STEP: reset what ended, one more frame
            resets = self._send([{"type": "reset", "session": self.remotes[i].session} for i in ended])
            for i, res in zip(ended, resets, strict=True):
                if isinstance(res, SandgymError):
                    errors.append((i, res))
                    continue
                self._env_obs[i] = _spaces.from_wire(self._obs_space, res.get("observation"))
                infos = self._add_info(infos, dict(res.get("info") or {}), i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        for i, res in enumerate(results):
            if isinstance(res, SandgymError):  # e.g. a NEXT_STEP reset that failed is tried again next step
                self._autoreset_envs[i] = pending_reset[i]
        self.last_result = (
            deepcopy(self._observations) if self.copy else self._observations,
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )
        errors.sort(key=lambda e: e[0])
        self._raise_first([i for i, _ in errors], [e for _, e in errors])
        return self.last_result

    def render(self) -> None:
        return None

    def __enter__(self) -> SandgymVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close_extras(self, **kwargs: Any) -> None:
        """Close the sessions (one frame), then the connection when ``make_vec`` opened it."""
        try:
            # each handle marks itself closed and names the op; all of them go in one frame
            ops = [op for op in (e._close_op() for e in self.remotes) if op is not None]
            if ops:
                try:
                    self.client._call(_core.batch_op([{"type": "close", **(op.params or {})} for op in ops]))
                except SandgymError:  # ConnectionClosedError included
                    pass  # the server closes the sessions with the connection anyway
        finally:
            if self._owns_client:
                self.client.close()


def _reset_item(session: str, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
    return {"type": "reset", **_core.reset_params(session, seed, options)}


def make_vec(
    url: str | Client,
    env_id: str,
    num_envs: int,
    *,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    copy: bool = True,
    token: str | None = None,
    encoding: str = "json",
    **kwargs: Any,
) -> SandgymVectorEnv:
    """``num_envs`` sessions of ``env_id`` (with env ``kwargs``) on one connection to ``url`` (or on a
    :class:`~sandgym.Client` passed instead, left open by ``close()``), as a
    :class:`SandgymVectorEnv`. ``num_envs`` is bounded by the server's ``limits.max_sessions``
    (``CapacityError`` beyond it)."""
    if isinstance(url, Client):
        return SandgymVectorEnv(url, env_id, num_envs, autoreset_mode=autoreset_mode, copy=copy, env_kwargs=kwargs)
    client = Client(url, token=token, encoding=encoding)
    try:
        return SandgymVectorEnv(
            client, env_id, num_envs, autoreset_mode=autoreset_mode, copy=copy, owns_client=True, env_kwargs=kwargs
        )
    except BaseException:
        client.close()
        raise
