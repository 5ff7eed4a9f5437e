"""Regenerate docs/cli.md from the argparse definitions:  python docs/gen_cli.py > docs/cli.md"""

from __future__ import annotations

import argparse
import contextlib
import io
import os

os.environ["COLUMNS"] = "110"  # argparse wraps help text to the terminal width

from fabricprobe.cli.main import build_parser  # noqa: E402

INTRO = """# Command-line reference

Generated from the program's own `--help` by `python docs/gen_cli.py > docs/cli.md`; a test
checks it is current. Every subcommand accepts `--help`. Under `mpiexec`, only rank 0 prints.

Exit status: 0 success; 1 a measured point failed validation or raised an MPI error, or results
could not be written (disk full: one line, the run marked `aborted`, every earlier point kept); 2 bad
input (one line on stderr, nothing written); 3 the watchdog aborted a hung point; 4 a file read was
damaged (what could be read is shown, and one warning line names what it lost: run `fabricprobe
repair`); 5 a launcher the command started (tune-sweep's jobs, `sweep --launches`) was killed or
crashed (one line naming it; the ranks it left are ended, every point measured before is kept); 70 an
internal error, a bug in fabricprobe (its traceback follows; 1 always means results); 128 + the
signal's number when interrupted: 130 Ctrl-C (SIGINT), 143 SIGTERM (what `scancel` and a job's time
limit send first), 129 SIGHUP, whether the signal reaches the process group or the command's own PID
alone. One line says which; the run being measured is marked `interrupted` and every rank exits at once,
even inside a long timed batch; a command that launched jobs (tune-sweep, tune --verify, sweep
--launches) asks each launcher to end its ranks (SIGTERM, SIGKILL 10 s later), ends what a killed one
left and removes its job files (docs/site.md, "Jobs ended by Slurm"). Open MPI's `mpiexec` itself
returns 1 after Ctrl-C whatever its ranks return, MPICH's returns 130. Under Open MPI's `mpiexec`, a
rank's non-zero exit makes the launcher print its own
banner ("prterun detected that one or more processes exited with non-zero status") after fabricprobe's
one line: the launcher's, not suppressible from a rank (`mpiexec --quiet` is not an option of 5.0).

Every number an option takes is checked one way (`fabricprobe/inputs.py`): ASCII digits, finite, in the
option's range (Unicode digits such as ², nan, inf and 1e999 are refused in one line), and a `--config`
file's values are type-checked against the same rules before anything runs. Every file a command
writes follows one rule (`fabricprobe/store/outputs.py`): never through a symbolic link, never over
anything but a regular file, never over a results file (an HDF5 file, or a name ending in .h5), written
whole through a temporary file beside it; refused in one line, exit 2, before any work. `tune -o DIR`,
whose files go into a site's MPI configuration, follows a stricter one (`fabricprobe/store/owned_folder.py`):
every path checked before the first byte, no link followed anywhere in DIR, no file replaced that `tune`
did not write, no folder every user may write to, modes exact whatever the umask, every value quoted
for its reader or refused (docs/site.md, "Installing the tuning files").
"""


def help_text(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args(argv)
    return out.getvalue().rstrip()


def subcommands(parser: argparse.ArgumentParser, prefix: list[str]) -> list[list[str]]:
    """Every subcommand path under parser that its help lists (not the internal ones, added without
    help), depth first, in the order the parser lists them."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest for choice in action._choices_actions}
            for name, child in action.choices.items():
                if name not in listed:
                    continue
                out.append(prefix + [name])
                out += subcommands(child, prefix + [name])
    return out


def main() -> str:
    parts = [INTRO, "## fabricprobe\n", "```text\n" + help_text(["--help"]) + "\n```\n"]
    for path in subcommands(build_parser(), []):
        parts += [f"## fabricprobe {' '.join(path)}\n", "```text\n" + help_text([*path, "--help"]) + "\n```\n"]
    return "\n".join(parts)


if __name__ == "__main__":
    print(main(), end="")
