"""Shared settings of the trainer tests (a uniquely named module: every test dir has a conftest)."""

from agentgym.train.base.flags import build
from agentgym.train.config.tree import TrainConfig

# single-hop ToolQA, two turns: cheap episodes a tiny model can learn the format of (with --preset
# none, so these are the env kwargs and nothing else)
TOOLQA_SMALL = '{"question_kinds": ["single_hop"], "max_turns": 2}'


def small_config(tmp_path, cls=TrainConfig, **kw):
    """A few quick steps on the tiny model, no cold start and no evaluation unless asked."""
    base = dict(model="tiny", preset="none", env_kwargs=TOOLQA_SMALL, num_steps=4, num_groups=2, group_size=2,
                max_new_tokens=12, micro_batch_size=3, num_epochs=2, num_minibatches=2, beta=0.01,
                output_dir=str(tmp_path / "run"), save_every=2, progress=False, quiet=True, tensorboard=True, seed=3,
                cold_start={"num_steps": 0}, eval_episodes=0)
    base.update(kw)
    return build(cls, **base)
