"""Tiny causal LMs built offline, for tests, CI and the default demo (SPEC §5).

No machine here can download weights, so the project builds its own small model: a Qwen2- or
Llama-architecture config with random weights and a byte-level BPE tokenizer trained with
``tokenizers`` on env text (system prompts, observations, expert actions), with a ChatML chat
template that also renders tool calls (:data:`CHAT_TEMPLATE`). It is saved with ``save_pretrained`` and loaded back with ``AutoModelForCausalLM`` /
``AutoTokenizer``, the same code path as a user's checkpoint.

Built models are cached under ``$AGENTGYM_CACHE/models`` (default ``~/.cache/agentgym/models``),
keyed by the config and a hash of the training text, so tests build each model once.

    python -m agentgym.agents.tiny --env-id ToolQA-v0 --size tiny
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# ChatML, with tool calls and tool results written in the envs' own action syntax, so a conversation
# rendered by a tool-calling stack (TRL's GRPOTrainer) reads as the trainers' prompts do: an assistant
# turn's tool_calls become <tool_call>{"name": ..., "arguments": {...}}</tool_call> after its content,
# and tool messages become one user turn of <tool_response>...</tool_response> blocks, as the envs
# send them. `tools=` is accepted and not listed: the env's system prompt lists the tools already, so
# a prompt lists them once. Messages with plain string content (all the trainers send) render
# exactly as plain ChatML.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'tool' %}"
    "{% if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}{{ '<|im_start|>user\n' }}"
    "{% else %}{{ '\n' }}{% endif %}"
    "{{ '<tool_response>\n' + message['content'] + '\n</tool_response>' }}"
    "{% if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{ '<|im_end|>\n' }}{% endif %}"
    "{% else %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% endif %}"
    "{% if message['tool_calls'] is defined and message['tool_calls'] %}"
    "{% for call in message['tool_calls'] %}"
    "{% set fn = call['function'] if call['function'] is defined else call %}"
    "{% if fn['arguments'] is string %}"
    "{{ '<tool_call>{\"name\": ' + fn['name'] | tojson + ', \"arguments\": ' + fn['arguments'] + '}</tool_call>' }}"
    "{% else %}{{ '<tool_call>' + {'name': fn['name'], 'arguments': fn['arguments']} | tojson + '</tool_call>' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "{{ '<|im_end|>\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# How transformers' `parse_response` (and so TRL) reads a reply back into a message: the text before
# <|im_end|> is its content, each <tool_call>{json}</tool_call> one of its tool_calls.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BUILD_VERSION = 2  # bump when the build recipe changes, so caches are rebuilt (2: the tool-calling template)


@dataclass(frozen=True)
class TinyConfig:
    """Shape of a tiny model."""

    arch: str = "qwen2"
    """``qwen2`` or ``llama``."""
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 256
    vocab_size: int = 2048
    """Target BPE vocabulary size (special tokens included)."""
    max_position_embeddings: int = 8192
    seed: int = 0
    """Seed of the random weights."""
    pretokenizer: str = "bytelevel"
    """``bytelevel``: GPT-2's rule, a word's leading space is part of its token, so a word after a
    space and the same word after ``>`` or ``"`` are different tokens. ``words``: spaces are tokens
    of their own, so a word is the same tokens wherever it stands, and copying a name from the
    question into a query (or a value from a passage into the answer) is copying tokens as they are."""


SIZES = {
    "tiny": TinyConfig(),
    "small": TinyConfig(hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=512,
                        vocab_size=4096),
    # The default of the RL trainers: wide heads (2 x 64) and the `words` tokenizer, so copying an
    # entity name from the question into the query and a value from the passage into the answer
    # is learnt within a CPU cold start.
    "wide": TinyConfig(hidden_size=128, num_layers=2, num_heads=2, num_kv_heads=2, intermediate_size=512,
                       vocab_size=2048, pretokenizer="words"),
}

# Text every tiny tokenizer sees, so common symbols of agent output get merges even without envs.
_BASE_TEXT = [
    '<think>I should search for it.</think><tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>',
    '<tool_call>{"name": "open", "arguments": {"doc_id": "d1"}}</tool_call>',
    '<tool_call>{"name": "calculate", "arguments": {"expression": "2 + 3 * 4"}}</tool_call>',
    "<answer>yes</answer> <answer>no</answer> <action>go to table 1</action> <judge>good</judge> <judge>bad</judge>",
    "Invalid output: no action found. 0123456789 . , ; : ! ? ' \" ( ) [ ] { } - + * / = _ # @ & % $",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
]


def default_cache_dir() -> Path:
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    return Path(root) / "models"


VIEW_KEYS = ("observation", "history", "action_format", "mark_played")
"""The env options that change what a policy reads in an embodied env's observations."""


def view_kwargs(env_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """The observation options of ``env_kwargs`` when any is on (``observation="history+admissible"``,
    ``action_format="choice"``, ``mark_played=True``), else ``{}``.

    A tiny model's tokenizer is trained on episodes played with these, so the words and numbers
    its prompts are made of (``Admissible``, ``(done)``, ``12.``) are tokens of their own. Other
    keywords (ToolQA's preset included) leave the corpus as it always was.

    >>> view_kwargs({"observation": "history+admissible", "history": 1, "max_turns": 10})
    {'observation': 'history+admissible', 'history': 1}
    >>> view_kwargs({"action_format": "tags", "top_k": 1})
    {}
    """
    kw = dict(env_kwargs or {})
    on = kw.get("observation", "raw") != "raw" or kw.get("action_format") == "choice" or kw.get("mark_played")
    return {k: kw[k] for k in VIEW_KEYS if k in kw} if on else {}


def env_corpus(env_ids: Sequence[str], episodes_per_env: int = 64, seed: int = 0,
               views: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Text of expert episodes: system prompts, observations and expert actions.

    ``views``: per env id, observation options (:func:`view_kwargs`) the episodes are played with.
    An env that cannot be made here (engine not installed) is skipped. The text is the tiny model's
    cache key, so it is played once per process (an embodied env's expert takes seconds).
    """
    views = views or {}
    frozen = tuple(tuple(sorted(dict(views.get(env_id) or {}).items())) for env_id in env_ids)
    return list(_env_corpus(tuple(env_ids), episodes_per_env, seed, frozen))


@functools.lru_cache(maxsize=8)
def _env_corpus(env_ids: tuple[str, ...], episodes_per_env: int, seed: int, views: tuple) -> tuple[str, ...]:
    import gymnasium as gym

    import agentgym  # noqa: F401  registers the envs

    texts: list[str] = []
    for env_id, view in zip(env_ids, views):
        try:
            env = gym.make(env_id, expert=True, **dict(view))
        except Exception:  # a missing optional engine: build from the other envs' text
            continue
        try:
            for episode in range(episodes_per_env):
                obs, info = env.reset(seed=seed + episode)
                texts += [info["system_prompt"], obs]
                done = False
                while not done:
                    action = info.get("expert_action") or ""
                    obs, _, terminated, truncated, info = env.step(action)
                    texts += [action, obs]
                    done = terminated or truncated
        finally:
            env.close()
    return tuple(texts)


def train_tokenizer(texts: Iterable[str], vocab_size: int, pretokenizer: str = "bytelevel"):
    """A byte-level BPE tokenizer with ChatML special tokens, as a transformers tokenizer, with the
    tool-calling chat template and the response template that parses replies back.

    ``pretokenizer``: ``bytelevel`` (GPT-2's split: a word keeps its leading space) or ``words``
    (runs of spaces, letters, digits and other symbols are split apart, so spaces are tokens of
    their own and a word's tokens do not depend on what precedes it).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    if pretokenizer == "bytelevel":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    elif pretokenizer == "words":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"\s+|\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        raise ValueError(f"pretokenizer must be 'bytelevel' or 'words', got {pretokenizer!r}")
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                 additional_special_tokens=["<|im_start|>"])
    hf.chat_template = CHAT_TEMPLATE
    hf.response_template = RESPONSE_TEMPLATE
    return hf


def _model_config(cfg: TinyConfig, tokenizer):
    from transformers import LlamaConfig, Qwen2Config

    common = dict(vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_layers,
                  num_attention_heads=cfg.num_heads, num_key_value_heads=cfg.num_kv_heads,
                  intermediate_size=cfg.intermediate_size, max_position_embeddings=cfg.max_position_embeddings,
                  tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                  pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    if cfg.arch == "qwen2":
        return Qwen2Config(**common)
    if cfg.arch == "llama":
        return LlamaConfig(**common)
    raise ValueError(f"arch must be 'qwen2' or 'llama', got {cfg.arch!r}")


def _key_fields(cfg: TinyConfig) -> dict:
    """The config as the cache key sees it: a field added after a model was cached counts only when
    it differs from its default, so models built before it keep their cache entries."""
    fields = asdict(cfg)
    if fields["pretokenizer"] == "bytelevel":
        del fields["pretokenizer"]
    return fields


def build_tiny_model(
    env_ids: Sequence[str] = ("ToolQA-v0",),
    size: str | TinyConfig = "tiny",
    cache_dir: str | os.PathLike | None = None,
    episodes_per_env: int = 64,
    force: bool = False,
    views: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """Build (or find in the cache) a tiny model and return the directory it is saved in.

    ``views``: per env id, the observation options its tokenizer corpus is played with
    (:func:`view_kwargs`). The directory loads with ``AutoModelForCausalLM.from_pretrained`` and
    ``AutoTokenizer.from_pretrained``.
    """
    cfg = SIZES[size] if isinstance(size, str) else size
    if isinstance(size, str) and size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)} or a TinyConfig, got {size!r}")
    texts = _BASE_TEXT + env_corpus(env_ids, episodes_per_env, views=views)
    key = hashlib.sha256(json.dumps([BUILD_VERSION, _key_fields(cfg), texts]).encode("utf-8")).hexdigest()[:12]
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    out = root / f"tiny-{cfg.arch}-h{cfg.hidden_size}-l{cfg.num_layers}-{key}"
    if (out / "config.json").exists() and not force:
        return out

    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    tokenizer = train_tokenizer(texts, cfg.vocab_size, cfg.pretokenizer)
    config = _model_config(cfg, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, do_sample=True)
    root.mkdir(parents=True, exist_ok=True)
    # Build beside the target and move it in one rename, so concurrent builders never see half a model.
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=root))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        record = {"config": asdict(cfg), "env_ids": list(env_ids), "num_texts": len(texts)}
        if views:
            record["views"] = {k: dict(v) for k, v in views.items()}
        (tmp / "agentgym_tiny.json").write_text(json.dumps(record, indent=1))
        if force and out.exists():
            shutil.rmtree(out)
        try:
            os.replace(tmp, out)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def resolve_model_path(model: str, env_ids: Sequence[str] = ("ToolQA-v0",),
                       env_kwargs: Mapping[str, Any] | None = None) -> str:
    """``tiny``/``tiny-small`` -> a built tiny model's directory; anything else is returned unchanged.

    ``env_kwargs``: the run's env keywords (one env id); their observation options, if any is on,
    shape the tokenizer's corpus (:func:`view_kwargs`)."""
    view = view_kwargs(env_kwargs)
    views = {env_ids[0]: view} if view and len(env_ids) == 1 else None
    if model == "tiny":
        return str(build_tiny_model(env_ids, "tiny", views=views))
    if model.startswith("tiny-") and model[5:] in SIZES:
        return str(build_tiny_model(env_ids, model[5:], views=views))
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentgym tiny-model", description="Build a tiny model offline.")
    parser.add_argument("--env-id", action="append", default=None,
                        help="env whose text trains the tokenizer (repeatable; default ToolQA-v0)")
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES))
    parser.add_argument("--arch", default=None, choices=["qwen2", "llama"])
    parser.add_argument("--cache-dir", default=None, help="where to cache (default $AGENTGYM_CACHE/models)")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    args = parser.parse_args(argv)
    import agentgym  # noqa: F401  registers the envs
    from agentgym.envs.env_ids import require_registered
    from agentgym.output_paths import OutputPathError, check_output_dir

    for env_id in args.env_id or []:  # an env that cannot be made is skipped, so a typo would build without it
        try:
            require_registered(env_id)
        except ValueError as e:
            parser.exit(2, f"agentgym tiny-model: error: --env-id: {e}\n")
    try:
        check_output_dir(args.cache_dir or default_cache_dir(), "--cache-dir")
    except OutputPathError as e:
        parser.exit(2, f"agentgym tiny-model: error: {e}\n")
    cfg = SIZES[args.size]
    if args.arch:
        cfg = TinyConfig(**{**asdict(cfg), "arch": args.arch})
    path = build_tiny_model(tuple(args.env_id or ["ToolQA-v0"]), cfg, args.cache_dir, force=args.force)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
