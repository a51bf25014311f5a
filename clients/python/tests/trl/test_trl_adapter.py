"""sandgym.trl against the real server and the real TRL: what GRPOTrainer's environment_factory sees."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
from _trl_gate import require_trl

require_trl()

from _server import REPO  # noqa: E402
from sandgym.trl import SandgymTRL  # noqa: E402

sys.path.insert(0, str(REPO / "examples" / "python"))
import trl_grpo  # noqa: E402


def _public_functions(cls: type) -> list[str]:
    # exactly how GRPOTrainer finds an environment's tools
    return sorted(n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_"))


def test_tool_env_methods_are_the_servers_tools(url):
    from transformers.utils import get_json_schema

    sg = SandgymTRL(url, "calculator-tools-v0")
    try:
        assert _public_functions(sg.environment_class) == ["calculate", "get_reward", "reset", "submit"]
        assert sg.reward_funcs == []  # get_reward owns the reward
        env = sg.environment_factory()
        for tool in sg.tools:
            schema = get_json_schema(getattr(env, tool["name"]))["function"]
            assert schema["name"] == tool["name"] and schema["description"] == tool["description"]
            params = tool["parameters"]
            assert set(schema["parameters"]["properties"]) == set(params["properties"])
            assert schema["parameters"].get("required", []) == params.get("required", [])
            for name, p in params["properties"].items():
                assert schema["parameters"]["properties"][name]["type"] == p["type"]
    finally:
        sg.close()


def test_multi_turn_tool_episode_as_trl_runs_it(url):
    """TRL calls reset(**row), then the tool methods by name with the parsed arguments, then get_reward()."""
    sg = SandgymTRL(url, "calculator-tools-v0")
    try:
        env = sg.environment_factory()
        task = env.reset(prompt=[], seed=9)
        assert "What is 26^3 - 7^5 + 379 * 7?" in task
        bad = env.calculate(expression="")  # fails the tool's schema: INVALID_ACTION, told to the model
        assert bad.startswith("Error: invalid action") and not env.done
        value = env.calculate(expression="26^3 - 7^5 + 379 * 7")
        assert float(value) == 26**3 - 7**5 + 379 * 7
        assert env.submit(answer=float(value)).startswith("Correct")
        assert env.submit(answer=1.0).startswith("Error: the episode has ended")
        assert env.get_reward() == pytest.approx(1.0)
        entry = sg.reward_log[-1]
        assert entry["reward"] == pytest.approx(sum(entry["reward_components"].values()))
        assert entry["steps"] == 2 and entry["invalid_actions"] == 1 and entry["seed"] == 9
        # the same instance is reset for the next rollout (TRL pools instances)
        env.reset(seed=9)
        assert env.submit(answer=0.0).startswith("Incorrect") and env.get_reward() == 0.0
    finally:
        sg.close()


def test_text_env_reward_func_steps_the_server(url):
    sg = SandgymTRL(url, "math-v0")
    try:
        assert _public_functions(sg.environment_class) == ["reset"]
        envs = [sg.environment_factory() for _ in range(3)]
        for e in envs:
            e.reset(seed=4)
        completions = [
            [{"role": "assistant", "content": "\\boxed{ 1 }"}],
            [{"role": "assistant", "content": "1"}],
            "\\boxed{-99999}",
        ]
        rewards = sg.reward_func(completions=completions, environments=envs)
        assert rewards[0] == pytest.approx(sg.reward_log[-3]["reward"])
        assert sg.reward_log[-3]["reward_components"]["format"] == pytest.approx(0.1)
        assert sg.reward_log[-2]["reward_components"]["format"] == 0.0
        assert all(
            r is not None and r == pytest.approx(sum(e.reward_components.values()))
            for r, e in zip(rewards, envs, strict=True)
        )
        with pytest.raises(ValueError, match="environment_factory"):
            sg.reward_func(completions=completions)
    finally:
        sg.close()


def test_failures_are_unscorable_not_zero(servers):
    server = servers.fresh()
    text = SandgymTRL(server.url, "math-v0")
    tools = SandgymTRL(server.url, "calculator-tools-v0")
    t_env, c_env = text.environment_factory(), tools.environment_factory()
    t_env.reset(seed=1)
    c_env.reset(seed=1)
    server.kill()
    with pytest.raises(Exception):  # noqa: B017 - TRL catches whatever a tool raises and counts a failed call
        c_env.calculate(expression="1+1")
    assert c_env.get_reward() is None
    assert text.reward_func(completions=["\\boxed{1}"], environments=[t_env]) == [None]
    assert text.reward_log[-1]["failure"]["code"] == "CONNECTION_CLOSED"
    fresh = tools.environment_factory()
    assert "environment unavailable" in fresh.reset(seed=1)
    assert fresh.get_reward() is None


def test_grpo_trainer_accepts_the_tool_env(url, tmp_path):
    """GRPOTrainer builds with the generated env class: TRL extracts the tools, validates the chat template
    (TRL's Qwen2.5 template on the local tokenizer), and renders the server's tool schema into the prompt."""
    from trl import GRPOConfig, GRPOTrainer

    tok = trl_grpo.tiny_tokenizer()
    model = trl_grpo.tiny_model(len(tok), 0)
    sg = SandgymTRL(url, "calculator-tools-v0")
    try:
        args = GRPOConfig(
            output_dir=str(tmp_path),
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            report_to="none",
            use_cpu=True,
            save_strategy="no",
        )
        trainer = GRPOTrainer(
            model=model,
            args=args,
            train_dataset=sg.dataset(range(4)),
            processing_class=tok,
            environment_factory=sg.environment_factory,
            reward_funcs=sg.reward_funcs,
        )
        names = sorted(t.__name__ for t in trainer._env_tools[None])
        assert names == ["calculate", "submit"]
        assert trainer.reward_func_names[-1] == sg.environment_class.__name__
        text = tok.apply_chat_template(
            [{"role": "user", "content": "hi"}],
            tools=trainer._env_tools[None],
            tokenize=False,
            add_generation_prompt=True,
        )
        assert '"name": "calculate"' in text and '"expression"' in text
    finally:
        sg.close()


def test_dataset_rows(url):
    sg = SandgymTRL(url, "wordle-v0")
    try:
        rows = sg.dataset_rows([1, 2], options=[{"word": "crane"}, {"word": "plumb"}])
        assert [r["seed"] for r in rows] == [1, 2] and rows[0]["options"] == '{"word": "crane"}'
        env = sg.environment_factory()
        assert "Wordle" in env.reset(**rows[0])
        with pytest.raises(ValueError):
            sg.dataset_rows([1], options=[{"word": "crane"}, {"word": "plumb"}])
        assert Path(trl_grpo.__file__).name == "trl_grpo.py"
    finally:
        sg.close()
    with pytest.raises(ValueError, match="discrete"):
        SandgymTRL(url, "test/noop-v0")
