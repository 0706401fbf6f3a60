"""The SFT cold start before RL, on an env's expert episodes laid out as the rollout lays them out.

- :mod:`.sft`: ``run_sft`` (``trainers/sft.py``, and a trainer's ``--cold-start.*``), its record
  and when a finished cold start is reused.
- :mod:`.expert`: expert transcripts as training samples, in the rollout's chat layout.

A method's own cold-start samples come through its extension (GCD's judge samples:
:mod:`agentgym.train.methods.gcd.coldstart`).
"""
