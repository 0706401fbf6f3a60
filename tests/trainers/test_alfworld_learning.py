"""RL learns on ALFWorld: the ``alfworld-l0`` recipe, scaled down to a few minutes, raises success
on the pool of games it trains on (L0) above its cold start's.

A scaled-down copy of the README's ALFWorld job (docs/benchmarks.md, "ALFWorld-v0: what RL learns
at L0"): the same env (the ``tiny-rooms`` preset) on a 1,200-game generated set whose L0 holds 16
games, a cold start of ``tiny-small`` on 128 expert games of ``train``, then filtered
self-imitation (``trainers/rft.py``, lr 2e-4) on the 16 games, each played about 50 times. The
same run on seeds 0, 1 and 2 took L0 (64 episodes: each game 4 times) from 0.328 to 0.453, 0.266
to 0.406 and 0.250 to 0.484 (gains 0.125, 0.141, 0.234; 8-9 minutes each beside two other runs on
two cores); the test asserts half the smallest gain.

L0 is evaluated over 128 episodes (each game 8 times): the same seed-0 run is a new draw of its
trajectory wherever the float results of a step differ (another CPU's vector units), and over 64
episodes one draw's gain is known to within about +-0.17 (95%), over 128 within about +-0.12. On
an AVX2-only machine seed 0 took L0 from 0.359 to 0.391 over 64 episodes, and from 0.320 to 0.398
over 128 (13 to 19 minutes beside the main job's learning test under `pytest -n auto`)."""

import pytest

pytest.importorskip("alfworld")

import rft  # noqa: E402

from agentgym.train.base.flags import build  # noqa: E402
from agentgym.train.config.recipes import apply_recipe  # noqa: E402

SMALL_POOL = '{"data_path": "generated:1200:tiny", "l0_every": 40}'
"""1,200 tiny-room games: 640 of them training games of the four seen types, every 40th of each
type in L0, 16 games"""
MARGIN = 0.06
"""The least L0 gain asserted: half the smallest of the three seeds' gains (0.125)"""


def small_l0_run(output_dir: str, seed: int, num_steps: int = 50):
    """The alfworld-l0 recipe on a 16-game pool with RFT at lr 2e-4: a 128-game cold start of 300
    steps, then ``num_steps`` steps of 4 x 4 episodes, with L0 evaluated whole (each game 8 times)
    before and after."""
    recipe = apply_recipe(rft.RFTTrainConfig, rft.defaults(), "alfworld-l0")
    return build(rft.RFTTrainConfig, _default=recipe, env_kwargs=SMALL_POOL, seed=seed, num_steps=num_steps,
                 learning_rate=2e-4, cold_start={"num_episodes": 128, "num_steps": 300}, eval_split="L0",
                 eval_episodes=128, eval_every=0, save_every=0, output_dir=output_dir, progress=False, quiet=True,
                 tensorboard=False)


@pytest.mark.engine
@pytest.mark.learning
def test_self_imitation_raises_l0_success_over_its_cold_start(tmp_path, one_cpu_thread):
    result = rft.main(small_l0_run(str(tmp_path / "run"), seed=0))
    before, after = result.evaluation["before"]["success_rate"], result.evaluation["after"]["success_rate"]
    assert after - before >= MARGIN, (before, after)
