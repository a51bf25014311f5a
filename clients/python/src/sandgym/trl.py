"""TRL integration: train with ``trl.GRPOTrainer`` on sandgym envs, rewards from the server.

TRL (1.16) offers two hooks for environments in ``GRPOTrainer`` (docs/TRAINING.md compares them):

* ``environment_factory``: a zero-argument callable returning an environment object whose public methods
  are the tools the model may call (TRL renders them into the chat template from their signatures and
  docstrings, parses the model's tool calls, runs them and feeds the results back, several turns per
  rollout), whose ``reset(**row)`` returns the task text appended to the prompt, and whose optional
  ``get_reward()`` scores the finished rollout. It works with TRL's transformers generation on CPU as
  well as with vLLM. This module builds such a factory for any sandgym env: :class:`SandgymTRL`.
* ``rollout_func``: the whole generation is yours (prompt ids, completion ids, logprobs); TRL's examples
  pair it with a vLLM server. :func:`sandgym.rollouts.rollout_group` with an OpenAI-compatible endpoint
  is the sandgym side of that path; it is documented, not exercised by the CI test (no vLLM here).

Usage::

    sg = SandgymTRL("ws://127.0.0.1:8765/v2/ws", "calculator-tools-v0")
    trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=sg.dataset(range(64)),
                          environment_factory=sg.environment_factory, reward_funcs=sg.reward_funcs,
                          processing_class=tokenizer)

Tool envs (``shell-v0``, ``code-v0``, ``calculator-tools-v0``): each env tool becomes a method of a
class made for the env; a call steps the session and returns the observation text; the server's
``INVALID_ACTION`` comes back to the model as an error text and the episode goes on; ``get_reward`` is
the sum of the rewards the server gave. Text envs (``math-v0``, ``wordle-v0``, one answer per episode):
no tools; :meth:`SandgymTRL.reward_func` steps each rollout's session with the completion's text (all
of a batch in one ``batch`` frame) and returns the server's reward.

Infrastructure failures (``SANDBOX_ERROR``, ``TIMEOUT``, ``ENV_ERROR``, a lost connection) make the
rollout's reward ``None``: TRL marks such a completion unscorable (no reward, advantage 0, left out of
its group's baseline) instead of scoring it 0 (PROTOCOL.md §11a). Every reward handed to TRL is also
appended to :attr:`SandgymTRL.reward_log` (with the server's ``reward_components``), so a run can be
audited against the server.
"""

from __future__ import annotations

import importlib
import inspect
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .chat import SYSTEM_PROMPT_TEXT, SYSTEM_PROMPT_TOOLS, observation_text
from .errors import InvalidActionError, SandgymError
from .sync import Client, Env

__all__ = ["SandgymTRL", "SandgymEnvironment"]

_JSON_TO_PY: dict[str, Any] = {
    "string": str,
    "number": float,
    "integer": int,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _py_type(schema: Mapping[str, Any]) -> Any:
    """The Python type hint whose JSON schema (as transformers derives it for tools) matches ``schema``."""
    t = schema.get("type")
    if isinstance(t, list):
        kinds = [_JSON_TO_PY[k] for k in t if k in _JSON_TO_PY]
        out: Any = kinds[0] if kinds else str
        for k in kinds[1:]:
            out = out | k
        return out | None if "null" in t else out
    if t == "array" and isinstance(schema.get("items"), Mapping) and schema["items"].get("type") in _JSON_TO_PY:
        elem = _JSON_TO_PY[schema["items"]["type"]]
        return list[elem]  # type: ignore[valid-type]
    return _JSON_TO_PY.get(str(t), str)


def _tool_method(tool: Mapping[str, Any]) -> Callable[..., str]:
    """A method named like the tool, with a typed signature and a Google-style docstring from its JSON
    schema (what ``transformers.utils.get_json_schema`` reads); calling it steps the session."""
    name = str(tool["name"])
    if not name.isidentifier():
        raise ValueError(f"tool name {name!r} is not a Python identifier: TRL exposes tools as methods")
    params = tool.get("parameters") or {}
    props: Mapping[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or [])

    def method(self: SandgymEnvironment, **kwargs: Any) -> str:
        return self._call_tool(name, kwargs)

    sig_params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_docs = []
    for pname, pschema in props.items():
        if not str(pname).isidentifier():
            raise ValueError(f"parameter {pname!r} of tool {name!r} is not a Python identifier")
        hint = _py_type(pschema)
        annotations[pname] = hint
        sig_params.append(
            inspect.Parameter(
                pname,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=hint,
                default=inspect.Parameter.empty if pname in required else None,
            )
        )
        desc = str(pschema.get("description") or pname).replace("\n", " ")
        if isinstance(pschema.get("enum"), list):
            desc += f" (choices: {json.dumps(pschema['enum'])})"
        arg_docs.append(f"    {pname}: {desc}")
    annotations["return"] = str
    method.__signature__ = inspect.Signature(sig_params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__name__ = method.__qualname__ = name
    doc = str(tool.get("description") or f"The {name} tool.").strip()
    if arg_docs:
        doc += "\n\nArgs:\n" + "\n".join(arg_docs)
    method.__doc__ = doc + "\n\nReturns:\n    The tool's result."
    return method


class SandgymEnvironment:
    """One rollout's environment for TRL's ``environment_factory`` (a session on the shared connection).

    TRL constructs instances once and ``reset``s them for each rollout. The subclass made for a tool env
    adds one method per tool and ``get_reward``; a text env's reward comes from
    :meth:`SandgymTRL.reward_func`. TRL treats every public function of the class other than ``reset``
    and ``get_reward`` as a tool, so every helper here starts with ``_``.
    """

    _owner: SandgymTRL

    def __init__(self) -> None:
        self.env: Env | None = None
        self.rewards: list[float] = []
        self.reward_components: dict[str, float] = {}
        self.failure: SandgymError | None = None
        self.done = False
        self.seed: int | None = None
        self.steps = 0
        self.invalid_actions = 0

    def reset(self, **row: Any) -> str:
        """Start an episode for one dataset row: ``seed`` and ``options`` (a dict or its JSON text) from
        the row when present. Returns the task's first observation (TRL appends it to the prompt)."""
        self.rewards, self.reward_components, self.failure, self.done = [], {}, None, False
        self.steps = self.invalid_actions = 0
        seed = row.get("seed")
        self.seed = int(seed) if seed is not None else None
        options = row.get("options")
        if isinstance(options, str):
            options = json.loads(options) if options else None
        try:
            if self.env is None or self.env.closed:
                self.env = self._owner.client.make(self._owner.env_id, **self._owner.env_kwargs)
            obs, _info = self.env.reset(seed=self.seed, options=options)
        except SandgymError as exc:
            # No task text can be given; the rollout will be unscorable (reward None), never scored 0.
            self.failure, self.done = exc, True
            return f"(environment unavailable: {exc.code})"
        return observation_text(obs)

    def _record(self, reward: float, info: Mapping[str, Any], terminated: bool, truncated: bool) -> None:
        self.steps += 1
        self.rewards.append(float(reward))
        for k, v in (info.get("reward_components") or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                self.reward_components[k] = self.reward_components.get(k, 0.0) + float(v)
        self.done = bool(terminated or truncated)

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if self.failure is not None:
            raise RuntimeError(f"the environment failed ({self.failure.code}); this rollout is not scored")
        if self.done or self.env is None:
            return "Error: the episode has ended; no more tool calls are run."
        try:
            obs, reward, terminated, truncated, info = self.env.step({"name": name, "arguments": arguments})
        except InvalidActionError as exc:
            self.invalid_actions += 1
            where = exc.details.get("path")
            return f"Error: invalid action: {exc.message}" + (f" (at {where})" if where else "")
        except SandgymError as exc:
            self.failure = exc
            raise  # TRL counts a failed tool call; get_reward returns None for the rollout
        self._record(reward, info, terminated, truncated)
        return observation_text(obs)

    def _episode_return(self) -> float | None:
        """The sum of the server's rewards, or None when the environment failed (unscorable)."""
        if self.failure is not None:
            return None
        return float(sum(self.rewards))


def _tool_get_reward(self: SandgymEnvironment) -> float | None:
    """Score the finished rollout: the sum of the rewards the server gave (None after a failure)."""
    value = self._episode_return()
    self._owner._log(self, value)
    return value


class SandgymTRL:
    """A sandgym env, ready for ``GRPOTrainer``: ``environment_factory``, ``reward_funcs``, ``dataset``.

    One blocking connection (``sandgym.Client``, thread-safe) serves every rollout's session; pass
    ``client`` to share one you made. ``env_kwargs`` go to ``make``. ``system_prompt`` (default: the
    chat adapter's, for text or tool envs) opens every prompt of :meth:`dataset`.
    """

    def __init__(
        self,
        url: str | None,
        env_id: str,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        client: Client | None = None,
        system_prompt: str | None = None,
        **connect_options: Any,
    ) -> None:
        own_client = client is None
        if client is None:
            if url is None:
                raise ValueError("give a server url or a client")
            connect_options.setdefault("client_name", "sandgym-trl")
            client = Client(url, **connect_options)
        self.client = client
        try:
            self._setup(env_id, env_kwargs, system_prompt)
        except BaseException:
            if own_client:
                client.close()
            raise

    def _setup(self, env_id: str, env_kwargs: Mapping[str, Any] | None, system_prompt: str | None) -> None:
        client = self.client
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.reward_log: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        probe = client.make(env_id, **self.env_kwargs)
        try:
            self.spec = dict(probe.spec)
            self.tools = [dict(t) for t in (probe.tools or [])]
        finally:
            probe.close()
        space = self.spec.get("action_space") or {}
        if space.get("type") not in ("text", "tool_call"):
            raise ValueError(f"{env_id} has a {space.get('type')!r} action space: TRL drives text and tool-call envs")
        self.uses_tools = space.get("type") == "tool_call"
        self.system_prompt = (
            system_prompt
            if system_prompt is not None
            else (SYSTEM_PROMPT_TOOLS if self.uses_tools else SYSTEM_PROMPT_TEXT)
        )
        attrs: dict[str, Any] = {"_owner": self, "__doc__": f"sandgym {env_id} for TRL's environment_factory."}
        if self.uses_tools:
            for tool in self.tools:
                if (
                    tool["name"] in ("reset", "get_reward")
                    or tool["name"].startswith("_")
                    or hasattr(SandgymEnvironment, tool["name"])
                ):
                    raise ValueError(f"tool name {tool['name']!r} clashes with the environment's own methods")
                attrs[tool["name"]] = _tool_method(tool)
            attrs["get_reward"] = _tool_get_reward
        cls_name = "Sandgym_" + "".join(c if c.isalnum() else "_" for c in env_id)
        # TRL lists every public function of the class as a tool: the base's only public function is reset.
        self.environment_class: type[SandgymEnvironment] = type(cls_name, (SandgymEnvironment,), attrs)

    # ------------------------------------------------------------------ what GRPOTrainer takes

    def environment_factory(self) -> SandgymEnvironment:
        """``GRPOTrainer(environment_factory=sg.environment_factory)``: a new rollout environment."""
        return self.environment_class()

    @property
    def reward_funcs(self) -> list[Callable[..., list[float | None]]]:
        """``GRPOTrainer(reward_funcs=sg.reward_funcs)``: [] for tool envs (their ``get_reward`` is the
        reward), ``[sg.reward_func]`` for text envs."""
        return [] if self.uses_tools else [self.reward_func]

    def dataset(self, seeds: Iterable[int] | None = None, *, options: Iterable[Mapping[str, Any]] | None = None) -> Any:
        """A ``datasets.Dataset`` of prompts, one row per task: ``seed`` (envs that derive the task from
        it) or ``options`` (reset options, stored as JSON text). The prompt is the system prompt and an
        empty user message that ``reset`` fills with the task."""
        datasets = importlib.import_module("datasets")  # the [trl] extra

        return datasets.Dataset.from_list(self.dataset_rows(seeds, options=options))

    def dataset_rows(
        self, seeds: Iterable[int] | None = None, *, options: Iterable[Mapping[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        prompt = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + [
            {"role": "user", "content": ""}
        ]
        rows: list[dict[str, Any]] = []
        if options is not None:
            opts = list(options)
            seed_list = list(seeds) if seeds is not None else list(range(len(opts)))
            for s, o in zip(seed_list, opts, strict=True):
                rows.append({"prompt": prompt, "seed": s, "options": json.dumps(dict(o))})
        else:
            rows = [{"prompt": prompt, "seed": s} for s in (seeds if seeds is not None else range(64))]
        return rows

    def reward_func(
        self, completions: list[Any], environments: list[SandgymEnvironment] | None = None, **_kwargs: Any
    ) -> list[float | None]:
        """Text envs: step each rollout's session with its completion's text (one ``batch`` frame for
        the batch) and return the server's rewards; tool envs: each rollout's return. None where the
        environment failed."""
        if environments is None:
            raise ValueError("sandgym's reward needs TRL's environments (pass environment_factory to GRPOTrainer)")
        if not self.uses_tools:
            live = [
                (e, _completion_text(c))
                for e, c in zip(environments, completions, strict=True)
                if e.failure is None and e.env is not None and not e.done
            ]
            if live:
                try:
                    results = self.client.step_many([e.env for e, _ in live if e.env is not None], [t for _, t in live])
                except SandgymError as exc:  # the whole frame failed (connection): none of them is scored
                    results = [exc] * len(live)
                for (e, _), res in zip(live, results, strict=True):
                    if isinstance(res, InvalidActionError):
                        e.invalid_actions += 1
                    elif isinstance(res, SandgymError):
                        e.failure = res
                    else:
                        _obs, reward, terminated, truncated, info = res
                        e._record(reward, info, terminated, truncated)
        out: list[float | None] = []
        for e in environments:
            value = e._episode_return()
            self._log(e, value)
            out.append(value)
        return out

    def _log(self, env: SandgymEnvironment, value: float | None) -> None:
        with self._lock:
            self.reward_log.append(
                {
                    "seed": env.seed,
                    "reward": value,
                    "rewards": list(env.rewards),
                    "reward_components": dict(env.reward_components),
                    "steps": env.steps,
                    "invalid_actions": env.invalid_actions,
                    "failure": None
                    if env.failure is None
                    else {"code": env.failure.code, "message": env.failure.message},
                }
            )

    def close(self) -> None:
        self.client.close()


def _completion_text(completion: Any) -> str:
    """A completion's final text: the last assistant message's content (conversational) or the string."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        for msg in reversed(completion):
            if isinstance(msg, Mapping) and msg.get("role") == "assistant":
                content = msg.get("content")
                return content if isinstance(content, str) else ""
    return ""
