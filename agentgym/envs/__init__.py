"""Every env id agentgym registers, in one place.

Entry points are strings, so an optional engine (alfworld, scienceworld) is imported only when its
env is made, and a missing one raises ``gymnasium.error.DependencyNotInstalled`` at ``gym.make``.
"""

from gymnasium.envs.registration import register, registry

from agentgym.envs.scienceworld.tasks import TASK_NAMES, task_env_id

# id -> one-line description, for `agentgym list`
DESCRIPTIONS: dict[str, str] = {}


def _register(env_id: str, entry_point: str, description: str, **kwargs) -> None:
    DESCRIPTIONS[env_id] = description
    if env_id not in registry:
        # vector_entry_point: gym.make_vec(id, ...) builds agentgym's vector env (agentgym/vector).
        register(id=env_id, entry_point=entry_point,
                 vector_entry_point=f"agentgym.vector.make:{env_id}", **kwargs)


_register("ToolQA-v0", "agentgym.envs.toolqa.env:ToolQAEnv",
          "Search-QA with tools (search, open, calculate); short answers scored by length-aware BLEU.")
_register("ToolQA-LongForm-v0", "agentgym.envs.toolqa.env:ToolQAEnv",
          "Search-QA with tools; long-form answers scored by a judge.", kwargs={"answer_form": "long"})
_register("ALFWorld-v0", "agentgym.envs.alfworld.env:ALFWorldEnv",
          "ALFWorld household tasks on the real TextWorld PDDL engine (extra: alfworld).")
_register("ScienceWorld-v0", "agentgym.envs.scienceworld.env:ScienceWorldEnv",
          "ScienceWorld's 30 science tasks on the real engine (extra: scienceworld).")
for _name in TASK_NAMES:
    _register(task_env_id(_name), "agentgym.envs.scienceworld.env:ScienceWorldEnv",
              f"ScienceWorld task '{_name}' (extra: scienceworld).", kwargs={"task": _name})
_register("TextWorld-v0", "agentgym.envs.textworld_env:TextWorldEnv",
          "Any TextWorld .z8/.ulx game, e.g. from tw-make (extra: alfworld).")
