"""The observation and action options of the embodied envs (``observation="history+admissible"``,
``history=k``, ``action_format="choice"``) on the real engines: generated ALFWorld games, and the
ScienceWorld JVM for one short check."""

import gymnasium as gym
import pytest

pytest.importorskip("alfworld")

from gymnasium.utils.env_checker import check_env

import agentgym  # noqa: F401
from agentgym.envs.alfworld.generate import generate

WRAPPED = {"observation": "history+admissible", "history": 2}
CHOICE = {**WRAPPED, "action_format": "choice"}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("alfworld_obs"))
    generate(out, 6, seed=5, split="train")
    return out


def make(root, **kwargs):
    return gym.make("ALFWorld-v0", data_path=root, split="train_all", expert=True, **kwargs)


def expert_run(env, seed, steps=None):
    """(observation, info) at reset and after each expert step."""
    obs, info = env.reset(seed=seed)
    out = [(obs, info)]
    while steps is None or len(out) <= steps:
        obs, reward, terminated, truncated, info = env.step(info["expert_action"])
        out.append((obs, {**info, "reward": reward}))
        if terminated or truncated:
            break
    return out


@pytest.mark.engine
def test_history_window_shows_the_task_the_last_k_steps_and_the_admissible_actions(root):
    raw, wrapped = make(root), make(root, **WRAPPED)
    plain = expert_run(raw, seed=1, steps=4)
    shown = expert_run(wrapped, seed=1, steps=4)
    task = shown[0][1]["instruction"]
    for t, ((raw_obs, raw_info), (obs, info)) in enumerate(zip(plain, shown)):
        # the same game underneath: the engine's text, admissible list and reward are unchanged
        assert info["raw_observation"] == raw_obs and info["admissible_actions"] == raw_info["admissible_actions"]
        assert info.get("reward") == raw_info.get("reward")
        assert obs.startswith(f"Task: {task}\n") and f"Now (step {t + 1} of 50):\n{raw_obs}" in obs
        listed = obs.split("Admissible actions:\n")[1].splitlines()
        assert listed == [f"- {a}" for a in info["admissible_actions"]]
    # after 4 steps: steps 3 and 4 (the observation each acted on, then its action), not 1 and 2
    obs = shown[4][0]
    history = obs.split("Your last 2 steps:\n")[1].split("\n\nNow")[0].splitlines()
    actions = [info["expert_action"] for _, info in shown[:4]]
    assert history == [f"[step 3] {' '.join(plain[2][0].split())}", f"> {actions[2]}",
                       f"[step 4] {' '.join(plain[3][0].split())}", f"> {actions[3]}"]
    assert "[step 2]" not in obs and shown[0][1]["observation_mode"] == "history+admissible"
    assert "Your last step:\n[step 1]" in shown[1][0]  # one step of history after the first turn
    raw.close(), wrapped.close()


@pytest.mark.engine
def test_history_without_the_list_shows_the_same_task_and_steps_and_no_actions(root):
    listed, bare = make(root, **WRAPPED), make(root, observation="history", history=2, scored_actions=True)
    for (obs, info), (bare_obs, bare_info) in zip(expert_run(listed, seed=1, steps=3), expert_run(bare, seed=1, steps=3)):
        assert bare_obs == obs.split("\n\nAdmissible actions:")[0] and "Admissible actions" not in bare_obs
        # the actions go to the policy apart, as they are, to be scored
        assert bare_info["scored_replies"] == info["admissible_actions"] and "allowed_replies" not in bare_info
    assert bare.reset(seed=1)[1]["observation_mode"] == "history"
    assert "restates the task" in bare.unwrapped.system_prompt and "lists the" not in bare.unwrapped.system_prompt
    listed.close(), bare.close()


@pytest.mark.engine
def test_raw_default_is_todays_observation_and_history_zero_keeps_no_steps(root):
    env = make(root)
    obs, info = env.reset(seed=2)
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-") and "raw_observation" not in info
    assert "observation_mode" not in info and "Admissible actions" not in obs
    obs, *_ , info = env.step(info["expert_action"])
    assert "raw_observation" not in info and "Admissible actions" not in obs
    none = make(root, observation="history+admissible", history=0)
    _, info = none.reset(seed=2)
    obs, *_ = none.step(info["expert_action"])
    assert "Your last" not in obs and obs.startswith("Task: ") and "Admissible actions:\n- " in obs
    # raw text with choice: the engine's text, then the numbered list
    choice = make(root, action_format="choice")
    obs, info = choice.reset(seed=2)
    text, listed = obs.split("\n\nAdmissible actions:\n")
    assert text == info["raw_observation"] and listed.splitlines()[0] == f"1. {info['admissible_actions'][0]}"
    env.close(), none.close(), choice.close()


def test_choice_by_number_text_out_of_range_and_garbage(root):
    env = make(root, **CHOICE)
    obs, info = env.reset(seed=3)
    admissible = info["admissible_actions"]
    assert [f"{k}. {a}" for k, a in enumerate(admissible, 1)] == obs.split("Admissible actions:\n")[1].splitlines()
    go = next(k for k, a in enumerate(admissible, 1) if a.startswith("go to"))

    obs, reward, _, _, info = env.step(f"<action>{go}</action>")  # a number names the k-th action
    assert info["chosen_action"] == admissible[go - 1] and info["action_valid"] and info["parse_error"] is None
    assert info["reward_terms"]["format"] == info["reward_terms"]["valid"] == 1.0
    assert info["raw_observation"].startswith(f"You arrive at {admissible[go - 1][len('go to '):]}")
    assert f"> {admissible[go - 1]}" in obs  # the history shows the action the number named

    n = len(info["admissible_actions"])
    obs, reward, terminated, _, info = env.step(str(n + 1))  # out of range: parsed, names no action
    assert info["reward_terms"]["format"] == 1.0 and info["reward_terms"]["valid"] == 0.0
    assert not info["action_valid"] and info["parse_error"] is None and not terminated
    assert info["raw_observation"] == f"Invalid choice: {n + 1} names no action; the admissible actions are numbered 1 to {n}."
    assert reward < 0 and "chosen_action" not in info

    for reply in ("(1)", "[1]", "1."):
        first = info["admissible_actions"][0]
        _, _, _, _, info = env.step(reply)
        assert info["chosen_action"] == first and info["action_valid"]
    text = info["admissible_actions"][-1]  # the command text itself still works
    _, _, _, _, info = env.step(text)
    assert info["action_valid"] and "chosen_action" not in info
    _, _, _, _, info = env.step("jump over the moon")  # words that are no action: as in text format
    assert info["reward_terms"]["format"] == 1.0 and info["reward_terms"]["valid"] == 0.0
    assert info["raw_observation"] == "Nothing happens."
    obs, _, _, _, info = env.step("<action>1</action><action>2</action>")  # garbage: format 0
    assert info["reward_terms"]["format"] == 0.0 and info["parse_error"] and "> (invalid output) " in obs
    env.close()


@pytest.mark.engine
def test_expert_solves_games_with_the_options_on_with_todays_return(root):
    raw = make(root)
    for kwargs, seed in ((CHOICE, 0), ({"action_format": "choice"}, 1)):
        env = make(root, **kwargs)
        wrapped, plain = expert_run(env, seed), expert_run(raw, seed)
        assert wrapped[-1][1]["success"] and len(wrapped) == len(plain)
        assert [info["reward"] for _, info in wrapped[1:]] == [info["reward"] for _, info in plain[1:]]
        assert [info["raw_observation"] for _, info in wrapped] == [obs for obs, _ in plain]
        end = "Now (the episode is over after" in wrapped[-1][0]
        assert end == (kwargs is CHOICE) and "Admissible actions" not in wrapped[-1][0]
        env.close()
    raw.close()


@pytest.mark.engine
def test_check_env_render_and_system_prompt_with_the_options_on(root):
    env = make(root, render_mode="ansi", **CHOICE)
    check_env(env.unwrapped)
    _, info = env.reset(seed=0)
    assert "reply with the number" in info["system_prompt"] and "restates the task" in info["system_prompt"]
    env.step("1")
    text = env.render()
    assert "[action]\n1\n" in text and text.count("Admissible actions:") == 2
    own = make(root, system_prompt="Act.", **CHOICE)  # a prompt of one's own is left as it is
    assert own.reset(seed=0)[1]["system_prompt"] == "Act."
    env.close(), own.close()


def test_bad_option_values_are_one_line_errors(root):
    with pytest.raises(ValueError, match="observation must be one of"):
        make(root, observation="summary")
    with pytest.raises(ValueError, match="action_format must be one of"):
        make(root, action_format="number")
    with pytest.raises(ValueError, match="history must be an integer >= 0"):
        make(root, observation="history+admissible", history=-1)
    with pytest.raises(ValueError, match="lists no admissible actions"):
        gym.make("ToolQA-v0", observation="history+admissible")


@pytest.mark.engine
def test_scienceworld_shows_and_takes_its_admissible_actions_by_number():
    pytest.importorskip("scienceworld")
    env = gym.make("ScienceWorld-v0", task="find-living-thing", max_turns=5, **CHOICE)
    try:
        obs, info = env.reset(seed=0)
        admissible = info["admissible_actions"]
        assert obs.startswith(f"Task: {info['instruction']}") and f"1. {admissible[0]}\n" in obs
        k = admissible.index("look around") + 1
        obs, _, _, _, info = env.step(str(k))
        assert info["chosen_action"] == "look around" and info["reward_terms"]["valid"] == 1.0
        assert info["raw_observation"].startswith("This room is called") and "> look around" in obs
        _, _, _, _, info = env.step("0")
        assert info["reward_terms"] == {"format": 1.0, "valid": 0.0} and not info["action_valid"]
        with pytest.raises(ValueError, match="admissible_actions=False"):
            gym.make("ScienceWorld-v0", admissible_actions=False, action_format="choice")
    finally:
        env.close()


def test_agentgym_play_takes_the_options_as_flags(root, monkeypatch, capsys):
    import io

    from agentgym.cli import main as cli_main

    monkeypatch.setattr("sys.stdin", io.StringIO("1\n:actions\n99\n:q\n"))
    assert cli_main(["play", "ALFWorld-v0", "--kwarg", f"data_path={root}", "--kwarg", "split=train_all",
                     "--observation", "history+admissible", "--history", "1", "--action-format", "choice"]) == 0
    out = capsys.readouterr().out
    assert "Your last step:\n[step 1]" in out and "\n1. " in out and "names no action" in out
    assert "admissible actions; type :actions" not in out  # the observation lists them already
    with pytest.raises(SystemExit, match="lists no admissible actions"):
        cli_main(["play", "ToolQA-v0", "--observation", "history+admissible"])
