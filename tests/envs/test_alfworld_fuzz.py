"""Any string is a legal ALFWorld action: arbitrary text never raises, bad output scores format 0."""

import pytest

pytest.importorskip("alfworld")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.envs.alfworld.env import ALFWorldEnv
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.parsing import parse_embodied_action, sanitize

MAX_TURNS = 25
_STATE = {}


def _env(tmp_path_factory):
    if "env" not in _STATE:
        root = tmp_path_factory.mktemp("alfworld-fuzz")
        generate(str(root), 6, seed=5)
        _STATE["env"] = ALFWorldEnv(data_path=str(root), max_turns=MAX_TURNS)
        _STATE["env"].reset(seed=0)
        _STATE["turns"] = 0
    return _STATE["env"]


@pytest.fixture(scope="module", autouse=True)
def _close():
    yield
    if "env" in _STATE:
        _STATE.pop("env").close()


actions = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60).map(lambda s: f"<action>{s}</action>"),
    st.sampled_from(["", "\x00", "look", "<action>inventory</action>", "<action>", "</action><action>",
                     "<think>x</think>help", "go to", "\n\n", "a" * 5000, "<action>a</action><action>b</action>"]),
    st.binary(max_size=64).map(lambda b: b.decode("utf-8", "replace")),
    # chains of commands and interpreter meta-commands: none may reach the engine as more than one command
    st.lists(st.sampled_from(["look", "inventory", "restart", "save", "restore", "script", "quit", "undo"]),
             min_size=1, max_size=4).flatmap(lambda words: st.sampled_from([". ", " then ", ", ", "."]).map(
                 lambda sep: sep.join(words) + ".")),
)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(action=actions)
def test_arbitrary_strings_never_raise_and_the_turn_limit_truncates(tmp_path_factory, action):
    env = _env(tmp_path_factory)
    obs, reward, terminated, truncated, info = env.step(action)
    _STATE["turns"] += 1
    assert isinstance(obs, str) and obs and env.observation_space.contains(obs)
    assert isinstance(reward, float) and set(info["reward_terms"]) <= {"format", "valid", "progress", "success"}
    if len(action) > env.max_action_chars or parse_embodied_action(sanitize(action)).error is not None:
        assert info["reward_terms"]["format"] == 0.0 and info["parse_error"] and not info["action_valid"]
    else:
        assert info["reward_terms"]["format"] == 1.0
    if _STATE["turns"] >= MAX_TURNS:
        assert terminated or truncated
    assert truncated == (not terminated and _STATE["turns"] >= MAX_TURNS)
    if terminated or truncated:
        assert "success" in info and "episode_terms" in info
        env.reset(seed=_STATE["turns"])
        _STATE["turns"] = 0
