"""The custom-agent example of docs/agents.md runs as written (with the tiny model)."""

import pathlib
import re

import torch

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def test_custom_agent_example_runs(tiny_path, capsys):
    torch.set_num_threads(1)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    example = next(b for b in blocks if "gym.make" in b)
    example = example.replace('"path/to/checkpoint"', repr(tiny_path)).replace("max_new_tokens=128", "max_new_tokens=16")
    exec(compile(example, str(DOC), "exec"), {})
    assert capsys.readouterr().out.strip().startswith(("True", "False"))
