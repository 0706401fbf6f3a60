"""``HFPolicy``: sampling with transformers ``generate``, on CPU or GPU. The default policy."""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.agents.base import ChatHistory, Completion, Policy, Prompt, SamplingConfig, is_token_prompt


def render_prompt_ids(tokenizer, messages: ChatHistory) -> list[int]:
    """Token ids of a chat history with the assistant turn opened, through the chat template.

    The template is rendered to text and the text tokenized without extra special tokens, so the
    ids are the same whichever way the tokenizer's ``apply_chat_template`` returns them.
    """
    text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def load_model_and_tokenizer(path: str, device: str = "cpu", dtype=None):
    """Load a causal LM and its tokenizer from a local directory (a tiny model or a user checkpoint)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype or torch.float32).to(device)
    return model, tokenizer


def default_stop_token_ids(tokenizer, model=None) -> list[int]:
    """Ids that end a turn: the tokenizer's eos and the model's generation-config eos ids (every
    backend stops on the same ones, so a turn ends alike whoever samples it)."""
    stop = set()
    if tokenizer.eos_token_id is not None:
        stop.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if gen_eos is not None:
        stop.update([gen_eos] if isinstance(gen_eos, int) else gen_eos)
    return sorted(int(t) for t in stop)


class HFPolicy(Policy):
    """Sample from a transformers causal LM with ``generate``.

    Args:
        model: a ``PreTrainedModel`` or a local path to load one from.
        tokenizer: its tokenizer (loaded from ``model`` when that is a path).
        sampling: default :class:`SamplingConfig`.
        device: where to load a model given as a path.
        stop_token_ids: ids that end a turn (default: the tokenizer's eos and the model's
            generation-config eos ids).
        batch_size: most prompts per ``generate`` call (None: all at once).

    >>> policy = HFPolicy("path/to/checkpoint")                     # doctest: +SKIP
    >>> policy.act([{"role": "user", "content": "Hi"}])            # doctest: +SKIP
    """

    def __init__(self, model, tokenizer=None, sampling: SamplingConfig | None = None, device: str | None = None,
                 stop_token_ids: Sequence[int] | None = None, batch_size: int | None = None):
        if isinstance(model, str):
            model, loaded_tokenizer = load_model_and_tokenizer(model, device or "cpu")
            tokenizer = tokenizer or loaded_tokenizer
        if tokenizer is None:
            raise ValueError("HFPolicy needs a tokenizer when the model is given as an object")
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling or SamplingConfig()
        self.batch_size = batch_size
        if stop_token_ids is None:
            stop_token_ids = default_stop_token_ids(tokenizer, model)
        if not stop_token_ids:
            raise ValueError("no stop token: the tokenizer has no eos token; pass stop_token_ids")
        self.stop_token_ids = [int(t) for t in stop_token_ids]
        self.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_token_ids[0]

    def prompt_ids(self, prompt: Prompt) -> list[int]:
        return [int(t) for t in prompt] if is_token_prompt(prompt) else render_prompt_ids(self.tokenizer, prompt)

    def generate(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None) -> list[Completion]:
        sampling = sampling or self.sampling
        ids = [self.prompt_ids(p) for p in prompts]
        step = self.batch_size or max(len(ids), 1)
        out: list[Completion] = []
        for start in range(0, len(ids), step):
            out += self._generate_batch(ids[start:start + step], sampling)
        return out

    def _generate_batch(self, batch: list[list[int]], sampling: SamplingConfig) -> list[Completion]:
        import torch

        if not batch:
            return []
        device = next(self.model.parameters()).device
        width = max(len(p) for p in batch)
        # Left padding keeps every prompt's last token at the same position for decoding.
        input_ids = torch.full((len(batch), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for i, p in enumerate(batch):
            input_ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
            attention[i, width - len(p):] = 1
        greedy = sampling.temperature == 0
        # synced_gpus off: an FSDP-sharded trainer generates on gathered weights, each process alone
        # (transformers would otherwise make every rank step until all ranks' sequences end)
        kwargs = dict(max_new_tokens=sampling.max_new_tokens, do_sample=not greedy,
                      eos_token_id=self.stop_token_ids, pad_token_id=self.pad_token_id,
                      return_dict_in_generate=True, output_logits=True, synced_gpus=False)
        if not greedy:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k or None)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                gen = self.model.generate(input_ids=input_ids.to(device), attention_mask=attention.to(device),
                                          **kwargs)
        finally:
            self.model.train(was_training)
        new = gen.sequences[:, width:].cpu()
        logits = torch.stack(gen.logits, dim=1).float().cpu()  # [batch, new_tokens, vocab], unprocessed
        scale = 1.0 if greedy else sampling.temperature
        token_logprobs = torch.log_softmax(logits / scale, dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
        stops = set(self.stop_token_ids)
        out = []
        for i, p in enumerate(batch):
            ids, lps, finish = [], [], "length"
            for t, tok in enumerate(new[i].tolist()):
                ids.append(tok)
                lps.append(float(token_logprobs[i, t]))
                if tok in stops:
                    finish = "stop"
                    break
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            out.append(Completion(text=text, token_ids=ids, logprobs=lps, prompt_ids=list(p), finish_reason=finish))
        return out
