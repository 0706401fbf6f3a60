"""User agent classes for the leaderboard tests, loaded by ``module:Class`` like a user's own."""

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
