"""What an agent's text may pass to an Inform interpreter (TextWorld games): one in-game command.

An Inform parser does more than play the game. It chains several commands in one line (a full
stop, a comma or the word "then" separates them: ``look. restart``), and it has meta verbs that
act on the game rather than in it: ``restart`` and ``undo`` rewind it, ``quit`` ends it,
``save``, ``restore`` and ``script`` read and write files in the working directory (so one env
could restore another's save), ``oops`` replays the previous command with a word swapped. An env
must keep its episode to exactly one story action per turn, so :func:`screen_command` lets through
only a single command that starts with no meta verb, and says why anything else was refused.

>>> screen_command("Take the key.")
('Take the key', None)
>>> screen_command("look then restart")
(None, 'That command is not available here.')
>>> screen_command("go north. go east")
(None, 'One command per turn: that was 2 commands.')
"""

from __future__ import annotations

import re

MAX_COMMAND_CHARS = 200
# The verbs Inform 6/7 parsers mark as meta, with their synonyms, plus "oops" (it re-runs the last
# command) and the undo the interpreter itself provides.
META_COMMANDS = frozenset({
    "quit", "q", "die", "restart", "restore", "save", "script", "transcript", "unscript", "noscript",
    "undo", "oops", "o", "verify", "version", "score", "full", "fullscore", "notify", "pronouns", "nouns",
    "verbose", "long", "brief", "normal", "superbrief", "short",
})
META_REPLY = "That command is not available here."
EMPTY_REPLY = "I beg your pardon?"
# Everything but printable ASCII, and the backslash too: frotz reads it as an escape, and a NUL
# byte or some escapes crash the interpreter.
_NOT_PRINTABLE = re.compile(r"[^\x20-\x5b\x5d-\x7e]")
# What Inform's parser reads as the end of one command and the start of the next.
_CHAIN = re.compile(r"[.,]|\bthen\b", re.IGNORECASE)
_TRAILING = re.compile(r"[\s.,;:!?]+$")


def screen_command(text: str) -> tuple[str | None, str | None]:
    """``(command, None)`` when ``text`` is one command the interpreter may run, else ``(None, reply)``.

    The command comes back with unsafe characters turned into spaces, white space squeezed, a
    final full stop (or other closing punctuation) dropped and its length capped. Every command of
    a chain is checked for meta verbs, so the reply names the worse problem.
    """
    command = " ".join(_NOT_PRINTABLE.sub(" ", text).split())[:MAX_COMMAND_CHARS]
    command = _TRAILING.sub("", command)
    segments = [s.split() for s in _CHAIN.split(command)]
    segments = [words for words in segments if words]
    if not segments:
        return None, EMPTY_REPLY
    if any(words[0].lower() in META_COMMANDS for words in segments):
        return None, META_REPLY
    if len(segments) > 1:
        return None, f"One command per turn: that was {len(segments)} commands."
    return " ".join(segments[0]), None
