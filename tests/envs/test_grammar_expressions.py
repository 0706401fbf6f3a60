"""A PDDL game's grammar expressions are never evaluated as Python: ALFWorld's own forms evaluate as
``eval`` evaluated them, every other form is refused, and a game planted with a command (in a task
set, a checkpoint, a served env, a TextWorld-v0 game) never runs it, on every engine path."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("alfworld")

import agentgym  # noqa: F401
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.grammar_expressions import GrammarExpressionError, compile_expression, evaluate

REPO = Path(__file__).resolve().parents[2]

# Every expression alfworld's shipped grammar (alfred.twl2) holds: what game_expressions() read off
# it when the evaluator was written (the measurement the allowed forms rest on).
ALFRED_EXPRESSIONS = {
    "co", "co.name", "ko", "ko.name", "o", "o.indefinite", "o.indefinite + ' ' + o.name ", "o.name",
    "o2.indefinite + ' ' + o2.name ", "outero", "outero.name", "outerr", "outerr.name", "r", "r.indefinite",
    "r.name", "r.name ", "r.name or r.id"}


def planted_command(marker: Path) -> str:
    """Python that creates ``marker``, put in front of a grammar expression."""
    return f"__import__('pathlib').Path({str(marker)!r}).touch() or "


def plant(game_file: Path, marker: Path) -> None:
    """Put the command into every grammar expression that starts with ``r.name`` (the intro's list of
    receptacles among them, so it is reached at the first reset)."""
    data = json.loads(game_file.read_text())
    assert "{r.name" in data["grammar"]
    data["grammar"] = data["grammar"].replace("{r.name", "{" + planted_command(marker) + "r.name")
    game_file.write_text(json.dumps(data))


def game_files(root: Path) -> list[Path]:
    return sorted(root.rglob("game.tw-pddl"))


class Info:
    """Stands for textworld's EntityInfo: the fields the grammar reads."""

    def __init__(self, name, indefinite="a", id="x_1"):
        self.name, self.indefinite, self.id = name, indefinite, id


def test_alfworlds_grammar_uses_only_the_allowed_forms_and_they_evaluate_as_python_does():
    import alfworld.info

    from agentgym.envs.alfworld.translation import game_expressions

    with open(alfworld.info.ALFRED_TWL2_PATH) as f:
        assert game_expressions({"grammar": f.read()}) == ALFRED_EXPRESSIONS
    for named in [Info("apple", "an"), Info(None, "a", "apple_1"), Info("", None, "bowl_2")]:
        variables = {v: named for v in ("co", "ko", "o", "o2", "outero", "outerr", "r")}
        for expression in ALFRED_EXPRESSIONS:
            try:
                expected = eval(expression, {}, dict(variables))  # the literal forms above, nothing read from a file
            except TypeError as e:  # None + str: the evaluator fails as eval does
                with pytest.raises(TypeError, match=str(e)[:20]):
                    evaluate(expression, variables)
                continue
            assert evaluate(expression, variables) == expected, expression
    with pytest.raises(NameError, match="'o'"):
        evaluate("o.name", {})


@pytest.mark.parametrize("expression, why", [
    ("__import__('os').system('true')", "a call"),
    ("o.__class__", "the field '__class__'"),
    ("o.name.__class__", "a field of something other than a variable"),
    ("(lambda: 1)()", "a call"),
    ("o.name[0]", "a subscript"),
    ("[x for x in o.name]", "a ListComp expression"),
    ("o.name * 10**9", "the operator Mult"),
    ("o.name and r.name", "the operator And"),
    ("1 + 1", "a int literal"),
    ("o.name if o else r.name", "a IfExp expression"),
    ("a + " * 400 + "a", "over 1000 characters"),
    ("o.name )", "not an expression"),
])
def test_every_other_form_is_refused_unevaluated(expression, why, tmp_path):
    with pytest.raises(GrammarExpressionError, match="is not a form agentgym evaluates") as e:
        compile_expression(expression)
    assert why in str(e.value) and "\n" not in str(e.value)


@pytest.fixture(scope="module")
def games(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("grammar") / "games"
    generate(str(out), 3, seed=5, split="train")
    return out


@pytest.fixture(scope="module")
def task_set(games, tmp_path_factory) -> Path:
    """An ALFWorld task set that carries its own games (``data_path`` inside the set)."""
    pytest.importorskip("datasets")
    from agentgym.integrations.tasksets import export_tasks

    out = tmp_path_factory.mktemp("sets") / "alf"
    cwd = os.getcwd()
    os.chdir(games.parent)
    try:
        export_tasks("ALFWorld-v0", "train", str(out), {"data_path": "games", "max_turns": 5})
    finally:
        os.chdir(cwd)
    shutil.copytree(games, out / "games")
    return out


def planted_copy(folder: Path, tmp_path: Path) -> tuple[Path, Path]:
    out, marker = tmp_path / folder.name, tmp_path / "ran"
    shutil.copytree(folder, out)
    for game_file in game_files(out):
        plant(game_file, marker)
    return out, marker


@pytest.mark.parametrize("cache", ["default", "folder", "off"])
def test_a_task_set_whose_games_plant_a_command_is_refused_naming_the_game(task_set, tmp_path, cache):
    bad, marker = planted_copy(task_set, tmp_path)
    kwargs = {"default": {}, "folder": {"cache": str(tmp_path / "cache")}, "off": {"cache": False}}[cache]
    env = gym.make("ALFWorld-v0", tasks=str(bad), **kwargs)
    with pytest.raises(GrammarExpressionError, match="is not a form agentgym evaluates") as e:
        env.reset(seed=0)
    message = str(e.value)
    assert "\n" not in message and "game.tw-pddl" in message and str(bad) in message and "(a call)" in message
    env.close()
    assert not marker.exists()
    # the same set, unplanted, plays
    env = gym.make("ALFWorld-v0", tasks=str(task_set), **kwargs)
    assert "You are in the middle of a room" in env.reset(seed=0)[0]
    env.close()


def test_textworlds_own_engine_evaluates_without_eval_once_agentgym_plays(games, tmp_path):
    """Any PddlEnv in the process, agentgym's or the user's own, once agentgym has played a PDDL game."""
    from textworld import EnvInfos
    from textworld.envs import PddlEnv

    from agentgym.envs.alfworld.checked_pddl import CheckedPddlEnv

    bad, marker = planted_copy(games, tmp_path)
    CheckedPddlEnv(EnvInfos(admissible_commands=True))  # installs the guard, as every agentgym engine does
    plain = PddlEnv(EnvInfos(admissible_commands=True))
    plain.load(str(game_files(bad)[0]))
    with pytest.raises(GrammarExpressionError, match="a call"):
        plain.reset()
    assert not marker.exists()


def test_the_engine_reads_the_same_expressions_off_a_loaded_game_as_off_its_file(games):
    from textworld import EnvInfos

    from agentgym.envs.alfworld.checked_pddl import CheckedPddlEnv, loaded_expressions
    from agentgym.envs.alfworld.translation import game_expressions

    path = game_files(games)[0]
    env = CheckedPddlEnv(EnvInfos(admissible_commands=True))
    env.load(str(path))
    assert loaded_expressions(env._logic) == game_expressions(json.loads(path.read_text())) >= {"r.name or r.id"}


def test_textworld_v0_refuses_a_planted_pddl_game_and_plays_a_clean_one(games, tmp_path):
    bad, marker = planted_copy(games, tmp_path)
    game = tmp_path / "one.tw-pddl"
    shutil.copy(game_files(bad)[0], game)
    env = gym.make("TextWorld-v0", game=str(game))
    with pytest.raises(GrammarExpressionError, match=r"one\.tw-pddl: grammar expression .* is not a form agentgym evaluates"):
        env.reset(seed=0)
    assert not marker.exists()
    clean = tmp_path / "clean.tw-pddl"
    shutil.copy(game_files(games)[0], clean)
    obs, info = gym.make("TextWorld-v0", game=str(clean)).reset(seed=0)
    assert "You are in the middle of a room" in obs and info["task_id"] == "clean"


REFERENCE = """
import json, sys
from textworld import EnvInfos
from textworld.envs import PddlEnv  # textworld as it ships: its own eval, no agentgym in the process
out = []
for path in sys.argv[1:]:
    env = PddlEnv(EnvInfos(admissible_commands=True, policy_commands=True))
    env.load(path)
    state = env.reset()
    steps = [[state.feedback, state["admissible_commands"]]]
    for command in list(state["policy_commands"])[:12]:
        state, _, done = env.step(command)
        steps.append([state.feedback, state["admissible_commands"]])
    out.append(steps)
print(json.dumps(out))
"""


@pytest.mark.engine
@pytest.mark.parametrize("engine", ["cached", "checked"])
def test_games_play_step_for_step_as_textworlds_own_eval_played_them(games, engine, tmp_path):
    from textworld import EnvInfos

    from agentgym.envs.alfworld.cached_pddl import CachedPddlEnv
    from agentgym.envs.alfworld.checked_pddl import CheckedPddlEnv
    from agentgym.envs.alfworld.translation_cache import TranslationCache

    paths = [str(p) for p in game_files(games)]
    reference = subprocess.run([sys.executable, "-c", REFERENCE, *paths], capture_output=True, text=True,
                               timeout=600, check=True)
    expected = json.loads(reference.stdout)
    infos = EnvInfos(admissible_commands=True, policy_commands=True)
    env = CachedPddlEnv(infos, TranslationCache(str(tmp_path / "cache"))) if engine == "cached" else CheckedPddlEnv(infos)
    for path, steps in zip(paths, expected, strict=True):
        env.load(path)
        state = env.reset()
        played = [[state.feedback, state["admissible_commands"]]]
        for command in list(state["policy_commands"])[:12]:
            state, _, _ = env.step(command)
            played.append([state.feedback, state["admissible_commands"]])
        assert played == steps
        assert len(steps) > 3


def run(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=600, **kw)


@pytest.mark.engine
@pytest.mark.multiproc
@pytest.mark.network
def test_a_checkpoint_a_board_or_a_server_carrying_planted_games_never_runs_the_command(tiny_path, task_set,
                                                                                       tmp_path):
    """``agentgym eval --model`` and a trainer's ``--preset auto`` (games inside the checkpoint, named by
    its recipe), the leaderboard and ``agentgym serve`` (a set carrying its games): one line, no command."""
    from openenv.core import GenericEnvClient

    from tests.integrations.servers import Server

    model = tmp_path / "downloaded"
    shutil.copytree(tiny_path, model)
    marker = tmp_path / "ran"
    for split in ("train", "valid_seen"):
        generate(str(model / "games"), 2, seed=5, split=split)
    for game_file in game_files(model / "games"):
        plant(game_file, marker)
    (model / "agentgym_sft.json").write_text(json.dumps(
        {"env_id": "ALFWorld-v0", "recipe": {"env_id": "ALFWorld-v0",
                                             "env_kwargs": {"data_path": "games", "max_turns": 3}}}))
    ev = run(["-m", "agentgym.cli", "eval", "--model", str(model), "--env-id", "ALFWorld-v0", "--split", "train",
              "--num-episodes", "1"])
    assert ev.returncode == 2 and "Traceback" not in ev.stderr, ev.stderr[-3000:]
    assert ev.stderr.strip().count("\n") == 0 and "is not a form agentgym evaluates (a call)" in ev.stderr
    assert "game.tw-pddl" in ev.stderr
    train = run(["trainers/grpo.py", "--model", str(model), "--env-id", "ALFWorld-v0", "--preset", "auto",
                 "--num-steps", "1", "--num-groups", "1", "--group-size", "2", "--max-new-tokens", "8",
                 "--eval-episodes", "1", "--cpu-threads", "1", "--output-dir", str(tmp_path / "run")])
    assert train.returncode == 2 and "Traceback" not in train.stderr, train.stderr[-3000:]
    assert train.stderr.strip().splitlines()[-1].startswith("error: ") and "game.tw-pddl" in train.stderr
    assert not marker.exists()

    bad, marker = planted_copy(task_set, tmp_path / "served")
    board = run(["-m", "agentgym.cli", "leaderboard", "--agents", "expert", "--envs", "ALFWorld-v0", "--split",
                 "train", "--env-kwargs", json.dumps({"tasks": str(bad)}), "--out", str(tmp_path / "board"),
                 "--no-progress"])
    assert board.returncode == 0, board.stderr[-3000:]
    played = [json.loads(line) for line in (tmp_path / "board" / "episodes").glob("*.jsonl").__next__().open()]
    assert played and {e["outcome"] for e in played} == {"env_error"}
    assert all(e["error"].startswith("reset refused: ") and "is not a form agentgym evaluates" in e["error"]
               for e in played)
    server = Server("ALFWorld-v0", "--env-kwargs", json.dumps({"tasks": str(bad)}))
    try:
        with GenericEnvClient(base_url=server.url) as client:
            with pytest.raises(Exception, match="is not a form agentgym evaluates"):
                client.reset(seed=0)
    finally:
        server.close()
    assert not marker.exists()
