"""Chat-format adapter: an env as an OpenAI-style conversation, and the model's replies as actions.

Every chat template, inference server and trainer speaks messages (``system``/``user``/``assistant``/
``tool``) and tools in the OpenAI function format; sandgym speaks ``reset``/``step`` with protocol
actions. This module translates, so a trainer never writes the ``tool_call_id`` bookkeeping or the
argument parsing itself:

* :func:`openai_tools` gives an env's tools as ``[{"type": "function", "function": {...}}]``;
* ``reset`` gives the opening messages: a system prompt written for the *agent* (never the env's
  ``description``, which is written for task authors and may describe the grader) and the task's
  instruction (the env's first observation) as the user message;
* ``step(assistant_message)`` turns the model's reply into actions: text envs (``math-v0``,
  ``wordle-v0``) take the message's ``content``; tool envs (``shell-v0``, ``code-v0``) take each of its
  ``tool_calls`` (``arguments`` a JSON string, as OpenAI sends it, or an object), one env step per call,
  each observation coming back as a ``tool`` message with that call's id;
* a malformed reply (arguments that are not JSON or not an object, an unknown tool, a call without an
  id, text where a tool call is needed) gets a message explaining the mistake, as an env would, and
  the episode goes on: nothing is sent to the server for it, so it costs no env step. The server's own
  ``INVALID_ACTION`` (e.g. arguments that fail the tool's schema) is answered the same way
  (PROTOCOL.md §11a: the policy's malformed output, the session survives).

Infrastructure errors (``SANDBOX_ERROR``, ``TIMEOUT``, a dropped connection, ...) are raised as the
client's typed errors: they are never turned into messages or rewards.

:class:`ChatCore` is the I/O-free part (tested against the shared protocol vectors);
:class:`AsyncChatEnv` and :class:`ChatEnv` drive an :class:`~sandgym.AsyncEnv` or :class:`~sandgym.Env`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InvalidActionError

if TYPE_CHECKING:
    from .client import AsyncEnv
    from .sync import Env

__all__ = [
    "SYSTEM_PROMPT_TEXT",
    "SYSTEM_PROMPT_TOOLS",
    "AsyncChatEnv",
    "ChatCore",
    "ChatEnv",
    "ChatStep",
    "ToolCallAction",
    "ParsedReply",
    "openai_tools",
    "observation_text",
]

#: The default system prompt for envs answered in text. Written for the agent: it says how to answer,
#: never how the answer is graded.
SYSTEM_PROMPT_TEXT = (
    "You are an agent solving a task. The user message gives the task. Reply with your answer as plain text, "
    "following the task's instructions about the form of the answer exactly. If the task continues, you get "
    "feedback and answer again."
)

#: The default system prompt for envs acted on with tools.
SYSTEM_PROMPT_TOOLS = (
    "You are an agent solving a task by calling tools. The user message gives the task. Act only through the "
    "provided tools: call one tool at a time with arguments that match its parameters, read its result, and "
    "continue until the task is done. When a tool ends the task (for example a submit tool), call it once you "
    "are finished."
)


def openai_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """An env's tools (``env.tools``: ``{name, description, parameters}``) in the OpenAI function format."""
    out: list[dict[str, Any]] = []
    for tool in tools or ():
        fn: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            fn["description"] = tool["description"]
        fn["parameters"] = dict(tool.get("parameters") or {"type": "object", "properties": {}})
        out.append({"type": "function", "function": fn})
    return out


def observation_text(observation: Any) -> str:
    """An observation as message content: text as is, anything else as compact JSON."""
    if isinstance(observation, str):
        return observation
    return json.dumps(observation, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class ToolCallAction:
    """One well-formed tool call of an assistant message: its id and the protocol action."""

    tool_call_id: str
    action: dict[str, Any]


@dataclass
class ParsedReply:
    """An assistant message read against the env's action space (no I/O).

    ``actions``: what to send, in order (for a text env one ``(None, text)``-like entry whose
    ``tool_call_id`` is ""). ``errors``: the messages that answer the malformed parts, in the order
    of the calls they answer (tool messages for calls with an id, one user message otherwise).
    ``order``: the reply's calls in order, each an index into ``actions`` or ``errors``.
    """

    actions: list[ToolCallAction] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    order: list[tuple[str, int]] = field(default_factory=list)

    @property
    def malformed(self) -> int:
        return len(self.errors)


@dataclass
class ChatStep:
    """What one assistant message did.

    ``messages``: the messages that answer it (tool messages with the calls' ids, or a user message),
    already appended to the conversation. ``reward``: the sum of the rewards of the env steps it
    caused (0.0 when it caused none). ``rewards``: each of those steps' rewards. ``steps``: how many
    env steps ran. ``invalid``: how many of its calls were malformed or refused with INVALID_ACTION
    (no env step for those). ``info``: the last step's info (``reward_components`` and the rest).
    """

    messages: list[dict[str, Any]]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    rewards: list[float] = field(default_factory=list)
    steps: int = 0
    invalid: int = 0

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


def _tool_message(tool_call_id: str, name: str | None, content: str) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": tool_call_id, "content": content}
    if name:
        msg["name"] = name
    return msg


class ChatCore:
    """The I/O-free translation for one env spec (``env.spec`` or a ``make`` result's ``env_spec``).

    ``system_prompt``: overrides the default one (:data:`SYSTEM_PROMPT_TEXT` or
    :data:`SYSTEM_PROMPT_TOOLS`, by the env's action space); ``None`` keeps the default, ``""`` sends no
    system message.
    """

    def __init__(self, spec: Mapping[str, Any], *, system_prompt: str | None = None) -> None:
        self.spec = dict(spec)
        space = dict(self.spec.get("action_space") or {})
        tools = self.spec.get("tools")
        if tools is None and space.get("type") == "tool_call":
            tools = space.get("tools")
        self.env_tools: list[dict[str, Any]] = [dict(t) for t in tools or ()]
        self.uses_tools = space.get("type") == "tool_call" or bool(self.env_tools)
        if space.get("type") not in (None, "text", "tool_call"):
            raise ValueError(
                f"{self.spec.get('id', 'this env')} has a {space.get('type')!r} action space: the chat adapter drives "
                "envs whose actions are text or tool calls"
            )
        self.tools = openai_tools(self.env_tools) if self.uses_tools else None
        self._tool_names = [t["name"] for t in self.env_tools]
        if system_prompt is None:
            system_prompt = SYSTEM_PROMPT_TOOLS if self.uses_tools else SYSTEM_PROMPT_TEXT
        self.system_prompt = system_prompt

    def initial_messages(self, observation: Any) -> list[dict[str, Any]]:
        """The conversation's opening: the system prompt and the task's instruction (first observation)."""
        msgs: list[dict[str, Any]] = []
        if self.system_prompt:
            msgs.append({"role": "system", "content": self.system_prompt})
        msgs.append({"role": "user", "content": observation_text(observation)})
        return msgs

    def parse(self, message: Mapping[str, Any]) -> ParsedReply:
        """Read an assistant message (``content`` and/or ``tool_calls``) into actions and error messages."""
        reply = ParsedReply()
        if not isinstance(message, Mapping):
            raise TypeError(f"an assistant message is a mapping, got {type(message).__name__}")
        content = message.get("content")
        text = content if isinstance(content, str) else _content_text(content)
        calls = message.get("tool_calls") or []
        if not self.uses_tools:
            if calls and not text:
                self._error(reply, None, None, "This task takes a plain text answer and has no tools: reply with text.")
            else:
                reply.actions.append(ToolCallAction("", {"text": text}))
                reply.order.append(("action", 0))
            return reply
        if not isinstance(calls, list) or not calls:
            names = ", ".join(self._tool_names)
            self._error(
                reply,
                None,
                None,
                f"No tool was called. Act by calling one of the tools ({names}); plain text does nothing here.",
            )
            return reply
        for call in calls:
            self._parse_call(reply, call)
        return reply

    def _error(self, reply: ParsedReply, call_id: str | None, name: str | None, text: str) -> None:
        msg = (
            _tool_message(call_id, name, f"Error: {text}") if call_id else {"role": "user", "content": f"Error: {text}"}
        )
        reply.order.append(("error", len(reply.errors)))
        reply.errors.append(msg)

    def _parse_call(self, reply: ParsedReply, call: Any) -> None:
        if not isinstance(call, Mapping):
            self._error(reply, None, None, "a tool call must be an object with an id and a function.")
            return
        call_id = call.get("id")
        fn = call.get("function")
        if not isinstance(fn, Mapping):  # tolerate the flat {name, arguments} form some servers emit
            fn = call if "name" in call else {}
        name = fn.get("name")
        if not isinstance(call_id, str) or not call_id:
            label = f" to {name!r}" if isinstance(name, str) else ""
            self._error(reply, None, None, f"the tool call{label} has no id, so it was not run; call the tool again.")
            return
        if not isinstance(name, str) or name not in self._tool_names:
            known = ", ".join(self._tool_names)
            self._error(
                reply,
                call_id,
                name if isinstance(name, str) else None,
                f"unknown tool {name!r}; the tools are: {known}.",
            )
            return
        raw = fn.get("arguments")
        if raw is None or raw == "":
            args: Any = {}
        elif isinstance(raw, str):
            try:
                args = json.loads(raw)
            except json.JSONDecodeError as exc:
                self._error(
                    reply,
                    call_id,
                    name,
                    f"the arguments of {name} are not valid JSON ({exc.msg} at "
                    f"position {exc.pos}); send them as a JSON object.",
                )
                return
        else:
            args = raw
        if not isinstance(args, Mapping):
            self._error(
                reply, call_id, name, f"the arguments of {name} must be a JSON object, got {type(args).__name__}."
            )
            return
        reply.order.append(("action", len(reply.actions)))
        reply.actions.append(ToolCallAction(call_id, {"name": name, "arguments": dict(args)}))

    def wire_action(self, action: ToolCallAction) -> Any:
        """The protocol action for one parsed call (text envs: the text itself)."""
        return action.action["text"] if not self.uses_tools else action.action

    def observation_message(self, action: ToolCallAction, observation: Any) -> dict[str, Any]:
        """How an observation returns: a ``tool`` message for a tool call, else a ``user`` message."""
        if self.uses_tools:
            return _tool_message(action.tool_call_id, action.action["name"], observation_text(observation))
        return {"role": "user", "content": observation_text(observation)}

    def invalid_message(self, action: ToolCallAction, exc: InvalidActionError) -> dict[str, Any]:
        """The server refused the action with INVALID_ACTION: tell the model why, as an env would."""
        where = exc.details.get("path")
        text = f"Error: invalid action: {exc.message}" + (f" (at {where})" if where else "")
        if self.uses_tools:
            return _tool_message(action.tool_call_id, action.action["name"], text)
        return {"role": "user", "content": text}

    @staticmethod
    def skipped_message(action: ToolCallAction) -> dict[str, Any]:
        """A call after the one that ended the episode: answered (every id gets a reply), not run."""
        return _tool_message(
            action.tool_call_id,
            action.action.get("name"),
            "Error: not run: the episode ended at an earlier tool call of this message.",
        )


def _content_text(content: Any) -> str:
    """OpenAI content parts (``[{"type": "text", "text": ...}, ...]``) joined; None is ""."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return str(content)


class _StepAccumulator:
    """Collects the outcome of one assistant message's actions (shared by the async and sync envs)."""

    def __init__(self, core: ChatCore, reply: ParsedReply) -> None:
        self.core, self.reply = core, reply
        self.answers: dict[tuple[str, int], dict[str, Any]] = {("error", i): m for i, m in enumerate(reply.errors)}
        self.rewards: list[float] = []
        self.terminated = self.truncated = False
        self.info: dict[str, Any] = {}
        self.invalid = reply.malformed

    def pending(self) -> list[tuple[int, ToolCallAction]]:
        return list(enumerate(self.reply.actions))

    def done_action(
        self, i: int, action: ToolCallAction, result: tuple[Any, float, bool, bool, dict[str, Any]]
    ) -> None:
        obs, reward, terminated, truncated, info = result
        self.rewards.append(float(reward))
        self.terminated, self.truncated, self.info = bool(terminated), bool(truncated), dict(info)
        self.answers[("action", i)] = self.core.observation_message(action, obs)

    def invalid_action(self, i: int, action: ToolCallAction, exc: InvalidActionError) -> None:
        self.invalid += 1
        self.answers[("action", i)] = self.core.invalid_message(action, exc)

    def skipped(self, i: int, action: ToolCallAction) -> None:
        self.answers[("action", i)] = self.core.skipped_message(action)

    def finish(self, conversation: list[dict[str, Any]]) -> ChatStep:
        msgs = [self.answers[key] for key in self.reply.order]
        # Messages without a tool_call_id (user messages) go after the tool messages: chat templates expect
        # an assistant message's tool results right after it.
        msgs = [m for m in msgs if m["role"] == "tool"] + [m for m in msgs if m["role"] != "tool"]
        conversation.extend(msgs)
        return ChatStep(
            msgs,
            sum(self.rewards),
            self.terminated,
            self.truncated,
            self.info,
            rewards=list(self.rewards),
            steps=len(self.rewards),
            invalid=self.invalid,
        )


def _assistant_entry(message: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message as kept in the conversation (None fields dropped)."""
    entry = {k: v for k, v in dict(message).items() if v is not None}
    entry.setdefault("role", "assistant")
    return entry


class AsyncChatEnv:
    """An :class:`~sandgym.AsyncEnv` as a conversation.

    ``messages`` is the whole conversation so far (reset starts it anew); ``tools`` the OpenAI tools to
    send with each completion request (None for text envs).
    """

    def __init__(self, env: AsyncEnv, *, system_prompt: str | None = None) -> None:
        self.env = env
        self.core = ChatCore(env.spec, system_prompt=system_prompt)
        self.messages: list[dict[str, Any]] = []
        self.reset_info: dict[str, Any] = {}
        self.done = False

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.core.tools

    async def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Start an episode; returns (and starts ``messages`` with) the opening messages. ``info`` of the
        reset is in ``reset_info``."""
        obs, info = await self.env.reset(seed=seed, options=options)
        self.reset_info = info
        self.done = False
        self.messages = self.core.initial_messages(obs)
        return list(self.messages)

    async def step(self, message: Mapping[str, Any]) -> ChatStep:
        """Apply one assistant message; its answer messages are appended to ``messages`` and returned."""
        reply = self.core.parse(message)
        self.messages.append(_assistant_entry(message))
        acc = _StepAccumulator(self.core, reply)
        for i, action in acc.pending():
            if acc.terminated or acc.truncated:
                acc.skipped(i, action)
                continue
            try:
                acc.done_action(i, action, await self.env.step(self.core.wire_action(action)))
            except InvalidActionError as exc:
                acc.invalid_action(i, action, exc)
        step = acc.finish(self.messages)
        self.done = step.done
        return step

    async def close(self) -> None:
        await self.env.close()

    async def __aenter__(self) -> AsyncChatEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class ChatEnv:
    """A blocking :class:`~sandgym.Env` as a conversation (same methods as :class:`AsyncChatEnv`)."""

    def __init__(self, env: Env, *, system_prompt: str | None = None) -> None:
        self.env = env
        self.core = ChatCore(env.spec, system_prompt=system_prompt)
        self.messages: list[dict[str, Any]] = []
        self.reset_info: dict[str, Any] = {}
        self.done = False

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.core.tools

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.reset_info = info
        self.done = False
        self.messages = self.core.initial_messages(obs)
        return list(self.messages)

    def step(self, message: Mapping[str, Any]) -> ChatStep:
        reply = self.core.parse(message)
        self.messages.append(_assistant_entry(message))
        acc = _StepAccumulator(self.core, reply)
        for i, action in acc.pending():
            if acc.terminated or acc.truncated:
                acc.skipped(i, action)
                continue
            try:
                acc.done_action(i, action, self.env.step(self.core.wire_action(action)))
            except InvalidActionError as exc:
                acc.invalid_action(i, action, exc)
        step = acc.finish(self.messages)
        self.done = step.done
        return step

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> ChatEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
