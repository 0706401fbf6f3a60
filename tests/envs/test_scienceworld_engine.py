"""The ScienceWorld JVM: its options, its split tables, and that no JVM outlives its env."""

import os
import signal
import subprocess
import sys
import textwrap

import gymnasium as gym
import psutil
import pytest
from processes import java_children, wait_gone

import agentgym  # noqa: F401  registers the envs
from agentgym.envs.scienceworld.tasks import SPLIT_SIZES, TASK_NAMES, split_variations

pytest.importorskip("scienceworld")
from agentgym.envs.scienceworld.engine import EngineFailure, ScienceWorldEngine  # noqa: E402


@pytest.fixture(scope="module")
def env():
    e = gym.make("ScienceWorld-v0", task="boil")
    yield e
    e.close()


@pytest.mark.engine
def test_split_tables_match_the_engine():
    engine = ScienceWorldEngine()
    try:
        assert sorted(engine.task_names()) == sorted(TASK_NAMES)
        for task in TASK_NAMES:
            engine.load(task, 0, "", False)
            for split in ("train", "dev", "test"):
                assert engine.variations(split) == list(split_variations(task, split)), (task, split)
            assert engine.max_variations(task) == sum(SPLIT_SIZES[task])
    finally:
        engine.close()


@pytest.mark.engine
def test_jvm_runs_with_the_memory_options(env):
    env.reset(seed=0)
    cmdline = psutil.Process(env.unwrapped.engine.pid).cmdline()
    assert "-Xmx512m" in cmdline and "-XX:+UseSerialGC" in cmdline and "-XX:hashCode=2" in cmdline
    assert psutil.Process(env.unwrapped.engine.pid).ppid() == os.getpid()


def test_a_bad_jvm_option_fails_cleanly_without_a_leftover_jvm():
    before = java_children()
    with pytest.raises(EngineFailure, match="did not start"):
        ScienceWorldEngine(["-XX:+ThisOptionDoesNotExist"])
    assert java_children() <= before  # no new JVM (one from an earlier test may be exiting)


@pytest.mark.engine
def test_killed_jvm_truncates_the_episode_and_reset_restarts_it(env):
    obs0, _ = env.reset(seed=1)
    pid = env.unwrapped.engine.pid
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid)
    obs, r, term, trunc, info = env.step("look around")
    assert trunc and not term and "exited" in info["error"] and info["success"] is False
    assert "episode_terms" in info and isinstance(obs, str)
    obs1, info = env.reset(seed=1)
    assert obs1 == obs0 and env.unwrapped.engine.pid != pid
    _, _, term, trunc, info = env.step("look around")
    assert not (term or trunc) and info["action_valid"]


@pytest.mark.engine
def test_close_stops_the_jvm_and_is_idempotent():
    before = java_children()
    e = gym.make("ScienceWorld-v0", task="melt")
    assert java_children() <= before  # the JVM starts at the first reset, not at make
    e.reset(seed=0)
    pid = e.unwrapped.engine.pid
    e.close()
    assert wait_gone(pid)
    e.close()
    e.reset(seed=0)  # a closed env starts a new JVM when used again
    pid2 = e.unwrapped.engine.pid
    del e
    import gc

    gc.collect()
    assert wait_gone(pid2)  # collected without close(): the finalizer stops it


SCRIPT = textwrap.dedent("""
    import sys, time, gymnasium as gym, agentgym
    env = gym.make("ScienceWorld-v0", task="boil")
    env.reset(seed=0)
    print(env.unwrapped.engine.pid, flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
    # "exit": leave without close(); atexit must stop the JVM
""")


@pytest.mark.engine
@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_no_jvm_outlives_the_interpreter(how):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, "hang" if how == "sigkill" else "exit"],
                            stdout=subprocess.PIPE, text=True)
    jvm = int(proc.stdout.readline())
    assert psutil.pid_exists(jvm)
    if how == "sigkill":
        proc.kill()  # no atexit, no finalizer: the JVM sees its stdin close and exits
    proc.wait(timeout=60)
    proc.stdout.close()
    assert wait_gone(jvm, within=15)
