"""Leaderboards a results table can be made from: agents scored on every task of each env split.

    python benchmarks/leaderboard.py --agents expert random tiny --envs ToolQA-v0 ALFWorld-v0 \\
        ScienceWorld-v0 --split test --limit 20 --out benchmarks/results/board
    python benchmarks/leaderboard.py merge DIR_A DIR_B --out DIR

The same command as ``agentgym leaderboard``; the logic lives in :mod:`agentgym.leaderboard`.
"""

import sys

from agentgym.leaderboard.cli import main

if __name__ == "__main__":
    sys.exit(main())
