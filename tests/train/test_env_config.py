"""The trainer's backend flags become one backend options object, built in one place."""

import pytest

from agentgym.train.base.errors import ConfigError
from agentgym.train.config.env import EnvConfig
from agentgym.vector import ProcessOptions, RayOptions, SyncOptions


def test_backend_flags_become_one_options_object():
    assert EnvConfig().backend_options() == SyncOptions()
    # trainers run threads: process workers are spawned, not forked
    assert EnvConfig(backend="process", envs_per_worker=2).backend_options() == \
        ProcessOptions(envs_per_worker=2, mp_context="spawn")
    ray = EnvConfig(backend="ray", ray_address="auto", env_num_cpus=0.5).backend_options()
    assert ray == RayOptions(actor_options={"num_cpus": 0.5, "scheduling_strategy": "SPREAD"},
                             init_kwargs={"address": "auto"})
    assert EnvConfig(backend="ray").backend_options().actor_options == {"num_cpus": 0.0, "max_restarts": 0}


def test_bad_backend_flags_name_the_flag():
    with pytest.raises(ConfigError, match="--envs-per-worker must be >= 1"):
        EnvConfig(backend="process", envs_per_worker=0).validate()
    with pytest.raises(ConfigError, match="--ray-address needs --backend ray"):
        EnvConfig(ray_address="auto").validate()
