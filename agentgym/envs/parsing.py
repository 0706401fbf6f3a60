"""Turning a model's raw output into one action, or a precise reason why it is not one.

Nothing here raises on model output: every parser returns a :class:`ParsedAction` whose ``error``
says what was wrong, which the env shows the agent as its next observation (SPEC §7).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

THINK = re.compile(r"^\s*<think>(.*?)</think>", re.DOTALL)
_ANY_TAG = re.compile(r"</?([a-zA-Z_]+)>")


@dataclass
class ParsedAction:
    """One parsed model output."""

    kind: str | None
    """``tool_call``, ``answer`` or ``action``; None when the output did not parse."""
    text: str = ""
    """The answer text, the embodied command, or the raw JSON of a tool call."""
    name: str | None = None
    """Tool name, for tool calls."""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    think: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def sanitize(action: Any, max_chars: int = 100_000) -> str:
    """Coerce anything an agent sends into a str the env can safely look at.

    Bytes are decoded leniently, lone surrogates replaced, NULs dropped, and the text cut to
    ``max_chars`` (the cut is reported by the parser as a format error, not silently accepted).
    """
    if isinstance(action, bytes):
        action = action.decode("utf-8", "replace")
    elif not isinstance(action, str):
        action = str(action)
    if len(action) > max_chars:
        action = action[:max_chars]
    action = action.encode("utf-8", "replace").decode("utf-8", "replace")
    return action.replace("\x00", "")


def preview(text: str, limit: int = 80) -> str:
    """A short, single-line excerpt of text for error messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


MAX_ECHO_CHARS = 300
"""The most of an agent's own text that any observation quotes back to it."""


def echo(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` as an observation may quote it: at most ``limit`` characters, the cut said.

    >>> echo("x" * 1000, 10)
    'xxxxxxxxxx... (990 more characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


def split_think(raw: str) -> tuple[str | None, str]:
    """Split an optional leading ``<think>...</think>`` block from the rest."""
    m = THINK.match(raw)
    if m is None:
        return None, raw
    return m.group(1), raw[m.end():]


def extract_single_block(body: str, tags: Sequence[str]) -> tuple[str | None, str | None, str | None]:
    """Find exactly one ``<tag>...</tag>`` block (tag in ``tags``) making up all of ``body``.

    Returns ``(tag, inner_text, error)``; on failure tag and inner are None and error says why.
    """
    stripped = body.strip()
    if not stripped:
        return None, None, f"empty output: expected one of {', '.join(f'<{t}>' for t in tags)}"
    found = [(t, m) for t in tags for m in re.finditer(rf"<{t}>(.*?)</{t}>", stripped, re.DOTALL)]
    if not found:
        opened = [t for t in tags if f"<{t}>" in stripped]
        if opened:
            return None, None, f"<{opened[0]}> is not closed with </{opened[0]}>"
        return None, None, (f"no action found: expected one of {', '.join(f'<{t}>...</{t}>' for t in tags)}, "
                            f"got {preview(stripped)!r}")
    if len(found) > 1:
        return None, None, f"found {len(found)} action blocks; send exactly one per turn"
    tag, m = found[0]
    outside = (stripped[: m.start()] + stripped[m.end():]).strip()
    if outside:
        return None, None, f"text outside the <{tag}> block: {preview(outside)!r}"
    inner = m.group(1)
    nested = [t for t in _ANY_TAG.findall(inner) if t in tags or t == "think"]
    if nested:
        return None, None, f"nested <{nested[0]}> tag inside <{tag}>"
    return tag, inner, None


def validate_arguments(arguments: Any, schema: Mapping[str, Any]) -> str | None:
    """Check tool-call arguments against a JSON-schema ``object`` of scalar properties.

    Covers the subset our tool schemas use (types, required, enum, minimum/maximum, no extras).
    Returns None when valid, else a message.
    """
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in arguments:
            return f"missing required argument {name!r}"
    for name, value in arguments.items():
        if name not in props:
            return f"unknown argument {preview(str(name), 40)!r}; expected {sorted(props)}"
        spec = props[name]
        want = spec.get("type")
        if want == "string" and not isinstance(value, str):
            return f"argument {name!r} must be a string, got {type(value).__name__}"
        if want == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
            return f"argument {name!r} must be an integer, got {type(value).__name__}"
        if want == "number" and (not isinstance(value, (int, float)) or isinstance(value, bool)):
            return f"argument {name!r} must be a number, got {type(value).__name__}"
        if "enum" in spec and value not in spec["enum"]:
            return f"argument {name!r} must be one of {spec['enum']}"
        if "minimum" in spec and value < spec["minimum"]:
            return f"argument {name!r} must be >= {spec['minimum']}"
        if "maximum" in spec and value > spec["maximum"]:
            return f"argument {name!r} must be <= {spec['maximum']}"
        if want == "string" and not value.strip():
            return f"argument {name!r} must not be empty"
    return None


def parse_tool_action(raw: str, tools: Sequence[Mapping[str, Any]], action_format: str = "json") -> ParsedAction:
    """Parse a ToolQA turn.

    ``action_format="json"``: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` or
    ``<answer>...</answer>``. ``action_format="tags"`` (Search-R1 style): ``<search>query</search>``
    or ``<answer>...</answer>``. Either may start with one ``<think>...</think>``.
    """
    think, body = split_think(raw)
    block_tags = ("tool_call", "answer") if action_format == "json" else ("search", "answer")
    tag, inner, error = extract_single_block(body, block_tags)
    if error:
        return ParsedAction(None, error=error, think=think)
    if tag == "answer":
        if not inner.strip():
            return ParsedAction(None, error="empty <answer>", think=think)
        return ParsedAction("answer", text=inner.strip(), think=think)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    if tag == "search":
        name, arguments = "search", {"query": inner.strip()}
    else:
        try:
            call = json.loads(inner)
        except (ValueError, RecursionError) as e:
            return ParsedAction(None, error=f"<tool_call> is not valid JSON: {preview(str(e))}", think=think)
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return ParsedAction(None, error='<tool_call> must be {"name": <tool>, "arguments": {...}}', think=think)
        name, arguments = call["name"], call.get("arguments", {})
    if name not in schemas:
        return ParsedAction(None, error=f"unknown tool {preview(name, 40)!r}; available: {sorted(schemas)}",
                            think=think)
    problem = validate_arguments(arguments, schemas[name])
    if problem:
        return ParsedAction(None, error=f"bad call to {name}: {problem}", think=think)
    return ParsedAction("tool_call", text=inner.strip(), name=name, arguments=arguments, think=think)


def parse_embodied_action(raw: str) -> ParsedAction:
    """Parse an embodied-env turn: one ``<action>...</action>``, or a bare single line."""
    think, body = split_think(raw)
    if "<action>" in body or "</action>" in body:
        tag, inner, error = extract_single_block(body, ("action",))
        if error:
            return ParsedAction(None, error=error, think=think)
        command = " ".join(inner.split())
    else:
        stripped = body.strip()
        if not stripped:
            return ParsedAction(None, error="empty output: expected <action>...</action> or one line", think=think)
        if "\n" in stripped:
            return ParsedAction(None, error="several lines: put exactly one command in <action>...</action>",
                                think=think)
        if "<" in stripped and ">" in stripped:
            return ParsedAction(None, error=f"unexpected tag in {preview(stripped)!r}; use <action>...</action>",
                                think=think)
        command = " ".join(stripped.split())
    if not command:
        return ParsedAction(None, error="empty <action>", think=think)
    if len(command) > 300:
        return ParsedAction(None, error=f"command is {len(command)} characters long; commands are short phrases",
                            think=think)
    return ParsedAction("action", text=command, think=think)


_CHOICE_NUMBER = re.compile(r"^(?:\((\d+)\)|\[(\d+)\]|(\d+)\.?)$")


def choice_number(command: str) -> int | None:
    """The number a reply names in ``action_format="choice"``: ``3``, ``3.``, ``(3)`` or ``[3]``;
    None for anything else (a command in words).

    >>> [choice_number(c) for c in ("3", "(12)", "[2]", "4.", "go to 3", "-1", "3 4")]
    [3, 12, 2, 4, None, None, None]
    """
    m = _CHOICE_NUMBER.match(command.strip())
    if m is None:
        return None
    digits = next(g for g in m.groups() if g is not None)
    return int(digits) if len(digits) <= 9 else 10**9


def lists_numbers(admissible: Sequence[str]) -> bool:
    """Whether the admissible actions are numbers themselves (the choices of a ScienceWorld
    "Ambiguous request"): such a list is shown and answered with the engine's own numbers."""
    return bool(admissible) and all(a.strip().isdigit() for a in admissible)


def choice_replies(admissible: Sequence[str] | None) -> list[str] | None:
    """The replies that name an admissible action in ``action_format="choice"``, written as the
    expert writes them (:func:`agentgym.experts.expert_reply`): the numbers ``"1"`` to ``"N"``, or
    the engine's own numbers when the list is numbers (:func:`lists_numbers`); None when nothing is
    listed (any reply may then be a command in words).

    >>> choice_replies(["look", "go to desk 1"]), choice_replies(["0", "1"]), choice_replies([])
    (['1', '2'], ['0', '1'], None)
    """
    if not admissible:
        return None
    if lists_numbers(admissible):
        return list(admissible)
    return [str(k) for k in range(1, len(admissible) + 1)]


def resolve_choice(command: str, admissible: Sequence[str] | None) -> tuple[str, str | None]:
    """A parsed command in choice format, as the env should run it: ``(command, None)``, or
    ``(command, reason)`` when it names no admissible action.

    A command that is itself admissible is that command (the number choices of a ScienceWorld
    "Ambiguous request" stay the engine's numbers, see :func:`lists_numbers`); a number ``k`` is the ``k``-th admissible
    action, counted from 1; anything else is a command in words, run as in text format.

    >>> resolve_choice("2", ["look", "go to desk 1"])
    ('go to desk 1', None)
    >>> resolve_choice("look", ["look", "go to desk 1"])
    ('look', None)
    >>> resolve_choice("7", ["look", "go to desk 1"])[1]
    '7 names no action; the admissible actions are numbered 1 to 2'
    >>> resolve_choice("1", ["0", "1"]), resolve_choice("5", ["0", "1"])
    (('1', None), ('5', None))
    """
    k = choice_number(command)
    if k is None or (admissible is not None and (command.strip() in admissible or lists_numbers(admissible))):
        return command, None
    if not admissible:
        return command, f"{k} names no action, since none are listed here; reply with the command in words"
    if not 1 <= k <= len(admissible):
        return command, f"{k} names no action; the admissible actions are numbered 1 to {len(admissible)}"
    return admissible[k - 1], None
