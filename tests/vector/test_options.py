"""Backend options as one object: validated once, passed as ``backend=``, and the keyword spelling
``backend="process", envs_per_worker=2`` building the same object."""

import copy

import gymnasium as gym
import pytest

from agentgym.vector import ProcessOptions, RayOptions, SyncOptions, backend_options, make_vec


@pytest.mark.parametrize("make,message", [
    (lambda: ProcessOptions(envs_per_worker=0), "envs_per_worker must be an int >= 1, got 0"),
    (lambda: RayOptions(envs_per_worker=1.5), "envs_per_worker must be an int >= 1, got 1.5"),
    (lambda: ProcessOptions(step_timeout=0), "step_timeout must be a positive number of seconds or None, got 0"),
    (lambda: ProcessOptions(reset_timeout=float("nan")), "reset_timeout must be a positive number"),
    (lambda: RayOptions(startup_timeout="10"), "startup_timeout must be a positive number"),
    (lambda: ProcessOptions(mp_context="threads"), "mp_context must be one of"),
    (lambda: SyncOptions(sticky_calls="set_prs_stage"), "sticky_calls must be a sequence of method names"),
    (lambda: RayOptions(actor_options=["num_cpus"]), "actor_options must be a dict with str keys"),
    (lambda: backend_options("threads"), "backend must be one of ('sync', 'process', 'ray')"),
    (lambda: make_vec("ToolQA-v0", 2, backend={"name": "process"}), "backend must be one of"),
    (lambda: backend_options("sync", mp_context="spawn"),
     "mp_context applies to the 'process' backend only, not 'sync'"),
    (lambda: backend_options("process", ray_init_kwargs={"address": "auto"}),
     "ray_init_kwargs applies to the 'ray' backend only, not 'process'"),
    (lambda: backend_options("sync", envs_per_worker=2),
     "envs_per_worker applies to the 'process' and 'ray' backends only, not 'sync'"),
    (lambda: backend_options("sync", step_timeout=-1), "step_timeout must be a positive number"),
    (lambda: backend_options(ProcessOptions(), step_timeout=5),
     "backend=ProcessOptions(...) already carries the backend's options: pass step_timeout inside it"),
])
def test_bad_options_are_one_line_value_errors(make, message):
    with pytest.raises(ValueError) as caught:
        make()
    text = str(caught.value)
    assert message in text and "\n" not in text


def test_the_keyword_spelling_builds_the_same_object():
    assert backend_options("process", envs_per_worker=2, step_timeout=30, mp_context="spawn") == \
        ProcessOptions(envs_per_worker=2, step_timeout=30, mp_context="spawn")
    ray = backend_options("ray", ray_actor_options={"num_cpus": 1}, ray_init_kwargs={"address": "auto"})
    assert ray == RayOptions(actor_options={"num_cpus": 1}, init_kwargs={"address": "auto"})
    # the defaults stay visible under what was given
    assert ray.actor_options == {"num_cpus": 1, "max_restarts": 0} and ray.init_kwargs["address"] == "auto"
    # keywords that say nothing are fine anywhere; a timeout given to sync is accepted and unused
    # (nothing can interrupt a call in this process), so code may pass one whatever the backend
    said_nothing = backend_options("sync", envs_per_worker=1, mp_context=None, ray_actor_options={}, step_timeout=5)
    assert said_nothing == SyncOptions()
    opts = ProcessOptions()
    assert backend_options(opts) is opts and copy.deepcopy(opts) == opts


def test_make_vec_takes_the_object_and_records_it(fixture_id):
    vec = make_vec(fixture_id, 2, backend=ProcessOptions(reset_timeout=7.0, envs_per_worker=2))
    try:
        assert vec.backend_name == "process" and (vec.step_timeout, vec.reset_timeout) == (300.0, 7.0)
        assert len(set(vec.worker_pids())) == 1  # both envs in one worker
        assert vec.spec.kwargs["backend"] == ProcessOptions(reset_timeout=7.0, envs_per_worker=2)
    finally:
        vec.close()
    vec = gym.make_vec("ToolQA-v0", num_envs=2, backend=SyncOptions())
    assert vec.backend_name == "sync" and vec.step_timeout is None
    vec.close()
