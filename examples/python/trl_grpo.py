#!/usr/bin/env python3
"""Train a policy with TRL's GRPOTrainer on a sandgym env, rewards from the server (docs/TRAINING.md).

    python examples/python/trl_grpo.py --url ws://127.0.0.1:8765/v2/ws --env math-v0 --steps 40 \
        --out grpo-run.json [--model PATH_TO_A_LOCAL_MODEL]

Without --model it trains a tiny, randomly initialised Qwen2-architecture causal LM built from a config
here, with a word-level tokenizer built here too (nothing is downloaded): its vocabulary is the chat
template's markers, digits, ``\\boxed{`` and ``}``, every other word is [UNK]. Such a model cannot read a
word problem, but it can learn within a few dozen steps to answer in the form math-v0's rubric rewards
(``format``: a number inside ``\\boxed{}``), which is what the CI test checks. With --model (a directory
with a model and its tokenizer, e.g. a small instruct model you downloaded) the same run trains it.

The tokenizer uses TRL's own Qwen2.5 chat template (shipped in the trl package), so TRL knows how to
parse tool calls from it: tool envs (calculator-tools-v0, shell-v0, code-v0) run multi-turn through
``environment_factory`` exactly like text envs, though a tiny random model will not learn to call tools.

Generation is transformers' ``generate`` on CPU (``use_vllm=False``). The run writes ``--out``: the
per-step log of the trainer, every reward the server gave (with its components), and the settings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental in TRL 1.16
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever fetched from a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_URL = "ws://127.0.0.1:8765/v2/ws"

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
                  "</tool_response>"]
ANSWER_TOKENS = ["\\boxed{", "}", *"0123456789"]
WORDS = ["[UNK]", "system", "user", "assistant", "tool", *ANSWER_TOKENS]


def tiny_tokenizer() -> Any:
    """A word-level tokenizer built locally, with TRL's Qwen2.5 chat template (tool-call parsing known to TRL)."""
    import trl
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(r"\\boxed\{|\d|\}"), behavior="isolated"),
    ])
    tok.add_special_tokens(SPECIAL_TOKENS)
    template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="<|endoftext|>",
                                   eos_token="<|im_end|>", chat_template=template, padding_side="left")


def tiny_model(vocab_size: int, seed: int) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, pad_token_id=0)
    return AutoModelForCausalLM.from_config(config)


def train(url: str, env_id: str = "math-v0", *, steps: int = 40, seed: int = 0, model_path: str | None = None,
          num_generations: int = 8, prompts_per_step: int = 2, max_completion_length: int = 16,
          learning_rate: float = 2e-2, out_dir: str | None = None, env_kwargs: dict[str, Any] | None = None,
          max_tool_calling_iterations: int = 4) -> dict[str, Any]:
    """One GRPO run; returns ``{"log": trainer log history, "rewards": every reward the server gave, ...}``."""
    import tempfile

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import GRPOConfig, GRPOTrainer

    from sandgym.trl import SandgymTRL

    random.seed(seed)
    set_seed(seed)
    torch.use_deterministic_algorithms(True)
    generation_kwargs: dict[str, Any] | None = None
    if model_path:
        tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    else:
        tokenizer = tiny_tokenizer()
        model = tiny_model(len(tokenizer), seed)
        # The tiny model writes in the answer alphabet only (constrained decoding, as a JSON-mode server does):
        # digits, \boxed{, } and the end-of-turn token; the chat markers, roles and [UNK] are suppressed, so
        # about one random completion in ten has the rubric's format (a number inside \boxed{}) and many
        # groups carry a learning signal from the first step.
        keep = {tokenizer.convert_tokens_to_ids(t) for t in ANSWER_TOKENS} | {tokenizer.eos_token_id}
        generation_kwargs = {"suppress_tokens": [i for i in range(len(tokenizer)) if i not in keep]}
    sg = SandgymTRL(url, env_id, env_kwargs=env_kwargs)
    # one task per prompt, cycled: the seeds name math-v0's problems
    dataset = sg.dataset(range(1000, 1000 + max(steps * prompts_per_step, prompts_per_step)))
    out_dir = out_dir or tempfile.mkdtemp(prefix="sandgym-grpo-")
    args = GRPOConfig(
        output_dir=out_dir, max_steps=steps, seed=seed, data_seed=seed, learning_rate=learning_rate,
        per_device_train_batch_size=num_generations * prompts_per_step, num_generations=num_generations,
        gradient_accumulation_steps=1, max_completion_length=max_completion_length, temperature=1.0,
        beta=0.0, logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, bf16=False, fp16=False,
        disable_tqdm=True, dataloader_num_workers=0, max_tool_calling_iterations=max_tool_calling_iterations,
        shuffle_dataset=False, lr_scheduler_type="constant", warmup_steps=0, generation_kwargs=generation_kwargs,
    )
    trainer = GRPOTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                          environment_factory=sg.environment_factory, reward_funcs=sg.reward_funcs)
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    steps_log = [row for row in trainer.state.log_history if "reward" in row]
    result = {"env_id": env_id, "url": url, "seed": seed, "steps": steps, "num_generations": num_generations,
              "prompts_per_step": prompts_per_step, "batch": num_generations * prompts_per_step,
              "max_completion_length": max_completion_length, "learning_rate": learning_rate,
              "model": model_path or "tiny random Qwen2 (2 layers, hidden 64)", "train_seconds": round(seconds, 2),
              "log": steps_log, "rewards": sg.reward_log, "reward_func_names": list(trainer.reward_func_names)}
    sg.close()
    return result


def plot(result: dict[str, Any], path: str) -> None:
    """The reward curve of a run (mean reward per step and its moving average) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ys = [row["reward"] for row in result["log"]]
    xs = list(range(1, len(ys) + 1))
    k = 5
    avg = [sum(ys[max(0, i - k + 1): i + 1]) / len(ys[max(0, i - k + 1): i + 1]) for i in range(len(ys))]
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    ax.plot(xs, ys, "o", ms=3, alpha=0.5, label="mean reward of the step's batch")
    ax.plot(xs, avg, "-", lw=2, label=f"moving average ({k} steps)")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(f"{result['env_id']} reward (from the server)")
    ax.set_title(f"GRPOTrainer on sandgym {result['env_id']}: {result['model']}, "
                 f"{result['batch']} completions/step", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=DEFAULT_URL)
    p.add_argument("--env", default="math-v0")
    p.add_argument("--env-kwargs", type=json.loads, default=None)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default=None, help="a local model directory (default: a tiny random model)")
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--max-completion-length", type=int, default=16)
    p.add_argument("--learning-rate", type=float, default=2e-2)
    p.add_argument("--out", default="grpo-run.json")
    p.add_argument("--plot", default=None, help="write the reward curve here (PNG; needs matplotlib)")
    a = p.parse_args(argv)
    result = train(a.url, a.env, steps=a.steps, seed=a.seed, model_path=a.model, num_generations=a.num_generations,
                   prompts_per_step=a.prompts_per_step, max_completion_length=a.max_completion_length,
                   learning_rate=a.learning_rate, env_kwargs=a.env_kwargs)
    Path(a.out).write_text(json.dumps(result, indent=1, default=str))
    rewards = [row["reward"] for row in result["log"]]
    n = max(1, len(rewards) // 4)
    print(f"{len(rewards)} GRPO steps on {a.env} in {result['train_seconds']} s; {len(result['rewards'])} rewards "
          f"from the server; mean reward first {n} steps {sum(rewards[:n]) / n:.3f}, last {n} steps "
          f"{sum(rewards[-n:]) / n:.3f}; log: {a.out}")
    if a.plot:
        plot(result, a.plot)
        print(f"reward curve: {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
