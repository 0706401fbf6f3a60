"""TextWorld-v0 on TextWorld's own engine, over games made by tw-make."""

import os
import subprocess
import sys

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("textworld")

from gymnasium.utils.env_checker import check_env

import agentgym  # noqa: F401
from agentgym.envs.interpreter_commands import META_COMMANDS, META_REPLY, screen_command
from agentgym.envs.textworld_env import TextWorldEnv, clean_feedback


def _tw_make(path, seed):
    tw_make = os.path.join(os.path.dirname(sys.executable), "tw-make")
    cmd = [tw_make, "custom", "--world-size", "3", "--nb-objects", "5", "--quest-length", "3",
           "--seed", str(seed), "--output", str(path), "-f", "--silent"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return str(path)


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    out = tmp_path_factory.mktemp("textworld")
    return [_tw_make(out / "one.z8", 1), _tw_make(out / "two.z8", 2)]


@pytest.fixture(scope="module", autouse=True)
def interpreter_dir(tmp_path_factory):
    """Run this file in an empty folder: the interpreter writes saves and transcripts into the
    working directory, and anything it writes must show (and must not land in the repository)."""
    folder = tmp_path_factory.mktemp("interpreter_cwd")
    here = os.getcwd()
    os.chdir(folder)
    yield folder
    os.chdir(here)


@pytest.fixture(scope="module")
def env(games, interpreter_dir):
    env = gym.make("TextWorld-v0", game=games[0], expert=True, render_mode="ansi")
    yield env
    env.close()


def test_check_env_passes(env):
    check_env(env.unwrapped)


def test_expert_walkthrough_wins_with_progress_from_the_score(env):
    obs, info = env.reset(seed=0)
    assert "________" not in obs and not obs.rstrip().endswith(">")  # banner and prompt removed
    assert info["instruction"] and info["task_id"] == "one" and info["expert_action"] in info["admissible_actions"]
    rewards = []
    while True:
        obs, reward, terminated, truncated, info = env.step(f"<action>{info['expert_action']}</action>")
        rewards.append(reward)
        assert info["reward_terms"]["valid"] == 1.0
        if terminated or truncated:
            break
    assert terminated and info["success"] and info["reward_terms"]["progress"] == 1.0
    assert sum(rewards) == pytest.approx(info["episode_return"]) == pytest.approx(1.0)
    assert info["metrics"]["score"] >= 1 and "[action]" in env.render()


def test_bad_input_never_reaches_or_crashes_the_interpreter(env):
    env.reset(seed=0)
    bad = ["ab\x00cd", "\\m \\h \\* \\~ look", "restart", "quit", "save", "é中 look", "\x07\x1b[1m",
           "x" * 300_000, "", "a\nb"]
    for action in bad:
        obs, _, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and obs and not terminated
    obs, _, _, _, info = env.step("restart")
    assert obs == META_REPLY and not info["action_valid"] and info["reward_terms"]["format"] == 1.0
    obs, _, _, _, info = env.step("look")  # the game is still the same game
    assert info["action_valid"] and "Invalid" not in obs


# Ways to slip a meta-command past a check of the first word only.
META_FORMS = ["quit.", "restart.", "save.", "restore.", "script.", "transcript.", "look. restart", "look then restart",
              "look, save", "LOOK THEN SCRIPT", "Restart!", "q", "look.restore", ". undo", "look . quit", "oops south",
              "verify", "inventory then save then quit"]


def _play_out(env, info, between=(), seen=None):
    """Follow the expert to the end, sending ``between`` after each of its steps; the turns it took.
    ``seen`` collects what the game answered each expert step."""
    expert_turns = 0
    while True:
        expert = info["expert_action"]
        obs, _, terminated, truncated, info = env.step(expert)
        expert_turns += 1
        if seen is not None:
            seen.append(obs)
        if terminated or truncated:
            return expert_turns, info
        for action in between:
            obs, _, terminated, _, refused = env.step(action)
            assert obs == META_REPLY and not refused["action_valid"] and not terminated, action
            assert refused["reward_terms"]["format"] == 1.0 and refused["reward_terms"]["valid"] == 0.0
            assert refused["expert_action"] == info["expert_action"]  # the game did not move


def test_meta_commands_in_any_form_never_reach_the_interpreter(games, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the interpreter writes saves and transcripts into its working directory
    env = TextWorldEnv(game=games[0], expert=True, max_turns=500)
    _, info = env.reset(seed=0)
    plain_turns, plain = _play_out(env, info)
    _, info = env.reset(seed=0)
    turns, info = _play_out(env, info, between=META_FORMS)
    assert plain["success"] and info["success"] and turns == plain_turns  # no restart, no undo, no quit
    assert os.listdir(tmp_path) == []
    env.close()


# Words a Z-machine story resolves to a meta verb: it reads the first 9 Z-characters of a word,
# case-folded, and a digit or punctuation mark takes two (pronouns1 is pronouns).
TRUNCATED_META = ["transcriptx", "TRANSCRIPTQ", "Transcription", "superbriefx", "pronouns1", "nouns", "pronouns-",
                  "print_stuff", "tw-extraz score", "tw-printxyz version", "restrict1 commands",
                  "enable print state option", "look. transcripts", 'save"', "g", "again"]


def test_meta_verbs_are_refused_as_the_interpreter_resolves_them(games, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a transcript would start here (and grow across resets)
    env = TextWorldEnv(game=games[0], expert=True, max_turns=500)
    plain, probed = [], []
    _, info = env.reset(seed=0)
    plain_turns, _ = _play_out(env, info, seen=plain)
    _, info = env.reset(seed=0)
    env.step("superbriefx")  # before the first move: every room after it would be described briefly
    turns, info = _play_out(env, info, between=TRUNCATED_META, seen=probed)
    assert info["success"] and turns == plain_turns
    assert probed == plain  # same game, same descriptions: no mode changed, no state printed
    assert os.listdir(tmp_path) == []
    env.close()


@pytest.mark.parametrize("verb", sorted(META_COMMANDS))
def test_every_meta_verb_is_refused_in_the_forms_the_interpreter_reads_as_it(verb):
    forms = [verb, verb.upper(), f"look. {verb.title()}", f'"{verb}']
    zchars = sum(1 if c.isalpha() else 2 for c in verb)  # a letter is one Z-character, - and _ two
    if zchars >= 9:
        forms.append(verb + "x")  # the rest is never read
    elif zchars == 8:
        forms.append(verb + "1")  # a digit's first Z-character is a shift, the same as padding
    for form in forms:
        assert screen_command(form) == (None, META_REPLY), form


@pytest.mark.parametrize("command", ["verbose1", "scripted", "quitting", "g1", "goal", "help", "take score card",
                                     'say "hello"', "examine normal key"])
def test_words_the_interpreter_reads_as_other_words_still_play(command):
    assert screen_command(command) == (command, None)


def test_a_save_cannot_carry_over_to_another_env(games, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, second = TextWorldEnv(game=games[0], expert=True), TextWorldEnv(game=games[0], expert=True)
    _, info = first.reset(seed=0)
    start = info["expert_action"]
    first.step(start)
    assert first.step("save.")[0] == META_REPLY
    _, info = second.reset(seed=0)
    obs, _, _, _, info = second.step("restore.")
    assert obs == META_REPLY and info["expert_action"] == start and os.listdir(tmp_path) == []
    first.close()
    second.close()


def test_one_command_per_turn_and_a_final_full_stop_is_fine(env):
    _, info = env.reset(seed=0)
    expert = info["expert_action"]
    for chain in (f"{expert}. look", f"look then {expert}", f"{expert}, inventory"):
        obs, _, _, _, step_info = env.step(chain)
        assert obs.startswith("One command per turn") and not step_info["action_valid"]
        assert step_info["expert_action"] == expert
    _, _, _, _, step_info = env.step(f"<action>{expert}.</action>")
    assert step_info["action_valid"] and step_info["expert_action"] != expert


@pytest.mark.parametrize("text, command", [("look", "look"), ("Take the key.", "Take the key"),
                                           ("go north!", "go north"), ("  open   chest ...", "open chest"),
                                           ("x" * 300, "x" * 200)])
def test_screen_command_passes_one_command(text, command):
    assert screen_command(text) == (command, None)


@pytest.mark.parametrize("text", META_FORMS + ["look. inventory", "look, take key", "go south THEN go east", "", "..."])
def test_screen_command_refuses_chains_meta_and_nothing(text):
    command, reply = screen_command(text)
    assert command is None and reply


def test_several_games_seeds_and_task_ids(games):
    env = TextWorldEnv(game=games, max_turns=2, reward_mode="binary")
    first = [env.reset(seed=s)[0] for s in range(6)]
    assert first == [env.reset(seed=s)[0] for s in range(6)] and len(set(first)) == 2
    _, info = env.reset(options={"task_id": "two.z8"})
    assert info["task_id"] == "two" and info["group_key"].endswith("two.z8")
    outs = [env.step("look"), env.step("look")]
    assert outs[-1][3] and all(o[1] == 0.0 for o in outs)  # turn limit; binary reward
    env.close()


def test_arguments_are_checked(games, monkeypatch):
    with pytest.raises(ValueError, match="needs game"):
        TextWorldEnv()
    with pytest.raises(FileNotFoundError):
        TextWorldEnv(game=games[0] + ".missing")
    monkeypatch.setitem(sys.modules, "textworld", None)
    with pytest.raises(gym.error.DependencyNotInstalled, match=r"agentgym\[alfworld\]"):
        TextWorldEnv(game=games[0])


def test_clean_feedback_strips_prompt_and_banner():
    raw = "\n\n  ____  \n |    \\ \n\nWelcome!\n\n-= Room =-\nHi.\n\n>   -= Room =-0/1\n"
    assert clean_feedback(raw, first=True) == "Welcome!\n\n-= Room =-\nHi."
    assert clean_feedback("\nYou close it.\n\n>  ") == "You close it."


_chained = st.lists(st.sampled_from(["look", "inventory", "go south", "restart", "save", "restore", "script", "quit",
                                     "q", "undo", "oops look", "take chest"]), min_size=1, max_size=4).flatmap(
    lambda words: st.sampled_from([". ", " then ", ", ", ".", " THEN "]).map(lambda sep: sep.join(words)))


@pytest.fixture(scope="module")
def long_env(games, interpreter_dir):
    env = TextWorldEnv(game=games[0], max_turns=10_000)
    env.reset(seed=0)
    yield env
    env.close()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(action=_chained.map(lambda a: a + "."))
def test_chained_meta_commands_never_run(long_env, interpreter_dir, action):
    obs, _, terminated, _, info = long_env.step(action)
    meta = any(part.split()[0] in {"restart", "save", "restore", "script", "quit", "q", "undo", "oops"}
               for part in action.lower().replace(" then ", ".").replace(",", ".").split(".") if part.strip())
    if meta:
        assert obs == META_REPLY and not info["action_valid"]
    assert not terminated and os.listdir(interpreter_dir) == []


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(action=st.one_of(st.text(max_size=200), st.text(alphabet="\\<>~*&^%$#@!{}[]|/ abcxyz", max_size=40), _chained))
def test_arbitrary_strings_never_crash_the_interpreter(env, action):
    if not env.has_reset:  # the module's env is shared: this test also runs alone (-k)
        env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and isinstance(reward, float) and "reward_terms" in info
    if terminated or truncated:
        env.reset(seed=0)


def test_history_and_choice_options_on_a_tw_make_game(games):
    env = gym.make("TextWorld-v0", game=games[0], expert=True, observation="history+admissible", history=1,
                   action_format="choice")
    obs, info = env.reset(seed=0)
    assert obs.startswith(f"Task: {' '.join(info['instruction'].split())}") and "\n1. " in obs
    k = info["admissible_actions"].index(info["expert_action"]) + 1
    obs, _, _, _, info = env.step(f"<action>{k}</action>")
    assert info["chosen_action"] in obs and info["reward_terms"]["valid"] == 1.0
    assert f"Now (step 2 of 50):\n{info['raw_observation']}" in obs
    env.close()
