"""Every shell command in README.md and docs/*.md runs as written, at a tiny size.

The commands are read from the ```bash blocks, page by page (one test case each) and in order
(later commands use what earlier ones wrote, e.g. ``--model runs/sft/final``), and run in one
scratch directory that holds the repo's ``trainers/`` and ``benchmarks/``, and every module a page has the reader save (a ```python block
whose first line is ``# NAME.py``). Only their size changes: flags that shrink steps, episodes
and tokens are appended (the last occurrence of a flag wins), and a checkpoint path names the
step the shrunk run wrote. What cannot run here is listed in ``NOT_RUN`` with the reason.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                           recursive=True))

# commands that need what a test machine does not have, and why
NOT_RUN = {
    "pip install": "installs packages (the test environment is the install)",
    "python -m pytest": "the suite itself",
    "agentgym play": "interactive (tests/test_cli_and_spaces.py drives it)",
    "openai:http": "needs a served model (tests/leaderboard scores one behind a stub server)",
    "--gcd.judge-url": "needs a judge endpoint (tests/trainers/test_gcd.py uses a stub server)",
    "/path/to/your/checkpoint": "a placeholder for the reader's own checkpoint",
    "[--": "usage syntax, not a command",
    '"observation": "history+admissible"': "a tiny model on ALFWorld text replays 64 expert games to build its tokenizer "
                          "(tests/trainers/test_embodied_options.py trains and evaluates with these options)",
    "merge runs/board-a": "needs two earlier boards (tests/leaderboard covers merge)",
    "--split L0 L1 L2": "a long multi-split board (tests/leaderboard and tests/envs/test_levels.py cover levels)",
    "benchmarks/results/board": "the full published board (minutes per env)",
    "ray start": "starts a Ray cluster node (tests/vector/test_ray_cluster.py starts a real head node)",
    "HEAD_IP": "a placeholder for the reader's cluster (tests/vector/test_ray_cluster.py trains on a real one)",
    "vllm serve": "starts a vLLM server on a GPU (tests/trainers/test_generators.py trains against a stub that "
                  "speaks its completions and dev endpoints)",
    "--generator openai": "needs a running vllm serve (tests/trainers/test_generators.py runs GRPO against a stub server)",
    "--generator vllm": "needs vLLM and a GPU (tests/trainers/test_generators.py runs it through a stand-in module and "
                        "checks the error without vLLM)",
    "/ckpt/": "a placeholder for the reader's own checkpoint and GPUs (tests/trainers/test_ddp.py runs torchrun with "
              "two processes on the tiny model, with and without --fsdp)",
    "agentgym serve": "starts a server that runs until stopped (tests/integrations/test_openenv.py plays one, and the "
                      "docs' client snippet runs against one)",
    "agentgym mcp": "a stdio server waiting for its client (the docs' MCP snippet starts it as a client does)",
    "scripts/wheelhouse.py": "downloads a wheelhouse from PyPI (tests/test_wheelhouse.py builds one and installs from "
                             "it without an index)",
    '"task": "find-plant"': "ScienceWorld's tiny model replays 64 gold paths through the JVM to build its tokenizer "
                            "(minutes; tests/trainers/test_scored_actions_methods.py trains every method with "
                            "scored actions on ALFWorld, tests/envs/test_observations.py covers observation='history')",
    "--recipe scienceworld-find": "ScienceWorld's tiny model replays 64 gold paths through the JVM to build its "
                                  "tokenizer, and every turn scores hundreds of actions (tests/trainers/"
                                  "test_scienceworld_learning.py runs the recipe's cold start scaled down and "
                                  "evaluates it with agentgym eval; test_scored_actions_methods.py runs GRPO scored)",
    "benchmarks/scienceworld_find.py": "reads the scienceworld-find recipe's runs (tests/test_benchmark_scripts.py "
                                       "runs it on a saved evaluation)",
    "real_shapes.py --shape 1.5b": "the 1.5B shape's run (an hour on 2 cores); the 0.5b command beside it runs at "
                                   "the smoke shape, through the same commands",
    "benchmarks/lora_memory.py": "builds models of Qwen2.5-0.5B's shape (up to 13 GiB and minutes per case); "
                                 "tests/train/test_memory.py checks the formula's counts and parts",
    "gpu_check.py --device cuda": "needs a CUDA device (tests/test_gpu_check.py runs the CPU smoke check)",
    "gpu_check.py --device cpu --smoke": "tests/test_gpu_check.py runs it as written (with --out) and checks every "
                                         "part it reports",
    "--report-to wandb": "the tracker extras are not in the test install (tests/integrations/test_trackers.py runs "
                         "these trackers with their real packages in the venv .ci/run layers for them)",
}
TRAINER_SHRINK = ("--num-steps 1 --num-groups 1 --group-size 2 --max-new-tokens 4 --cold-start.num-steps 2 "
                  "--cold-start.num-episodes 2 --cold-start.judge-samples 0 --eval-episodes 2 --save-every 1 "
                  "--no-progress --quiet --no-tensorboard")
SHRINK = [
    # the methods table on the recipe: one shrunk cell on the learning test's 1,200-game set
    (r"^python benchmarks/learning_curves\.py .*--recipe alfworld-l0", "--methods grpo --seeds 0 --max-episodes 4 "
     "--eval-every 1 --eval-episodes 2 --final-eval-episodes 2 --env-kwargs '{\"data_path\": \"generated:1200:tiny\", \"l0_every\": 40}' "
     "--override '{\"cold_start\": {\"num_steps\": 2, \"num_episodes\": 2}, \"num_groups\": 1, \"group_size\": 2, "
     "\"max_new_tokens\": 4}'"),
    # the recipe's 16,000-game set is 796 MB: its shrunk run plays the learning test's 1,200-game set
    (r"--recipe alfworld-l0", TRAINER_SHRINK + " --env-kwargs '{\"data_path\": \"generated:1200:tiny\", \"l0_every\": 40}'"),
    (r"^torchrun .*trainers/\w+\.py", TRAINER_SHRINK + " --num-groups 2"),  # a group per process
    # the main job's path at a 2-layer shape with a 4,096-entry vocabulary, its results in the scratch folder
    (r"^python benchmarks/real_shapes\.py", "--shape smoke --training full --eval-episodes 2 --out real_shapes.json"),
    (r"^python trainers/sft\.py", "--num-steps 2 --num-episodes 2 --batch-size 2 --no-progress --quiet --no-tensorboard"),
    (r"^python trainers/\w+\.py", TRAINER_SHRINK),
    (r"^python benchmarks/learning_curves\.py", "--methods grpo --seeds 0 --max-episodes 4 --eval-every 1 "
     "--eval-episodes 2 --override '{\"cold_start\": {\"num_steps\": 2, \"num_episodes\": 2}, \"num_groups\": 1, "
     "\"group_size\": 2, \"max_new_tokens\": 4}'"),
    (r"^python benchmarks/async_rollouts\.py", "--env-id ToolQA-v0 --steps 3 --repeats 1 --async-steps 0 1 "
     "--search-latency 0.01 --toolqa-model tiny --cold-start-steps 2 --cold-start-episodes 2 "
     "--override '{\"num_groups\": 1, \"group_size\": 2, \"max_new_tokens\": 4}'"),
    (r"^agentgym eval", "--num-episodes 2 --batch-size 2 --max-new-tokens 4"),
    (r"^agentgym expert-data", "--episodes 2"),
    # the board over all three envs without its tiny agent: a tiny model for a board with ScienceWorld
    # replays 64 gold paths through the JVM for its tokenizer (about four minutes on 2 cores, most of
    # this page's time). tests/leaderboard/test_toolqa_board.py scores the tiny agent on a board and
    # tests/trainers/test_scienceworld_learning.py builds a ScienceWorld tiny model.
    (r"leaderboard\.py --agents expert random tiny --envs .*ScienceWorld-v0", "--agents expert random --limit 1 "
     "--max-new-tokens 4"),
    (r"(agentgym leaderboard|benchmarks/leaderboard\.py)( --agents|$)", "--limit 1 --max-new-tokens 4"),
]
ALFWORLD_SMALL = "--env-kwargs '{\"max_turns\": 30}' --window 1"


def shell_commands() -> list[tuple[str, str]]:
    """(file, command) of every shell line in the docs, continuation lines joined, in order."""
    out = []
    for rel in DOCS:
        text = open(os.path.join(ROOT, rel)).read()
        for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S):
            if lang not in ("bash", "sh", "shell"):
                continue
            for line in body.replace("\\\n", " ").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    out.append((rel, line))
    return out


_SAVED_AS = re.compile(r"^# (\w+\.py)\n")


def saved_modules() -> dict[str, str]:
    """name -> code of every ```python block whose first line is ``# NAME.py``: a module the page has
    the reader save beside them (their own env), which its commands and snippets import."""
    out = {}
    for rel in DOCS:
        for body in re.findall(r"```python\n(.*?)```", open(os.path.join(ROOT, rel)).read(), flags=re.S):
            m = _SAVED_AS.match(body)
            if m:
                assert m.group(1) not in out, f"two pages save {m.group(1)}"
                out[m.group(1)] = body
    return out


def save_modules(folder) -> None:
    for name, code in saved_modules().items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(code)


def runnable(command: str) -> str | None:
    """The command at a tiny size, or None when it is in ``NOT_RUN``."""
    if " && " in command:
        command = command.split(" && ", 1)[1]  # the install half is the test environment itself
    if any(key in command for key in NOT_RUN):
        return None
    command = re.sub(r"\s+#.*$", "", command)
    # a shrunk run writes step_1, not the full run's step_100
    command = re.sub(r"checkpoints/step_\d+", "checkpoints/step_1", command)
    for pattern, extra in SHRINK:
        if re.search(pattern, command):
            command = f"{command} {extra}"
            break
    if "ALFWorld-v0" in command and command.startswith("python trainers/"):
        command = f"{command} {ALFWORLD_SMALL}"
    return command


def test_the_docs_have_commands_and_every_skip_says_why():
    commands = shell_commands()
    assert len(commands) > 10
    skipped = [c for _, c in commands if runnable(c) is None]
    assert len(skipped) < len(commands) / 2, skipped


def pages_with_commands() -> list[str]:
    """The pages with a command to run, in ``DOCS`` order: one test case each, so a failure names its page."""
    pages = {rel for rel, command in shell_commands() if runnable(command) is not None}
    return [rel for rel in DOCS if rel in pages]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """The one scratch directory every page's commands run in, as a reader's checkout: a later page uses
    what an earlier one wrote (docs/view.md views the ``runs/grpo`` that docs/trainers.md trained).
    ``ran`` holds the pages whose commands have run in it."""
    folder = tmp_path_factory.mktemp("docs")
    os.symlink(os.path.join(ROOT, "trainers"), folder / "trainers")
    # benchmarks/ links each script, but its results/ is this test's own: the commands' default
    # outputs (benchmarks/results/...) must not land in the checkout
    (folder / "benchmarks").mkdir()
    for name in os.listdir(os.path.join(ROOT, "benchmarks")):
        if name != "results":
            os.symlink(os.path.join(ROOT, "benchmarks", name), folder / "benchmarks" / name)
    save_modules(folder)
    return {"dir": folder, "ran": set()}


def run_page(rel: str, scratch: dict) -> list[str]:
    """Run the page's commands in order in the scratch directory; what failed, one entry per command."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    failures = []
    for page, command in shell_commands():
        shrunk = runnable(command) if page == rel else None
        if shrunk is None:
            continue
        argv = shlex.split(shrunk)
        if argv[0] == "python":
            argv[0] = sys.executable
        elif argv[0] == "agentgym":
            argv = [sys.executable, "-m", "agentgym.cli", *argv[1:]]
        got = subprocess.run(argv, cwd=scratch["dir"], env=env, capture_output=True, text=True, timeout=600)
        if got.returncode != 0:
            failures.append(f"{rel}: {command}\n  ran: {shrunk}\n  exit {got.returncode}: {got.stderr[-800:]}")
    scratch["ran"].add(rel)
    return failures


@pytest.mark.engine
@pytest.mark.learning
@pytest.mark.multiproc
@pytest.mark.parametrize("page", pages_with_commands())
def test_every_documented_command_runs(page, scratch):
    # the pages before this one run first where they have not (this page picked alone with -k): their
    # failures are their own cases', named here only as what this page's commands started from
    earlier = [rel for rel in pages_with_commands()[:pages_with_commands().index(page)] if rel not in scratch["ran"]]
    before = [failure for rel in earlier for failure in run_page(rel, scratch)]
    failures = run_page(page, scratch)
    assert not failures, "\n\n".join(failures + [f"(after an earlier page failed) {f}" for f in before])


def test_each_page_with_commands_is_its_own_case():
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "-o", "addopts=", os.path.join(ROOT, "tests", "test_docs_commands.py")],
                            cwd=ROOT, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, capture_output=True,
                            text=True, timeout=120)
    cases = [line.split("::", 1)[1] for line in listed.stdout.splitlines() if "::test_every_documented_command" in line]
    assert cases == [f"test_every_documented_command_runs[{rel}]" for rel in pages_with_commands()], listed.stdout
    assert {"README.md", "docs/trainers.md", "docs/view.md"} <= set(pages_with_commands())


# Python snippets that are fragments or name the reader's own files, and why they are not run
SNIPPET_NOT_RUN = {
    "data_path=\"~/alfworld_data\"": "the reader's own ALFWorld download",
    "nq_test.jsonl": "the reader's own Search-R1 files (tests/envs/test_toolqa.py loads such files)",
    "class MyAgent": "an interface outline (tests/leaderboard runs a module:Class agent)",
    ">>>": "doctests, run by tests/vector/test_docs.py",
    "GRPOTrainer(": "runs as written in tests/integrations/test_trl.py",
}
# Snippets that talk to a server: the server the docs start in the bash block before them, started here
SNIPPET_SERVERS = {"http://127.0.0.1:8000": ["ToolQA-v0", "--env-kwargs", '{"expert": true}']}
# Optional packages a snippet may import, and the module that must import for it to run (dev installs all of
# them but verifiers, whose mcp<2 conflicts with the mcp extra); a snippet whose package is missing is skipped
SNIPPET_EXTRAS = {"openenv": "openenv", "trl": "trl", "mcp": "mcp", "datasets": "datasets", "skyrl_gym": "skyrl_gym",
                  "verifiers": "verifiers.legacy"}
_LOOKS_LIKE_OUTPUT = re.compile(r"^\s*print\((.*)\)\s*#\s*((?:[\[{(\"'\d-]|True|False|None).*)$")


def python_snippets() -> list[tuple[str, str]]:
    """(file, code) of every ```python block that starts with an import (a whole program)."""
    out = []
    for rel in DOCS:
        for body in re.findall(r"```python\n(.*?)```", open(os.path.join(ROOT, rel)).read(), flags=re.S):
            if body.lstrip().startswith(("import ", "from ")):
                out.append((rel, body))
    return out


def checked(code: str) -> str:
    """The snippet with each ``print(x)  # <output>`` turned into a check that it prints that."""
    lines = []
    for line in code.splitlines():
        m = _LOOKS_LIKE_OUTPUT.match(line)
        if m:
            indent = line[: len(line) - len(line.lstrip())]
            # the comment may go on after the output, past a colon: "{...}: why"
            lines.append(f"{indent}__check({m.group(2)!r}, {m.group(1)})")
        else:
            lines.append(line)
    return "\n".join(lines)


def _check(expected: str, *values) -> None:
    printed = " ".join(str(v) for v in values)
    assert expected == printed or expected.startswith(printed + ":"), f"prints {printed!r}, the docs say {expected!r}"


@pytest.mark.engine
@pytest.mark.learning
@pytest.mark.parametrize("rel,code", python_snippets(), ids=lambda x: x if x.endswith(".md") else "")
def test_every_documented_python_snippet_runs_and_prints_what_it_says(rel, code, tmp_path, monkeypatch, tiny_path):
    reason = next((why for key, why in SNIPPET_NOT_RUN.items() if key in code), None)
    if reason:
        pytest.skip(reason)
    for module, needed in SNIPPET_EXTRAS.items():
        if re.search(rf"^\s*(from|import) {module}\b", code, flags=re.M):
            pytest.importorskip(needed)
    monkeypatch.chdir(tmp_path)
    save_modules(tmp_path)  # a module the page has the reader save, importable as they would import it
    monkeypatch.syspath_prepend(str(tmp_path))
    code = code.replace('"path/to/checkpoint"', repr(tiny_path))  # the reader's checkpoint: the tiny model
    servers = []
    for url, args in SNIPPET_SERVERS.items():
        if url in code:
            from integrations.servers import Server

            servers.append(Server(*args))
            code = code.replace(url, servers[-1].url)
    namespace = {"__check": _check, "__name__": "__docs__"}
    try:
        exec(compile(checked(code), f"{rel} snippet", "exec"), namespace)
    finally:
        for value in list(namespace.values()):
            if hasattr(value, "close") and hasattr(value, "step") and not isinstance(value, type):
                value.close()  # envs and vector envs the snippet left open
        for server in servers:
            server.close()
