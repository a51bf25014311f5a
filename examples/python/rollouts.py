#!/usr/bin/env python3
"""GRPO-style group rollouts against a sandgym server.

For each of N tasks, G episodes of the *same task* run concurrently (over one multiplexed
connection, or a pool with --connections > 1). Each episode's return is compared with its group:
advantage = (return - mean(group)) / (std(group) + eps). Trajectories go to a JSONL file, one episode
per line.

What "the same task" means:
* with --task-options (a JSON list of reset options, e.g. '[{"word": "crane"}, {"word": "plumb"}]'
  for wordle-v0), every episode of task i resets with options[i] and its own seed;
* without it, the env derives the task from the seed (math-v0, calculator-tools-v0): all G episodes of
  a task reset with the task's seed, and the *policy* gets a different seed per episode.

Policies:
* default ("scripted"): a small heuristic with exploration noise for math-v0 and calculator-tools-v0
  (solves "What is <expression>?" problems, guesses otherwise); a random policy (space samples) for
  any other env;
* --policy-url URL: any OpenAI-compatible chat completions endpoint (vLLM, SGLang, llama.cpp server,
  ...). Tool-call envs send the env's tools in the request and read back tool_calls.

Infrastructure failures (SANDBOX_ERROR, dropped connections, ...) are recorded as failed episodes and
left out of the advantages: an infrastructure failure must never become a reward-0 sample.

    python examples/python/rollouts.py --env calculator-tools-v0 --tasks 4 --group-size 8 --out rollouts.jsonl
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import math
import operator
import random
import re
import statistics
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Protocol

import sandgym
from sandgym import AsyncClient, AsyncClientPool, AsyncEnv, SandgymError

DEFAULT_URL = "ws://127.0.0.1:8765/v2/ws"  # `npm start` (server/src/config.ts: 127.0.0.1:8765)


# ------------------------------------------------------------------------------ policies


class Policy(Protocol):
    async def act(self, episode: "EpisodeState", observation: Any) -> Any: ...


@dataclass
class EpisodeState:
    env: AsyncEnv
    rng: random.Random
    messages: list[dict[str, Any]] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}


def safe_eval(expr: str) -> float:
    """Evaluate + - * / ^ arithmetic (no names, no calls)."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ValueError("exponent too large")
            return _OPS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError("not arithmetic")

    return ev(ast.parse(expr.replace("^", "**"), mode="eval").body)


# "What is 3^2 - 4?" (calculator-tools-v0), "Compute (12 - 5) * 3 + 1." (math-v0)
_WHAT_IS = re.compile(r"(?:What is|Compute) ([-+*/^() \d]*\d[-+*/^() \d]*?)\s*(?:\?|\.(?:\s|$))")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.10g}"


class ScriptedPolicy:
    """Heuristic policy with exploration noise (``epsilon``: chance of a perturbed answer)."""

    def __init__(self, epsilon: float = 0.3) -> None:
        self.epsilon = epsilon

    def _answer(self, ep: EpisodeState, text: str) -> float:
        m = _WHAT_IS.search(text)
        guess: float
        if m:
            try:
                guess = safe_eval(m.group(1))
            except (ValueError, ZeroDivisionError, OverflowError, SyntaxError):
                guess = 0.0
        else:
            nums = [float(n) for n in _NUMBER.findall(text)] or [0.0]
            guess = ep.rng.choice(nums) * ep.rng.choice([1, 2]) if len(nums) < 2 else nums[0] * nums[1]
        if ep.rng.random() < self.epsilon:
            guess += ep.rng.choice([-1, 1])
        return guess

    async def act(self, ep: EpisodeState, observation: Any) -> Any:
        space = ep.env.action_space
        if space.get("type") == "tool_call":
            names = {t["name"] for t in space["tools"]}
            if {"calculate", "submit"} <= names:
                if "expr" not in ep.memory:
                    m = _WHAT_IS.search(str(observation))
                    if m and ep.rng.random() >= self.epsilon:
                        ep.memory["expr"] = m.group(1).strip()
                        return {"name": "calculate", "arguments": {"expression": ep.memory["expr"]}}
                    ep.memory["expr"] = None
                    return {"name": "submit", "arguments": {"answer": self._answer(ep, str(observation))}}
                try:
                    value = float(str(observation).strip())
                except ValueError:
                    value = 0.0
                return {"name": "submit", "arguments": {"answer": value}}
            return RandomPolicy().sample(ep)
        if space.get("type") == "text" and ep.env.env_id.startswith("math"):
            return f"The answer is \\boxed{{{_fmt(self._answer(ep, str(observation)))}}}."
        return RandomPolicy().sample(ep)


class RandomPolicy:
    """Uniform samples from the action space (needs the gymnasium extra for most spaces)."""

    def sample(self, ep: EpisodeState) -> Any:
        space = ep.env.action_space
        if space.get("type") == "text" and "charset" not in space:
            n = min(int(space.get("max_length", 5)), 5)
            return "".join(ep.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
        if space.get("type") == "discrete":
            return int(space.get("start", 0)) + ep.rng.randrange(int(space["n"]))
        from sandgym.spaces import to_gym_space, to_wire

        g = ep.memory.get("gym_space")
        if g is None:
            g = ep.memory["gym_space"] = to_gym_space(space)
            g.seed(ep.rng.randrange(2**31))
        return to_wire(space, g.sample())

    async def act(self, ep: EpisodeState, observation: Any) -> Any:
        return self.sample(ep)


class ChatPolicy:
    """An OpenAI-compatible chat completions endpoint as the policy (stdlib HTTP, no extra deps)."""

    def __init__(self, url: str, model: str, temperature: float, api_key: str | None, timeout: float) -> None:
        self.url = url.rstrip("/")
        if not self.url.endswith("/chat/completions"):
            self.url += "/chat/completions"
        self.model, self.temperature, self.api_key, self.timeout = model, temperature, api_key, timeout

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read())

    async def act(self, ep: EpisodeState, observation: Any) -> Any:
        tools = ep.env.tools
        if not ep.messages:
            ep.messages.append({"role": "system", "content": ep.env.spec.get("description", "")})
            ep.messages.append({"role": "user", "content": str(observation)})
        elif tools and ep.memory.get("tool_call_id"):
            ep.messages.append({"role": "tool", "tool_call_id": ep.memory["tool_call_id"], "content": str(observation)})
        else:
            ep.messages.append({"role": "user", "content": str(observation)})
        body: dict[str, Any] = {"model": self.model, "messages": ep.messages, "temperature": self.temperature,
                                "seed": ep.rng.randrange(2**31)}
        if tools:
            body["tools"] = [{"type": "function", "function": t} for t in tools]
            body["tool_choice"] = "required"
        reply = await asyncio.to_thread(self._post, body)
        msg = reply["choices"][0]["message"]
        ep.messages.append({k: v for k, v in msg.items() if v is not None})
        if tools:
            calls = msg.get("tool_calls") or []
            if not calls:
                return {"name": tools[-1]["name"], "arguments": {}}  # the env answers INVALID_ACTION
            fn = calls[0]["function"]
            ep.memory["tool_call_id"] = calls[0].get("id")
            args = fn.get("arguments") or "{}"
            try:
                parsed = json.loads(args) if isinstance(args, str) else args
            except json.JSONDecodeError:
                parsed = {}
            return {"name": fn["name"], "arguments": parsed if isinstance(parsed, dict) else {}}
        return msg.get("content") or ""


# ------------------------------------------------------------------------------ rollouts


@dataclass
class Task:
    index: int
    seed: int | None
    options: dict[str, Any] | None


def group_advantages(returns: list[float], eps: float = 1e-6) -> list[float]:
    """GRPO's group-relative advantage: (r - mean) / (std + eps), population std."""
    if not returns:
        return []
    mean = statistics.fmean(returns)
    std = statistics.pstdev(returns) if len(returns) > 1 else 0.0
    return [(r - mean) / (std + eps) for r in returns]


async def run_episode(make_env: Any, policy: Policy, task: Task, g: int, base_seed: int, max_steps: int) -> dict[str, Any]:
    ep_seed = base_seed + task.index * 100_003 + g
    reset_seed = task.seed if task.seed is not None else ep_seed
    record: dict[str, Any] = {"task": task.index, "member": g, "seed": reset_seed, "policy_seed": ep_seed,
                              "options": task.options, "steps": [], "return": 0.0, "failed": None}
    env: AsyncEnv | None = None
    t0 = time.perf_counter()
    try:
        env = await make_env()
        record["env_id"] = env.env_id
        state = EpisodeState(env=env, rng=random.Random(ep_seed))
        obs, info = await env.reset(seed=reset_seed, options=task.options)
        record["initial_observation"], record["reset_info"] = obs, info
        for _ in range(max_steps):
            action = await policy.act(state, obs)
            try:
                obs, reward, terminated, truncated, info = await env.step(action)
            except sandgym.InvalidActionError as exc:  # the policy's fault: counts as a step with reward 0
                record["steps"].append({"action": action, "invalid_action": exc.details})
                continue
            record["steps"].append({"action": action, "observation": obs, "reward": reward,
                                    "terminated": terminated, "truncated": truncated, "info": info})
            record["return"] += reward
            if terminated or truncated:
                break
    except (SandgymError, OSError, urllib.error.URLError) as exc:
        record["failed"] = {"type": type(exc).__name__, "code": getattr(exc, "code", None), "message": str(exc)}
    finally:
        record["seconds"] = round(time.perf_counter() - t0, 4)
        if env is not None:
            try:
                await env.close()
            except SandgymError:
                pass
    return record


async def rollouts(args: argparse.Namespace) -> dict[str, Any]:
    if args.connections > 1 or len(args.url) > 1:
        pool = await AsyncClientPool.connect(args.url, connections_per_url=args.connections, token=args.token,
                                             encoding=args.encoding, retry_capacity=True)
        make_env = lambda: pool.make(args.env, **args.env_kwargs)  # noqa: E731
        closer = pool.close
    else:
        client = await AsyncClient.connect(args.url[0], token=args.token, encoding=args.encoding,
                                           client_name="sandgym-rollouts", retry_capacity=True)
        make_env = lambda: client.make(args.env, **args.env_kwargs)  # noqa: E731
        closer = client.close
    if args.policy_url:
        policy: Policy = ChatPolicy(args.policy_url, args.model, args.temperature, args.api_key, args.policy_timeout)
    elif args.policy == "random":
        policy = RandomPolicy()
    else:
        policy = ScriptedPolicy(epsilon=args.epsilon)
    if args.task_options is not None:
        tasks = [Task(i, None, o) for i, o in enumerate(args.task_options[: args.tasks])]
    else:
        tasks = [Task(i, args.seed + i, None) for i in range(args.tasks)]
    sem = asyncio.Semaphore(args.concurrency)

    async def limited(task: Task, g: int) -> dict[str, Any]:
        async with sem:
            return await run_episode(make_env, policy, task, g, args.seed, args.max_steps)

    t0 = time.perf_counter()
    try:
        records = await asyncio.gather(*(limited(t, g) for t in tasks for g in range(args.group_size)))
    finally:
        await closer()
    elapsed = time.perf_counter() - t0
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["task"], []).append(r)
    summary_rows = []
    for idx, members in sorted(groups.items()):
        ok = [m for m in members if m["failed"] is None]
        for m, a in zip(ok, group_advantages([m["return"] for m in ok], args.eps)):
            m["advantage"] = a
        for m in members:
            m.setdefault("advantage", None)
        rets = [m["return"] for m in ok]
        summary_rows.append({"task": idx, "episodes": len(members), "failed": len(members) - len(ok),
                             "mean_return": statistics.fmean(rets) if rets else math.nan,
                             "std_return": statistics.pstdev(rets) if len(rets) > 1 else 0.0})
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    steps = sum(len(r["steps"]) for r in records)
    return {"env": args.env, "tasks": len(tasks), "group_size": args.group_size, "episodes": len(records),
            "steps": steps, "seconds": round(elapsed, 3), "steps_per_second": round(steps / elapsed, 1) if elapsed else None,
            "groups": summary_rows, "out": args.out}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", action="append", help=f"server URL (repeat for a pool; default {DEFAULT_URL})")
    p.add_argument("--token", default=None)
    p.add_argument("--encoding", choices=["json", "msgpack"], default="msgpack")
    p.add_argument("--connections", type=int, default=1, help="connections per URL")
    p.add_argument("--env", default="calculator-tools-v0")
    p.add_argument("--env-kwargs", type=json.loads, default={}, help="JSON object of make kwargs")
    p.add_argument("--tasks", type=int, default=4, help="N tasks")
    p.add_argument("--group-size", type=int, default=8, help="G episodes per task")
    p.add_argument("--task-options", type=json.loads, default=None, help="JSON list of reset options, one per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=32)
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--policy", choices=["scripted", "random"], default="scripted")
    p.add_argument("--epsilon", type=float, default=0.3, help="exploration noise of the scripted policy")
    p.add_argument("--policy-url", default=None, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", default="default")
    p.add_argument("--api-key", default=None)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--policy-timeout", type=float, default=120.0)
    p.add_argument("--out", default="rollouts.jsonl", help="JSONL output ('' for none)")
    args = p.parse_args(argv)
    args.url = args.url or [DEFAULT_URL]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = asyncio.run(rollouts(args))
    print(f"{result['episodes']} episodes ({result['tasks']} tasks x {result['group_size']}) of {result['env']}: "
          f"{result['steps']} steps in {result['seconds']} s ({result['steps_per_second']} steps/s)")
    print("| task | episodes | failed | mean return | std |")
    print("|---:|---:|---:|---:|---:|")
    for row in result["groups"]:
        print(f"| {row['task']} | {row['episodes']} | {row['failed']} | {row['mean_return']:.3f} | {row['std_return']:.3f} |")
    if result["out"]:
        print(f"trajectories: {result['out']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
