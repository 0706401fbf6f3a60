"""ToolQA speed: oracle env steps/s, BM25 search latency, length-aware BLEU scores/s.

    python benchmarks/toolqa_bench.py [--big-scale 50] [--out benchmarks/results/toolqa_bench.json]

Targets: search p50 under 5 ms on a corpus of at least 100,000 passages; over 10,000 BLEU scores/s.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np


def oracle_steps_per_second(episodes: int) -> dict:
    import gymnasium as gym

    import agentgym  # noqa: F401

    env = gym.make("ToolQA-v0", split="test", expert=True)
    steps, solved = 0, 0
    start = time.perf_counter()
    for episode in range(episodes):
        _, info = env.reset(seed=episode)
        while True:
            _, _, terminated, truncated, info = env.step(info["expert_action"])
            steps += 1
            if terminated or truncated:
                solved += info["success"]
                break
    elapsed = time.perf_counter() - start
    return {"episodes": episodes, "steps": steps, "steps_per_second": steps / elapsed,
            "oracle_success_rate": solved / episodes}


def search_latency(retriever, queries: list[str], top_k: int = 3) -> dict:
    for q in queries[:20]:
        retriever.search(q, top_k)  # warm caches
    times = []
    for q in queries:
        start = time.perf_counter()
        retriever.search(q, top_k)
        times.append((time.perf_counter() - start) * 1000)
    return {"passages": len(retriever), "queries": len(queries), "p50_ms": float(np.percentile(times, 50)),
            "p99_ms": float(np.percentile(times, 99)), "mean_ms": float(np.mean(times))}


def builtin_search(n_queries: int) -> dict:
    from agentgym.envs.toolqa.data import builtin_dataset

    data = builtin_dataset()
    queries = [s.arg for q in data.questions("test") for s in q.plan if s.tool == "search"]
    return search_latency(data.retriever, (queries * (n_queries // len(queries) + 1))[:n_queries])


def big_corpus_search(scale: int, n_queries: int) -> dict:
    from agentgym.envs.toolqa.retriever import BM25Retriever, Doc
    from agentgym.envs.toolqa.world import build_world

    start = time.perf_counter()
    world = build_world(seed=7, scale=scale)
    generated = time.perf_counter() - start
    start = time.perf_counter()
    retriever = BM25Retriever([Doc(p.id, p.title, p.text) for p in world.passages])
    indexed = time.perf_counter() - start
    rng = random.Random(0)
    keywords = ["born", "founded", "population", "headquartered", "capital", "river", "pages", "students"]
    names = [e.name for e in world.entities.values()]
    queries = [f"{rng.choice(names)} {rng.choice(keywords)}" for _ in range(n_queries)]
    out = search_latency(retriever, queries)
    out.update(generate_seconds=generated, index_seconds=indexed)
    return out


def bleu_per_second(n: int) -> dict:
    from agentgym.envs.toolqa.data import builtin_dataset
    from agentgym.rewards.bleu import length_aware_bleu

    questions = [q for q in builtin_dataset().questions("train") if not q.long_form]
    rng = random.Random(0)
    pairs = []
    for _ in range(n):
        q, other = rng.choice(questions), rng.choice(questions)
        hyp = rng.choice([q.answers[0], other.answers[0], f"I believe it is {q.answers[0]}",
                          f"{q.answers[0]} {other.answers[0]}"])
        pairs.append((hyp, q.answers))
    start = time.perf_counter()
    for hyp, refs in pairs:
        length_aware_bleu(hyp, refs)
    elapsed = time.perf_counter() - start
    return {"scores": n, "scores_per_second": n / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--big-scale", type=int, default=50, help="world scale; 50 gives 101,500 passages")
    parser.add_argument("--bleu", type=int, default=50_000)
    parser.add_argument("--out", default="benchmarks/results/toolqa_bench.json")
    args = parser.parse_args()
    results = {
        "oracle": oracle_steps_per_second(args.episodes),
        "search_builtin": builtin_search(args.queries),
        "search_big": big_corpus_search(args.big_scale, args.queries),
        "bleu": bleu_per_second(args.bleu),
    }
    results["targets"] = {"search_big_p50_under_5ms": results["search_big"]["p50_ms"] < 5.0,
                          "bleu_over_10k_per_s": results["bleu"]["scores_per_second"] > 10_000}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
