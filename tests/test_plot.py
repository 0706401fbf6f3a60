"""``agentgym plot``: learning curves from real metrics.jsonl files, as a PNG."""

import json
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest

from agentgym.cli import main as cli_main
from agentgym.plot import plot_runs
from agentgym.train.base.metrics import MetricsLogger

TERMS = ("format", "tool", "answer")


def _write_run(path, steps: int, slope: float, evaluate: bool = True) -> None:
    logger = MetricsLogger(path, tensorboard=False)
    for step in range(1, steps + 1):
        logger.log(step, {"reward/mean": slope * step, "reward/std": 0.1, "success/mean": min(1.0, slope * step),
                          **{f"terms/{name}": 0.1 * k + 0.01 * step for k, name in enumerate(TERMS)},
                          "loss/policy": float("nan")})
    if evaluate:
        logger.log(steps, {"eval/success/before": 0.2, "eval/success/after": 0.5,
                           "eval/return/before": 0.3, "eval/return/after": 0.6})
    logger.close()


def _lines(fig) -> dict[str, int]:
    return {ax.get_title(): len(ax.get_lines()) for ax in fig.axes}


def test_two_runs_overlaid_in_one_png(tmp_path):
    _write_run(tmp_path / "grpo", 6, 0.1)
    _write_run(tmp_path / "vspo", 4, 0.2, evaluate=False)
    out = tmp_path / "curves.png"
    fig = plot_runs([tmp_path / "grpo", tmp_path / "vspo"], out)
    image = matplotlib.image.imread(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.shape[0] > 300 and image.shape[1] > 300
    assert np.ptp(image[..., :3]) > 0  # something was drawn
    assert _lines(fig) == {"mean PRS return (reward/mean)": 2, "success rate (success/mean)": 2,
                           "PRS terms (terms/*)": 2 * len(TERMS), "held-out evaluation (eval/*)": 2}
    reward = fig.axes[0].get_lines()[0]
    assert list(reward.get_xdata()) == [1, 2, 3, 4, 5, 6]  # the eval line has no reward/mean
    assert np.allclose(reward.get_ydata(), [0.1 * s for s in range(1, 7)])
    success_eval = fig.axes[3].get_lines()[0]
    assert list(success_eval.get_ydata()) == [0.2, 0.5]


def test_a_truncated_last_line_is_skipped_with_a_warning(tmp_path):
    _write_run(tmp_path / "run", 3, 0.1, evaluate=False)
    with open(tmp_path / "run" / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 4, "reward/mean": 0.4})[:17])  # power lost mid-write
    with pytest.warns(UserWarning, match=r"metrics.jsonl:4: skipping a line that is not valid JSON"):
        fig = plot_runs([tmp_path / "run"], tmp_path / "out.png")
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == [1, 2, 3]
    assert (tmp_path / "out.png").stat().st_size > 0


def test_the_command_writes_the_png_into_the_run(tmp_path, capsys):
    _write_run(tmp_path / "run", 3, 0.1)
    assert cli_main(["plot", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "learning_curves.png").exists()
    assert "learning_curves.png" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="metrics.jsonl not found"):
        cli_main(["plot", str(tmp_path / "missing")])


def test_without_matplotlib_the_command_names_the_extra(tmp_path):
    _write_run(tmp_path / "run", 2, 0.1)
    code = ("import sys; sys.modules['matplotlib'] = None; from agentgym.cli import main; "
            f"sys.exit(main(['plot', {str(tmp_path / 'run')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert 'agentgym plot needs matplotlib, which is not installed: pip install "agentgym[bench]"' in done.stderr
    assert not (tmp_path / "run" / "learning_curves.png").exists()
