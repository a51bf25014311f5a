#!/usr/bin/env python3
"""GRPO-style group rollouts against a sandgym server (a thin CLI over ``sandgym.rollouts``).

For each of N tasks, G episodes of the *same task* run concurrently (over one multiplexed connection,
or a pool with --connections > 1), each a chat conversation (``sandgym.chat``); each successful
episode's return is compared with its group's: advantage = (return - mean) / (std + eps).
Trajectories go to a JSONL file, one episode per line (``sandgym.rollouts.Episode.to_dict()`` plus
``task``).

What "the same task" means:
* with --task-options (a JSON list of reset options, e.g. '[{"word": "crane"}, {"word": "plumb"}]'
  for wordle-v0), every episode of task i resets with options[i] and its own seed;
* without it, the env derives the task from the seed (math-v0, calculator-tools-v0): all G episodes of
  a task reset with the task's seed, and the *policy* gets a different seed per episode.

Policies (text and tool-call envs):
* default ("scripted"): a small heuristic with exploration noise for math-v0 and calculator-tools-v0
  (solves "What is <expression>?" problems, guesses otherwise); random text or tool calls elsewhere;
* --policy-url URL: any OpenAI-compatible chat completions endpoint (vLLM, SGLang, llama.cpp server,
  ...): the env's tools go in the request in the OpenAI function format, tool_calls come back.

Infrastructure failures (SANDBOX_ERROR, dropped connections, a failing policy endpoint, ...) are
recorded as failed episodes (``failure``) and left out of the advantages: an infrastructure failure
must never become a reward-0 sample.

    python examples/python/rollouts.py --env calculator-tools-v0 --tasks 4 --group-size 8 --out rollouts.jsonl
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import math
import operator
import re
import statistics
import sys
import time
from typing import Any

from sandgym import AsyncClient, AsyncClientPool
from sandgym.rollouts import EpisodeContext, OpenAIChatPolicy, group_advantages, rollout_groups

__all__ = ["group_advantages", "safe_eval", "scripted_policy", "random_policy", "rollouts", "parse_args", "main"]

DEFAULT_URL = "ws://127.0.0.1:8765/v2/ws"  # `npm start` (server/src/config.ts: 127.0.0.1:8765)

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


def _call(ctx: EpisodeContext, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call_id = f"call_{ctx.member}_{ctx.turn}"
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def random_policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, ctx: EpisodeContext) -> Any:
    """Random lowercase words for text envs; a random tool with empty arguments for tool envs."""
    if tools:
        return _call(ctx, ctx.rng.choice(tools)["function"]["name"], {})
    return "".join(ctx.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(5))


def scripted_policy(epsilon: float = 0.3) -> Any:
    """A heuristic for arithmetic tasks with exploration noise (``epsilon``: chance of a perturbed answer)."""

    def answer(ctx: EpisodeContext, text: str) -> float:
        m = _WHAT_IS.search(text)
        guess: float
        if m:
            try:
                guess = safe_eval(m.group(1))
            except (ValueError, ZeroDivisionError, OverflowError, SyntaxError):
                guess = 0.0
        else:
            nums = [float(n) for n in _NUMBER.findall(text)] or [0.0]
            guess = ctx.rng.choice(nums) * ctx.rng.choice([1, 2]) if len(nums) < 2 else nums[0] * nums[1]
        if ctx.rng.random() < epsilon:
            guess += ctx.rng.choice([-1, 1])
        return guess

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, ctx: EpisodeContext) -> Any:
        last = str(messages[-1].get("content") or "")
        names = {t["function"]["name"] for t in tools or []}
        if {"calculate", "submit"} <= names:
            if ctx.turn == 0:
                m = _WHAT_IS.search(last)
                if m and ctx.rng.random() >= epsilon:
                    return _call(ctx, "calculate", {"expression": m.group(1).strip()})
                return _call(ctx, "submit", {"answer": answer(ctx, last)})
            try:
                value = float(last.strip())
            except ValueError:
                value = 0.0
            return _call(ctx, "submit", {"answer": value})
        if tools is None and ctx.env_id.startswith("math"):
            return f"The answer is \\boxed{{{_fmt(answer(ctx, last))}}}."
        return random_policy(messages, tools, ctx)

    return policy


async def rollouts(args: argparse.Namespace) -> dict[str, Any]:
    client: AsyncClient | AsyncClientPool
    if args.connections > 1 or len(args.url) > 1:
        client = await AsyncClientPool.connect(args.url, connections_per_url=args.connections, token=args.token,
                                               encoding=args.encoding, retry_capacity=True)
    else:
        client = await AsyncClient.connect(args.url[0], token=args.token, encoding=args.encoding,
                                           client_name="sandgym-rollouts", retry_capacity=True)
    if args.policy_url:
        policy: Any = OpenAIChatPolicy(args.policy_url, args.model, temperature=args.temperature, api_key=args.api_key,
                                       timeout=args.policy_timeout)
    elif args.policy == "random":
        policy = random_policy
    else:
        policy = scripted_policy(args.epsilon)
    if args.task_options is not None:
        tasks = [{"options": o, "seed": args.seed + i * 100_003} for i, o in enumerate(args.task_options[: args.tasks])]
    else:
        tasks = [{"seed": args.seed + i} for i in range(args.tasks)]
    for i, t in enumerate(tasks):
        t["policy_seed"] = args.seed + i * 100_003
    t0 = time.perf_counter()
    try:
        groups = await rollout_groups(client, args.env, policy, tasks, group_size=args.group_size,
                                      concurrency=args.concurrency, env_kwargs=args.env_kwargs,
                                      max_turns=args.max_steps, eps=args.eps)
    finally:
        await client.close()
    elapsed = time.perf_counter() - t0
    records = [{"task": i, **e.to_dict()} for i, g in enumerate(groups) for e in g.episodes]
    summary_rows = []
    for i, g in enumerate(groups):
        rets = g.returns
        summary_rows.append({"task": i, "episodes": len(g.episodes), "failed": len(g.failed),
                             "mean_return": statistics.fmean(rets) if rets else math.nan,
                             "std_return": statistics.pstdev(rets) if len(rets) > 1 else 0.0})
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    steps = sum(r["steps"] for r in records)
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
    p.add_argument("--max-steps", type=int, default=32, help="assistant turns per episode at most")
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
