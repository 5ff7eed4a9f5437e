"""argparse, made MPI-friendly: errors raise UsageError (one line, exit 2) and help or version
text is printed by rank 0 only, however many ranks parse the same command line."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import IO

from fabricprobe.console import is_root
from fabricprobe.errors import UsageError

# Options whose value is itself a command line, so it may begin with "-": argparse takes
# `--mpiexec-args --oversubscribe` for two options and refuses it; `--mpiexec-args=--oversubscribe` works.
COMMAND_LINE_OPTIONS = ("--mpiexec-args",)


def attach_values(argv: list[str]) -> list[str]:
    """argv with each COMMAND_LINE_OPTIONS option and its next word joined as OPTION=VALUE, so a value
    such as "--oversubscribe" or "-x FOO" is read as the value it is."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in COMMAND_LINE_OPTIONS and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


class RenamedOption(argparse.Action):
    """An option's old spelling, kept working: it stores its value where the new one does and says, in
    one warning line, what the option is now called. Hidden from --help."""

    def __init__(self, option_strings, dest, renamed_to: str, **kwargs):
        self.renamed_to = renamed_to
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from fabricprobe.console import warn_line

        warn_line(f"{option_string} is now {self.renamed_to} (the old spelling still works)")
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        if message and is_root():
            (file or sys.stdout).write(message)


def terminal_columns() -> int:
    """The terminal's width as shutil.get_terminal_size gives it: $COLUMNS, else the terminal standard
    output is, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """Fills descriptions to the terminal's width (argparse's own width: $COLUMNS or the terminal,
    80 when there is none), so no line is wrapped again by the terminal mid-word: paragraphs are
    separated by blank lines, and an indented line (an example command) is kept as written. Appends
    "(default: X)" only where X says something."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        # argparse's own width, found without its `import shutil` (and bz2 and lzma with it): every
        # rank of a job builds the parser, and at scale each module is file-system lookups at once
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        prose: list[str] = []

        def flush() -> None:
            if prose:
                filled = textwrap.fill(
                    " ".join(prose),
                    width,
                    initial_indent=indent,
                    subsequent_indent=indent,
                    break_long_words=False,
                    break_on_hyphens=False,
                )
                out.append(filled)
                prose.clear()

        for line in text.strip("\n").splitlines():
            if not line.strip():
                flush()
                out.append("")
            elif line.startswith(" "):
                flush()
                out.append(indent + line.rstrip())
            else:
                prose.append(line.strip())
        flush()
        return "\n".join(out)

    def _split_lines(self, text: str, width: int) -> list[str]:
        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is False
            or default == argparse.SUPPRESS
            or action.option_strings == []
            or isinstance(action, argparse._HelpAction)
        ):
            return text
        shown = default.replace(",", ", ") if isinstance(default, str) else default  # a list wraps at its commas
        return f"{text} (default: {shown})"
