"""`fabricprobe` and `python -m fabricprobe`: subcommands and the error policy.

Bad input: one line on rank 0, exit status 2, nothing written. Interrupted (SIGINT, SIGTERM, SIGHUP):
one line, exit 128 + the signal's number (130, 143, 129; fabricprobe.interrupts).
Anything else is a bug: it is reported with its traceback and, under MPI, aborts the job
so no rank is left waiting.
"""

from __future__ import annotations

import errno
import os
import sys
import time
import traceback

from fabricprobe import interrupts
from fabricprobe.cli.parser import HelpFormatter, Parser, attach_values
from fabricprobe.console import error_line, is_root, take_turns_under_a_launcher
from fabricprobe.engine import faults
from fabricprobe.errors import (
    EXIT_DAMAGED,
    EXIT_INTERNAL,
    EXIT_LAUNCHER,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WRONG,
    DamagedError,
    LauncherError,
    StorageError,
    UsageError,
)
from fabricprobe.mpienv.launcher import launched_by_mpiexec
from fabricprobe.version import __version__

NON_ROOT_EXIT_DELAY_S = 1.5
# Between a rank's last line and its MPI_Abort: the launcher forwards the ranks' output from pipes and
# stops reading them once it kills the job, so a line still in the pipe is lost. Seen in CI under
# MPICH: the full-disk test's sweep exited 1 with its "No space left on device" line gone (1 run of
# many; it passed 6 of 6 alone).
ABORT_DELAY_S = 0.5


# Each subcommand's module, in --help's order. A command line naming a subcommand builds that one's
# parser only: importing every subcommand's module made every rank of every launch load the tuning,
# report and store packages (h5py) for the others' constants (issue 68: start-up at scale). --help,
# --version, a word no subcommand has, or none: every parser.
SUBCOMMANDS = {
    "sweep": "sweep_cmd",
    "report": "report_cmd",
    "compare": "compare_cmd",
    "plot": "plot_cmd",
    "model": "model_cmd",
    "tune-sweep": "tune_cmd",
    "tune-sweep-job": "tune_cmd",
    "tune": "tune_cmd",
    "tune-eval": "tune_eval_cmd",
    "train": "train_cmd",
    "doctor": "doctor_cmd",
    "info": "info_cmd",
    "lab": "lab_cmd",
    "repair": "repair_cmd",
}


def subcommand_modules(argv: list[str] | None = None) -> list[str]:
    """The modules whose parsers a command line needs: its subcommand's, or every one."""
    named = SUBCOMMANDS.get(argv[0]) if argv else None  # the subcommand is the first word, or there is none
    return [named] if named else list(dict.fromkeys(SUBCOMMANDS.values()))


def build_parser(argv: list[str] | None = None) -> Parser:
    """fabricprobe's parser: every subcommand's, or only the one `argv` names."""
    import importlib

    parser = Parser(
        prog="fabricprobe",
        formatter_class=HelpFormatter,
        description="Measure an HPC fabric and tune MPI collectives.",
        epilog="Run `fabricprobe SUBCOMMAND --help` for a subcommand's options. "
        "Under MPI: mpiexec -n N fabricprobe sweep ...",
    )
    parser.add_argument("--version", action="version", version=f"fabricprobe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=Parser)
    sub.required = True
    for name in subcommand_modules(argv):
        importlib.import_module(f"fabricprobe.cli.{name}").add_parser(sub)
    return parser


def _abort_mpi(code: int) -> None:
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized() and mpi.COMM_WORLD.size > 1:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        time.sleep(ABORT_DELAY_S)  # the launcher reads what was said before it kills the job
        mpi.COMM_WORLD.Abort(code)


def _lenient_streams() -> None:
    """Characters a stream cannot encode (an ASCII locale, LC_ALL=C: rich's box drawing raised
    UnicodeEncodeError) come out replaced, never as a traceback."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError, OSError):
            pass


def _stdout_gone() -> None:
    """stdout was closed (`| head -0`): what is left to print goes nowhere, and the interpreter's last
    flush does not print a traceback of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _damage_said(code: int) -> int:
    """A command that succeeded on a damaged file exits EXIT_DAMAGED: its warning named the loss, and
    a script must not take the output for whole (store.damage)."""
    said = sys.modules.get("fabricprobe.store.damage")  # loaded only by a command that read a file
    return EXIT_DAMAGED if code == EXIT_OK and said is not None and said.seen() else code


def _nothing_said_yet() -> None:
    said = sys.modules.get("fabricprobe.store.damage")
    if said is not None:
        said.forget()


def _let_root_speak_first() -> None:
    """Every rank rejects the same input, but only rank 0 says so; the launcher kills the job when the
    first rank exits, so give rank 0 time to print its line first (seen in CI: rank 1 won the race and
    the job ended with no error message at all)."""
    if not is_root() and launched_by_mpiexec():
        time.sleep(NON_ROOT_EXIT_DELAY_S)


def main(argv: list[str] | None = None) -> int:
    _lenient_streams()
    take_turns_under_a_launcher()
    _nothing_said_yet()
    try:
        words = attach_values(sys.argv[1:] if argv is None else list(argv))
        parser = build_parser(words)  # imports the subcommand's modules: a Ctrl-C here is an interruption too
        args = parser.parse_args(words)
        faults.check_environment()
        return _damage_said(int(args.handler(args) or 0))
    except DamagedError as exc:
        error_line(str(exc))
        _let_root_speak_first()
        return EXIT_DAMAGED
    except UsageError as exc:
        error_line(str(exc))
        _let_root_speak_first()
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP in a driver (fabricprobe.interrupts)
        error_line(interrupts.said(exc))
        return interrupts.status(interrupts.signum_of(exc))
    except LauncherError as exc:
        error_line(str(exc))
        return EXIT_LAUNCHER
    except StorageError as exc:
        error_line(str(exc))
        _abort_mpi(EXIT_WRONG)  # the other ranks would wait for rank 0 in the next point
        return EXIT_WRONG
    except BrokenPipeError:
        _stdout_gone()
        return 0
    except Exception as exc:  # a bug: say so loudly, never leave other ranks hanging
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EIO, errno.EPIPE, errno.EDQUOT):
            error_line(f"cannot write the output: {exc.strerror}")  # a full device under the terminal's output
            _stdout_gone()
            return EXIT_WRONG
        print(f"fabricprobe: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc()
        sys.stderr.flush()
        _abort_mpi(EXIT_INTERNAL)
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
