"""benchmarks/learning_curves.py end to end at a toy size: every cell trains through its trainer
script, on one episode budget, with a held-out curve; cells are resumable; the report is written."""

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

from agentgym.train.base.flags import build

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("learning_curves", ROOT / "benchmarks" / "learning_curves.py")
lc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lc)

TOY = {"env_kwargs": '{"question_kinds": ["single_hop"], "max_turns": 2}',
       "cold_start": {"num_steps": 2, "num_episodes": 4, "batch_size": 2, "judge_samples": 2}, "num_groups": 2,
       "group_size": 2, "max_new_tokens": 8, "micro_batch_size": 4, "beta": 0.0}


def run(out, *extra):
    return lc.main(["--methods", "grpo", "vspo", "gcd", "grpo-binary", "--seeds", "0", "1", "--eval-every", "2",
                    "--eval-episodes", "2", "--cpu-threads", "1", "--model", "tiny", "--out", str(out), "--override", json.dumps(TOY),
                    *extra])


@pytest.mark.learning
def test_cells_share_a_budget_resume_and_report(tmp_path):
    summary = run(tmp_path, "--max-episodes", "12")
    report = json.loads((tmp_path / "learning_curves_ToolQA-v0.json").read_text())
    cells = {(c["method"], c["seed"]): c for c in report["cells"]}
    assert set(cells) == {(m, s) for m in ("grpo", "vspo", "gcd", "grpo-binary") for s in (0, 1)}
    for (method, _seed), cell in cells.items():
        curve = cell["curve"]
        assert curve[0]["step"] == 0 and curve[0]["episodes"] == 0
        # 4 episodes a step: the budget ends a run after 3 steps, or sooner when VSPO resamples
        if method == "vspo":
            assert cell["episodes"] >= 12 and cell["steps"] <= 3, cell
        else:
            assert (cell["steps"], cell["episodes"]) == (3, 12), (method, cell)
        assert [p["step"] for p in curve[1:-1]] == list(range(2, cell["steps"], 2))
    # GCD's cold start mixes in judge samples: its own recipe; the others share one per seed
    assert sorted(os.listdir(tmp_path / "cold_start" / "ToolQA-v0")) == [
        "judge-seed0", "judge-seed1", "plain-seed0", "plain-seed1"]
    assert set(summary["methods"]) == {"grpo", "vspo", "gcd", "grpo-binary"}
    assert summary["methods"]["grpo"]["seeds"] == [0, 1]
    md = (tmp_path / "learning_curves_ToolQA-v0.md").read_text()
    # rows in the registry's order (GRPO, the other methods by name), then the benchmark's variants
    assert [line.split(" | ")[0] for line in md.splitlines() if line.startswith("| ")] == [
        "| method", "| grpo", "| gcd", "| vspo", "| grpo-binary"]
    assert (tmp_path / "learning_curves_ToolQA-v0.png").stat().st_size > 1000

    # a finished cell is read back; a cell cut short (no cell.json) resumes from its checkpoint, here
    # two at once in child processes (--jobs 2)
    cut = [tmp_path / "cells" / "ToolQA-v0" / method / "seed1" for method in ("grpo", "gcd")]
    before = [json.loads((cell_dir / "cell.json").read_text()) for cell_dir in cut]
    for cell_dir in cut:
        (cell_dir / "cell.json").unlink()
        shutil.rmtree(cell_dir / "checkpoints" / "step_3")
        (cell_dir / "checkpoints" / "latest").write_text("step_2")
    again = run(tmp_path, "--max-episodes", "12", "--jobs", "2")
    strip = lambda curve: [{k: v for k, v in p.items() if k != "seconds"} for p in curve]  # noqa: E731
    for cell_dir, old in zip(cut, before):
        after = json.loads((cell_dir / "cell.json").read_text())
        assert strip(after["curve"]) == strip(old["curve"]), cell_dir
    assert sorted(os.listdir(tmp_path / "logs" / "ToolQA-v0")) == [
        "cell-gcd-seed1.log", "cell-grpo-seed1.log", "cold_start-gcd-seed1.log", "cold_start-grpo-seed1.log"]
    assert again["methods"]["vspo"] == summary["methods"]["vspo"]

    # another machine takes the finished cells from the report and runs none of them again
    report_path = str(tmp_path / "learning_curves_ToolQA-v0.json")
    elsewhere = run(tmp_path / "elsewhere", "--max-episodes", "12", "--cells-from", report_path)
    assert json.loads(json.dumps(elsewhere)) == json.loads(json.dumps(again))
    assert not (tmp_path / "elsewhere" / "cold_start").exists()
    with pytest.raises(SystemExit, match="max_episodes"):
        run(tmp_path / "other", "--max-episodes", "16", "--cells-from", report_path)


class Args:
    """The benchmark's command line, as cell_config reads it."""

    env_id, env_kwargs, max_episodes, eval_every, eval_episodes, cpu_threads = "ToolQA-v0", None, 8, 2, 2, 1
    eval_split = None
    override = {}
    recipe = None


def test_binary_cells_train_on_binary_reward_and_the_rest_on_prs(tmp_path):
    _, binary = lc.cell_config(Args, "grpo-binary", 0, "tiny", str(tmp_path))
    _, prs = lc.cell_config(Args, "vspo", 0, "tiny", str(tmp_path))
    assert binary.env.reward_mode == "binary" and prs.env.reward_mode == "prs"
    assert prs.run.max_episodes == 8 and prs.eval.eval_every == 2 and prs.run.resume == "auto"
    assert type(prs).__name__ == "VSPOTrainConfig" and prs.run.output_dir == str(tmp_path)


def test_async_cells_run_their_method_one_step_ahead_and_are_not_in_the_default_set(tmp_path):
    module, cell = lc.cell_config(Args, "vspo-async1", 0, "tiny", str(tmp_path))
    _, sync = lc.cell_config(Args, "vspo", 0, "tiny", str(tmp_path))
    assert module is lc.trainer("vspo") and type(cell).__name__ == "VSPOTrainConfig"
    assert cell.rollout.async_steps == 1 and sync.rollout.async_steps == 0
    assert cell.run.save_every == Args.eval_every  # every checkpoint step drains the pipeline
    assert lc.cell_config(Args, "grpo-async1", 0, "tiny", str(tmp_path))[1].rollout.async_steps == 1
    assert "vspo-async1" not in lc.DEFAULT_METHODS and "grpo-async1" not in lc.DEFAULT_METHODS
    assert len(lc.DEFAULT_METHODS) == 7


def test_recipe_cells_take_the_recipe_and_the_control_and_gcd_variants_differ_in_one_setting(tmp_path):
    class Recipe(Args):
        env_id, recipe, eval_every, max_episodes = "ALFWorld-v0", "alfworld-l0", 100, 4800

    _, grpo = lc.cell_config(Recipe, "grpo", 1, "m", str(tmp_path))
    assert (grpo.env.preset, grpo.env.split, grpo.rollout.group_size, grpo.optim.learning_rate) == (
        "tiny-rooms", "L0", 4, 1e-4)
    assert (grpo.run.seed, grpo.model.model, grpo.run.max_episodes) == (1, "m", 4800)
    _, control = lc.cell_config(Recipe, "control", 1, "m", str(tmp_path))
    assert control.optim.learning_rate == 1e-12
    assert build(type(control), _default=control, learning_rate=1e-4) == grpo  # the same run in every other setting
    _, gcd = lc.cell_config(Recipe, "gcd", 1, "m", str(tmp_path))
    _, plain = lc.cell_config(Recipe, "gcd-nocorrection", 1, "m", str(tmp_path))
    assert gcd.gcd.correction and not plain.gcd.correction and gcd.env.split == plain.env.split == "L0"
    assert not {"control", "gcd-nocorrection", "rft"} & set(lc.DEFAULT_METHODS)


def test_a_cells_totals_read_its_metrics(tmp_path):
    rows = [{"step": 1, "groups/played_tied_frac": 0.5, "vspo/groups_replaced": 2},
            {"step": 2, "groups/played_tied_frac": 0.25, "vspo/groups_replaced": 1}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert lc.run_totals(str(tmp_path / "metrics.jsonl")) == {"tied_frac": 0.375, "groups_replaced": 3}
    assert lc.run_totals(str(tmp_path / "none.jsonl")) == {"tied_frac": None, "groups_replaced": 0}


def test_a_method_run_on_fewer_seeds_says_how_many_in_the_table():
    def cell(method, seed, end):
        return {"method": method, "seed": seed, "episodes": 8, "steps": 2,
                "curve": [{"step": 0, "episodes": 0, "seconds": 0.0, "success": 0.1, "return": 0.4},
                          {"step": 2, "episodes": 8, "seconds": 1.0, "success": end, "return": 0.5}]}

    summary = lc.summarize([cell("grpo", 0, 0.3), cell("grpo", 1, 0.2), cell("ppo", 0, 0.25)], 0.2)
    rows = [line.split(" | ")[0] for line in lc.table("ToolQA-v0", summary).splitlines() if line.startswith("| ")]
    assert rows == ["| method", "| grpo", "| ppo (1 seed)"]


def test_several_eval_splits_reach_the_cells_and_get_a_table_by_split(tmp_path):
    class Levels(Args):
        eval_split = "valid,test"

    assert lc.cell_config(Levels, "grpo", 0, "tiny", str(tmp_path))[1].eval.eval_splits == ("valid", "test")
    assert lc.cell_config(Args, "grpo", 0, "tiny", str(tmp_path))[1].eval.eval_split == "valid"

    def cell(method, seed, valid, test):
        point = lambda step, v, t: {"step": step, "episodes": 4 * step, "seconds": 1.0, "success": v,  # noqa: E731
                                    "return": 0.4, "valid/success": v, "valid/return": 0.4,
                                    "test/success": t, "test/return": 0.4}
        return {"method": method, "seed": seed, "episodes": 8, "steps": 2,
                "curve": [point(0, 0.1, 0.2), point(2, valid, test)]}

    cells = [cell("grpo", 0, 0.3, 0.2), cell("grpo", 1, 0.5, 0.4), cell("vspo", 0, 0.1, 0.3)]
    summary = lc.summarize(cells, 0.2)
    lc.plot("ToolQA-v0", cells, str(tmp_path / "by_split.png"))  # a success panel per split
    assert (tmp_path / "by_split.png").stat().st_size > 1000
    assert summary["methods"]["grpo"]["splits"] == {"valid": {"before": [0.1, 0.1], "after": [0.3, 0.5]},
                                                    "test": {"before": [0.2, 0.2], "after": [0.2, 0.4]}}
    md = lc.table("ToolQA-v0", summary)
    assert "| method | valid | test |" in md
    row = next(line for line in md.splitlines() if line.startswith("| grpo | 0.100 → 0.400"))
    assert row.startswith("| grpo | 0.100 → 0.400 (+0.300 ± ") and "| 0.200 → 0.300 (+0.100 ± " in row
    # one-split cells: no such table
    plain = [{k: v for k, v in c.items()} for c in [cell("grpo", 0, 0.3, 0.2)]]
    for c in plain:
        c["curve"] = [{k: v for k, v in p.items() if "/" not in k} for p in c["curve"]]
    assert "by split" not in lc.table("ToolQA-v0", lc.summarize(plain, 0.2))


def test_ppo_cells_play_one_episode_per_task_on_the_same_episodes_per_step(tmp_path):
    _, grpo = lc.cell_config(Args, "grpo", 0, "tiny", str(tmp_path))
    _, ppo = lc.cell_config(Args, "ppo", 0, "tiny", str(tmp_path))
    assert (ppo.rollout.num_groups, ppo.rollout.group_size) == (32, 1)
    assert ppo.rollout.num_groups * ppo.rollout.group_size == grpo.rollout.num_groups * grpo.rollout.group_size
    assert ppo.run.max_episodes == grpo.run.max_episodes == 8


@pytest.mark.learning
def test_jobs_start_no_cell_whose_cold_start_failed(tmp_path, capsys):
    with pytest.raises(RuntimeError, match="1 learning-curve job"):
        lc.main(["--methods", "grpo", "vspo", "--seeds", "0", "--jobs", "2", "--model", "tiny",
                 "--env-kwargs", '{"no_such_option": 1}', "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert "cold_start grpo seed 0 failed" in err and "no_such_option" in err
    assert "cell grpo seed 0 not started" in err and "cell vspo seed 0 not started" in err
    assert not (tmp_path / "cells").exists()


def test_a_final_evaluation_measures_each_cell_and_its_cold_start_once(tmp_path):
    def bench(*extra):
        return lc.main(["--methods", "grpo", "control", "--seeds", "0", "--eval-every", "2", "--eval-episodes", "2",
                        "--cpu-threads", "1", "--model", "tiny", "--out", str(tmp_path), "--override", json.dumps(TOY),
                        "--max-episodes", "4", *extra])

    bench()  # finished cells without one
    cells = tmp_path / "cells" / "ToolQA-v0"
    assert "final_eval" not in json.loads((cells / "grpo" / "seed0" / "cell.json").read_text())
    summary = bench("--final-eval-episodes", "3")  # finished cells get it
    finals = {m: json.loads((cells / m / "seed0" / "cell.json").read_text())["final_eval"] for m in ("grpo", "control")}
    for fe in finals.values():
        assert fe["split"] == "valid" and fe["episodes"] == 3 and 0 <= fe["before"] <= 1 and 0 <= fe["after"] <= 1
    # the two cells share their cold start: it is evaluated once, and both start from its result
    assert finals["grpo"]["before"] == finals["control"]["before"]
    # the control (lr 1e-12) plays as its cold start does: both evaluated with the same settings
    control = [json.loads(p.read_text())["episodes"] for p in (
        tmp_path / "cold_start" / "ToolQA-v0" / "plain-seed0" / "eval-valid-3.json", cells / "control" / "seed0" / "eval-valid-3.json")]
    assert control[0] == control[1]
    kept = sorted(p.name for p in (tmp_path / "cold_start" / "ToolQA-v0" / "plain-seed0").glob("eval-*.json"))
    assert kept == ["eval-valid-3.json"]
    played = json.loads((cells / "grpo" / "seed0" / "eval-valid-3.json").read_text())
    assert played["num_episodes"] == 3 and played["success_rate"] == finals["grpo"]["after"]
    assert summary["methods"]["grpo"]["final_eval"]["after"] == [finals["grpo"]["after"]]
    md = (tmp_path / "learning_curves_ToolQA-v0.md").read_text()
    assert "Final evaluation on valid, 3 episodes per policy" in md and "\n| control | 0 | " in md
    # asked again, nothing is played again
    stamp = (cells / "grpo" / "seed0" / "eval-valid-3.json").stat().st_mtime_ns
    bench("--final-eval-episodes", "3")
    assert (cells / "grpo" / "seed0" / "eval-valid-3.json").stat().st_mtime_ns == stamp
