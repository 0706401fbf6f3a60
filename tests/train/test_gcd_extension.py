"""The GCD extension on hand-built episodes with a scripted policy: labels, balance, the k judge
samples of each judged step with their rewards and advantages, the mistakes list reaching the next
episodes' system prompt, the external judge (up, down) and the state round trip.

tests/trainers/test_gcd.py runs the same extension through the real loop and envs.
"""

import json
import time

import numpy as np
import pytest
from toy_env import ToyLookupEnv

from agentgym.agents.base import Completion
from agentgym.train.base.flags import build
from agentgym.train.config.rollout import RolloutConfig
from agentgym.train.config.tree import TrainConfig
from agentgym.train.hooks import Extensions, StepContext
from agentgym.train.methods import GCD, GCDConfig
from agentgym.train.methods.gcd.correction import MISTAKES_HEADER
from agentgym.train.methods.gcd.external import JudgeUnavailable
from agentgym.train.methods.gcd.judge import judge_prompt
from agentgym.train.rollout.chat import ChatEncoder
from agentgym.train.rollout.envs import make_env_batch
from agentgym.train.rollout.episodes import Episode, collect_episodes
from agentgym.train.view import RunView


class ScriptedPolicy:
    """Replies from a list, in turn; token ids are the reply's length in ones (masks are checked)."""

    def __init__(self, replies, summary="- Do not go back to where you were."):
        self.replies, self.summary, self.calls = list(replies), summary, []

    def generate(self, prompts, sampling=None):
        self.calls.append((len(prompts), sampling))
        if sampling is not None and sampling.temperature == 0:  # the mistakes summary
            return [Completion(self.summary, [1, 2, 3]) for _ in prompts]
        out = []
        for i in range(len(prompts)):
            text = self.replies[i % len(self.replies)]
            out.append(Completion(text, [7] * (1 + i % 3)))
        return out


def episode(observations, valid, success, instruction="find the key"):
    n = len(valid)
    return Episode(group=0, task_id="t", group_key="t", system_prompt="sys", instruction=instruction,
                   observations=list(observations), actions=[f"act {t}" for t in range(n)],
                   step_infos=[{"action_valid": v} for v in valid], success=success, rewards=[0.0] * n)


def batch():
    # labels: [bad (revisit), None, good (solved)] and [None, bad (invalid)]: 1 good, 2 bad
    return [episode(["hall", "room", "hall", "end"], [True, True, True], True),
            episode(["a", "b", "c"], [True, False], False)]


def context(tiny, policy, step=0, tmp_path=None, quiet=True):
    config = build(TrainConfig, output_dir=str(tmp_path or "/nonexistent"), quiet=quiet, temperature=1.0)
    return StepContext(step, None, None, policy, tiny[1], 2, 1, np.random.default_rng([0, step]),
                       RunView.of(config, tokenizer=tiny[1]))


SAYS_BAD, SAYS_GOOD = "It loops back to the hall. <judge>bad</judge>", "Fine. <judge>good</judge>"


def test_balanced_judged_steps_get_k_samples_with_judge_rewards_and_group_advantages(tiny):
    policy = ScriptedPolicy([SAYS_BAD, SAYS_GOOD])
    gcd = GCD(GCDConfig(k=2, correction=False))
    samples = gcd.extra_samples(context(tiny, policy), batch())
    m = gcd.metrics()
    assert (m["gcd/labels_good_before"], m["gcd/labels_bad_before"], m["gcd/labels_unlabelled"]) == (1, 2, 2)
    assert (m["gcd/labels_good"], m["gcd/labels_bad"], m["gcd/balance_downsampled"]) == (1, 1, 1)
    assert (m["gcd/reason_revisit"], m["gcd/reason_invalid"], m["gcd/reason_solved"]) == (1, 1, 1)
    assert len(samples) == 4 and {s.kind for s in samples} == {"judge"}
    assert policy.calls[0][0] == 4 and policy.calls[0][1].max_new_tokens == 128
    # each step's two judgments: one says bad, one good; the right one gets +0.7071, the other -0.7071
    by_step = [samples[:2], samples[2:]]
    labels = []
    for pair in by_step:
        prompt_len = pair[0].loss_mask.index(1)
        assert all(s.loss_mask == [0] * prompt_len + [1] * (len(s.input_ids) - prompt_len) for s in pair)
        labels.append("good" if pair[1].advantage > 0 else "bad")
        assert sorted(round(s.advantage, 4) for s in pair) == [-0.7071, 0.7071]
    assert sorted(labels) == ["bad", "good"]
    # the prompt is the judge prompt of that step, through the chat template
    good_step = by_step[labels.index("good")][0]
    expected = ChatEncoder(tiny[1]).prompt_ids(judge_prompt("find the key", "hall", "act 2"))
    assert good_step.input_ids[:len(expected)] == expected and good_step.episode == 0
    assert m["gcd/judge_accuracy"] == 0.5 and m["gcd/judge_accuracy_good"] == 0.5 and m["gcd/judge_parse_rate"] == 1


def test_balance_none_keeps_every_labelled_step_and_one_class_trains_no_judge(tiny):
    gcd = GCD(GCDConfig(k=2, balance="none", correction=False))
    assert len(gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD])), batch())) == 6
    assert gcd.metrics()["gcd/judge_accuracy_bad"] == 1.0 and gcd.metrics()["gcd/judge_accuracy_good"] == 0.0
    gcd = GCD(GCDConfig(k=2, correction=False))
    only_bad = [episode(["a", "b", "c"], [False, False], False)]
    assert gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD])), only_bad) == []
    assert gcd.metrics()["gcd/balance_one_class_empty"] == 1.0 and gcd.metrics()["gcd/judge_samples"] == 0


def test_a_resume_over_an_edited_mistakes_log_is_one_error_naming_its_line(tiny, tmp_path):
    from agentgym.train.base.errors import RunFileError

    log = tmp_path / "gcd_mistakes.jsonl"
    log.write_text('{"step": 1, "mistakes": ["a"]}\n{"step": "2", "mistakes": ["b"]}\n')
    gcd = GCD(GCDConfig(k=2, correction_every=2))
    with pytest.raises(RunFileError, match=r'gcd_mistakes.jsonl:2: "step" must be an integer >= 0 .*got \'2\''):
        gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD, SAYS_GOOD]), step=1, tmp_path=tmp_path), batch())
    log.write_text('{"step": 1, "mistakes": ["a"]}\n{"step": 2, "mistakes": ["b"]}\n')
    GCD(GCDConfig(k=2, correction_every=5)).extra_samples(  # no refresh at step 2: nothing written
        context(tiny, ScriptedPolicy([SAYS_BAD, SAYS_GOOD]), step=1, tmp_path=tmp_path), batch())
    assert [json.loads(line)["step"] for line in log.read_text().splitlines()] == [1]  # resumed after step 1


def test_max_judged_steps_keeps_the_balance(tiny):
    eps = [episode(["x", "y", "x", "z"], [False, True, True], True) for _ in range(4)]  # 2 bad, 1 good each
    gcd = GCD(GCDConfig(k=2, max_judged_steps=4, correction=False))
    samples = gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD, SAYS_GOOD])), eps)
    assert len(samples) == 8 and (gcd.metrics()["gcd/labels_good"], gcd.metrics()["gcd/labels_bad"]) == (2, 2)


def test_mistakes_list_is_summarized_logged_and_put_into_the_next_episodes_system_prompt(tiny, tmp_path):
    policy = ScriptedPolicy([SAYS_BAD, SAYS_GOOD])
    gcd = GCD(GCDConfig(k=2, correction_every=2))
    gcd.extra_samples(context(tiny, policy, step=0, tmp_path=tmp_path), batch())
    assert gcd.metrics()["gcd/correction_refreshed"] == 0 and gcd.system_prompt("Act.") == "Act."
    assert gcd.correction.critiques == ["It loops back to the hall."]
    gcd.extra_samples(context(tiny, policy, step=1, tmp_path=tmp_path), batch())
    m = gcd.metrics()
    assert m["gcd/correction_refreshed"] == 1 and m["gcd/correction_source_self"] == 1
    assert gcd.correction.mistakes == ["Do not go back to where you were."]
    assert json.loads((tmp_path / "gcd_mistakes.jsonl").read_text()) == {
        "step": 2, "mistakes": ["Do not go back to where you were."], "source": "self", "critiques": 2,
        "readability": 1.0}
    assert m["gcd/correction_source"] == 1 and m["gcd/correction_readability"] == 1.0
    # the next rollout's episodes start from the corrected system prompt
    envs = make_env_batch(ToyLookupEnv, 1, 2)
    episodes, _ = collect_episodes(envs, ScriptedPolicy(["<answer>x</answer>"]), ChatEncoder(tiny[1]), [0],
                                   RolloutConfig(layout="window"), system_prompt_hook=Extensions([gcd]).system_prompt)
    for ep in episodes:
        assert ep.system_prompt.startswith(ToyLookupEnv().system_prompt)
        assert ep.system_prompt.endswith(f"{MISTAKES_HEADER}\n- Do not go back to where you were.")
    # and the judge sees the list too
    assert "- Do not go back" in judge_prompt("t", "o", "a", gcd.correction.mistakes)[0]["content"]


def test_a_garbled_self_summary_falls_back_to_counting_offline(tiny):
    gcd = GCD(GCDConfig(k=2, correction_every=1))
    gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD], summary="zxq <judge> no list")), batch())
    assert gcd.metrics()["gcd/correction_source_offline"] == 1
    assert gcd.correction.mistakes == ["it loops back to the hall"]


GARBLED_SUMMARY = "- the action solveim the environment did the runrk here\n- Thettt taskept taskept"


@pytest.mark.parametrize("mode", ["auto", "model", "offline"])
def test_correction_source_decides_who_writes_the_list(tiny, mode, capsys):
    policy = ScriptedPolicy([SAYS_BAD], summary=GARBLED_SUMMARY)
    gcd = GCD(GCDConfig(k=2, correction_every=1, correction_source=mode))
    for step in range(2):
        gcd.extra_samples(context(tiny, policy, step=step, quiet=False), batch())
    m = gcd.metrics()
    summaries = [call for call in policy.calls if call[1].temperature == 0]
    assert len(summaries) == (0 if mode == "offline" else 2)
    if mode == "model":  # the garbled list goes in as written
        assert gcd.correction.mistakes[0] == "the action solveim the environment did the runrk here"
        assert (m["gcd/correction_source"], m["gcd/correction_source_self"]) == (1, 1)
    else:  # the critiques, counted
        assert gcd.correction.mistakes == ["it loops back to the hall"]
        assert (m["gcd/correction_source"], m["gcd/correction_source_offline"]) == (0, 1)
    if mode == "offline":
        assert m["gcd/correction_readability"] != m["gcd/correction_readability"]  # NaN: no model asked
    else:
        assert m["gcd/correction_readability"] < 0.85
    # auto says once, the first time, that it fell back and why
    said = capsys.readouterr().out
    assert said.count("is not readable text") == (1 if mode == "auto" else 0)
    if mode == "auto":
        assert "gcd: the self mistakes summary at step 1 is not readable text (readability 0." in said


def test_auto_keeps_a_readable_self_summary_and_logs_its_readability(tiny, tmp_path):
    gcd = GCD(GCDConfig(k=2, correction_every=1))
    policy = ScriptedPolicy([SAYS_BAD], summary="- Do not go back to the hall.\n- Check the key is found.")
    gcd.extra_samples(context(tiny, policy, tmp_path=tmp_path), batch())
    assert gcd.correction.mistakes == ["Do not go back to the hall.", "Check the key is found."]
    assert gcd.correction.source == "self" and gcd.metrics()["gcd/correction_readability"] == 1.0
    assert json.loads((tmp_path / "gcd_mistakes.jsonl").read_text())["readability"] == 1.0


def test_no_correction_leaves_the_prompt_alone_and_rule_critiques_feed_the_list(tiny):
    gcd = GCD(GCDConfig(k=2, correction=False))
    gcd.correction.update(1, ["x"])
    assert gcd.system_prompt("Act.") == "Act."
    gcd = GCD(GCDConfig(k=2, correction_every=1, correction_rule_critiques=True))
    gcd.extra_samples(context(tiny, ScriptedPolicy(["no verdict"], summary="")), batch())
    assert sorted(gcd.correction.mistakes) == ["the action returned to an earlier state", "the action was invalid"]


@pytest.mark.parametrize("summary,source", [("- Do not go back to the hall.", "self"),
                                            (GARBLED_SUMMARY, "offline")])
def test_state_round_trip_restores_the_list_its_source_and_pending_critiques(tiny, summary, source):
    gcd = GCD(GCDConfig(k=2, correction_every=2))
    for step in range(2):
        gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD], summary=summary), step=step), batch())
    gcd.correction.add_critiques(["pending one"])
    assert gcd.correction.source == source
    other = GCD(GCDConfig(k=2, correction_every=2))
    other.load_state_dict(json.loads(json.dumps(gcd.state_dict())))
    assert other.state_dict() == gcd.state_dict() and other.system_prompt("A.") == gcd.system_prompt("A.")
    assert MISTAKES_HEADER in other.system_prompt("A.") and other.correction.source == source
    # the resumed extension logs the restored list's source from its first step on
    other.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD], summary=summary), step=2), batch())
    assert other.metrics()["gcd/correction_source"] == (source == "self")
    assert other.metrics()["gcd/correction_refreshed"] == 0


def test_a_checkpoint_from_before_the_source_was_saved_still_loads(tiny):
    old_state = {"correction": {"mistakes": ["do not loop"], "refreshed_at": 5, "critiques": ["c"]}}
    gcd = GCD(GCDConfig(k=2, correction_every=5))
    gcd.load_state_dict(old_state)
    assert gcd.correction.mistakes == ["do not loop"] and gcd.correction.source is None
    assert gcd.system_prompt("A.").endswith("- do not loop")
    gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD]), step=5), batch())
    m = gcd.metrics()
    assert m["gcd/correction_refreshed"] == 0 and m["gcd/correction_source"] != m["gcd/correction_source"]  # NaN
    gcd.load_state_dict({})  # a GCD state without correction leaves it alone
    assert gcd.correction.mistakes == ["do not loop"]


def test_external_judge_labels_open_steps_and_writes_the_summary(tiny, chat_server):
    # both unlabelled steps are judged good by the external judge: 3 good, 2 bad before balance
    chat_server.replies = ["Progress. <judge>good</judge>", "Progress. <judge>good</judge>",
                           "- Avoid invalid commands."]
    gcd = GCD(GCDConfig(k=2, correction_every=1, judge_url=chat_server.url, judge_timeout=5))
    gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD, SAYS_GOOD])), batch())
    m = gcd.metrics()
    assert (m["gcd/external_asked"], m["gcd/external_good"], m["gcd/labels_good_before"]) == (2, 2, 3)
    assert m["gcd/correction_source_external"] == 1 and gcd.correction.mistakes == ["Avoid invalid commands."]
    asked = [body["messages"][1]["content"] for _, _, body in chat_server.requests[:2]]
    assert "<observation>\nroom\n" in asked[0] and "<observation>\na\n" in asked[1]  # the open steps, in order


def test_a_down_external_judge_is_a_logged_skip_or_a_clear_error_never_a_hang(tiny, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    cfg = dict(k=2, correction_every=1, judge_url=url, judge_timeout=1, judge_retries=1)
    gcd = GCD(GCDConfig(**cfg))
    t0 = time.monotonic()
    samples = gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD, SAYS_GOOD])), batch())
    assert time.monotonic() - t0 < 10
    assert gcd.metrics()["gcd/external_skipped"] == 1 and len(samples) == 4  # trained on the rule labels
    assert gcd.metrics()["gcd/correction_source_offline"] == 1
    assert "external judge unavailable" in capsys.readouterr().err
    gcd = GCD(GCDConfig(**cfg, judge_on_error="raise"))
    with pytest.raises(JudgeUnavailable, match="judge-on-error skip"):
        gcd.extra_samples(context(tiny, ScriptedPolicy([SAYS_BAD])), batch())


@pytest.mark.parametrize("flags,message", [
    ({"k": 1}, "--gcd.k must be >= 2"), ({"lam": -1.0}, "--gcd.lam"), ({"max_judged_steps": 1}, "max-judged-steps"),
    ({"judge_url": "localhost:8000"}, "--gcd.judge-url"), ({"correction_every": 0}, "--gcd.correction-every"),
    ({"correction_source": "judge"}, "--gcd.correction-source must be one of"),
    ({"correction_min_readability": 1.5}, "--gcd.correction-min-readability must be in"),
])
def test_bad_settings_name_the_flag(flags, message):
    from agentgym.train.base.errors import ConfigError

    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        GCDConfig(**flags).validate()
