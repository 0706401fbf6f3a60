"""Rollouts on an env whose observations carry the task and the last steps
(ALFWorld ``observation="history+admissible"``): one prompt per turn of the system prompt and the
latest observation, ``concat`` refused, and step grouping and revisit labels read the engine's text."""

import re

import pytest

pytest.importorskip("alfworld")

from agentgym.agents import Completion, Policy, SamplingConfig
from agentgym.envs.alfworld.generate import generate
from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.config.tree import SFTRunConfig, TrainConfig
from agentgym.train.methods.gcd.steps import labelled_steps
from agentgym.train.methods.gigpo import anchors_of
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import collect_episodes

HISTORY = {"observation": "history+admissible", "history": 1, "action_format": "choice", "max_turns": 4}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("alfworld_rollout"))
    generate(out, 3, seed=7, split="train")
    return out


class BackAndForth(Policy):
    """Goes between two places by name (step 1 to the first, step 2 to the second, ...), so the
    same engine state comes back; records its prompts."""

    sampling = SamplingConfig(max_new_tokens=8)

    def __init__(self, places):
        self.places, self.prompts = places, []

    def generate(self, prompts, sampling=None):
        self.prompts += prompts
        steps = [int(re.search(r"Now \(step (\d+) of", p[-1]["content"]).group(1)) for p in prompts]
        return [Completion(text=f"<action>go to {self.places[(k - 1) % 2]}</action>") for k in steps]


@pytest.mark.engine
def test_window_prompts_are_the_latest_observation_and_anchors_the_engine_text(root):
    envs = make_env_batch("ALFWorld-v0", 1, 2, "sync", {"data_path": root, "split": "train_all", **HISTORY})
    try:
        admissible = envs.reset_groups([0])[0][1]["admissible_actions"]
        places = [a[len("go to "):] for a in admissible if a.startswith("go to")][:2]
        policy = BackAndForth(places)
        episodes, _ = collect_episodes(envs, policy, None, [0], RolloutConfig(layout="window", window=2))
        with pytest.raises(ValueError, match="use layout='window'"):
            collect_episodes(envs, policy, None, [0], RolloutConfig(layout="concat"))
    finally:
        envs.close()
    ep = episodes[0]
    assert ep.history_in_observation and len(ep.turns) == 4
    # every prompt: the system prompt and one observation; episode 0's are its observations in turn
    assert all([m["role"] for m in p] == ["system", "user"] for p in policy.prompts)
    assert [p[1]["content"] for p in policy.prompts[::2]] == ep.observations[:4]
    # the engine's text repeats (back and forth) where the wrapped observation never does
    raw = ep.raw_observations
    assert raw[1] == raw[3] and ep.observations[1] != ep.observations[3]
    anchors = anchors_of(ep)
    assert anchors[1] == anchors[3] == ("text", raw[1])
    reasons = [step.reason for _, step in labelled_steps(episodes) if step.episode == 0]
    assert reasons[1] == "revisit"


def test_trainer_configs_refuse_concat_with_history_observations():
    kwargs = '{"observation": "history+admissible"}'
    with pytest.raises(ConfigError, match="--layout window"):
        build(TrainConfig, env_id="ALFWorld-v0", env_kwargs=kwargs, layout="concat").validate()
    with pytest.raises(ConfigError, match="--layout window"):
        build(SFTRunConfig, env_id="ALFWorld-v0", env_kwargs=kwargs, layout="concat").validate()
    cfg = build(TrainConfig, env_id="ALFWorld-v0", env_kwargs=kwargs, layout="window")
    cfg.validate()
    assert cfg.env.kwargs()["observation"] == "history+admissible"
