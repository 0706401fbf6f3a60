"""Data-parallel training (torchrun, gloo on CPU): two processes train like one on the same global
batch, only rank 0 writes, and a bad launch is one clear line."""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest
import torch
from trainer_helpers import TOOLQA_SMALL, small_config

from agentgym.train.base.errors import ConfigError
from agentgym.train.base.flags import build
from agentgym.train.base.world import Dist
from agentgym.train.config.cli import parse
from agentgym.train.config.tree import TrainConfig
from agentgym.train.optim.distributed import reduce_metrics

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VOLATILE = ("time/", "tokens_per_second")


def test_num_groups_must_split_into_whole_groups_per_process(monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit) as exit_info:
        parse(TrainConfig, ["--num-groups", "3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --num-groups 3 does not split into whole groups across 2 processes (WORLD_SIZE=2); "
                   "give a multiple of 2")
    build(TrainConfig, num_groups=4).validate()  # 2 groups per process
    with pytest.raises(ConfigError, match="--generator openai is for one process"):
        build(TrainConfig, num_groups=4, generator="openai", generator_url="http://127.0.0.1:1/v1").validate()


def test_fsdp_needs_a_launcher_and_an_rl_trainer(monkeypatch):
    from agentgym.train.config.tree import SFTRunConfig

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ConfigError, match="--fsdp shards the model across processes: launch with `torchrun"):
        build(TrainConfig, fsdp=True).validate()
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="--fsdp is for the RL trainers"):
        build(SFTRunConfig, fsdp=True).validate()
    with pytest.raises(ConfigError, match="trainers/sft.py trains in one process"):
        build(SFTRunConfig).validate()


def test_metrics_reduce_counts_by_sum_and_rates_by_episodes():
    rank0 = {"batch/episodes": 2.0, "batch/groups": 1.0, "reward/mean": 1.0, "reward/std": 0.0, "reward/min": 1.0,
             "episode/turns": 1.0, "action/valid_rate": 1.0, "time/rollout": 2.0, "data/position": 8,
             "vspo/groups_replaced": 1.0, "vspo/zero_std_frac_before": 0.5, "gcd/judge_accuracy": float("nan")}
    rank1 = {"batch/episodes": 6.0, "batch/groups": 3.0, "reward/mean": 0.0, "reward/std": 0.0, "reward/min": 0.0,
             "episode/turns": 3.0, "action/valid_rate": 0.0, "time/rollout": 5.0, "data/position": 8,
             "vspo/groups_replaced": 2.0, "vspo/zero_std_frac_before": 0.0, "gcd/judge_accuracy": 0.5}
    m = reduce_metrics([rank0, rank1], summed={"vspo/groups_replaced"})
    assert m["batch/episodes"] == 8 and m["batch/groups"] == 4 and m["vspo/groups_replaced"] == 3
    assert m["reward/mean"] == 0.25 and m["reward/min"] == 0.0 and m["time/rollout"] == 5.0
    assert m["reward/std"] == pytest.approx(0.4330127)  # of [1, 1, 0, 0, 0, 0, 0, 0]
    assert m["action/valid_rate"] == pytest.approx(2 / 20)  # per turn: 2 of 2 + 18 turns
    assert m["vspo/zero_std_frac_before"] == 0.125 and m["gcd/judge_accuracy"] == 0.5
    assert m["data/position"] == 8


# ----- one optimizer step on two ranks vs one process -----

def _samples(vocab: int):
    """Policy samples with advantages of both signs and judge samples (seq-mean), lengths 5-13."""
    from agentgym.train.rollout.samples import Sample

    g = torch.Generator().manual_seed(0)
    out = []
    for k in range(8):
        n = 5 + int(torch.randint(0, 9, (1,), generator=g))
        ids = torch.randint(0, vocab, (n,), generator=g).tolist()
        prompt = 2 + k % 3
        out.append(Sample(ids, [0] * prompt + [1] * (n - prompt), float(torch.randn(1, generator=g)),
                          kind="judge" if k in (1, 6) else "policy"))
    ref = [0.3 * torch.randn(len(s.input_ids) - 1, generator=g) for s in out]
    return out, ref


class LastTokenValue:
    """An extension's own loss term with parameters of its own, as PPO's value loss is: a linear
    head on the last hidden state of each policy sample's last token, pulled towards 1."""

    name, needs_hidden_states = "last_token_value", True

    def __init__(self, hidden_size: int):
        torch.manual_seed(0)
        self.head = torch.nn.Linear(hidden_size, 1)

    def loss_items(self, sample):
        return 1 if sample.kind == "policy" else 0

    def extra_loss(self, batch):
        rows = [i for i, s in enumerate(batch.samples) if s.kind == "policy"]
        last = [len(batch.samples[i].input_ids) - 1 for i in rows]
        per_item = (self.head(batch.hidden[rows, last]).squeeze(-1) - 1.0) ** 2
        return per_item.sum(), {"loss/last_token_value": float(per_item.detach().sum())}


def _one_step(model, samples, ref, dist=None, loss_term=False):
    """One train_step with SGD (a wrong gradient scale shows in the weights, unlike Adam's), a KL
    term, clipping that bites, and GCD-like judge samples with their own aggregation; with
    ``loss_term``, an extension's loss term whose head is a second parameter group."""
    from agentgym.train.config.optim import LossConfig
    from agentgym.train.optim.update import sample_logprobs, train_step

    lp = sample_logprobs(model, samples, 0, 3)
    ref_lp = [a + b for a, b in zip(lp, ref)]  # a reference away from the policy
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    terms = [LastTokenValue(model.config.hidden_size)] if loss_term else []
    for term in terms:
        optimizer.add_param_group({"params": list(term.head.parameters())})
    metrics = train_step(model, optimizer, samples, LossConfig(beta=0.05), 0, micro_batch_size=2,
                         ref_logprobs=ref_lp, loss_weights={"judge": 0.5}, max_grad_norm=0.05,
                         loss_configs={"judge": LossConfig(beta=0.0, aggregation="seq-mean")}, dist=dist,
                         loss_terms=terms)
    if loss_term:
        metrics["head"] = terms[0].head.weight.detach().clone()
    return metrics


def _two_rank_worker(rank, port, tiny_path, out_dir):
    import torch.distributed as td

    from agentgym.train.base.models import load_model, load_tokenizer
    from agentgym.train.optim import fsdp

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    td.init_process_group("gloo", rank=rank, world_size=2)
    dist = Dist(rank=rank, world_size=2, local_rank=rank, active=True)
    samples, ref = _samples(len(load_tokenizer(tiny_path)))
    results = {}
    # rank 1 gets 1 sample (fewer micro-batches than rank 0), or none at all
    for name, split, sharded, term in (("ddp", 7, False, False), ("ddp_empty_rank", 8, False, False),
                                       ("fsdp", 7, True, False), ("ddp_loss_term", 7, False, True)):
        mine = slice(0, split) if rank == 0 else slice(split, None)
        model = load_model(tiny_path, "cpu")
        if sharded:
            model = fsdp.shard(model, "cpu", 2)
        metrics = _one_step(model, samples[mine], ref[mine], dist, loss_term=term)
        state = fsdp.full_model_state(model) if sharded else {k: v.clone() for k, v in model.state_dict().items()}
        results[name] = (metrics, state)
    if rank == 0:
        torch.save(results, os.path.join(out_dir, "two_ranks.pt"))
    td.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.learning
@pytest.mark.multiproc
def test_one_step_on_two_ranks_is_the_one_process_step(tmp_path, tiny_path):
    """Rank 0 plays 7 samples, rank 1 one (fewer micro-batches) or none. Measured max abs weight
    difference to one process after the step (which moves weights by >1e-3): 4e-9 (all-reduce),
    0 (a rank with no samples), 6e-8 (FSDP); losses within 7e-8 relative, the grad norm within
    7e-6 (FSDP: float32 norms of shards summed; one process's own float32 norm is 7e-6 off the
    float64 one too). An extension's loss term with a head of its own (``ddp_loss_term``): its
    mean over both ranks' samples and the head's summed gradient give one process's step. About 25 s."""
    import torch.multiprocessing as mp

    from agentgym.train.base.models import load_model, load_tokenizer

    samples, ref = _samples(len(load_tokenizer(tiny_path)))
    model = load_model(tiny_path, "cpu")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    expected = _one_step(model, samples, ref)
    expected_state = model.state_dict()
    moved = max((expected_state[k] - before[k]).abs().max().item() for k in before)
    assert moved > 1e-3  # the step is not a no-op, so equal weights mean equal gradients

    model = load_model(tiny_path, "cpu")
    expected_term = _one_step(model, samples, ref, loss_term=True)
    expected_term_state = model.state_dict()
    assert expected_term["loss/last_token_value"] > 0

    mp.spawn(_two_rank_worker, args=(_free_port(), tiny_path, str(tmp_path)), nprocs=2, join=True)
    results = torch.load(tmp_path / "two_ranks.pt", weights_only=False)
    for name, (metrics, state) in results.items():
        want, want_state = (expected_term, expected_term_state) if name == "ddp_loss_term" else (expected, expected_state)
        assert len(state) >= len(want_state) - 1, name  # FSDP's leaves out the tied lm_head
        diff = max((state[k] - want_state[k]).abs().max().item() for k in state)
        assert diff < 1e-6, (name, diff)
        assert set(metrics) == set(want), name
        head = metrics.pop("head", None)
        if head is not None:
            assert (head - want["head"]).abs().max().item() < 1e-6, name
        for key, value in want.items():
            if key != "head":
                assert metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-8), (name, key)


# ----- trainers/grpo.py under torchrun -----

def _grpo_flags(output_dir, **kw):
    flags = {"preset": "none", "env-kwargs": TOOLQA_SMALL, "num-steps": 3, "num-groups": 2, "group-size": 2,
             "max-new-tokens": 8, "micro-batch-size": 3, "beta": 0.01, "temperature": 0.0, "save-every": 1, "seed": 3,
             "cold-start.num-steps": 0, "eval-episodes": 0, "device": "cpu", "output-dir": str(output_dir), **kw}
    return [a for k, v in flags.items() for a in (f"--{k}", str(v))] + ["--no-progress", "--quiet", "--resume"]


def _torchrun(flags, nproc=2):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                           os.path.join(ROOT, "trainers", "grpo.py"), *flags],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _rows(run_dir):
    return [json.loads(line) for line in open(run_dir / "metrics.jsonl")]


def _weights(run_dir, step):
    from safetensors.torch import load_file

    return load_file(str(run_dir / "checkpoints" / f"step_{step}" / "model.safetensors"))


@pytest.mark.learning
@pytest.mark.multiproc
def test_torchrun_two_processes_train_like_one(tmp_path):
    """Two steps of GRPO at temperature 0 (greedy: episodes are deterministic, so one process and
    two play the same global batch) from a checkpoint whose weights were moved off the reference
    model. A group's greedy episodes tie, so the KL term is what trains; it touches every loss
    token of the batch, so a wrong global token count or a missing all-reduce would show.
    The 2-process run resumes a 1-process checkpoint (resume works on any rank count dividing
    --num-groups). Measured: max abs weight difference 1.8e-7 (plain all-reduce and FSDP) after
    steps that move weights by 8e-4; loss, KL and grad norm within 3e-6 relative.
    30-45 s on two shared cores."""
    import grpo
    from safetensors.torch import save_file

    base = tmp_path / "base"
    grpo.main(small_config(base, num_steps=1, num_epochs=1, num_minibatches=1, max_new_tokens=8, temperature=0.0,
                           save_every=1, tensorboard=False))
    weights = base / "run" / "checkpoints" / "step_1" / "model.safetensors"
    g = torch.Generator().manual_seed(0)
    save_file({k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in _weights(base / "run", 1).items()},
              str(weights), metadata={"format": "pt"})
    runs = {name: tmp_path / name for name in ("one", "two", "fsdp")}
    for run_dir in runs.values():
        shutil.copytree(base / "run", run_dir)

    grpo.main(parse(TrainConfig, _grpo_flags(runs["one"])))
    for name, extra in (("two", []), ("fsdp", ["--fsdp"])):
        done = _torchrun(_grpo_flags(runs[name]) + extra)
        assert done.returncode == 0, done.stderr[-3000:]

    one = _rows(runs["one"])
    for name in ("two", "fsdp"):
        rows = _rows(runs[name])
        assert [r["step"] for r in rows] == [1, 2, 3], name  # rank 0 alone writes, once per step
        for a, b in zip(one[1:], rows[1:]):
            assert a.keys() == b.keys(), name
            for key in a:
                if not key.startswith(VOLATILE):
                    assert b[key] == pytest.approx(a[key], rel=1e-5, abs=1e-8), (name, key)
        assert rows[1]["batch/episodes"] == 4 and rows[1]["batch/groups"] == 2 and rows[2]["data/position"] == 6
        assert rows[1]["kl"] > 0.01
        w1, w2 = _weights(runs["one"], 3), _weights(runs[name], 3)
        assert w1.keys() == w2.keys(), name
        assert max((w1[k] - w2[k]).abs().max().item() for k in w1) < 1e-5, name
    start = _weights(base / "run", 1)
    w1 = _weights(runs["one"], 3)
    assert max((w1[k] - start[k]).abs().max().item() for k in w1) > 1e-4  # the steps trained


@pytest.mark.learning
@pytest.mark.multiproc
def test_torchrun_trains_lora_adapters_like_one_process(tmp_path):
    """The same check with ``--lora.r 4``: the adapters (moved off their zero start, so the KL to the
    base, the adapters switched off, trains them) end alike in one process, two, and two under
    FSDP, which shards the base model inside the PEFT wrapper. 30-45 s on two shared cores."""
    import grpo
    from safetensors.torch import load_file, save_file

    lora = {"lora.r": 4, "model": "tiny"}  # the adapters go on the run's own base
    base = tmp_path / "base"
    grpo.main(small_config(base, num_steps=1, num_epochs=1, num_minibatches=1, max_new_tokens=8, temperature=0.0,
                           save_every=1, tensorboard=False, lora={"r": 4}))
    adapter = base / "run" / "checkpoints" / "step_1" / "adapter_model.safetensors"
    g = torch.Generator().manual_seed(0)
    save_file({k: v + 0.2 * torch.randn(v.shape, generator=g) for k, v in load_file(str(adapter)).items()},
              str(adapter), metadata={"format": "pt"})
    runs = {name: tmp_path / name for name in ("one", "two", "fsdp")}
    for run_dir in runs.values():
        shutil.copytree(base / "run", run_dir)
    grpo.main(parse(TrainConfig, _grpo_flags(runs["one"], **lora)))
    for name, extra in (("two", []), ("fsdp", ["--fsdp"])):
        done = _torchrun(_grpo_flags(runs[name], **lora) + extra)
        assert done.returncode == 0, done.stderr[-3000:]
    adapters = {name: load_file(str(d / "checkpoints" / "step_3" / "adapter_model.safetensors"))
                for name, d in runs.items()}
    one = _rows(runs["one"])
    assert one[1]["kl"] > 1e-4
    for name in ("two", "fsdp"):
        rows = _rows(runs[name])
        assert [r["step"] for r in rows] == [1, 2, 3], name
        for key in ("loss/policy", "kl", "grad_norm"):
            assert rows[2][key] == pytest.approx(one[2][key], rel=1e-5, abs=1e-8), (name, key)
        assert adapters[name].keys() == adapters["one"].keys(), name
        assert max((adapters[name][k] - adapters["one"][k]).abs().max().item() for k in adapters["one"]) < 1e-5, name
    start = load_file(str(adapter))
    assert max((adapters["one"][k] - start[k]).abs().max().item() for k in start) > 1e-4  # the steps trained
