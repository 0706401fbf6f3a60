"""VSPO, GiGPO and DAPO as loop extensions, on hand-built episodes with hand-computed numbers.

The rollout is scripted here (each task pays fixed returns) so every resampling decision can be
checked exactly; tests/trainers/test_methods.py runs the same extensions on the real envs.
"""

import numpy as np
import pytest

from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import Extensions, SampleKind, StepContext, TrainerExtension
from agentgym.train.methods import DAPO, VSPO, DAPOConfig, GiGPO, GiGPOConfig, VSPOConfig
from agentgym.train.rollout.episodes import Episode, GroupRequest
from agentgym.train.rollout.samples import episode_samples
from agentgym.train.view import RunView


def episode(group, task, ret, turns=1, observations=None):
    ep = Episode(group=group, task_id=task, group_key=task, system_prompt="", seed=hash(task) % 1000,
                 reset_options={"task_id": task})
    ep.rewards = [0.0] * (turns - 1) + [ret]
    ep.observations = observations or [f"{task} obs {t}" for t in range(turns + 1)]
    ep.turns = [None] * turns
    return ep


class ScriptedRollout:
    """Plays requests by task id: task t pays ``returns[t]`` (one return per episode of its group)."""

    def __init__(self, returns, stream):
        self.returns, self.stream, self.position, self.next_group, self.calls = returns, stream, 0, 0, []

    def collect(self, requests):
        self.calls.append([r.options["task_id"] for r in requests])
        out = []
        for r in requests:
            task = r.options["task_id"]
            out += [episode(self.next_group, task, x) for x in self.returns[task]]
            self.next_group += 1
        return out

    def next_requests(self, n, tag="batch"):
        tasks = self.stream[self.position:self.position + n]
        self.position += len(tasks)
        return [GroupRequest(0, {"task_id": t}, tag) for t in tasks]

    def ctx(self, step=0, num_groups=2):
        return StepContext(step, self.collect, self.next_requests, None, None, 2, num_groups,
                           np.random.default_rng(step), RunView.of(TrainConfig()))

    def first_batch(self, n):
        return self.collect(self.next_requests(n))


RETURNS = {"tied": [0.0, 0.0], "mixed": [1.0, 0.0], "fresh_tied": [0.5, 0.5], "fresh_mixed": [0.2, 0.6],
           "hard": [0.0, 0.4]}


def test_vspo_replaces_a_tied_group_with_a_fresh_task_and_logs_it():
    roll = ScriptedRollout(RETURNS, ["tied", "mixed", "fresh_tied", "fresh_mixed"])
    vspo = VSPO(VSPOConfig(max_resample_rounds=3))
    kept = vspo.after_rollout(roll.ctx(), roll.first_batch(2))
    # round 1: the buffer has only "mixed" (in the batch, so excluded): a fresh task, which ties;
    # round 2: the next fresh task has spread and fills the slot
    assert roll.calls[1:] == [["fresh_tied"], ["fresh_mixed"]]
    assert sorted({ep.task_id for ep in kept}) == ["fresh_mixed", "mixed"]
    m = vspo.metrics()
    assert (m["vspo/groups_dropped"], m["vspo/groups_replaced"], m["vspo/rounds"], m["vspo/shortfall"]) == (1, 1, 2, 0)
    assert m["vspo/zero_std_frac_before"] == 0.5 and m["vspo/zero_std_frac_after"] == 0.0
    assert m["vspo/buffer_size"] == 4.0


def test_vspo_draws_replacements_from_the_buffer_and_decays_their_advantages():
    roll = ScriptedRollout(RETURNS, ["hard", "mixed", "tied", "mixed"])
    vspo = VSPO(VSPOConfig(eta=0.5, a_max=3.0))
    vspo.after_rollout(roll.ctx(0), roll.first_batch(2))          # step 0: hard and mixed enter the buffer
    batch = roll.first_batch(2)                                       # step 1: tied and mixed
    kept = vspo.after_rollout(roll.ctx(1), batch)
    assert roll.calls[-1] == ["hard"]                                 # the only buffer task not in the batch
    assert vspo.buffer.get("hard").reuses == 1 and vspo.metrics()["vspo/from_buffer"] == 1
    adv = vspo.transform_advantages(None, [np.array([2.0]), np.array([-5.0]), np.array([1.0]), np.array([-1.0])],
                                    kept)
    assert [ep.task_id for ep in kept] == ["mixed", "mixed", "hard", "hard"]
    # mixed: clipped to [-3, 3] only; hard (reused once): scaled by 0.5
    assert [a.tolist() for a in adv] == [[2.0], [-3.0], [0.5], [-0.5]]


def test_vspo_never_raises_on_a_shortfall_and_resumes_its_buffer():
    roll = ScriptedRollout(RETURNS, ["tied", "tied", "tied", "tied"])
    vspo = VSPO(VSPOConfig(max_resample_rounds=1))
    kept = vspo.after_rollout(roll.ctx(), roll.first_batch(1))
    assert kept == [] and vspo.metrics()["vspo/shortfall"] == 1.0
    other = VSPO(VSPOConfig(max_resample_rounds=1))
    other.load_state_dict(vspo.state_dict())
    assert other.buffer.state_dict() == vspo.buffer.state_dict()


def test_vspo_replace_below_value_drops_low_value_groups():
    roll = ScriptedRollout(RETURNS, ["mixed", "hard", "fresh_mixed"])
    vspo = VSPO(VSPOConfig(replace_below_value=0.2, max_resample_rounds=1))
    # values: mixed (1 - .5) * .7071 = .354, hard (1 - .2) * .2828 = .226, fresh_mixed (1 - .4) * .2828 = .170
    kept = vspo.after_rollout(roll.ctx(), roll.first_batch(2))
    assert vspo.metrics()["vspo/groups_dropped"] == 0
    assert {ep.task_id for ep in kept} == {"mixed", "hard"}
    vspo = VSPO(VSPOConfig(replace_below_value=0.3, max_resample_rounds=1))
    roll = ScriptedRollout(RETURNS, ["mixed", "hard", "fresh_mixed"])
    kept = vspo.after_rollout(roll.ctx(), roll.first_batch(2))
    assert vspo.metrics()["vspo/groups_dropped"] == 1 and {ep.task_id for ep in kept} == {"mixed"}


def test_dapo_keeps_groups_with_spread_and_oversamples_to_fill():
    roll = ScriptedRollout(RETURNS, ["tied", "mixed", "fresh_tied", "hard", "tied", "tied"])
    dapo = DAPO(DAPOConfig(max_rounds=2))
    kept = dapo.after_rollout(roll.ctx(num_groups=2), roll.first_batch(2))
    assert sorted({ep.task_id for ep in kept}) == ["hard", "mixed"]
    assert dapo.metrics() == {"dapo/kept_frac": 0.5, "dapo/rounds": 1.0, "dapo/extra_groups": 2.0,
                              "dapo/shortfall": 0.0}


def test_gigpo_adds_step_advantages_of_shared_states():
    # two episodes of task a share their first observation; the second steps differ
    a1 = episode(0, "a", 1.0, turns=2, observations=["start", "x", "end"])
    a2 = episode(0, "a", 0.0, turns=2, observations=["start", "y", "end"])
    gigpo = GiGPO(GiGPOConfig(gamma=1.0, omega=0.5))
    adv = gigpo.transform_advantages(None, [np.array([1.0, 1.0]), np.array([-1.0, -1.0])], [a1, a2])
    # step group {"start"}: returns 1 and 0 -> +-0.7071 (std of [1, 0] is 0.7071); "x", "y" alone -> 0
    assert [a.round(4).tolist() for a in adv] == [[1.3536, 1.0], [-1.3536, -1.0]]
    assert gigpo.metrics()["gigpo/step_groups"] == 1.0


def test_per_turn_advantages_reach_the_tokens_in_both_layouts():
    from agentgym.agents.base import Completion
    from agentgym.train.rollout.episodes import Turn

    ep = episode(0, "a", 1.0, turns=2)
    ep.turns = [Turn([1, 2], Completion("t0", [10, 11])), Turn([1, 2, 3], Completion("t1", [12]))]
    ep.concat_ids, ep.concat_mask, ep.turn_spans = [1, 2, 10, 11, 3, 12], [0, 0, 1, 1, 0, 1], [(2, 4), (5, 6)]
    (concat,) = episode_samples([ep], [np.array([0.5, -2.0])], "concat")
    assert concat.token_advantages == [0.0, 0.0, 0.5, 0.5, 0.0, -2.0]
    window = episode_samples([ep], [np.array([0.5, -2.0])], "window")
    assert [s.advantage for s in window] == [0.5, -2.0] and window[1].input_ids == [1, 2, 3, 12]


class Tagger(TrainerExtension):
    def __init__(self, name, kinds=None):
        self.name, self.sample_kinds, self.seen = name, kinds or {}, []

    def system_prompt(self, prompt):
        return prompt + f" [{self.name}]"

    def after_rollout(self, ctx, episodes):
        self.seen.append(len(episodes))
        return episodes[1:]

    def metrics(self):
        return {f"{self.name}/x": 1.0}

    def state_dict(self):
        return {"n": len(self.seen)}


def test_extensions_chain_in_order_and_keep_their_state_apart():
    a, b = Tagger("a", {"judge": SampleKind(0.5)}), Tagger("b")
    ext = Extensions([a, b])
    assert ext.system_prompt("p") == "p [a] [b]"
    out = ext.after_rollout(None, [1, 2, 3])
    assert out == [3] and a.seen == [3] and b.seen == [2]
    assert ext.metrics() == {"a/x": 1.0, "b/x": 1.0} and ext.state_dict() == {"a": {"n": 1}, "b": {"n": 1}}
    assert ext.sample_kinds["judge"].weight == 0.5
    with pytest.raises(ValueError, match="unique"):
        Extensions([Tagger("a"), Tagger("a")])
    with pytest.raises(ValueError, match="already taken"):
        Extensions([Tagger("x", {"policy": SampleKind()})])


def test_the_cold_start_makes_no_env_when_no_extension_adds_samples():
    from agentgym.train.coldstart.sft import extension_samples
    from agentgym.train.methods import GCD

    # a config it cannot even read: nothing is resolved or made before the extensions are asked
    assert extension_samples(None, None, Extensions([Extensions([])])) == ([], "")
    chain = Extensions([Extensions([GCD()])])
    assert [type(e).__name__ for e in chain.defining("cold_start_samples")] == ["GCD"]
