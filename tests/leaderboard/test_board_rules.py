"""A board scores every agent by the board's rules: neither a checkpoint's record nor an agent's own
env settings choose the PRS weights, gate or stage its return is computed with."""

from agentgym.leaderboard import RunnerConfig
from agentgym.leaderboard.cli import play_board

QUIET = RunnerConfig(num_envs=2, progress=False, agent_timeout=30.0)


def test_no_agent_sets_how_the_board_computes_its_prs_return(tmp_path):
    logs = []
    agents = ["expert", "trained=board_agents:TrainedWithOtherWeights", "scores=board_agents:ScoresItself"]
    rows, plan = play_board(agents, ["ToolQA-v0"], ["test"], str(tmp_path), limit=3, runner=QUIET, log=logs.append)
    rows = {r["agent"]: r for r in rows}
    # the recorded weights are not applied (the same episodes, the same return as the expert's), nor
    # stamped; a task-shaping setting of the record still is
    played = rows["trained"]["stamps"]["env_kwargs"]
    assert not {"prs_weights", "tau_fmt", "prs_stage"} & set(played) and played["top_k"] == 1
    assert rows["trained"]["success"] == rows["expert"]["success"] == 1.0
    assert rows["trained"]["prs_return"] == rows["expert"]["prs_return"] < 1.0
    # an agent that asks for its own scoring does not play, and the board says why
    skipped = {name: why for name, _, why in plan.skipped}
    assert "scores" not in rows and "'prs_weights'" in skipped["scores"] and "board" in skipped["scores"]
    # the board's own --env-kwargs do set them, for every agent alike
    rows, _ = play_board(["expert", "trained=board_agents:TrainedWithOtherWeights"], ["ToolQA-v0"], ["test"],
                         str(tmp_path / "weighted"), {"prs_weights": [1.0, 0.0, 0.0]}, limit=3, runner=QUIET,
                         log=logs.append)
    assert [r["prs_return"] for r in rows] == [1.0, 1.0]
