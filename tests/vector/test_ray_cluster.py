"""Env workers on an existing Ray cluster (a real head node started with `ray start`): the
trainer joins it with --ray-address, each env actor reserves --env-num-cpus, and training runs."""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = [pytest.mark.multiproc, pytest.mark.network]
ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).parent / "ray")  # the CLI installed beside this Python


# A private test cluster: Ray's token authentication (on by default since Ray 2.5x) is turned off for
# the head and for every client the tests start.
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    port = _free_port()
    env = ENV
    start = subprocess.run([RAY, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1", "--num-cpus=2", "--include-dashboard=false",
                            "--disable-usage-stats"], capture_output=True, text=True, env=env, timeout=180)
    if start.returncode != 0:
        pytest.fail(f"ray start failed:\n{start.stdout}\n{start.stderr}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, env=env, timeout=120)


def test_env_actors_join_the_cluster_and_reserve_their_cpus(cluster):
    script = textwrap.dedent(f"""
        import json, ray
        from agentgym.train.config.env import EnvConfig
        from agentgym.train.rollout.envs import make_env_batch
        backend = EnvConfig(backend="ray", ray_address="{cluster}", env_num_cpus=0.5).backend_options()
        envs = make_env_batch("ToolQA-v0", 2, 2, backend, {{"question_kinds": ["single_hop"], "max_turns": 2}})
        try:
            free = ray.available_resources().get("CPU", 0.0)
            obs = envs.reset_groups([0, 1])
            nodes = len(ray.nodes())
        finally:
            envs.close()
        print(json.dumps({{"free": free, "total": ray.cluster_resources()["CPU"] if ray.is_initialized() else None,
                           "nodes": nodes, "reset": len(obs)}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env=ENV)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # 4 env actors x 0.5 CPU = the head's 2 CPUs, all reserved while the envs live
    assert got["free"] == 0.0 and got["nodes"] == 1 and got["reset"] == 4, got


def test_the_trainer_trains_on_cluster_workers(cluster, tmp_path):
    out = subprocess.run(
        [sys.executable, "trainers/grpo.py", "--backend", "ray", "--ray-address", cluster, "--env-num-cpus", "0.25",
         "--env-kwargs", '{"question_kinds": ["single_hop"], "max_turns": 2}', "--num-steps", "1", "--num-groups", "2",
         "--group-size", "2", "--max-new-tokens", "8", "--cold-start.num-steps", "0", "--eval-episodes", "0",
         "--output-dir", str(tmp_path / "run"), "--no-progress", "--no-tensorboard"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=ENV)
    assert out.returncode == 0, out.stderr[-3000:]
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert row["episodes/played"] == 4 and row["episodes/faulted"] == 0


def test_ray_address_needs_the_ray_backend():
    out = subprocess.run([sys.executable, "trainers/grpo.py", "--ray-address", "auto"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 2 and "--ray-address needs --backend ray" in out.stderr, out.stderr[-2000:]
