"""Low-rank adapters instead of full fine-tuning (:class:`LoraConfig`, ``--lora.*``).

With ``--lora.r R`` (R > 0) the model's weights stay frozen and PEFT's LoRA adapters of rank R on
the chosen linear layers are what trains; the reference of the KL term is the same model with its
adapters switched off, so no second copy of the weights is loaded. Off (``--lora.r 0``) by default.
The defaults follow what works for RL on Qwen2 and Llama-style models: every linear layer of the
decoder (attention and MLP, not the output layer), alpha twice the rank, and a learning rate about
ten times full fine-tuning's (docs/trainers.md, "LoRA").
"""

from __future__ import annotations

from dataclasses import dataclass

from agentgym.agents.lora import AdapterError, import_peft
from agentgym.settings import SettingError, check_on_init
from agentgym.train.base.errors import ConfigError, is_int, is_number

ALL_LINEAR = "all-linear"
"""every linear layer but the output layer (PEFT's own spelling)"""


@dataclass
class LoraConfig:
    """LoRA adapters (PEFT) on the trained model: `--lora.r 8` turns them on."""

    r: int = 0
    """adapter rank (0: off, full fine-tuning); 8-32 suits RL (`pip install "agentgym[lora]"`)"""
    alpha: float = 0.0
    """scaling numerator: the adapter's update is scaled by alpha / r (0: twice the rank)"""
    dropout: float = 0.0
    """dropout on the adapter's input while training (0 keeps a sample's log-probability the same
    in rollout and update)"""
    target_modules: tuple[str, ...] = (ALL_LINEAR,)
    """module names to adapt (suffixes, as PEFT matches them), or `all-linear`: every linear layer of
    the decoder; Qwen2/Llama's attention alone is `q_proj k_proj v_proj o_proj`"""

    def __post_init__(self) -> None:
        check_on_init(self)

    @property
    def enabled(self) -> bool:
        return self.r > 0

    @property
    def scale_alpha(self) -> float:
        """The alpha PEFT is given: ``alpha``, or twice the rank when it is 0."""
        return float(self.alpha) if self.alpha > 0 else 2.0 * self.r

    def check(self) -> None:
        if not (is_int(self.r) and self.r >= 0):
            raise SettingError("r", f"must be an integer >= 0 (0: off), got {self.r!r}")
        if not (is_number(self.alpha) and self.alpha >= 0):
            raise SettingError("alpha", f"must be a finite number >= 0 (0: twice the rank), got {self.alpha!r}")
        if not (is_number(self.dropout) and 0 <= self.dropout < 1):
            raise SettingError("dropout", f"must be in [0, 1), got {self.dropout!r}")
        names = tuple(self.target_modules)
        if not names or any(not isinstance(n, str) or not n.strip() for n in names):
            raise SettingError("target_modules", f"must name at least one module (or `{ALL_LINEAR}`), got {names!r}")
        if ALL_LINEAR in names and len(names) > 1:
            raise SettingError("target_modules", f"`{ALL_LINEAR}` already names every linear layer; give it alone")

    def validate(self) -> None:
        """With adapters on, peft must be installed: say so before anything is built."""
        if self.enabled:
            try:
                import_peft()
            except AdapterError as e:
                raise ConfigError(f"--lora.r {self.r}: {e}") from None

    def peft_config(self):
        """This adapter as a ``peft.LoraConfig`` for a causal LM."""
        peft = import_peft()
        names = tuple(self.target_modules)
        return peft.LoraConfig(r=int(self.r), lora_alpha=self.scale_alpha, lora_dropout=float(self.dropout),
                               target_modules=ALL_LINEAR if names == (ALL_LINEAR,) else list(names),
                               bias="none", task_type="CAUSAL_LM")
