"""Our one-pass info batching builds exactly Gymnasium's vector info layout."""

import numpy as np
from gymnasium.vector import VectorEnv

from agentgym.vector.infos import batch_infos

INFOS = [
    (0, {"task_id": "a", "turn": 1, "ok": True, "score": 0.5, "terms": {"format": 1.0, "valid": 0.0},
         "actions": ["look", "go"], "parse_error": None, "vec": np.arange(3)}),
    (2, {"task_id": "b", "turn": 2, "ok": False, "score": 1.0, "terms": {"format": 0.0},
         "parse_error": "bad", "vec": np.ones(3, dtype=np.int64), "error": "died"}),
    (3, {"final_obs": "end", "final_info": {"success": True}, "turn": 3}),
]


def _gymnasium_layout(items, n):
    reference = VectorEnv()
    reference.num_envs = n
    out = {}
    for i, info in items:
        out = reference._add_info(out, info, i)
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            _assert_same(a[key], b[key])
        else:
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
            assert [repr(x) for x in a[key].tolist()] == [repr(x) for x in b[key].tolist()], key


def test_batch_infos_matches_gymnasium_add_info():
    _assert_same(batch_infos(INFOS, 4), _gymnasium_layout(INFOS, 4))


def test_batch_infos_merges_into_an_existing_layout():
    merged = batch_infos(INFOS[2:], 4, batch_infos(INFOS[:2], 4))
    _assert_same(merged, _gymnasium_layout(INFOS, 4))
