"""How much memory a training process will need, predicted from the model's config before anything
is allocated (docs/trainers.md, "Memory").

The trainers keep float32 weights (bf16 is autocast on a GPU), so per process:

- weights ``W = 4 P`` (P parameters; with ``--fsdp``, divided by the ranks);
- the KL reference ``R = 4 P`` in full fine-tuning with ``--beta > 0`` (LoRA's is the same model
  with its adapters off: 0);
- gradients ``G = 4 T`` and AdamW's two moments ``O = 8 T`` (T trained parameters: P, or the
  adapters' ``r (in + out)`` per adapted linear layer);
- activations ``A``: per token and decoder layer ``ACT_FULL (hidden + intermediate)`` floats kept
  for the backward pass (``ACT_LORA`` with adapters: PEFT's adapter path keeps more per layer);
  with gradient checkpointing ``ACT_CHECKPOINTED hidden`` floats per token and layer plus one
  layer's full set; half the bytes under bf16 autocast;
- logits ``L``: the reply positions' ``vocab`` floats, three times (logits, log-softmax, gradient);
- a fixed ``OVERHEAD`` (the process and its libraries on a CPU; the CUDA context on a GPU).

The peak is ``OVERHEAD + W + R + max(A + L + G, G + O)``: the backward pass holds activations while
gradients fill in, and AdamW's state is allocated after the activations are freed (and reuses
their memory). The three activation factors and ``OVERHEAD_CPU`` are fitted to the eight CPU
measurements of ``benchmarks/lora_memory.py`` at Qwen2.5-0.5B's shape (every one predicted within
8%); docs/trainers.md lists each row, measured beside predicted, and the 1.5B rows, which the fit
did not see.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
ACT_FULL = 3.5
"""floats kept per token, decoder layer and unit of ``hidden + intermediate`` without checkpointing"""
ACT_LORA = 6.5
"""the same with LoRA adapters on every linear layer"""
ACT_CHECKPOINTED = 16.0
"""floats kept per token, decoder layer and unit of ``hidden`` with gradient checkpointing"""
OVERHEAD_CPU = 1.0 * GIB
OVERHEAD_GPU = 1.0 * GIB


@dataclass(frozen=True)
class Shape:
    """What the estimate needs of a model: its parameter count and its sizes."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int
    vocab: int
    lora_parameters: int = 0
    """the adapters' parameters (0: no adapters)"""


@dataclass(frozen=True)
class Estimate:
    """Predicted bytes per process, by part."""

    weights: float
    reference: float
    gradients: float
    optimizer: float
    activations: float
    logits: float
    overhead: float
    micro_batch: int = 0
    seq_len: int = 0

    @property
    def peak(self) -> float:
        return (self.overhead + self.weights + self.reference
                + max(self.activations + self.logits + self.gradients, self.gradients + self.optimizer))

    def line(self) -> str:
        """One line for the start of a run."""
        g = lambda b: f"{b / GIB:.2f}"  # noqa: E731
        return (f"memory: about {g(self.peak)} GiB per process at its peak (weights {g(self.weights)}, reference "
                f"{g(self.reference)}, gradients {g(self.gradients)}, AdamW {g(self.optimizer)}, activations "
                f"{g(self.activations)}, logits {g(self.logits)}, overhead {g(self.overhead)} GiB; micro-batches of "
                f"{self.micro_batch} sequences of {self.seq_len} tokens, the longest the settings allow; "
                "docs/trainers.md, \"Memory\")")


def shape_of(config, lora=None) -> Shape:
    """The :class:`Shape` of a transformers model config (``AutoConfig``), counted on the meta device
    (nothing is allocated); ``lora`` a :class:`~agentgym.train.config.lora.LoraConfig` whose
    adapters are counted when it is enabled."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    parameters = sum(p.numel() for p in model.parameters())
    adapters = 0
    if lora is not None and lora.enabled:
        head = model.get_output_embeddings()
        targets = tuple(lora.target_modules)
        for name, module in model.named_modules():
            if not isinstance(module, torch.nn.Linear) or module is head:
                continue
            if targets == ("all-linear",) or any(name == t or name.endswith("." + t) for t in targets):
                adapters += lora.r * (module.in_features + module.out_features)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return Shape(parameters, int(text.num_hidden_layers), int(text.hidden_size),
                 int(getattr(text, "intermediate_size", 4 * text.hidden_size)), int(text.vocab_size), adapters)


def estimate(shape: Shape, *, micro_batch: int, seq_len: int, reply_tokens: int, reference: bool,
             checkpointing: bool = False, bf16: bool = False, gpu: bool = False, shards: int = 1) -> Estimate:
    """Predicted peak bytes of one process training ``shape`` on micro-batches of ``micro_batch``
    sequences of ``seq_len`` tokens, ``reply_tokens`` of each carrying loss; ``reference``: a KL
    reference is computed; ``shards``: FSDP's ranks (1: none)."""
    lora = shape.lora_parameters > 0
    trained = shape.lora_parameters if lora else shape.parameters
    weights = 4.0 * shape.parameters / shards
    ref = 4.0 * shape.parameters / shards if reference and not lora else 0.0
    tokens = micro_batch * seq_len
    per_layer = (ACT_LORA if lora else ACT_FULL) * (shape.hidden + shape.intermediate)
    floats = (tokens * shape.layers * ACT_CHECKPOINTED * shape.hidden + tokens * per_layer if checkpointing
              else tokens * shape.layers * per_layer)
    activations = floats * (2.0 if bf16 else 4.0)
    logits = 3 * 4.0 * micro_batch * reply_tokens * shape.vocab
    return Estimate(weights, ref, 4.0 * trained / shards, 8.0 * trained / shards,
                    activations, logits, OVERHEAD_GPU if gpu else OVERHEAD_CPU, micro_batch, seq_len)
