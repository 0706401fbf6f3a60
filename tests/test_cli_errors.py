"""Every command refuses a bad flag in one line on stderr that names it and says what to do: a non-zero
exit and never a traceback. Each command's invocations run as real subprocesses, a few at a time.

Bad flags: unknown env ids, negative, zero and NaN counts, malformed --env-kwargs, missing or
non-model folders for --model, outputs that cannot be written (under a regular file, or under
/proc, where nothing can be made even by root), input folders that do not exist, and a full disk
(/dev/full for a file, a tiny tmpfs for a folder: that part skips where mounting is not allowed).
"""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLI = (sys.executable, "-m", "agentgym.cli")
SFT = (sys.executable, "trainers/sft.py")
GRPO = (sys.executable, "trainers/grpo.py")
MISSING = "{tmp}/no-such-folder"
UNDER_FILE = "{file}/sub"  # a path under a regular file: nothing can be made there
UNDER_PROC = "/proc/agentgym-nothing/sub"  # nothing can be made there, even by root
BOARD = (*CLI, "leaderboard", "--agents", "expert", "--envs", "ToolQA-v0", "--no-progress")

# (command, arguments, text stderr must hold: the flag or value, and what to do)
CASES = {
    "list, play, demo": [
        ((*CLI, "list", "--bogus"), "unrecognized arguments: --bogus"),
        ((*CLI, "play", "Nope-v0"), "unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
        ((*CLI, "demo", "Nope-v0"), "unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
        ((*CLI, "play", "ToolQA-v0", "--seed", "-1"), "--seed must be an integer >= 0, got -1"),
        ((*CLI, "demo", "ToolQA-v0", "--seed", "-1"), "--seed must be an integer >= 0, got -1"),
        ((*CLI, "demo", "ToolQA-v2"), "unknown env id 'ToolQA-v2'; did you mean 'ToolQA-v0'? `agentgym list`"),
        ((*CLI, "play", "Toolqa"), "unknown env id 'Toolqa'; did you mean 'ToolQA-v0'? `agentgym list`"),
        ((*CLI, "demo", "ToolQA-v0", "--kwarg", "max_turn=3"),
         "agentgym demo: --kwarg: ToolQA-v0 has no argument 'max_turn'; did you mean 'max_turns'?"),
        ((*CLI, "demo", "ToolQA-v0", "--kwarg", "max_turns=0"), "max_turns must be a positive int"),
        ((*CLI, "demo", "ToolQA-v0", "--kwarg", "max_turns=NaN"),
         "max_turns must be a positive int (1, 2, ...), got nan"),
        ((*CLI, "demo", "ToolQA-v0", "--kwarg", "split=nosuchsplit"), "unknown split 'nosuchsplit'"),
        ((*CLI, "play", "ToolQA-v0", "--kwarg", "max_turns"), "--kwarg expects key=value, got 'max_turns'"),
    ],
    "expert-data": [
        ((*CLI, "expert-data", "Nope-v0", "--out", "{tmp}/e.jsonl"), "unknown env id 'Nope-v0'; `agentgym list`"),
        ((*CLI, "expert-data", "Toolqa", "--out", "{tmp}/e.jsonl"), "unknown env id 'Toolqa'; did you mean 'ToolQA-v0'?"),
        ((*CLI, "expert-data", "ToolQA-v0", "--episodes", "-1", "--out", "{tmp}/e.jsonl"),
         "--episodes must be an integer >= 1, got -1"),
        ((*CLI, "expert-data", "ToolQA-v0", "--episodes", "0", "--out", "{tmp}/e.jsonl"),
         "--episodes must be an integer >= 1, got 0"),
        ((*CLI, "expert-data", "ToolQA-v0", "--episodes", "nan", "--out", "{tmp}/e.jsonl"),
         "argument --episodes: invalid int value: 'nan'"),
        ((*CLI, "expert-data", "ToolQA-v0", "--seed", "-1", "--out", "{tmp}/e.jsonl"),
         "--seed must be an integer >= 0"),
        ((*CLI, "expert-data", "ToolQA-v0", "--split", "nosuchsplit", "--out", "{tmp}/e.jsonl"),
         "unknown split 'nosuchsplit'"),
        ((*CLI, "expert-data", "ToolQA-v0", "--out", UNDER_FILE + "/e.jsonl"),
         "--out '{file}/sub/e.jsonl' cannot be written: '{file}' is a file, not a folder: "
         "give a path you can write to"),
        ((*CLI, "expert-data", "ToolQA-v0", "--out", UNDER_PROC + "/e.jsonl"),
         f"--out '{UNDER_PROC}/e.jsonl' cannot be written: No such file or directory: give a path you can write to"),
        ((*CLI, "expert-data", "ToolQA-v0", "--out", "{tmp}"), "--out '{tmp}' is a folder: give a file path"),
        ((*CLI, "expert-data", "ToolQA-v0", "--episodes", "2", "--out", "/dev/full"),
         "the disk of --out '/dev/full' is full (No space left on device): free some space"),
    ],
    "alfworld-generate": [
        ((*CLI, "alfworld-generate", "--out", "{tmp}/g", "--num-games", "-1"), "--num-games must be an integer >= 1"),
        ((*CLI, "alfworld-generate", "--out", "{tmp}/g", "--num-games", "0"), "--num-games must be an integer >= 1"),
        ((*CLI, "alfworld-generate", "--out", UNDER_FILE, "--num-games", "1"),
         "--out '{file}/sub' cannot be written: '{file}' is a file, not a folder: give a folder you can write to"),
        ((*CLI, "alfworld-generate", "--out", UNDER_PROC, "--num-games", "1"),
         f"--out '{UNDER_PROC}' cannot be written"),
    ],
    "eval": [
        ((*CLI, "eval", "--model", MISSING), "--model '{tmp}/no-such-folder' is not a directory; give a local"),
        ((*CLI, "eval", "--model", "{tmp}"), "--model '{tmp}' has no config.json: not a Hugging Face checkpoint"),
        ((*CLI, "eval", "--model", "{tiny}", "--env-id", "Nope-v0"), "--env-id: unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
        ((*CLI, "eval", "--model", "{tiny}", "--env-id", "ALFWorld-v1"),
         "--env-id: unknown env id 'ALFWorld-v1'; did you mean 'ALFWorld-v0'? `agentgym list` shows the env ids"),
        ((*CLI, "eval", "--model", "{tiny}", "--env-kwargs", "{bad"), "env kwargs is not valid JSON"),
        ((*CLI, "eval", "--model", "{tiny}", "--env-kwargs", '{"bogus": 1}'),
         "--env-kwargs: ToolQA-v0 has no argument 'bogus'"),
        ((*CLI, "eval", "--model", "{tiny}", "--env-kwargs", '{"max_turns": -1}'),
         "--env-kwargs: ToolQA-v0 refused its arguments: max_turns must be a positive int"),
        ((*CLI, "eval", "--model", "{tiny}", "--split", "nosuchsplit"), "--split 'nosuchsplit': unknown split"),
        ((*CLI, "eval", "--model", "{tiny}", "--num-episodes", "0"), "--num-episodes must be an integer >= 1, got 0"),
        ((*CLI, "eval", "--model", "{tiny}", "--batch-size", "0"), "--batch-size must be an integer >= 1, got 0"),
        ((*CLI, "eval", "--model", "{tiny}", "--seed", "-1"), "--seed must be an integer >= 0, got -1"),
        ((*CLI, "eval", "--model", "{tiny}", "--prs-stage", "nan"), "--prs-stage must be a finite number >= 0"),
        ((*CLI, "eval", "--model", "{tiny}", "--max-new-tokens", "-1"), "--max-new-tokens must be an integer >= 1"),
        ((*CLI, "eval", "--model", "{tiny}", "--device", "bogus"), "--device must be auto, cpu or cuda[:N]"),
        ((*CLI, "eval", "--base-url", "notaurl", "--model", "m"),
         "--base-url 'notaurl' is not an http(s) URL; give one"),
        ((*CLI, "eval", "--model", "{tiny}", "--output", UNDER_FILE + "/r.json"),
         "--output '{file}/sub/r.json' cannot be written: '{file}' is a file"),
        ((*CLI, "eval", "--model", "{tiny}", "--output", UNDER_PROC + "/r.json"),
         f"--output '{UNDER_PROC}/r.json' cannot"),
        ((*CLI, "eval", "--model", "{tiny}", "--output", "{tmp}"), "--output '{tmp}' is a folder: give a file path"),
        ((*CLI, "eval", "--model", "{tiny}", "--num-episodes", "1", "--max-new-tokens", "2", "--output", "/dev/full"),
         "the disk of --output '/dev/full' is full (No space left on device): free some space"),
    ],
    "convert-checkpoint, tiny-model, plot": [
        ((*CLI, "convert-checkpoint", MISSING), "{tmp}/no-such-folder: no trainer_state.pt to convert"),
        ((*CLI, "convert-checkpoint", "{tmp}"), "{tmp}: no trainer_state.pt to convert"),
        ((*CLI, "tiny-model", "--env-id", "Nope-v0"), "--env-id: unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
        ((*CLI, "tiny-model", "--cache-dir", UNDER_FILE),
         "--cache-dir '{file}/sub' cannot be written: '{file}' is a file"),
        ((*CLI, "tiny-model", "--cache-dir", UNDER_PROC), f"--cache-dir '{UNDER_PROC}' cannot be written"),
        ((*CLI, "plot", MISSING),
         "{tmp}/no-such-folder/metrics.jsonl not found: is {tmp}/no-such-folder the --output-dir"),
        ((*CLI, "plot", "{run}", "--out", UNDER_FILE + "/p.png"), "--out '{file}/sub/p.png' cannot be written"),
        ((*CLI, "plot", "{run}", "--out", UNDER_PROC + "/p.png"), f"--out '{UNDER_PROC}/p.png' cannot be written"),
    ],
    "leaderboard": [
        ((*CLI, "leaderboard", "--agents", "expert", "--envs", "Nope-v0", "--out", "{fresh}"), "--envs: unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
        ((*CLI, "leaderboard", "--agents", "expert", "--envs", "ToolQA-v2", "--out", "{fresh}"),
         "--envs: unknown env id 'ToolQA-v2'; did you mean 'ToolQA-v0'? `agentgym list` shows the env ids"),
        ((*BOARD, "--repeats", "0", "--out", "{fresh}"), "--repeats must be an integer >= 1, got 0"),
        ((*BOARD, "--limit", "-1", "--out", "{fresh}"), "--limit must be an integer >= 1, got -1"),
        ((*BOARD, "--num-envs", "0", "--out", "{fresh}"), "--num-envs must be an integer >= 1, got 0"),
        ((*BOARD, "--agent-timeout", "nan", "--out", "{fresh}"), "--agent-timeout must be a positive number"),
        ((*BOARD, "--env-kwargs", "{bad", "--out", "{fresh}"), "--env-kwargs is not JSON"),
        ((*BOARD, "--split", "nosuchsplit", "--out", "{fresh}"), "unknown split 'nosuchsplit'"),
        ((*BOARD, "--temperature", "nan", "--out", "{fresh}"), "--temperature must be a finite number >= 0, got nan"),
        ((*BOARD, "--max-new-tokens", "-1", "--out", "{fresh}"), "--max-new-tokens must be an integer >= 1, got -1"),
        ((*BOARD, "--window", "-1", "--out", "{fresh}"), "--window must be an integer >= 0"),
        ((*CLI, "leaderboard", "--agents", MISSING, "--envs", "ToolQA-v0", "--out", "{fresh}"),
         "unknown agent '{tmp}/no-such-folder': expected expert, random, tiny, a checkpoint directory"),
        ((*CLI, "leaderboard", "--agents", "{tmp}", "--envs", "ToolQA-v0", "--out", "{fresh}"),
         "agent '{tmp}': '{tmp}' has no config.json, so it is not a Hugging Face checkpoint directory; give"),
        ((*BOARD, "--out", UNDER_FILE), "--out '{file}/sub' cannot be written: '{file}' is a file, not a folder: give"),
        ((*BOARD, "--out", "{file}"), "--out '{file}' cannot be written: '{file}' is a file, not a folder"),
        ((*BOARD, "--out", UNDER_PROC), f"--out '{UNDER_PROC}' cannot be written: No such file or directory: give"),
        ((*CLI, "leaderboard", "merge", MISSING, "--out", "{fresh}"), "{tmp}/no-such-folder is not a leaderboard run"),
        ((*CLI, "leaderboard", "report", MISSING), "{tmp}/no-such-folder is not a leaderboard run directory"),
    ],
    "trainers": [
        ((*SFT, "--env-id", "Nope-v0"), "--env-id: unknown env id 'Nope-v0'; `agentgym list` shows the env ids"),
        ((*GRPO, "--env-id", "Toolqa"), "--env-id: unknown env id 'Toolqa'; did you mean 'ToolQA-v0'?"),
        ((*GRPO, "--env-id", "ALFWorld-v1"), "--env-id: unknown env id 'ALFWorld-v1'; did you mean 'ALFWorld-v0'?"),
        ((*GRPO, "--num-step", "3"), "error: unknown flag --num-step; did you mean --num-steps?"),
        ((*SFT, "--lerning-rate", "1e-5"), "error: unknown flag --lerning-rate; did you mean --learning-rate?"),
        ((*SFT, "--model", MISSING), "--model '{tmp}/no-such-folder' is not a directory; give a local"),
        ((*SFT, "--model", "{tmp}"), "--model '{tmp}' has no config.json"),
        ((*SFT, "--env-kwargs", "{bad"), "--env-kwargs: env kwargs is not valid JSON"),
        ((*SFT, "--learning-rate", "nan"), "--learning-rate must be a finite number > 0, got nan"),
        ((*GRPO, "--num-steps", "0"), "--num-steps must be >= 1, got 0"),
    ] + [((*trainer, "--output-dir", out), expected) for trainer in (SFT, GRPO) for out, expected in [
        (UNDER_FILE, "--output-dir '{file}/sub' cannot be written: '{file}' is a file, not a folder: give a folder"),
        ("{file}", "--output-dir '{file}' cannot be written: '{file}' is a file, not a folder"),
        (UNDER_PROC, f"--output-dir '{UNDER_PROC}' cannot be written: No such file or directory: give a folder"),
    ]],
}


def _one_line_refusal(done: subprocess.CompletedProcess, expected: str) -> str | None:
    """What is wrong with how the command refused (None: one line holding ``expected``, exit != 0).
    An argparse usage block may come before the line, as argparse writes it."""
    lines = done.stderr.strip().splitlines()
    if lines and lines[0].startswith("usage:"):
        lines = [line for line in lines if not (line.startswith("usage:") or line.startswith(" "))]
    if done.returncode == 0:
        return "exit status 0"
    if "Traceback" in done.stderr or len(lines) != 1:
        return f"not one line ({len(lines)}): ...{done.stderr[-600:]}"
    if expected not in lines[0]:
        return f"{lines[0]!r} does not hold {expected!r}"
    return None


def _fill(text: str, paths: dict[str, str]) -> str:
    for key, path in paths.items():  # not str.format: JSON arguments hold braces
        text = text.replace("{" + key + "}", path)
    return text


def _run_all(cases, paths: dict[str, str], timeout: float = 240) -> list[str]:
    """Run every case (three at a time); one line per case that did not refuse as it should."""
    def run(numbered):
        k, (argv, expected) = numbered
        fresh = {**paths, "fresh": f"{paths['tmp']}/fresh-{k}"}  # an output folder of its own
        argv = [_fill(arg, fresh) for arg in argv]
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        problem = _one_line_refusal(done, _fill(expected, paths))
        return f"{' '.join(argv[1:])}: {problem}" if problem else None

    with ThreadPoolExecutor(3) as pool:
        return [problem for problem in pool.map(run, enumerate(cases)) if problem]


@pytest.fixture(scope="module")
def paths(tmp_path_factory, tiny_path):
    tmp = tmp_path_factory.mktemp("cli-errors")
    (tmp / "a-file").write_text("not a folder\n")
    (tmp / "run").mkdir()
    (tmp / "run" / "metrics.jsonl").write_text('{"step": 0, "reward/mean": 0.1}\n')
    return {"tmp": str(tmp), "file": str(tmp / "a-file"), "run": str(tmp / "run"), "tiny": tiny_path}


@pytest.mark.multiproc
@pytest.mark.parametrize("command", list(CASES))
def test_a_bad_flag_is_refused_in_one_line_that_names_it(command, paths):
    problems = _run_all(CASES[command], paths)
    assert not problems, "\n".join(problems)
    assert not (Path(paths["file"]) / "sub").exists() and not list(Path(paths["tmp"]).glob("*.jsonl"))


@contextmanager
def tmpfs(where: Path, size: str):
    """A tmpfs of ``size`` mounted at ``where`` for the block (skips where this user may not mount one)."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs, filled up."""
    with tmpfs(tmp_path / "full", "64k") as where:
        try:
            with open(where / "filler", "wb") as f:
                while True:
                    f.write(b"x" * 4096)
        except OSError:
            pass
        yield where


@pytest.mark.multiproc
def test_a_full_disk_is_refused_before_any_work_in_one_line(full_disk, paths):
    full = {**paths, "full": str(full_disk)}
    cases = [
        ((*CLI, "expert-data", "ToolQA-v0", "--out", "{full}/e.jsonl"),
         "--out '{full}/e.jsonl' cannot be written: No space left on device: free some space"),
        ((*CLI, "alfworld-generate", "--out", "{full}/g", "--num-games", "1"),
         "--out '{full}/g' cannot be written: No space"),
        ((*CLI, "plot", "{run}", "--out", "{full}/p.png"),
         "--out '{full}/p.png' cannot be written: No space left on device"),
        ((*CLI, "eval", "--model", "{tiny}", "--output", "{full}/r.json"),
         "--output '{full}/r.json' cannot be written: No space"),
        ((*BOARD, "--out", "{full}/b"), "--out '{full}/b' cannot be written: No space left on device: free some space"),
        ((*SFT, "--output-dir", "{full}/s"),
         "--output-dir '{full}/s' cannot be written: No space left on device: free"),
        ((*GRPO, "--output-dir", "{full}/g"), "--output-dir '{full}/g' cannot be written: No space left on device"),
    ]
    problems = _run_all(cases, full)
    assert not problems, "\n".join(problems)


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of 12 KiB: room for a run's first files, not for its episodes."""
    with tmpfs(tmp_path / "small", "12k") as where:
        yield where


@pytest.mark.multiproc
def test_a_disk_that_fills_up_during_a_board_or_a_cold_start_ends_it_in_one_line(small_disk, tiny_path):
    board = subprocess.run([*BOARD, "--limit", "20", "--out", str(small_disk / "b")], cwd=ROOT, capture_output=True,
                           text=True, timeout=240)
    assert board.returncode == 1 and "Traceback" not in board.stderr, board.stderr
    assert board.stderr.strip().splitlines()[-1] == (
        f"agentgym leaderboard: error: the disk of --out '{small_disk / 'b'}' is full (No space left on device): "
        "free some space, then run the same command again: it keeps the finished episodes")
    # the model is the file that no longer fits (safetensors wraps the OS error in its own type)
    sft = subprocess.run([*SFT, "--model", tiny_path, "--num-episodes", "2", "--num-steps", "1", "--batch-size", "2",
                          "--no-progress", "--no-tensorboard", "--output-dir", str(small_disk / "s")], cwd=ROOT,
                         capture_output=True, text=True, timeout=240)
    assert sft.returncode == 1 and "Traceback" not in sft.stderr, sft.stderr
    assert sft.stderr.strip().splitlines()[-1].startswith("error: the disk is full (No space left on device) where "
                                                          "the run writes (--output-dir): free some space")


def test_the_output_path_check_makes_nothing_and_names_the_flag(tmp_path):
    import doctest

    import agentgym.output_paths
    from agentgym.output_paths import OutputPathError, check_output_dir, check_output_file

    assert doctest.testmod(agentgym.output_paths).failed == 0
    check_output_dir(tmp_path / "a" / "b", "--out")
    check_output_file(tmp_path / "c" / "r.json", "--output")
    assert list(tmp_path.iterdir()) == []  # a folder is made by the command that writes, not by the check
    with pytest.raises(OutputPathError, match="^--output '.*' is a folder: give a file path$"):
        check_output_file(tmp_path, "--output")
