import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentgym.train.methods.gcd.correction import (
    MISTAKES_HEADER,
    CorrectionState,
    inject_mistakes,
    mistakes_summary_prompt,
    parse_mistakes,
    summarize_mistakes,
)
from agentgym.train.methods.gcd.judge import critique_of, rule_critique

SYSTEM = "You are an agent in a house. Answer with one command per turn."


def _critiques():
    replies = [rule_critique("o", f"open drawer {i}", "bad", "invalid") + " <judge>bad</judge>" for i in range(4)]
    replies += [rule_critique(f"room {i}", "go east", "bad", "revisit") + "\n<judge>bad</judge>" for i in range(2)]
    replies += ["Took the wrong object. The task wants a mug. <judge>bad</judge>"]
    return [critique_of(r) for r in replies]


def test_mistakes_are_the_most_frequent_first_sentences():
    assert summarize_mistakes(_critiques(), max_items=2) == [
        "the action was invalid", "the action returned to an earlier state"]
    assert summarize_mistakes(_critiques()) == [
        "the action was invalid", "the action returned to an earlier state", "took the wrong object"]
    assert summarize_mistakes(["", "   ", "Same.", "same!", "SAME"], max_items=5) == ["same"]
    assert summarize_mistakes(_critiques(), max_items=0) == []
    with pytest.raises(ValueError, match="max_items"):
        summarize_mistakes([], max_items=-1)


def test_mistakes_go_into_the_system_prompt_and_a_refresh_replaces_them():
    first = inject_mistakes(SYSTEM, summarize_mistakes(_critiques(), max_items=2))
    assert first.startswith(SYSTEM) and first.count(MISTAKES_HEADER) == 1
    assert first.endswith("- the action was invalid\n- the action returned to an earlier state")
    refreshed = inject_mistakes(first, ["took the wrong object"])
    assert refreshed == f"{SYSTEM}\n\n{MISTAKES_HEADER}\n- took the wrong object"
    assert inject_mistakes(refreshed, ["took the wrong object"]) == refreshed  # idempotent


def test_inject_keeps_text_after_an_earlier_section_and_sanitizes_items():
    prompt = inject_mistakes(SYSTEM, ["a"]) + "\nReply in English."
    again = inject_mistakes(prompt, ["b\nwith a newline", "  ", "- already a bullet"])
    assert "Reply in English." in again and again.count(MISTAKES_HEADER) == 1
    assert again.endswith(f"{MISTAKES_HEADER}\n- b with a newline\n- already a bullet")
    assert inject_mistakes(SYSTEM, []) == SYSTEM and inject_mistakes(SYSTEM, ["", " "]) == SYSTEM
    assert inject_mistakes("", ["x"]) == f"{MISTAKES_HEADER}\n- x"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.lists(st.text(max_size=50), max_size=6), st.lists(st.text(max_size=50), max_size=6))
@example(base="", old=["0"], new=["\x85"])
def test_refreshes_never_stack(base, old, new):
    once = inject_mistakes(inject_mistakes(base, old), new)
    # an item that is only bullets and whitespace (any Unicode whitespace, e.g. U+0085) is dropped
    if MISTAKES_HEADER not in base and any(m.lstrip(" -*\u2022\t").split() for m in new):
        assert once.count(MISTAKES_HEADER) == 1
        assert once == inject_mistakes(base, new)


def test_summary_prompt_shows_the_critiques_as_data():
    messages = mistakes_summary_prompt(_critiques() + ["Line one\nline two"], max_items=3)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "at most 3" in messages[0]["content"] and '"- "' in messages[0]["content"]
    assert "Took the wrong object." in messages[1]["content"] and "Line one line two" in messages[1]["content"]
    many = mistakes_summary_prompt([f"critique {i}" for i in range(500)], max_items=3)[1]["content"]
    assert "critique 499" in many and "critique 0\n" not in many and len(many) < 5_000
    with pytest.raises(ValueError, match="max_items"):
        mistakes_summary_prompt([], max_items=0)


def test_parse_mistakes_reads_bullets_and_numbers():
    reply = ("Sure! The most common mistakes:\n\n1. Opening drawers that do not exist.\n2) **Looping** between rooms\n"
             "   - taking the wrong object\n• Looping between rooms\nThat's all.")
    assert parse_mistakes(reply, max_items=5) == [
        "Opening drawers that do not exist.", "Looping between rooms", "taking the wrong object"]
    assert parse_mistakes(reply, max_items=1) == ["Opening drawers that do not exist."]
    assert parse_mistakes("no list here", 5) == [] and parse_mistakes("- a", 0) == []


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.lists(st.sampled_from(["- ", "1. ", "* ", "\n", "x", " "])).map("".join)),
       st.integers(-2, 8))
def test_parse_mistakes_never_raises(text, max_items):
    out = parse_mistakes(text, max_items)
    assert isinstance(out, list) and len(out) <= max(max_items, 0)
    assert all(isinstance(m, str) and m and "\n" not in m for m in out)


def test_correction_state_refreshes_every_k_steps():
    state = CorrectionState(period=3)
    assert [state.due(s) for s in range(4)] == [False, False, False, True]
    state.add_critiques(["Looped.", "", "  "])
    assert state.critiques == ["Looped."]
    state.update(3, summarize_mistakes(state.critiques))
    assert state.mistakes == ["looped"] and state.critiques == [] and state.refreshed_at == 3
    assert not state.due(5) and state.due(6)
    assert state.system_prompt(SYSTEM) == inject_mistakes(SYSTEM, ["looped"])
    state.update(6, [])
    assert state.system_prompt(SYSTEM) == SYSTEM
    with pytest.raises(ValueError, match="period"):
        CorrectionState(period=0)


def test_correction_state_round_trips_through_json():
    state = CorrectionState(period=5, max_critiques=3)
    state.update(10, ["do not loop", "check the door"], source="self")
    state.add_critiques(["c1", "c2", "c3", "c4"])
    assert state.critiques == ["c2", "c3", "c4"]  # the oldest go first
    restored = CorrectionState(period=5, max_critiques=3)
    restored.load_state_dict(json.loads(json.dumps(state.state_dict())))
    assert restored.state_dict() == state.state_dict()
    assert restored.due(14) is False and restored.due(15) is True
    assert restored.system_prompt(SYSTEM) == state.system_prompt(SYSTEM) and restored.source == "self"
    # a state saved before the source was recorded loads, with the source unknown
    old = {k: v for k, v in state.state_dict().items() if k != "source"}
    restored.load_state_dict(old)
    assert restored.mistakes == state.mistakes and restored.source is None
    with pytest.raises(ValueError, match="source"):
        restored.load_state_dict({**old, "source": "oracle"})
    with pytest.raises(ValueError, match="source must be one of"):
        restored.update(11, ["x"], source="oracle")
    fresh = CorrectionState(period=2)
    fresh.load_state_dict(CorrectionState(period=2).state_dict())
    assert fresh.refreshed_at is None and fresh.mistakes == []
    with pytest.raises(ValueError, match="lacks"):
        fresh.load_state_dict({"mistakes": []})
