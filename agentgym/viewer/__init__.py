"""``agentgym view``: training runs and leaderboards in a browser, offline.

:mod:`~agentgym.viewer.sources` reads a run's saved episodes and metrics, or a board's episodes, in
one shape; :mod:`~agentgym.viewer.api` answers the pages' questions (a page of filtered rows, one
episode, one group, one metric); :mod:`~agentgym.viewer.server` serves the pages and that JSON on
127.0.0.1; :mod:`~agentgym.viewer.static` writes the same pages as files; ``assets/`` holds the
page, its script and stylesheet (no file from elsewhere). :mod:`~agentgym.viewer.cli` is the command.
"""
