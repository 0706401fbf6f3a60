"""Training, cold start and evaluation with ALFWorld's observation and action options
(``observation="history+admissible"``, ``action_format="choice"``): one prompt per turn, and a
checkpoint that carries the options to ``agentgym eval`` and the leaderboard."""

import json

import gymnasium as gym
import pytest

pytest.importorskip("alfworld")

from agentgym.envs.alfworld.generate import generate
from agentgym.train.base.flags import build
from agentgym.train.base.models import load_tokenizer
from agentgym.train.coldstart.expert import expert_episode
from agentgym.train.config.tree import TrainConfig
from agentgym.train.rollout.chat import ChatEncoder

OPTIONS = {"observation": "history+admissible", "history": 2, "action_format": "choice"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("alfworld_train"))
    generate(out, 4, seed=11, split="train")
    return out


@pytest.mark.engine
def test_expert_samples_prompt_with_the_latest_observation_only(root, tiny_path):
    tok = load_tokenizer(tiny_path)
    env = gym.make("ALFWorld-v0", data_path=root, split="train_all", expert=True, **OPTIONS)
    samples, record = expert_episode(env, ChatEncoder(tok), seed=0, layout="window", window=2)
    assert record["success"] and record["history_in_observation"] and len(samples) == record["turns"] >= 3
    for t, s in enumerate(samples):
        prompt = tok.decode([i for i, m in zip(s.input_ids, s.loss_mask) if not m])
        assert prompt.count("Task: ") == 1 and f"Now (step {t + 1} of 50)" in prompt
    with pytest.raises(ValueError, match="use layout='window'"):
        expert_episode(env, ChatEncoder(tok), seed=0, layout="concat")
    env.close()


@pytest.mark.engine
@pytest.mark.learning
def test_a_checkpoint_trained_with_the_options_is_evaluated_and_boarded_with_them(root, tmp_path, tiny_path):
    from agentgym.cli import main as cli_main
    from agentgym.envs.data_settings import DataSettingError
    from agentgym.leaderboard.specs import make_agent
    from agentgym.train.config.presets import resolve_env_kwargs
    from agentgym.train.evaluate import trained_env_kwargs
    from agentgym.train.loop import train

    kwargs = {"data_path": root, "max_turns": 2, **OPTIONS}
    # the ToolQA-text tiny model: a tokenizer built on ALFWorld text would replay 64 expert games first
    train(build(TrainConfig, model=tiny_path, env_id="ALFWorld-v0", env_kwargs=json.dumps(kwargs), split="train_all",
                layout="window",
                num_steps=1, num_groups=1, group_size=2, max_new_tokens=6, cold_start={"num_steps": 0}, eval_episodes=0,
                progress=False, quiet=True, tensorboard=False, output_dir=str(tmp_path / "run")))
    ckpt = str(tmp_path / "run" / "checkpoints" / "step_1")
    # the games live outside the checkpoint: a path the record may not choose, so the user names it
    with pytest.raises(DataSettingError, match="'data_path'.*outside"):
        trained_env_kwargs(ckpt, "ALFWorld-v0")
    assert resolve_env_kwargs("ALFWorld-v0", ckpt, overrides={"data_path": root})[1] == kwargs
    agent = make_agent(ckpt, ("ALFWorld-v0",))
    assert agent.trained_env_kwargs("ALFWorld-v0") == OPTIONS  # the board keeps its own data and turn limit
    out = tmp_path / "eval.json"
    assert cli_main(["eval", "--model", ckpt, "--env-id", "ALFWorld-v0", "--split", "train_all", "--num-episodes",
                     "2", "--batch-size", "2", "--max-new-tokens", "6", "--output", str(out),
                     "--env-kwargs", json.dumps({"data_path": root})]) == 0
    result = json.loads(out.read_text())
    assert result["num_episodes"] == 2 and result["turns"] == 2.0  # the recorded max_turns: the kwargs rode along
