"""``HFPolicy``: sampling with transformers ``generate``, on CPU or GPU. The default policy."""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.agents.base import (
    ChatHistory,
    Completion,
    Policy,
    Prompt,
    SamplingConfig,
    check_allowed,
    is_token_prompt,
)


def render_prompt_ids(tokenizer, messages: ChatHistory) -> list[int]:
    """Token ids of a chat history with the assistant turn opened, through the chat template.

    The template is rendered to text and the text tokenized without extra special tokens, so the
    ids are the same whichever way the tokenizer's ``apply_chat_template`` returns them.
    """
    text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def load_model_and_tokenizer(path: str, device: str = "cpu", dtype=None):
    """Load a causal LM and its tokenizer from a local directory (a tiny model, a user checkpoint, or
    a LoRA adapter directory, merged onto the base it names: :mod:`agentgym.agents.lora`)."""
    from transformers import AutoTokenizer

    from agentgym.agents.lora import load_causal_lm, tokenizer_source

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_source(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return load_causal_lm(path, device, dtype), tokenizer


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


class ReplyTrie:
    """The token sequences of a list of replies, each its tokens (as the model writes it: the text
    tokenized without special tokens, as a cold start's expert replies are) then a stop token, as a
    trie: :meth:`next_ids` says which ids may follow a prefix.

    >>> trie = ReplyTrie([[5], [5, 6], [7]], stop=0)
    >>> trie.next_ids([]), trie.next_ids([5]), trie.next_ids([5, 6]), trie.next_ids([9])
    ([5, 7], [0, 6], [0], None)
    """

    def __init__(self, replies_ids: Sequence[Sequence[int]], stop: int):
        self.root: dict = {}
        for ids in replies_ids:
            node = self.root
            for tok in [*ids, stop]:
                node = node.setdefault(int(tok), {})

    def next_ids(self, prefix: Sequence[int]) -> list[int] | None:
        """The ids that may follow ``prefix`` (sorted); None past a whole reply or off the trie."""
        node = self.root
        for tok in prefix:
            node = node.get(int(tok))
            if node is None:
                return None
        return sorted(node) or None


def reply_ids(tokenizer, reply: str) -> list[int]:
    """A listed reply's ids as the model writes it: the text tokenized without special tokens (as a
    cold start's expert replies are); the stop token that ends it comes after."""
    return list(tokenizer(reply, add_special_tokens=False)["input_ids"])


def reply_tries(tokenizer, allowed: Sequence[Sequence[str] | None], stop: int) -> list[ReplyTrie | None]:
    """One :class:`ReplyTrie` per prompt (None where any reply may come)."""
    return [None if replies is None else ReplyTrie([reply_ids(tokenizer, r) for r in replies], stop)
            for replies in allowed]


def _trie_mask_processor(tries: list[ReplyTrie | None], start: int):
    """A transformers logits processor that leaves only the ids each row's trie allows next (rows
    without a trie, and rows past a whole reply, as they are)."""
    import torch
    from transformers import LogitsProcessor

    class TrieMask(LogitsProcessor):
        def __call__(self, input_ids, scores):
            for row, trie in enumerate(tries):
                if trie is None:
                    continue
                ids = trie.next_ids(input_ids[row, start:].tolist())
                if ids is not None:
                    keep = torch.full_like(scores[row], float("-inf"))
                    keep[ids] = 0.0
                    scores[row] = scores[row] + keep
            return scores

    return TrieMask()


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

    @property
    def reply_stop_token_id(self) -> int:
        """The stop token a constrained reply ends with: the tokenizer's end-of-turn token, as a cold
        start's expert replies end, where it stops a turn (else the first stop token)."""
        eos = self.tokenizer.eos_token_id
        return int(eos) if eos is not None and int(eos) in self.stop_token_ids else self.stop_token_ids[0]

    def generate(self, prompts: Sequence[Prompt], sampling: SamplingConfig | None = None,
                 allowed: Sequence[Sequence[str] | None] | None = None,
                 scored: Sequence[Sequence[str] | None] | None = None) -> list[Completion]:
        """Sample one completion per prompt; with ``allowed``, prompt ``i`` samples only one of
        ``allowed[i]`` (greedy too): a logits processor masks every id its :class:`ReplyTrie` does
        not allow next, and the recorded logprobs are the log-softmax of the masked logits. With
        ``scored``, prompt ``i`` picks one of ``scored[i]`` whole (:meth:`score_replies`)."""
        sampling = sampling or self.sampling
        ids = [self.prompt_ids(p) for p in prompts]
        allowed = check_allowed(prompts, allowed)
        scored = check_allowed(prompts, scored)
        if allowed is not None and scored is not None and any(
                a is not None and s is not None for a, s in zip(allowed, scored)):
            raise ValueError("a prompt has both allowed and scored replies: give one or the other")
        free = [i for i in range(len(ids)) if scored is None or scored[i] is None]
        tries = None if allowed is None else reply_tries(self.tokenizer, [allowed[i] for i in free],
                                                          self.reply_stop_token_id)
        step = self.batch_size or max(len(free), 1)
        out: list[Completion | None] = [None] * len(ids)
        for start in range(0, len(free), step):
            rows = free[start:start + step]
            for i, c in zip(rows, self._generate_batch([ids[i] for i in rows], sampling,
                                                       None if tries is None else tries[start:start + step])):
                out[i] = c
        for i in range(len(ids)):
            if out[i] is None:
                out[i] = self.score_replies(ids[i], scored[i], sampling)
        return out  # type: ignore[return-value]

    def score_replies(self, prompt_ids: list[int], replies: Sequence[str],
                      sampling: SamplingConfig | None = None) -> Completion:
        """One of ``replies``, each as the model writes it (its tokens, then the end-of-turn token),
        chosen by the softmax over their summed token log-probabilities after the prompt (the
        temperature applied to every token's logits; temperature 0: the best-scoring reply); its
        logprobs sum to that choice's log-probability (:mod:`agentgym.agents.scoring`)."""
        import torch

        from agentgym.agents.scoring import candidate_logprobs, choose, scored_token_logprobs

        sampling = sampling or self.sampling
        stop = self.reply_stop_token_id
        candidates = [reply_ids(self.tokenizer, r) + [stop] for r in replies]
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                lp, lengths = candidate_logprobs(self.model, prompt_ids, candidates, sampling.temperature)
        finally:
            self.model.train(was_training)
        lp = lp.float().cpu()
        scores = lp.sum(dim=1)
        pick = choose(scores, greedy=sampling.temperature == 0)
        logprobs = scored_token_logprobs(lp[pick, :int(lengths[pick])].tolist(), float(torch.logsumexp(scores, 0)))
        return Completion(text=str(replies[pick]), token_ids=candidates[pick], logprobs=logprobs,
                          prompt_ids=list(prompt_ids), finish_reason="stop", candidate_ids=candidates,
                          candidate_scores=scores.tolist())

    def _generate_batch(self, batch: list[list[int]], sampling: SamplingConfig,
                        tries: list[ReplyTrie | None] | None = None) -> list[Completion]:
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
        if tries is not None and any(t is not None for t in tries):
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([_trie_mask_processor(tries, width)])
        else:
            tries = None
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
            trie = tries[i] if tries is not None else None
            allowed_ids: list[list[int]] | None = [] if trie is not None else None
            for t, tok in enumerate(new[i].tolist()):
                if trie is not None:
                    # the same mask the processor applied: the log-softmax over the allowed ids only
                    step_ids = trie.next_ids(ids) or list(range(logits.shape[-1]))
                    allowed_ids.append(step_ids)
                    row = logits[i, t] / scale
                    lps.append(float(row[tok] - torch.logsumexp(row[step_ids], dim=-1)))
                else:
                    lps.append(float(token_logprobs[i, t]))
                ids.append(tok)
                if tok in stops:
                    finish = "stop"
                    break
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            out.append(Completion(text=text, token_ids=ids, logprobs=lps, prompt_ids=list(p), finish_reason=finish,
                                  allowed_token_ids=allowed_ids))
        return out
