"""The real ALFWorld engine: textworld's ``PddlEnv`` under alfworld's wrappers, one game at a time.

This mirrors how alfworld wires a text game (``AlfredDemangler`` names entities "apple 1",
``AlfredInfos`` records the game file, ``AlfredExpert`` in planner mode reads the next action off
fast-downward's replanned policy) without alfworld's ``AlfredTWEnv``, which ignores the expert
setting and shares one wrapper between batch slots. Only the infos the env uses are requested:
admissible commands and the win flag always, the planner's policy only with the expert on (the
replan is the costliest part of a step).

With ``cache=True`` (the env's default) the ``PddlEnv`` is :class:`~agentgym.envs.alfworld.cached_pddl.CachedPddlEnv`:
the same engine, translating each game file once and keeping the translation on disk
(:mod:`agentgym.envs.alfworld.translation_cache`), which makes a warm reset and a step tens of
times cheaper (docs/benchmarks.md); ``cache=False`` plays on textworld's ``PddlEnv`` as it is.
Neither evaluates a game file's grammar expressions as Python (:mod:`agentgym.envs.grammar_expressions`).
"""

from __future__ import annotations

import os

from gymnasium.error import DependencyNotInstalled

from agentgym.envs.alfworld.translation_cache import TranslationCache

EXTRA = "agentgym[alfworld]"


def require_engine() -> None:
    """Raise ``DependencyNotInstalled`` naming the extra when textworld or alfworld is missing."""
    try:
        import alfworld.agents.environment.alfred_tw_env  # noqa: F401
        import fast_downward  # noqa: F401
        import textworld  # noqa: F401
    except ImportError as e:
        raise DependencyNotInstalled(
            f"ALFWorld-v0 needs the textworld and alfworld engines ({e}). Install them with "
            f"`pip install {EXTRA}`.") from e


def request_infos(expert: bool):
    """The ``textworld.EnvInfos`` our env asks the engine for."""
    import textworld

    return textworld.EnvInfos(admissible_commands=True, won=True, extras=["gamefile"], policy_commands=expert)


def make_engine(expert: bool, cache: bool | str = True):
    """``(engine, expert_engine)``: ``PddlEnv`` wrapped the way alfworld wraps it, and with ``expert``
    the same engine under alfworld's planner ``AlfredExpert`` too (else None). The expert wrapper
    reads the ``traj_data.json`` beside a game; for a game without one, play ``engine`` (whose
    infos then carry the planner's policy all the same) and read the plan with :func:`expert_plan`.

    ``cache``: True plays on ``CachedPddlEnv`` with translations kept in the default cache folder,
    a path keeps them there instead, False (or None) plays on textworld's ``PddlEnv`` (its grammar
    expressions checked: :mod:`agentgym.envs.alfworld.checked_pddl`)."""
    require_engine()
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredExpert, AlfredExpertType, AlfredInfos

    if not cache:
        from agentgym.envs.alfworld.checked_pddl import CheckedPddlEnv  # textworld, on its first use

        pddl_env = CheckedPddlEnv(request_infos(expert))
    else:
        from agentgym.envs.alfworld.cached_pddl import CachedPddlEnv  # textworld, on its first use

        pddl_env = CachedPddlEnv(request_infos(expert), TranslationCache(None if cache is True else str(cache)))
    engine = AlfredInfos(AlfredDemangler(pddl_env, shuffle=False))
    return engine, (AlfredExpert(engine, expert_type=AlfredExpertType.PLANNER) if expert else None)


def has_traj_data(game_file: str) -> bool:
    return os.path.exists(os.path.join(os.path.dirname(game_file), "traj_data.json"))


def expert_plan(state) -> list[str]:
    """The planner's remaining plan in a game state (from the expert wrapper or the raw policy)."""
    plan = state.get("extra.expert_plan")
    if plan is None:
        plan = state.get("policy_commands")
    return list(plan or [])
