"""The leaderboard on ToolQA-v0: scripted agents, a stub OpenAI-compatible server, the tiny model,
broken agents, merge, and the command line."""

import json
import os

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.cli import main as cli_main
from agentgym.leaderboard import ModelOptions, RunnerConfig, run_board
from agentgym.leaderboard.stats import ROW_FIELDS
from agentgym.leaderboard.tasks import enumerate_tasks

QUIET = RunnerConfig(num_envs=4, progress=False, agent_timeout=2.0)


def _rows(rows):
    return {r["agent"]: r for r in rows}


@pytest.mark.slow
def test_expert_solves_and_random_fails_every_test_question(tmp_path):
    rows = _rows(run_board(["expert", "random"], ["ToolQA-v0"], ["test"], str(tmp_path), runner=QUIET))
    every = enumerate_tasks("ToolQA-v0", "test")
    for row in rows.values():
        assert set(ROW_FIELDS) <= set(row)
        assert row["episodes"] == len(every) > 50  # the whole split, not a seeded sample
        stamps = row["stamps"]
        assert stamps["agentgym_version"] == agentgym.__version__ and stamps["max_turns"] == 10
        assert set(stamps["engines"]) == {"textworld", "alfworld", "scienceworld"}
        assert stamps["task_list_hash"] and stamps["num_tasks"] == len(every) and "git_commit" in stamps
    assert rows["expert"]["success"] >= 0.95 and rows["random"]["success"] <= 0.05
    assert set(rows["expert"]["by_task_type"]) == {"single_hop", "bridge", "comparison"}
    assert sum(rows["random"]["outcomes"].values()) == rows["random"]["episodes"]
    lines = open(tmp_path / "episodes" / "expert__ToolQA-v0__test.jsonl").read().splitlines()
    first = json.loads(lines[0])
    assert first["transcript"][0]["action"] and "terms" in first["transcript"][0] and first["terms"]
    md = open(tmp_path / "leaderboard.md").read()
    assert "| expert |" in md and "Stamps" in md and os.path.getsize(tmp_path / "leaderboard.png") > 1000


def test_an_agent_behind_an_openai_compatible_server_is_scored(tmp_path, chat_server):
    env = gym.make("ToolQA-v0", split="test")
    gold = {q.question: q.answers[0] for q in env.unwrapped.data.questions("test")}
    env.close()

    def reply(body):  # a served model that knows the answers
        question = body["messages"][1]["content"].removeprefix("Question: ").split("\n")[0]
        return f"<answer>{gold.get(question, 'unknown')}</answer>"

    chat_server.reply = reply
    spec = f"served=openai:{chat_server.url}#stub-model"
    rows = _rows(run_board([spec], ["ToolQA-v0"], ["test"], str(tmp_path), limit=9, runner=QUIET))
    row = rows["served"]
    assert row["episodes"] == 9 and row["success"] == 1.0
    assert row["generated_tokens"] == 2.0  # the server reports two logprobs per reply
    assert len(chat_server.requests) == 9 and chat_server.requests[0][2]["model"] == "stub-model"
    assert row["stamps"]["endpoint"] == chat_server.url and row["stamps"]["sampling"]["temperature"] == 0.0


def test_runaway_replies_are_cut_in_the_history_so_request_bodies_stay_bounded(tmp_path, chat_server):
    from agentgym.prompts import MAX_ACTION_CHARS

    chat_server.reply = lambda body: "y" * 10_000_000  # 10 MB each turn; the env rejects it
    rows = _rows(run_board([f"runaway=openai:{chat_server.url}#m"], ["ToolQA-v0"], ["test"], str(tmp_path), limit=1,
                           runner=RunnerConfig(num_envs=1, progress=False, agent_timeout=60.0)))
    assert rows["runaway"]["episodes"] == 1 and rows["runaway"]["outcomes"]["invalid_format"] == 1
    bodies = [json.dumps(body) for _, _, body in chat_server.requests]
    assert len(bodies) == 10  # the turn limit
    # the tenth request carries nine past replies, each cut to MAX_ACTION_CHARS (was 90 MB)
    assert max(len(b) for b in bodies) < 10 * MAX_ACTION_CHARS
    past = [m["content"] for m in chat_server.requests[-1][2]["messages"] if m["role"] == "assistant"]
    assert len(past) == 9 and all(len(c) <= MAX_ACTION_CHARS and "characters cut]" in c for c in past)


@pytest.mark.slow
def test_broken_agents_cost_only_their_own_episodes(tmp_path):
    agents = ["expert", "raises=board_agents:Raises", "hangs=board_agents:Hangs", "garbage=board_agents:Garbage",
              "short=board_agents:WrongLength", "poisoned=board_agents:PoisonedTask"]
    rows = _rows(run_board(agents, ["ToolQA-v0"], ["test"], str(tmp_path), limit=6,
                           runner=RunnerConfig(num_envs=3, progress=False, agent_timeout=1.0)))
    assert rows["expert"]["success"] == 1.0 and rows["expert"]["outcomes"]["agent_error"] == 0
    for name in ("raises", "hangs", "garbage", "short"):
        assert rows[name]["episodes"] == 6 and rows[name]["outcomes"]["agent_error"] == 6, name
    errors = [json.loads(line)["error"] for line in open(tmp_path / "episodes" / "hangs__ToolQA-v0__test.jsonl")]
    assert all("did not answer within 1 s" in e for e in errors)
    # a batch with one poisoned prompt is retried one episode at a time: only that task fails
    poisoned = rows["poisoned"]
    assert poisoned["by_task_type"]["single_hop"]["success"] == 0.0
    assert poisoned["by_task_type"]["bridge"]["success"] == 1.0 == poisoned["by_task_type"]["comparison"]["success"]
    assert poisoned["outcomes"]["agent_error"] == poisoned["by_task_type"]["single_hop"]["episodes"] == 2


def test_tiny_model_rows_carry_checkpoint_and_template_hashes(tmp_path, tiny_path, one_cpu_thread):
    rows = _rows(run_board([f"tiny={tiny_path}"], ["ToolQA-v0"], ["test"], str(tmp_path), limit=3,
                           runner=QUIET, model=ModelOptions(max_new_tokens=8)))
    row = rows["tiny"]
    assert row["episodes"] == 3 and row["generated_tokens"] > 0
    stamps = row["stamps"]
    assert stamps["checkpoint"] == os.path.abspath(tiny_path) and len(stamps["checkpoint_hash"]) == 16
    assert stamps["chat_template_hash"] and stamps["sampling"]["max_new_tokens"] == 8
    assert stamps["policy"] == "HFPolicy"


def test_the_built_in_tiny_model_plays_with_the_tiny_presets_settings_a_directory_with_its_own(tiny_path):
    from agentgym.leaderboard.specs import make_agent
    from agentgym.train.config.presets import preset_kwargs

    tiny, directory = make_agent("tiny"), make_agent(f"dir={tiny_path}")
    try:
        # the board keeps its own tasks and turn limit (question_kinds, max_turns)
        assert tiny.trained_env_kwargs("ToolQA-v0") == {
            k: v for k, v in preset_kwargs("tiny", "ToolQA-v0").items() if k not in ("question_kinds", "max_turns")}
        assert tiny.trained_env_kwargs("ScienceWorld-v0") == {}
        assert directory.trained_env_kwargs("ToolQA-v0") == {}  # records nothing: the env's own defaults
    finally:
        tiny.close()
        directory.close()


@pytest.mark.slow
def test_repeats_merge_and_the_command_line(tmp_path, capsys):
    a, b, whole = (str(tmp_path / n) for n in ("a", "b", "whole"))
    args = ["leaderboard", "--agents", "random", "--envs", "ToolQA-v0", "--split", "test", "--repeats", "2",
            "--no-progress"]
    assert cli_main(args + ["--tasks", "single_hop", "--out", a]) == 0
    assert cli_main(args + ["--tasks", "bridge", "comparison", "--out", b]) == 0
    assert cli_main(args + ["--out", whole]) == 0
    assert cli_main(["leaderboard", "merge", a, b, "--out", str(tmp_path / "merged")]) == 0
    merged = json.load(open(tmp_path / "merged" / "summary.json"))[0]
    single = json.load(open(os.path.join(whole, "summary.json")))[0]
    assert merged["episodes"] == single["episodes"] == 2 * single["stamps"]["num_tasks"]
    for key in ("success", "prs_return", "terms", "outcomes", "turns", "invalid_action_rate"):
        assert merged[key] == pytest.approx(single[key]), key
    assert sorted(merged["by_task_type"]) == sorted(single["by_task_type"])
    assert "| random |" in capsys.readouterr().out
    assert "merged_stamps" not in merged["stamps"]
    # a run from other code merges too, and its row says so
    block_file = os.path.join(b, "blocks", "random__ToolQA-v0__test.json")
    block = json.load(open(block_file))
    block["stamps"]["git_commit"] = "0" * 40
    json.dump(block, open(block_file, "w"))
    assert cli_main(["leaderboard", "merge", a, b, "--out", str(tmp_path / "mixed")]) == 0
    mixed = json.load(open(tmp_path / "mixed" / "summary.json"))[0]
    assert [s["git_commit"] for s in mixed["stamps"]["merged_stamps"]] == ["0" * 40]


def test_search_r1_files_are_scored_per_data_set(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": str(i), "contents": f"Title {i}\nThe code word {i} is w{i}."})
                                for i in range(6)) + "\n")
    qa = tmp_path / "test.jsonl"
    qa.write_text("\n".join(json.dumps({"id": f"q{i}", "question": f"What is code word {i}?",
                                        "golden_answers": [f"w{i}"], "data_source": "nq" if i < 4 else "hotpotqa"})
                            for i in range(6)) + "\n")
    kwargs = {"dataset": {"test": str(qa)}, "corpus": str(corpus)}
    rows = _rows(run_board(["expert"], ["ToolQA-v0"], ["test"], str(tmp_path / "run"), env_kwargs=kwargs,
                           runner=QUIET))
    assert rows["expert"]["by_task_type"] == {"hotpotqa": {"episodes": 2, "success": 1.0},
                                              "nq": {"episodes": 4, "success": 1.0}}
