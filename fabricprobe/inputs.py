"""What a user types, checked one way for every subcommand and for configuration files: whole numbers
of ASCII digits, finite real numbers, each in its range, one clear line otherwise (UsageError).

Python's own parsing is too lenient for a command line: int() and str.isdigit() take "²" and "٣"
(Unicode digits; "²" then crashed ten options), float() takes "nan", "inf" and "1e999", and "10**12"
iterations asked numpy for terabytes. Each option names its range here once, as argparse `type=`
(whole_type, real_type), so a rule fixed once holds everywhere."""

from __future__ import annotations

import math
import os
import re
import stat
from typing import Callable

from fabricprobe.errors import UsageError

_WHOLE = re.compile(r"[+-]?[0-9]+")  # ASCII only: re's \d would take other scripts' digits
_REAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
LARGEST = 10**12  # no count, time or size anyone means is above this
MAX_ITERATIONS = 10**7  # timed or warm-up calls of one point (10**12 asked numpy for terabytes)
MAX_RANKS = 1 << 20  # ranks of a job (the cost model predicts up to 65,536)
MAX_SECONDS = 7 * 86400.0  # a time limit longer than a week is a typing error


def is_digits(text: str) -> bool:
    """ASCII decimal digits only, at least one."""
    return bool(text) and text.isascii() and text.isdigit()


def _range(value: float, option: str, lo: float | None, hi: float | None, lo_open: bool, shown: str) -> None:
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise UsageError(f"invalid {option} {shown}: it must be {'more than' if lo_open else 'at least'} {lo:g}")
    if hi is not None and value > hi:
        raise UsageError(f"invalid {option} {shown}: it must be at most {hi:g}")


def whole(text: str, option: str, lo: int | None = None, hi: int | None = LARGEST) -> int:
    """A whole number in [lo, hi], ASCII digits (with a sign), or UsageError naming the option."""
    raw = str(text).strip()
    if not _WHOLE.fullmatch(raw):
        raise UsageError(f"invalid {option} {text!r}: expected a whole number (digits 0-9)")
    value = int(raw)
    _range(value, option, lo, hi, False, repr(text))
    return value


def real(text: str, option: str, lo: float | None = None, hi: float | None = LARGEST, lo_open: bool = False) -> float:
    """A finite real number in its range (lo_open: more than lo), or UsageError naming the option."""
    raw = str(text).strip()
    if raw.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise UsageError(f"invalid {option} {text!r}: it must be finite")
    if not _REAL.fullmatch(raw):
        raise UsageError(f"invalid {option} {text!r}: expected a number such as 0.5 or 2e-3")
    value = float(raw)
    if not math.isfinite(value):
        raise UsageError(f"invalid {option} {text!r}: it must be finite")
    _range(value, option, lo, hi, lo_open, repr(text))
    return value


def launcher_args(text: str, option: str = "--mpiexec-args") -> list[str]:
    """Extra launcher arguments as the shell would split them (the one parser of --mpiexec-args), or
    UsageError: an unbalanced quote was shlex's "No closing quotation" traceback."""
    if not str(text).strip():  # the default: argparse checks it on every rank
        return []
    import shlex  # a launcher's arguments: not every rank's

    try:
        return shlex.split(str(text))
    except ValueError as e:
        raise UsageError(f"invalid {option} {text!r}: {str(e).lower()}") from None


def launcher_args_type(option: str = "--mpiexec-args") -> Callable[[str], str]:
    """argparse type= for extra launcher arguments: checked when parsed, kept as typed."""

    def check(text: str) -> str:
        launcher_args(text, option)
        return text

    return check


def path_type(option: str = "-o") -> Callable[[str], str]:
    """argparse type= for a file or folder name: an empty one was taken for the default path."""

    def check(text: str) -> str:
        if not str(text).strip():
            raise UsageError(f"invalid {option} {text!r}: give a file name")
        return text

    return check


def whole_type(option: str, lo: int | None = None, hi: int | None = LARGEST) -> Callable[[str], int]:
    """argparse type= for a whole-number option."""
    return lambda text: whole(text, option, lo, hi)


def real_type(
    option: str, lo: float | None = None, hi: float | None = LARGEST, lo_open: bool = False
) -> Callable[[str], float]:
    """argparse type= for a real-number option."""
    return lambda text: real(text, option, lo, hi, lo_open)


def whole_list(text: str, option: str, lo: int = 1, hi: int | None = LARGEST) -> list[int]:
    """Comma-separated whole numbers (e.g. --comm-sizes 2,4,8), each in range; none empty."""
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise UsageError(f"invalid {option} {text!r}: expected whole numbers separated by commas")
    if not all(parts):
        raise UsageError(f"invalid {option} {text!r}: an item is empty")
    return [whole(p, option, lo, hi) for p in parts]


def checked(value: object, option: str, kind: type, lo: float | None = None, hi: float | None = LARGEST) -> None:
    """A value read from a configuration file: of its type (a bool is not a number, a number is not a
    bool, a string never either), finite, in range."""
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise UsageError(f"invalid {option} {value!r}: expected {kind.__name__}")
    if kind in (int, float):
        if not math.isfinite(value):
            raise UsageError(f"invalid {option} {value!r}: it must be finite")
        _range(value, option, lo, hi, False, repr(value))


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))


def regular_file(path: str, what: str) -> bool:
    """Whether `path` exists; UsageError, one line, when it is there but not a regular file. A reader
    given a named pipe waits for a writer forever (report and sweep --config hung), a directory or a
    device is nothing fabricprobe wrote; `what` names the file in the line ("results file")."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror}") from None
    if stat.S_ISREG(mode):
        return True
    kind = next((name for test, name in _KINDS if test(mode)), "a device")
    raise UsageError(f"{what} {path} is {kind}, not a regular file")
