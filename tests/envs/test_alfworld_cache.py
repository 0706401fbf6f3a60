"""The cached ALFWorld engine plays the same games as textworld's PddlEnv, and its disk cache is safe."""

import glob
import json
import multiprocessing
import os
import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("alfworld")

import gymnasium as gym

import agentgym  # noqa: F401
from agentgym.envs.alfworld import translation_cache
from agentgym.envs.alfworld.engine import make_engine
from agentgym.envs.alfworld.generate import generate
from agentgym.envs.alfworld.translation_cache import TranslationCache, cache_key

NUM_GAMES = 60  # 10 of each task type
FULL_EVERY = 4  # every 4th game plays the expert's whole plan; the others its first steps
FIRST_STEPS = 3
RANDOM_STEPS = 2


def _seen(state) -> dict:
    """What a player and the env read off a state (the facts' order follows string hashing in
    textworld too, so it is no part of the game)."""
    return {"feedback": state.feedback, "admissible": list(state["admissible_commands"]),
            "plan": list(state.get("policy_commands") or []), "won": bool(state["won"]),
            "facts": sorted(state["_facts"]), "gamefile": state.get("extra.gamefile")}


def _compare(args) -> dict:
    """Play games through textworld's engine, a cold cached engine (translating and writing) and a
    warm one (reading back what the cold one wrote); every difference, as text, and counts."""
    game_files, cache_dir, offset = args
    plain, _ = make_engine(expert=True, cache=False)
    cold, _ = make_engine(expert=True, cache=cache_dir)
    warm, _ = make_engine(expert=True, cache=cache_dir)
    out = {"diffs": [], "full": 0, "won": 0, "states": 0}
    for i, game_file in enumerate(game_files):
        rng = random.Random(f"{offset + i}")
        states = {}
        for name, engine in (("plain", plain), ("cold", cold), ("warm", warm)):
            engine.load(game_file)
            states[name] = _seen(engine.reset())
        full = (offset + i) % FULL_EVERY == 0
        plan_steps = len(states["plain"]["plan"]) if full else FIRST_STEPS
        for step in range(plan_steps + RANDOM_STEPS + 1):
            out["states"] += 1
            for name in ("cold", "warm"):
                if states[name] != states["plain"]:
                    keys = [k for k in states["plain"] if states[name][k] != states["plain"][k]]
                    out["diffs"].append(f"{game_file} step {step}: {name} differs in {keys}")
            now = states["plain"]
            if step == plan_steps + RANDOM_STEPS or not now["admissible"] or (now["won"] and step >= plan_steps):
                break
            command = now["plan"][0] if step < plan_steps and now["plan"] else rng.choice(now["admissible"])
            for name, engine in (("plain", plain), ("cold", cold), ("warm", warm)):
                states[name] = _seen(engine.step(command)[0])
        out["full"] += full
        out["won"] += full and states["plain"]["won"]
    out["misses"], out["hits"] = cold.unwrapped.cache.misses, warm.unwrapped.cache.hits
    for engine in (plain, cold, warm):
        engine.close()
    return out


@pytest.mark.engine
def test_cached_and_uncached_engines_play_60_games_alike(tmp_path):
    generate(str(tmp_path / "games"), NUM_GAMES, seed=77, split="train", task_types=None)
    files = sorted(glob.glob(str(tmp_path / "games" / "json_2.1.1" / "train" / "*" / "*" / "game.tw-pddl")))
    assert len(files) == NUM_GAMES
    cache_dir = str(tmp_path / "cache")
    # two worker processes (CI's cores), each with its own three engines
    with multiprocessing.get_context("fork").Pool(2) as pool:
        parts = pool.map(_compare, [(files[0::2], cache_dir, 0), (files[1::2], cache_dir, 1)])
    assert [d for part in parts for d in part["diffs"]] == []
    # every game was translated once (cold misses) and read back from disk (warm hits)
    assert [p["misses"] for p in parts] == [p["hits"] for p in parts] == [len(files[0::2]), len(files[1::2])]
    full, won = sum(p["full"] for p in parts), sum(p["won"] for p in parts)
    print(f"{sum(p['states'] for p in parts)} states compared; the expert won {won} of {full} full games")
    assert full == NUM_GAMES // FULL_EVERY and won >= 0.9 * full  # winning states were compared too


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    out = tmp_path_factory.mktemp("alfworld-cache")
    generate(str(out), 6, seed=5, split="train")
    return str(out), sorted(glob.glob(str(out / "json_2.1.1" / "train" / "*" / "*" / "game.tw-pddl")))


def _entries(cache_dir) -> list[str]:
    return glob.glob(os.path.join(cache_dir, "*", "*.json.z"))


@pytest.mark.engine
def test_a_corrupt_or_truncated_entry_is_a_miss_and_is_rewritten(games, tmp_path):
    _, files = games
    cache_dir = str(tmp_path / "cache")
    engine, _ = make_engine(expert=False, cache=cache_dir)
    engine.load(files[0])
    first = _seen(engine.reset())
    (entry,) = _entries(cache_dir)
    good = open(entry, "rb").read()
    cache = engine.unwrapped.cache
    for bad in (good[: len(good) // 2], b"not zlib at all", good[:-1] + bytes([good[-1] ^ 1])):
        with open(entry, "wb") as f:
            f.write(bad)
        engine.load(files[0])
        assert _seen(engine.reset()) == first
        assert open(entry, "rb").read() == good  # translated again and rewritten whole
    assert cache.hits == 0 and cache.misses == 4 and cache.rejected == 3
    engine.load(files[0])
    assert cache.hits == 1 and _seen(engine.reset()) == first
    engine.close()


def test_an_entry_cannot_bring_code_the_game_file_does_not_hold(games, tmp_path):
    _, files = games
    cache_dir = str(tmp_path / "cache")
    engine, _ = make_engine(expert=False, cache=cache_dir)
    engine.load(files[0])
    first = _seen(engine.reset())
    # an entry this user's own cache wrote and verifies, holding an expression the game does not
    data = json.load(open(files[0]))
    cache = TranslationCache(cache_dir)
    translation = cache.get(data)
    text = json.dumps(translation)
    evil = text.replace('["E", "r.name"]', '["E", "__import__(\'os\').environ.setdefault(\'AGENTGYM_RAN\', \'1\')"]')
    assert evil != text
    assert cache.put(data, json.loads(evil))
    engine.load(files[0])
    assert _seen(engine.reset()) == first
    assert engine.unwrapped.cache.rejected == 1 and "AGENTGYM_RAN" not in os.environ
    engine.close()


def _sas_goal_already_met(sas: str) -> str:
    """The SAS text with its goal replaced by facts of the initial state: a game won before play."""
    lines = sas.split("\n")
    start = lines[lines.index("begin_state") + 1:lines.index("end_state")]
    goal = lines.index("begin_goal")
    for k in range(goal + 2, goal + 2 + int(lines[goal + 1])):
        var = int(lines[k].split()[0])
        lines[k] = f"{var} {start[var]}"
    return "\n".join(lines)


def _sas_bad_variable_count(sas: str) -> str:
    """The SAS text declaring 999,999,999 variables: fast-downward's reader aborts the process."""
    lines = sas.split("\n")
    lines[lines.index("begin_variable") - 1] = "999999999"
    return "\n".join(lines)


PLAY_LOOK = """
import json, sys
from agentgym.envs.alfworld.engine import make_engine
engine, _ = make_engine(expert=False, cache=sys.argv[1])
engine.load(sys.argv[2])
state = engine.reset()
won_at_reset = bool(state["won"])
state = engine.step("look")[0]
print(json.dumps({"won": won_at_reset or bool(state["won"]), "feedback": state.feedback,
                  "admissible": list(state["admissible_commands"]), "rejected": engine.unwrapped.cache.rejected}))
"""


@pytest.mark.engine
@pytest.mark.parametrize("damage", [_sas_goal_already_met, _sas_bad_variable_count], ids=["poisoned-goal", "abort"])
def test_an_entry_made_elsewhere_is_not_trusted_and_cannot_end_the_process(games, tmp_path, damage):
    import shutil
    import subprocess

    from agentgym.envs.alfworld.translation import translate

    _, files = games
    data = json.load(open(files[0]))
    cache_dir = str(tmp_path / "cache")
    engine, _ = make_engine(expert=False, cache=cache_dir)
    engine.load(files[0])
    engine.reset()
    state = engine.step("look")[0]
    honest = {"won": False, "feedback": state.feedback, "admissible": list(state["admissible_commands"])}
    engine.close()
    (entry,) = _entries(cache_dir)
    # a whole, self-consistent entry for the same game, made by another cache (another machine, user
    # or a download), with its goal or its SAS text altered, copied over this user's entry
    bad = translate(data)
    bad["task"]["sas"] = damage(bad["task"]["sas"])
    assert bad["task"]["sas"] != translate(data)["task"]["sas"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path / "someone-else"))  # their secret, not this user's
        assert TranslationCache(str(tmp_path / "elsewhere")).put(data, bad)
    (foreign,) = _entries(str(tmp_path / "elsewhere"))
    shutil.copyfile(foreign, entry)
    out = subprocess.run([sys.executable, "-c", PLAY_LOOK, cache_dir, files[0]], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    played = json.loads(out.stdout.strip().splitlines()[-1])
    rejected = played.pop("rejected")
    assert played == honest  # the right game, translated again: not won after a look
    assert rejected == 1
    assert open(entry, "rb").read() != open(foreign, "rb").read()  # and rewritten


def _spoil(secret: Path, kind: str) -> None:
    """Make this user's secret something that is not a private regular file of 32 bytes."""
    if kind == "readable":
        secret.chmod(0o644)
        return
    secret.unlink()
    if kind == "folder":
        secret.mkdir()
    elif kind == "fifo":
        os.mkfifo(secret)
    elif kind == "link":
        (secret.parent / "elsewhere").write_bytes(os.urandom(32))
        secret.symlink_to(secret.parent / "elsewhere")
    elif kind == "short":
        secret.write_bytes(b"x")
        secret.chmod(0o600)


SPOILED_PLAY = """
import json, sys, warnings
from agentgym.envs.alfworld.engine import make_engine
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for cache_dir in sys.argv[1:3]:
        engine, _ = make_engine(expert=False, cache=cache_dir)
        for game in sys.argv[3:]:
            engine.load(game)
            state = engine.reset()
        engine.close()
print(json.dumps({"feedback": state.feedback, "hits": engine.unwrapped.cache.hits,
                  "warnings": [str(w.message) for w in caught]}))
"""


@pytest.mark.engine
@pytest.mark.parametrize("kind", ["readable", "folder", "fifo", "link", "short"])
def test_a_secret_that_is_not_a_private_file_means_no_cache_one_warning_and_the_game_still_plays(games, tmp_path,
                                                                                                kind):
    import subprocess

    _, files = games
    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    cache_dir = tmp_path / "cache"
    engine, _ = make_engine(expert=False, cache=str(cache_dir))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(state))
        engine.load(files[0])
        first = _seen(engine.reset())
    engine.close()
    (secret,) = (state / "agentgym").glob("cache-secret-*")
    assert secret.stat().st_mode & 0o777 == 0o600 and not list(cache_dir.glob(".secret*"))  # not in the cache
    _spoil(secret, kind)
    # two caches, two games each: every reset plays, nothing is read or kept, one warning names the secret;
    # a FIFO does not block (in a process of its own, so a hang fails the test instead of stalling it)
    out = subprocess.run([sys.executable, "-c", SPOILED_PLAY, str(cache_dir), str(tmp_path / "other"),
                          files[1], files[0]], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    played = json.loads(out.stdout.strip().splitlines()[-1])
    assert played["feedback"] == first["feedback"] and played["hits"] == 0
    assert len(_entries(str(cache_dir))) == 1 and not _entries(str(tmp_path / "other"))  # nothing new kept
    (warning,) = played["warnings"]
    assert str(secret) in warning and "keep and read nothing" in warning


def test_a_cache_folder_copied_from_someone_else_brings_no_secret_its_entries_verify_under(games, tmp_path):
    """Their folder, their entries and (as caches kept it before) their secret beside them."""
    import shutil

    _, files = games
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(tmp_path / "their-state"))
        theirs, _ = make_engine(expert=False, cache=str(tmp_path / "theirs"))
        theirs.load(files[0])
        theirs.reset()
        theirs.close()
    (their_secret,) = (tmp_path / "their-state" / "agentgym").glob("cache-secret-*")
    shutil.copytree(tmp_path / "theirs", tmp_path / "copied")
    shutil.copy(their_secret, tmp_path / "copied" / f".secret-{os.getuid()}")
    engine, _ = make_engine(expert=False, cache=str(tmp_path / "copied"))
    engine.load(files[0])
    engine.reset()
    assert engine.unwrapped.cache.hits == 0 and engine.unwrapped.cache.rejected == 1
    engine.close()


def test_the_key_follows_the_game_and_the_engine_versions(games, monkeypatch):
    _, files = games
    data = json.load(open(files[0]))
    key = cache_key(data)
    assert cache_key({**data, "walkthrough": ["look"], "solvable": False}) == key  # written by --verify
    for field in ("pddl_domain", "grammar", "pddl_problem"):
        assert cache_key({**data, field: data[field] + " "}) != key
    monkeypatch.setattr(translation_cache, "engine_versions", lambda: "textworld=9.9;alfworld=0.4.2")
    assert cache_key(data) != key


def test_concurrent_writers_leave_one_whole_entry_and_no_temporary_files(games, tmp_path):
    _, files = games
    cache_dir = str(tmp_path / "cache")
    data = json.load(open(files[1]))
    from agentgym.envs.alfworld.translation import translate

    translation = translate(data)
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=lambda: [TranslationCache(cache_dir).put(data, translation) for _ in range(20)])
               for _ in range(3)]
    for p in writers:
        p.start()
    readers = TranslationCache(cache_dir)
    seen = [readers.get(data) for _ in range(50)]
    for p in writers:
        p.join()
    assert all(t is None or t["task"]["sas"] == translation["task"]["sas"] for t in seen)
    assert readers.rejected == 0
    assert len(_entries(cache_dir)) == 1 and not glob.glob(os.path.join(cache_dir, "*", ".tmp-*"))
    assert readers.get(data)["task"]["sas"] == translation["task"]["sas"]


def test_an_unwritable_cache_folder_only_means_no_cache(games, tmp_path):
    _, files = games
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    engine, _ = make_engine(expert=False, cache=str(blocker / "cache"))
    engine.load(files[2])
    assert engine.reset()["admissible_commands"]
    engine.close()


def test_the_cached_engine_leaves_sys_argv_alone(games, tmp_path):
    # fast-downward's translator overwrites sys.argv; the plain engine does it on every reset
    _, files = games
    argv = list(sys.argv)
    engine, _ = make_engine(expert=False, cache=str(tmp_path / "cache"))
    engine.load(files[3])
    engine.reset()
    assert sys.argv == argv
    engine.close()


@pytest.mark.engine
def test_the_env_option_cache_false_plays_on_textworlds_engine_and_agrees(games, tmp_path, monkeypatch):
    from agentgym.envs.alfworld.cached_pddl import CachedPddlEnv
    from agentgym.envs.alfworld.checked_pddl import CheckedPddlEnv

    root, _ = games
    monkeypatch.setenv("AGENTGYM_CACHE", str(tmp_path / "agentgym-cache"))
    cached = gym.make("ALFWorld-v0", data_path=root, expert=True)
    plain = gym.make("ALFWorld-v0", data_path=root, expert=True, cache=False)
    assert type(cached.unwrapped._raw_engine.unwrapped) is CachedPddlEnv
    assert type(plain.unwrapped._raw_engine.unwrapped) is CheckedPddlEnv  # textworld's PddlEnv, grammar checked
    for seed in (0,):
        obs_c, info_c = cached.reset(seed=seed)
        obs_p, info_p = plain.reset(seed=seed)
        assert obs_c == obs_p and info_c == info_p
        for _ in range(4):
            action = f"<action>{info_p['expert_action']}</action>"
            step_c, step_p = cached.step(action), plain.step(action)
            assert step_c == step_p
            info_p = step_p[4]
            if step_p[2] or step_p[3]:
                break
    assert _entries(str(tmp_path / "agentgym-cache" / "alfworld" / "translations"))
    cached.close()
    plain.close()


def test_text_from_a_string_no_translation_parsed_matches_textworlds_grammar(games, tmp_path):
    from textworld.envs.pddl.textgen import CSGUnknownSymbolError

    _, files = games
    plain, _ = make_engine(expert=False, cache=False)
    cached, _ = make_engine(expert=False, cache=str(tmp_path / "cache"))
    derived = []
    for engine in (plain, cached):
        engine.load(files[4])
        engine.reset()
        env = engine.unwrapped
        context = {"state": env._pddl_state, "facts": list(env._pddl_state.facts), "variables": {},
                   "mapping": {}, "entity_infos": env._entity_infos}
        text = "#look.feedback# [{r.name | receptacleatlocation(r:receptacle, l:location)}] #task#"
        derived.append(env._logic.grammar.derive(text, context))
        with pytest.raises(CSGUnknownSymbolError):
            env._logic.grammar.derive("#no-such-symbol#", context)
        engine.close()
    assert derived[0] == derived[1] and "Your task is to:" in derived[0]
