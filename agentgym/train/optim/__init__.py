"""One optimizer step, on one process or many.

- :mod:`.loss`: the token-level PPO-clip / CISPO policy loss with a k3 KL penalty.
- :mod:`.update`: one update from a batch of samples: micro-batches by sample kind, forward passes
  (logprobs, hidden states for extensions that ask), the loss, extensions' extra terms, the step.
- :mod:`.distributed`: data-parallel training under ``torchrun`` (groups split across ranks,
  gradients summed, metrics reduced).
- :mod:`.fsdp`: ``--fsdp``, the model's weights, gradients and AdamW state sharded across ranks.
"""
