"""The default long-form judge on its published adversarial set (benchmarks/judge_adversarial.json):
every answer scores within its bounds, and docs/rewards.md shows exactly these scores."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import judge_adversarial  # noqa: E402

DOC = (ROOT / "docs" / "rewards.md").read_text()


def test_every_adversarial_answer_scores_within_its_bounds():
    data = judge_adversarial.load_set()
    scored = judge_adversarial.score_set(data)
    outside = [(case["id"], round(score, 3), [case["min"], case["max"]]) for case, score in scored
               if not case["min"] - 1e-9 <= score <= case["max"] + 1e-9]
    assert not outside, outside
    ids = {case["id"] for case in data["cases"]}
    # the set keeps the attacks that once scored full marks, and answers that must keep them
    assert {"book-false-numbers", "book-false-prize", "book-keyword-list", "book-injection-list",
            "book-padded-articles", "person-padded-dots", "company-padded-one-word"} <= ids
    faithful = [score for case, score in scored if case["min"] >= 0.9]
    gamed = [score for case, score in scored if case["max"] < 0.75]
    assert len(faithful) >= 10 and min(faithful) >= 0.9
    assert len(gamed) >= 15 and max(gamed) < 0.75  # none reaches the env's success threshold


def test_docs_publish_the_sets_scores():
    table = judge_adversarial.set_table(judge_adversarial.score_set(judge_adversarial.load_set()))
    assert table in DOC, ("docs/rewards.md is out of date; paste the table from "
                          f"`python {os.path.join('benchmarks', 'judge_adversarial.py')} --episodes 0`:\n{table}")
