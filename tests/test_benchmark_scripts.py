"""Benchmark scripts: the ``bench`` extra covers their imports, and a missing one stops them at once."""

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _imported_modules() -> set[str]:
    local = {p.stem for p in BENCHMARKS.rglob("*.py")}
    names = set()
    for path in BENCHMARKS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in local and n != "agentgym"}


def _requirement_names(extra: str) -> set[str]:
    """Distributions the package and ``extra`` install, following the extra's own ``agentgym[...]``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names, todo, seen = set(), [None, extra], set()
    while todo:
        group = todo.pop()
        if group in seen:
            continue
        seen.add(group)
        for req in project["dependencies"] if group is None else project["optional-dependencies"][group]:
            name, extras = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", req).groups()
            if name == "agentgym":
                todo += [e.strip() for e in extras.split(",")]
            else:
                names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


def test_the_bench_extra_installs_every_module_the_benchmarks_import():
    provided = importlib.metadata.packages_distributions()
    required = _requirement_names("bench")
    modules = _imported_modules()
    assert {"psutil", "matplotlib", "torch", "trl"} <= modules
    uncovered = {m for m in modules
                 if not {re.sub(r"[-_.]+", "-", d).lower() for d in provided.get(m, [m])} & required}
    assert not uncovered, f"imported by benchmarks/ but not installed by [bench]: {sorted(uncovered)}"


def _run_without(module: str, script: str, *argv: str) -> subprocess.CompletedProcess:
    """Run a benchmark script as `python script ...` would, with ``module`` unimportable."""
    code = (f"import runpy, sys; sys.modules[{module!r}] = None; sys.argv = [{script!r}, *{list(argv)!r}]; "
            f"runpy.run_path({script!r}, run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("script, module", [
    ("benchmarks/engine_overhead.py", "psutil"),
    ("benchmarks/vector_throughput.py", "matplotlib"),
    ("benchmarks/overhead/scienceworld.py", "psutil"),
    ("benchmarks/trainer_throughput.py", "transformers"),
    ("benchmarks/async_rollouts.py", "matplotlib"),
    ("benchmarks/window_update.py", "transformers"),
    ("benchmarks/embodied_prompts.py", "scienceworld"),
    ("benchmarks/fresh_games.py", "transformers"),
])
def test_a_benchmark_missing_a_module_stops_before_measuring_and_names_the_extra(tmp_path, script, module):
    out = tmp_path / "results"
    argv = {"benchmarks/engine_overhead.py": ["--out", str(out / "overhead.json")],
            "benchmarks/vector_throughput.py": ["--envs", "ToolQA-v0", "--sizes", "1", "--seconds", "0.2",
                                                "--out", str(out)],
            "benchmarks/overhead/scienceworld.py": ["--tasks", "boil", "--repeats", "1"],
            "benchmarks/trainer_throughput.py": ["--skip-trl", "--workdir", str(tmp_path / "work")],
            "benchmarks/async_rollouts.py": ["--env-id", "ToolQA-v0", "--out", str(out)],
            "benchmarks/window_update.py": ["--output", str(out / "window_update.json")],
            "benchmarks/embodied_prompts.py": ["--episodes", "1", "--output", str(out / "embodied_prompts.json")],
            "benchmarks/fresh_games.py": ["--models", "m", "--cold-start", "m", "--skip", "0",
                                          "--output", str(out / "fresh.json")]}[script]
    proc = _run_without(module, script, *argv)
    assert proc.returncode == 1
    assert f"{script} needs {module}, which is not installed" in proc.stderr
    assert 'pip install "agentgym[bench]"' in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == "" and not list(tmp_path.rglob("*.json"))  # nothing was measured



@pytest.mark.learning
def test_window_update_times_both_updates_on_one_alfworld_batch_and_finds_them_equal(tmp_path):
    pytest.importorskip("alfworld")
    out = tmp_path / "window_update.json"
    proc = subprocess.run([sys.executable, "benchmarks/window_update.py", "--groups", "1", "--group-size", "2",
                           "--repeats", "1", "--output", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["same_loss_and_grad_norm"] and result["samples"] >= 2
    assert result["env_kwargs"]["observation"] == "history+admissible"  # the tiny preset's windowed prompts
    assert result["reply_tokens"] < result["tokens"] / 10
    assert len(result["times"]["now"]) == len(result["times"]["reference"]) == 1


def test_scienceworld_find_reports_each_task_per_evaluation_from_a_runs_saved_episodes(tmp_path):
    """``benchmarks/scienceworld_find.py`` reads the ``eval_step_N_test.jsonl`` files a trainer saves
    (rows as ``agentgym.train.run.episode_log`` writes them, cut to the keys it reads)."""
    episodes = tmp_path / "run" / "episodes"
    episodes.mkdir(parents=True)
    # (task, score, engine score, success, replies): a wrong focus is the engine's -100, counted 0
    rows = {0: [("find-plant/200", 8.0, 8.0, False, ["go to hallway"]),
                ("find-plant/210", 100.0, 100.0, True, ["focus on fern", "move fern to red box"]),
                ("find-animal/250", 0.0, -100.0, False, ["focus on dove egg"])],
            20: [("find-plant/200", 100.0, 100.0, True, ["focus on rose", "move rose to blue box"]),
                 ("find-plant/210", 100.0, 100.0, True, ["focus on fern", "move fern to red box"]),
                 ("find-animal/250", 75.0, 75.0, False, ["go to outside", "focus on wolf"])]}
    for step, played in rows.items():
        (episodes / f"eval_step_{step}_test.jsonl").write_text("".join(
            json.dumps({"step": step, "split": "test", "task_id": t, "success": ok,
                        "metrics": {"score": s, "engine_score": engine}, "turns": [{"reply": r} for r in replies]}) + "\n"
            for t, s, engine, ok, replies in played))
    (episodes / "step_1.jsonl").write_text("")  # no training episodes: ``training`` is empty
    out, untrained = tmp_path / "summary.json", tmp_path / "untrained.json"
    # agentgym eval --output, cut to the keys the script reads
    untrained.write_text(json.dumps({"model": "/m", "num_episodes": 3, "success_rate": 0.0, "metrics": {"score": 8.5}}))
    done = subprocess.run([sys.executable, str(BENCHMARKS / "scienceworld_find.py"), str(tmp_path / "run"),
                           "--untrained", str(untrained), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["untrained"] == {"model": "/m", "episodes": 3, "score": 0.085, "success": 0.0}
    summary = json.loads(out.read_text())["runs"][str(tmp_path / "run")]
    assert summary["0"]["find-plant"] == {"episodes": 2, "score": 0.54, "success": 0.5,
                                          "outcomes": {"solved": 1, "focused": 0, "failed": 0, "unfocused": 1}}
    assert summary["20"]["find-plant"]["score"] == 1.0 and summary["20"]["find-animal"]["score"] == 0.75
    assert summary["0"]["all"]["outcomes"] == {"solved": 1, "focused": 0, "failed": 1, "unfocused": 1}
    assert summary["20"]["all"]["outcomes"] == {"solved": 2, "focused": 1, "failed": 0, "unfocused": 0}
    assert summary["0"]["all"]["episodes"] == 3 and "DRRN 0.19" in done.stdout
    assert "failed 1 -> 0" in done.stdout
    # episode by episode: +0.92, 0 and +0.75
    paired = json.loads(out.read_text())["paired"][str(tmp_path / "run")]
    assert paired == {"steps": [0, 20], "episodes": 3, "gain": pytest.approx(0.5567, abs=1e-4),
                      "standard_error": pytest.approx(0.2826, abs=1e-4), "up": 2, "down": 0, "turns": [1.3, 2.0]}
    assert json.loads(out.read_text())["training"][str(tmp_path / "run")] == {}
    empty = subprocess.run([sys.executable, str(BENCHMARKS / "scienceworld_find.py"), str(tmp_path)],
                           capture_output=True, text=True)
    assert empty.returncode == 2 and "no saved test evaluations" in empty.stderr


def test_scienceworld_find_weighs_each_outcomes_focus_turns_as_each_aggregation_would(tmp_path):
    """``training_outcomes`` reads the RL batches' episodes (rows of ``episodes/step_N.jsonl``, cut to
    the keys it reads): under episode-mean a focus in a short episode weighs its share of that
    episode's tokens, under token-mean its share of the mean episode's."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from scienceworld_find import training_outcomes
    finally:
        sys.path.remove(str(BENCHMARKS))
    episodes = tmp_path / "episodes"
    episodes.mkdir()

    def played(replies, advantage, engine_score, ret, trained=True):
        return json.dumps({"trained": trained, "success": False, "advantage": advantage, "return": ret,
                           "metrics": {"engine_score": engine_score},
                           "turns": [{"reply": r, "tokens": 2, "advantage": advantage} for r in replies]}) + "\n"

    # a wrong focus ends its episode at turn 2 (4 tokens); a right one runs 4 turns (8 tokens)
    (episodes / "step_1.jsonl").write_text(played(["go to hallway", "focus on chair"], -1.0, -100, 0.2)
                                           + played(["focus on fern", "look", "look", "look"], 1.0, 50, 0.42)
                                           + played(["focus on fern"], 5.0, 50, 0.4, trained=False))
    (episodes / "eval_step_0_test.jsonl").write_text(played(["focus on rose"], 0.0, 50, 0.4))  # not a batch
    out = training_outcomes(tmp_path)
    assert out["failed"] == {"episodes": 1, "turns": 2.0, "return": 0.2, "advantage": -1.0,
                             "focus_push": {"episode-mean": -0.25, "token-mean": pytest.approx(-0.1667, abs=1e-4)}}
    assert out["focused"]["focus_push"] == {"episode-mean": 0.125, "token-mean": pytest.approx(0.1667, abs=1e-4)}
    assert out["solved"] == {"episodes": 0, "focus_push": {"episode-mean": 0.0, "token-mean": 0.0}}
    assert training_outcomes(tmp_path / "none") == {}
