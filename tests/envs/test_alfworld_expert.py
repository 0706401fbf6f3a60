"""The planner expert solves the generated games: they are solvable, and the expert hook works."""

import multiprocessing
import time
from collections import Counter

import pytest

pytest.importorskip("alfworld")

from agentgym.envs.alfworld.env import ALFWorldEnv
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.alfworld.tasks import TASK_TYPES

NUM_GAMES = 60


def _solve(args):
    """Play the planner expert on some games; (task_id, solved) for each."""
    root, task_ids = args
    env = ALFWorldEnv(data_path=root, split="train_all", expert=True)
    out = []
    for task_id in task_ids:
        _, info = env.reset(options={"task_id": task_id})
        terminated = truncated = False
        while not (terminated or truncated) and info.get("expert_action"):
            _, _, terminated, truncated, info = env.step(info["expert_action"])
        out.append((task_id, bool(terminated and info.get("success"))))
    env.close()
    return out


@pytest.mark.engine
def test_planner_expert_solves_95_percent_of_60_generated_games(tmp_path):
    generate(str(tmp_path), NUM_GAMES, seed=2024)
    games = ALFWorldEnv(data_path=str(tmp_path), split="train_all").games
    assert len(games) == NUM_GAMES
    assert Counter(g.task_type for g in games) == {t: NUM_GAMES // len(TASK_TYPES) for t in TASK_TYPES}
    ids = [g.task_id for g in games]
    start = time.time()
    # two worker processes: each plays its own engine, as a vector env's workers would
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = [r for part in pool.map(_solve, [(str(tmp_path), ids[0::2]), (str(tmp_path), ids[1::2])])
                   for r in part]
    solved = sum(ok for _, ok in results)
    type_of = {g.task_id: g.task_type for g in games}
    per_type = {t: sum(ok for task_id, ok in results if type_of[task_id] == t) for t in TASK_TYPES}
    print(f"planner expert solved {solved}/{len(results)} in {time.time() - start:.1f}s; per type {per_type}")
    assert solved / len(results) >= 0.95
