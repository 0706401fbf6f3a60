"""User agent classes for the leaderboard tests, loaded by ``module:Class`` like a user's own."""

import os
import time

from agentgym.leaderboard.agents import Agent


class Raises(Agent):
    """Fails on every call."""

    def act(self, episodes):
        raise RuntimeError("this agent always fails")


class Hangs(Agent):
    """Never answers in time."""

    def act(self, episodes):
        time.sleep(30)
        return ["<answer>late</answer>"] * len(episodes)


class Garbage:
    """Not an Agent subclass: a plain class with act(), returning things that are not actions."""

    def act(self, episodes):
        return [None if k % 2 else 12345 for k in range(len(episodes))]


class WrongLength(Agent):
    ready_first = False

    def act(self, episodes):
        return ["<answer>x</answer>"] * (len(episodes) + 1)  # one action too many


class PoisonedTask(Agent):
    """The expert, except it raises whenever one particular task is in its batch."""

    env_kwargs = {"expert": True}
    ready_first = False
    poisoned = "single_hop"

    def act(self, episodes):
        if any(ep.task_type == self.poisoned for ep in episodes):
            raise ValueError("poisoned prompt")
        return [ep.info["expert_action"] for ep in episodes]


class SlowExpert(Agent):
    """The expert, taking a while over each call (so a signal lands while the board waits on it).

    With ``BOARD_AGENT_HOLD=PATH`` in its environment it plays its first episode, then, called for
    another one, creates ``PATH`` and holds that call: the board is then waiting on the agent, with
    the first episode recorded and the rest unplayed, for as long as a test needs."""

    env_kwargs = {"expert": True}
    ready_first = False

    first = None

    def act(self, episodes):
        hold = os.environ.get("BOARD_AGENT_HOLD")
        if hold:
            self.first = self.first or (episodes[0].task_id, episodes[0].repeat)
            if any((ep.task_id, ep.repeat) != self.first for ep in episodes):
                open(hold, "w").close()
                time.sleep(600)
        time.sleep(0.25)
        return [ep.info["expert_action"] for ep in episodes]


class _Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr for you")


class ReprRaises(Agent):
    """Returns objects that are not actions and cannot even be printed."""

    def act(self, episodes):
        return [_Unprintable() for _ in episodes]


class _TextRaises:
    @property
    def text(self):
        raise RuntimeError("text is broken")


class TextRaises(Agent):
    def act(self, episodes):
        return [_TextRaises() for _ in episodes]


class _Unsized:
    text = "<answer>x</answer>"
    token_ids = 12345  # has no length


class UnsizedTokenIds(Agent):
    def act(self, episodes):
        return [_Unsized() for _ in episodes]


class StampsRaise:
    """The expert, whose stamps() raises."""

    env_kwargs = {"expert": True}

    def act(self, episodes):
        return [ep.info["expert_action"] for ep in episodes]

    def stamps(self):
        raise RuntimeError("stamps are broken")


class EnvKwargsNotDict:
    env_kwargs = "expert=True"

    def act(self, episodes):
        return ["<answer>x</answer>"] * len(episodes)


class EnvKwargsInvalid(Agent):
    env_kwargs = {"no_such_keyword": 1}

    def act(self, episodes):
        return ["<answer>x</answer>"] * len(episodes)


class CloseRaises(Agent):
    """The expert, whose close() raises after play."""

    env_kwargs = {"expert": True}

    def act(self, episodes):
        return [ep.info["expert_action"] for ep in episodes]

    def close(self):
        raise RuntimeError("close is broken")


class TrainedWithOtherWeights(Agent):
    """The expert, recording that it was trained with its own PRS weights, gate and stage."""

    env_kwargs = {"expert": True}

    def trained_env_kwargs(self, env_id):
        return {"prs_weights": [1.0, 0.0, 0.0], "tau_fmt": 0.0, "prs_stage": 0, "top_k": 1}

    def act(self, episodes):
        return [ep.info["expert_action"] for ep in episodes]


class ScoresItself(Agent):
    """The expert, asking the board to weigh its reward terms its own way."""

    env_kwargs = {"expert": True, "prs_weights": [1.0, 0.0, 0.0]}

    def act(self, episodes):
        return [ep.info["expert_action"] for ep in episodes]
