"""What a scored-action turn costs against the number of candidates, on ScienceWorld's real lists.

A tiny model (``tiny-small``, its tokenizer trained on ScienceWorld's text) plays the first turn of
a ScienceWorld task: the observation as ``observation="history"`` shows it (the task and the room,
no list), and the first N of the engine's valid actions as the candidates
(:mod:`agentgym.agents.scoring`: the prompt encoded once, the candidates scored from its cache, 64
per pass). For each N it times the rollout's choice (no gradient) and the update's pass over the
same turn (the reply's log-probabilities less the candidates' log-sum-exp, with gradients, and the
backward pass): over every candidate, then with the normalizer's gradient from ``--scored-samples``
drawn candidates (the others scored without a graph, or not at all where the rollout's recorded
scores serve: one optimizer step per rollout). Beside it, in the same run, the turn as a numbered choice plays it: the
``history+admissible`` prompt that lists every action, and one reply of up to 4 tokens sampled
under ``constrained_choice``'s mask.

    python benchmarks/scored_actions.py --task find-plant --out docs/results/scored_actions.json
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path


def timed(fn, repeats: int) -> float:
    """The median seconds of ``repeats`` calls (after one untimed call)."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def update_pass(model, sample, pad_id: int, samples: int = 0, recorded: bool = False) -> None:
    """The update's pass over one sample as the trainers take it, and its backward pass; with
    ``samples``, the normalizer's gradient from that many drawn candidates (``--scored-samples``),
    with ``recorded`` its value and draws from the scores the rollout recorded."""
    from agentgym.train.optim.update import logprobs_and_hidden, pad_batch

    batch = pad_batch([sample], pad_id, "cpu")
    lp = logprobs_and_hidden(model, batch["input_ids"], batch["attention_mask"], keep=batch["loss_mask"],
                             scored=batch.get("scored"), scored_samples=samples, scored_recorded=recorded)[0]
    model.zero_grad()
    (-lp.sum()).backward()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="find-plant")
    parser.add_argument("--variation-seed", type=int, default=0)
    parser.add_argument("--counts", type=int, nargs="+", default=[10, 50, 100, 200, 400, 800])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scored-samples", type=int, default=4,
                        help="candidates drawn for the normalizer's gradient in the cheaper update columns")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    import gymnasium as gym
    import torch

    import agentgym  # noqa: F401
    from agentgym.agents import HFPolicy, SamplingConfig, load_model_and_tokenizer
    from agentgym.agents.tiny import build_tiny_model
    from agentgym.train.rollout.chat import ChatEncoder, window_prompt_ids
    from agentgym.train.rollout.samples import Sample, ScoredReply

    torch.set_num_threads(args.threads)
    model, tok = load_model_and_tokenizer(str(build_tiny_model(("ScienceWorld-v0",), "small")))
    encoder = ChatEncoder(tok)
    policy = HFPolicy(model, tok, SamplingConfig(max_new_tokens=4, temperature=1.0))
    views = {}
    for mode in ("history", "history+admissible"):
        env = gym.make("ScienceWorld-v0", task=args.task, split="train", observation=mode,
                       action_format="choice" if mode == "history+admissible" else "text",
                       constrained_choice=mode == "history+admissible")
        obs, info = env.reset(seed=args.variation_seed)
        views[mode] = (window_prompt_ids(encoder, info["system_prompt"], [obs], [], None, True), info)
        env.close()
    prompt, info = views["history"]
    actions = list(info["admissible_actions"])
    counts = [n for n in args.counts if n <= len(actions)] + [len(actions)]
    rows = []
    for n in dict.fromkeys(counts):
        listed = actions[:n]
        candidates = [encoder.encode(a) + [tok.eos_token_id] for a in listed]
        choose = timed(functools.partial(policy.score_replies, prompt, listed), args.repeats)
        scores = tuple(policy.score_replies(prompt, listed).candidate_scores)
        sample = Sample(prompt + candidates[0], [0] * len(prompt) + [1] * len(candidates[0]), 1.0,
                        scored=[ScoredReply(len(prompt), candidates, 0, scores)])
        model.train()
        learn = timed(functools.partial(update_pass, model, sample, tok.pad_token_id), args.repeats)
        drawn = timed(functools.partial(update_pass, model, sample, tok.pad_token_id, args.scored_samples),
                      args.repeats)
        reused = timed(functools.partial(update_pass, model, sample, tok.pad_token_id, args.scored_samples, True),
                       args.repeats)
        rows.append({"candidates": n, "candidate_tokens": sum(map(len, candidates)), "prompt_tokens": len(prompt),
                     "rollout_seconds": round(choose, 4), "update_seconds": round(learn, 4),
                     "update_seconds_drawn": round(drawn, 4), "update_seconds_drawn_recorded": round(reused, 4)})
        print(json.dumps(rows[-1]), flush=True)
    listed_prompt, listed_info = views["history+admissible"]
    numbered = timed(lambda: policy.generate([listed_prompt], allowed=[listed_info["allowed_replies"]]), args.repeats)
    plain = Sample(listed_prompt + [tok.eos_token_id], [0] * len(listed_prompt) + [1], 1.0)
    numbered_update = timed(functools.partial(update_pass, model, plain, tok.pad_token_id), args.repeats)
    result = {"task": args.task, "threads": args.threads, "scored_samples": args.scored_samples,
              "actions_listed": len(actions), "scored": rows,
              "numbered_choice": {"prompt_tokens": len(listed_prompt), "rollout_seconds": round(numbered, 4),
                                  "update_seconds": round(numbered_update, 4)}}
    print(json.dumps(result["numbered_choice"]))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
