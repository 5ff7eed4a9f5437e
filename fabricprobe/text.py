"""Text from a file or the environment, as it may reach a terminal: data, never control."""

from __future__ import annotations


def as_text(text: str) -> str:
    """Text as it may reach a terminal: every control character that is not a line's own (an escape
    sequence in a path or a file's value would set the terminal's title or clear it) written as Python
    writes it in a string, \\x1b."""
    return "".join(c if c in "\n\t" or not (ord(c) < 32 or 127 <= ord(c) < 160) else repr(c)[1:-1] for c in text)
