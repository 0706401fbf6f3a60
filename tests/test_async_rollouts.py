"""benchmarks/async_rollouts.py at a toy size: every K runs through its trainer from one cold start,
the report holds each run's timeline, utilization and the summary, and the timeline plot is
written. Timings are not checked (they are the benchmark's to measure)."""

import doctest
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("async_rollouts", ROOT / "benchmarks" / "async_rollouts.py")
ar = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ar)

TOY = ["--env-id", "ToolQA-v0", "--steps", "3", "--repeats", "1", "--async-steps", "0", "1",
       "--search-latency", "0.05", "--toolqa-model", "tiny", "--cold-start-steps", "20", "--cold-start-episodes", "8",
       "--override", json.dumps({"num_groups": 2, "group_size": 2, "max_new_tokens": 16})]


def test_busy_time_is_the_union_of_spans_clipped_to_the_window():
    assert doctest.testmod(ar).failed == 0
    spans = [{"who": "rollout", "what": "generate", "start": 0.0, "end": 1.0},
             {"who": "rollout", "what": "generate", "start": 0.5, "end": 1.5},  # overlaps: counted once
             {"who": "rollout", "what": "env", "start": 1.5, "end": 2.5},
             {"who": "learner", "what": "update", "start": -1.0, "end": 0.5},  # starts before the window
             {"who": "learner", "what": "publish", "start": 0.5, "end": 0.6},
             {"who": "learner", "what": "update", "start": 1.8, "end": 9.0}]  # ends after it
    u = ar.utilization(spans, 0.0, 2.0)
    assert u["generate"] == pytest.approx(0.75) and u["env"] == pytest.approx(0.25)
    assert u["update"] == pytest.approx(0.35) and u["learner"] == pytest.approx(0.4)
    assert u["rollout"] == pytest.approx(1.0) and u["wait"] == 0.0
    assert ar.step_ends(spans) == [0.5, 9.0]


@pytest.mark.learning
def test_a_toy_run_reports_every_run_its_utilization_and_draws_the_timeline(tmp_path):
    summaries = ar.main([*TOY, "--out", str(tmp_path)])
    report = json.loads((tmp_path / "async_rollouts.json").read_text())
    assert report["summary"] == json.loads(json.dumps(summaries))
    assert report["settings"]["async_steps"] == [0, 1] and report["skipped"] == {}
    probe = report["toolqa_cold_start"]
    assert probe["episodes"] == 4 and probe["searches_per_episode"] >= 0
    assert 0 <= probe["episodes_that_search"] <= 1

    runs = report["runs"]
    assert [(r["env_id"], r["async_steps"], r["round"]) for r in runs] == [("ToolQA-v0", 0, 0), ("ToolQA-v0", 1, 0)]
    for run in runs:
        assert run["seed"] == 0 and run["steps"] == 3
        assert run["measured_steps"] == [2, 2]  # the first step warms up, the last (K = 1) drains
        assert len(run["step_ends"]) == 3 and run["step_ends"] == sorted(run["step_ends"])
        assert run["window"] == [run["step_ends"][0], run["step_ends"][1]]
        assert run["seconds_per_step"] > 0 and run["seconds_per_step_with_drain"] > 0
        u = run["utilization"]
        assert set(u) == {"generate", "env", "update", "publish", "wait", "rollout", "learner"}
        assert all(0.0 <= v <= 1.0 for v in u.values()), u
        assert u["rollout"] >= max(u["generate"], u["env"]) - 1e-9 and u["learner"] >= u["update"] - 1e-9
        assert u["generate"] > 0 and u["update"] > 0
        assert {(s["who"], s["what"]) for s in run["timeline"]} >= {("rollout", "generate"), ("rollout", "env"),
                                                                   ("learner", "update")}
        assert all(s["start"] <= s["end"] for s in run["timeline"])
        assert run["history_means"]["async/version_lag"] == run["async_steps"]
    assert runs[0]["history_means"]["time/rollout_wait"] == 0.0  # only the asynchronous loop waits for a batch

    s = report["summary"]["ToolQA-v0"]
    assert set(s["per_k"]) == {"0", "1"} and s["target_k1"] == 0.75
    assert s["per_k"]["0"]["ratio_to_sync"] == 1.0 and s["per_k"]["1"]["ratio_to_sync"] > 0
    assert 0 < s["overlap_bound"] <= 1
    assert isinstance(s["target_met"], bool)
    if not s["target_met"]:
        assert s["bottleneck"]["side"] in ("rollout", "learner") and 0 <= s["bottleneck"]["busy"] <= 1
    assert (tmp_path / "async_rollouts_timeline.png").stat().st_size > 1000


def test_bad_settings_stop_before_anything_runs(tmp_path, capsys):
    for argv in (["--async-steps", "1", "2"], ["--steps", "2", "--async-steps", "0", "1"]):
        with pytest.raises(SystemExit):
            ar.main([*argv, "--out", str(tmp_path)])
        assert "--async-steps" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
