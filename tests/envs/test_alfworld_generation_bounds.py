"""A generated ALFWorld set is bounded: data (a task set, a recipe, a SkyRL row) may ask for at most
16,000 games, a generation the disk has no room for is refused before it writes, and a generation
that is terminated or killed leaves no temporary folder behind for long."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import agentgym  # noqa: F401
from agentgym.envs.alfworld import data as alf_data
from agentgym.envs.data_settings import MAX_DATA_GENERATED, DataSettingError, check_data_env_kwargs

REPO = Path(__file__).resolve().parents[2]


def leftovers(cache: Path) -> list[str]:
    folder = cache / "alfworld"
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".generating-")) if folder.exists() else []


def test_data_may_ask_for_a_bounded_generation_only(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    assert MAX_DATA_GENERATED == 16_000  # the largest set agentgym's own recipes name
    for ok in ("generated", "generated:tiny", "generated:16000:tiny", "generated:4000:small"):
        assert check_data_env_kwargs({"data_path": ok}, "f") == {"data_path": ok}
    for big in ("generated:89363", "generated:16001:tiny", "generated:small:99999999999"):
        with pytest.raises(DataSettingError, match=r"'data_path'.*asks to generate \d+ ALFWorld games, and data may "
                                                   r"ask for at most 16000") as e:
            check_data_env_kwargs({"data_path": big}, "sets/x/environment.yaml")
        assert "\n" not in str(e.value) and "sets/x/environment.yaml" in str(e.value)
    # the user's own flag is the user's: no bound but the disk's
    assert check_data_env_kwargs({"data_path": "generated:89363", "max_turns": 3}, "f",
                                 user_keys={"data_path"}) == {"max_turns": 3}


def test_a_task_set_asking_for_a_huge_generation_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    pytest.importorskip("alfworld")
    from agentgym.integrations.tasksets import export_tasks

    cache = tmp_path / "cache"
    monkeypatch.setenv("AGENTGYM_CACHE", str(cache))
    out = tmp_path / "set"
    export_tasks("ALFWorld-v0", "train", str(out), {"data_path": "generated:40:tiny"}, limit=2)
    spec = yaml.safe_load((out / "environment.yaml").read_text())
    spec["env_kwargs"]["data_path"] = "generated:89363"
    (out / "environment.yaml").write_text(yaml.safe_dump(spec))
    before = sorted(p.name for p in (cache / "alfworld").iterdir())
    with pytest.raises(DataSettingError, match="asks to generate 89363 ALFWorld games"):
        gym.make("ALFWorld-v0", tasks=str(out))
    assert sorted(p.name for p in (cache / "alfworld").iterdir()) == before


def test_a_generation_the_disk_cannot_hold_is_refused_before_it_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    with pytest.raises(OSError, match=r"generating 1000000000 ALFWorld games needs about \d+ MiB in .*, and \d+ MiB "
                                      r"are free .*set AGENTGYM_CACHE to a larger disk"):
        alf_data.default_data_root(10**9, "tiny")
    assert not leftovers(tmp_path) and not list((tmp_path / "alfworld").glob("generated-*"))


GENERATE = "import agentgym.envs.alfworld.data as d; d.default_data_root(4000, 'tiny')"


def wrote_games(cache: Path) -> bool:
    try:
        return any(next((cache / "alfworld" / name).rglob("game.tw-pddl"), None) for name in leftovers(cache))
    except FileNotFoundError:  # a folder renamed or removed while looked at
        return False


def start_generation(cache: Path) -> subprocess.Popen:
    """A process generating a 4,000-game set, once its temporary folder holds games."""
    env = {**os.environ, "AGENTGYM_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", GENERATE], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not wrote_games(cache):
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        assert time.monotonic() < deadline, "the generation never started writing"
        time.sleep(0.05)
    return proc


def test_a_terminated_generation_removes_its_folder_and_a_killed_ones_is_removed_next_time(tmp_path, monkeypatch):
    pytest.importorskip("alfworld")
    proc = start_generation(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert not leftovers(tmp_path)
    assert not list((tmp_path / "alfworld").glob("generated-*"))

    proc = start_generation(tmp_path)
    proc.kill()
    proc.wait(timeout=60)
    assert len(leftovers(tmp_path)) == 1  # nothing runs on SIGKILL ...
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path))
    root = alf_data.default_data_root(10, "tiny")  # ... so the next generation removes it
    assert not leftovers(tmp_path) and os.path.isdir(root)
