"""How each reader of a site-facing file reads a value, and the one writer per format that quotes for it.

A file `tune` writes for a site is read by another program: a POSIX shell (`env.sh`, the printed load
lines), Lua through Lmod (`modulefile.lua`), Open MPI's MCA parameter file parser
(`openmpi-mca-params.conf`), Slurm's slurmstepd reading a TaskProlog's output
(`slurm-task-prolog.sh`), a JSON parser (`tuning.json`). Each value is written so that its reader gets
exactly that value, or refused (`Unloadable`, one line) where the reader has no way to carry it. The
rules, each taken from the reader's own source and checked through the reader in the tests
(tests/test_site_files.py, docs/site.md "Installing the tuning files"):

- POSIX shell: single quotes carry every byte but NUL; a `'` is written `'\\''`.
- Lua string literal: `\\`, `"` and every control character escaped (`\\ddd`, decimal, which Lua 5.1
  to 5.4 read alike), other bytes as they are. Lmod then writes `export NAME=...` for the user's shell,
  and a newline in a value becomes a new shell command there (seen with Debian's Lmod 8.6): refused.
- Open MPI's MCA parameter file (opal/util/keyval/keyval_lex.l): `name = value` where the value is the
  rest of the line, leading and trailing blanks dropped, with no quoting and no escape: a newline
  cannot be carried, nor a blank at either end; other control characters are refused too (a file a
  person must read and edit).
- Slurm's TaskProlog: slurmstepd reads each `export NAME=value` line of the script's output, the value
  raw to the end of the line (src/slurmd/slurmstepd/task.c): a newline cannot be carried; Slurm before
  21.08 read the output 4,094 bytes a line, so a longer line is refused; the script prints each line
  with `printf '%s\\n'` and a single-quoted word (`echo` in dash reads backslashes).
- Open MPI's string variables, in any of these files or the environment, turn `~/` at the start and
  every `:~/` into the user's home directory (mca_base_var.c, var_set_string): such a value cannot be
  carried to Open MPI.
- JSON: every Unicode string is carried (escaped by the writer); a path whose bytes are not UTF-8 is
  not a Unicode string: refused.
"""

from __future__ import annotations

import shlex

from fabricprobe.errors import UsageError
from fabricprobe.text import as_text

MCA_PREFIX = "OMPI_MCA_"
PROLOG_LINE_MAX = 4094  # bytes of one TaskProlog output line, newline included, Slurm before 21.08 (fgets)
MCA_BLANKS = " \t\f\v"  # what keyval_lex.l drops around a value


class Unloadable(UsageError):
    """A value a site file's reader cannot carry: one line, exit 2, nothing written."""


def control_characters(value: str) -> list[str]:
    """The control characters in value, as they would be escaped in Python ("\\n", "\\x1b")."""
    return sorted({repr(c)[1:-1] for c in value if ord(c) < 32 or ord(c) == 127})


def _utf8(value: str) -> str | None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "its bytes are not UTF-8 (JSON and the files' text cannot carry them)"
    return None


def _no_controls(value: str, reader: str) -> str | None:
    found = control_characters(value)
    return f"it holds {', '.join(found)}, which {reader} cannot carry" if found else None


def _open_mpi(name: str, value: str) -> str | None:
    if not name.startswith(MCA_PREFIX):
        return None
    if value.startswith("~/") or ":~/" in value:
        return "Open MPI reads '~/' at its start or after ':' as the home directory (mca_base_var.c)"
    return None


def value_refusal(name: str, value: str) -> str | None:
    """Why some site file cannot carry NAME=value exactly (None: every format can). Every format is
    asked, since `tune` writes them all: env.sh, the module, the TaskProlog, the MCA file, tuning.json."""
    for why in (
        _utf8(value),
        _no_controls(value, "a TaskProlog line, an MCA parameter file or Lmod's shell output"),
        _open_mpi(name, value),
        _mca_blanks(name, value),
        _prolog_length(name, value),
    ):
        if why:
            return why
    return None


def _mca_blanks(name: str, value: str) -> str | None:
    if name.startswith(MCA_PREFIX) and value != value.strip(MCA_BLANKS):
        return "Open MPI's parameter file drops blanks at either end of a value"
    return None


def _prolog_length(name: str, value: str) -> str | None:
    line = prolog_export(name, value)
    if len(line.encode("utf-8", "surrogateescape")) > PROLOG_LINE_MAX:
        return f"a TaskProlog line of more than {PROLOG_LINE_MAX} bytes is cut by Slurm before 21.08"
    return None


def refuse(env: dict[str, str], what: str = "") -> None:
    """Raise Unloadable naming the first value some reader cannot carry."""
    for name, value in env.items():
        why = value_refusal(name, value)
        if why:
            subject = what or f"{name}={shown(value)}"
            raise Unloadable(f"{subject}: cannot be written for a site: {why}; give another path")


def shown(value: str, limit: int = 120) -> str:
    """A value as it may be printed in a one-line message: control characters escaped (console.as_text;
    a newline too), long ones cut."""
    text = as_text(value).replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- one writer per format ----


def shell_word(value: str) -> str:
    """A POSIX shell word that is exactly value (single quotes; NUL excepted, which no path holds)."""
    return shlex.quote(value)


def shell_export(name: str, value: str) -> str:
    return f"export {name}={shell_word(value)}"


def lua_string(value: str) -> str:
    """A Lua string literal that is exactly value: `\\`, `"` and control characters escaped (decimal
    `\\ddd`, three digits so a digit after it is not read into it), every other character as it is."""
    out = []
    for c in value:
        if c in '\\"':
            out.append("\\" + c)
        elif ord(c) < 32 or ord(c) == 127:
            out.append(f"\\{ord(c):03d}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def lua_setenv(name: str, value: str) -> str:
    return f"setenv({lua_string(name)}, {lua_string(value)})"


def mca_line(name: str, value: str) -> str:
    """An MCA parameter file line: the name without OMPI_MCA_, the value as it is (checked by refuse)."""
    return f"{name[len(MCA_PREFIX) :]} = {value}"


def prolog_export(name: str, value: str) -> str:
    """The line slurmstepd reads from a TaskProlog's output: `export NAME=value`, value raw."""
    return f"export {name}={value}"


def prolog_print(name: str, value: str) -> str:
    """The TaskProlog's shell line that prints prolog_export(name, value) exactly."""
    return f"printf '%s\\n' {shell_word(prolog_export(name, value))}"
