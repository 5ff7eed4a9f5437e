"""Bad input: one clear line, exit status 2, no traceback, nothing written, and neither MPI nor any process
started: the commands run in this process with both tripwired (tests/inprocess.py); the same under
mpiexec in test_bad_input_mpi.py."""

from __future__ import annotations

import os

import h5py
import pytest
from inprocess import run_in_process
from mpirun import error_lines, run_local

BAD_SWEEPS = [
    (["-b", "8x"], "invalid size"),
    (["-b", "4M", "-e", "8"], "empty size range"),
    (["--sizes", "8", "-b", "8"], "either --sizes or a range"),
    (["--collectives", "allreduc"], "did you mean 'allreduce'"),
    (["-d", "float16"], "unknown datatype"),
    (["--ops", "xor"], "unknown op"),
    (["--algorithms", "nope"], "unknown algorithm"),
    (["--iters", "0"], "invalid --iters '0': it must be at least 1"),
    (["--ci-target", "2"], "--ci-target"),
    (["--mode", "fast"], "unknown mode"),
    (["--rma-sync", "flsh"], "unknown one-sided synchronization"),
    (["--thread-level", "many"], "invalid choice"),
    (["--root", "7"], "not a rank"),
    (["--comm-sizes", "1,5"], "--comm-sizes 5: larger than this 1-rank job"),  # was a note, easy to miss
    (["--bogus"], "unrecognized arguments"),
    (["--library-variant", "a" * 57], "at most 56 characters"),
    (["--sizes", "8,,16"], "an item is empty"),  # an empty item is an error, never silently dropped
    (["--collectives", "allreduce,,bcast"], "an item is empty"),
    (["--comm-sizes", "2,,4"], "an item is empty"),
    (["--point-timeout", "nan"], "invalid --point-timeout 'nan': it must be finite"),
    (["--max-time", "inf"], "invalid --max-time 'inf': it must be finite"),
    # sweep --launches and the random order (issue 36)
    (["--launches", "0", "-n", "2"], "--launches"),
    (["--launches", "2"], "needs -n"),
    (["-n", "2"], "go with --launches"),
    (["--mpiexec", "/bin/true"], "go with --launches"),
    (["--seed", "-3"], "--seed"),
    (["--order", "shuffled"], "--order"),
    (["--launches", "2", "-n", "2", "--resume", "x.h5"], "--resume"),
]


# Refused only once the library is known: rank counts (MPI started), a stored run's library, tune-sweep's
# launcher and algorithm names (it asks the library in a process of its own). These run as processes;
# the rest in this process, where MPI and every new process are tripwires.
AFTER_THE_LIBRARY = ("--root", "--comm-sizes", "--resume", "--mpiexec", "--only")


def _params(cases: list[tuple[list[str], str]]) -> list:
    """The cases, those refused only after the library is known marked as starting a process."""
    return [
        pytest.param(args, fragment, marks=[pytest.mark.process] if set(args) & set(AFTER_THE_LIBRARY) else [])
        for args, fragment in cases
    ]


def _refuse(args: list[str], cwd=None):
    if any(a in AFTER_THE_LIBRARY for a in args):
        return run_local(args, cwd=cwd, process=True)
    return run_in_process(args, cwd=cwd, refused=True)


def assert_clean_failure(out, fragment, results):
    assert out.returncode == 2, out.stderr
    lines = error_lines(out.stderr)
    assert len(lines) == 1, out.stderr
    assert fragment in lines[0]
    assert "Traceback" not in out.stderr + out.stdout
    assert not results.exists()


@pytest.mark.parametrize("args,fragment", _params(BAD_SWEEPS))
def test_bad_sweep_options_single_process(args, fragment, results):
    assert_clean_failure(_refuse(["sweep", "-o", str(results), *args]), fragment, results)


@pytest.mark.parametrize(
    "args,fragment",
    _params(
        [
            (["report", "missing.h5"], "no such file"),
            (["report", "{text}"], "not HDF5"),
            (["report", "{other}"], "not a fabricprobe results file"),
            (["report", "{text}", "--format", "xml"], "invalid choice"),
            (["sweep", "--resume", "{other}"], "not a fabricprobe results file"),
            (["sweep", "--run", "1"], "needs --resume"),
        ]
    ),
)
def test_bad_files(args, fragment, tmp_path):
    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = 1
    args = [a.format(text=text, other=other) for a in args]
    out = _refuse(args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert len(error_lines(out.stderr)) == 1 and fragment in out.stderr
    assert "Traceback" not in out.stderr


def test_version_and_help():
    out = run_in_process(["--version"], refused=True)
    assert out.returncode == 0 and out.stdout.startswith("fabricprobe ")
    for sub in ([], ["sweep"], ["report"], ["info"]):
        out = run_in_process([*sub, "--help"], refused=True)
        assert out.returncode == 0 and "usage: fabricprobe" in out.stdout, sub
    out = run_in_process([], refused=True)
    assert out.returncode == 2 and "required" in error_lines(out.stderr)[0]


@pytest.mark.process
def test_python_dash_m(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "fabricprobe", "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert out.returncode == 0 and "fabricprobe" in out.stdout


@pytest.mark.parametrize(
    "args,fragment",
    _params(
        [
            (["tune-sweep", "-n", "2", "--mpiexec", "/nonexistent/mpiexec"], "no such executable"),
            (["tune-sweep", "-n", "4", "--comm-sizes", "2,,4"], "an item is empty"),
            (["tune-sweep", "-n", "2", "--collectives", "allreduce", "--only", "nosuchalg"], "--only nosuchalg"),
            (
                ["tune-sweep", "-n", "2", "--collectives", "allreduce", "--algorithms", "nosuch"],
                "--algorithms 'nosuch'",
            ),
            (
                ["tune-sweep", "-n", "2", "--collectives", "alltoall", "--algorithms", "ring"],
                "not a fabricprobe algorithm",
            ),
            (["tune-sweep", "-n", "4", "--ranks-per-node", "3,3"], "adds up to 6 ranks"),
            (["tune-sweep", "-n", "4", "--ranks-per-node", "2x"], "invalid --ranks-per-node"),
            (["tune-sweep", "-n", "4", "--density", "0.01,x"], "invalid --density 'x'"),
            (["train", "sparse_dp", "--device", "cupy"], "--device cupy: dp_sgd, hybrid and easgd --mode sync"),
            (["train", "easgd", "--mode", "fcfs", "--device", "cupy"], "async EASGD"),
            (["tune", "r.h5", "--min-gain", "-1"], "invalid --min-gain"),
            (["tune", "r.h5", "--min-gain", "nan"], "invalid --min-gain"),
            (["model", "r.h5", "--scale", "2x2,,4x4"], "an item is empty"),
            (["train", "dp_sgd", "--hidden", "64,,32"], "an item is empty"),
            (["tune-sweep", "-n", "2", "--budget", "0"], "invalid --budget"),
            (["tune-sweep", "-n", "2", "--budget", "1.5"], "invalid --budget"),
            (["tune-sweep", "-n", "2", "--budget", "nan"], "invalid --budget"),
            (["tune-sweep", "-n", "2", "--budget", "0.2", "--collectives", "sparse_allreduce"], "library algorithms"),
            (["tune-eval", "missing.h5"], "no such file"),
            (["tune-eval", "x.h5", "--replay", "0"], "budgets are fractions"),
            (["tune-eval", "x.h5", "--replay", "a,b"], "expected fractions"),
        ]
    ),
)
def test_bad_numbers_lists_and_names_in_other_commands(args, fragment, tmp_path):
    out = _refuse(args, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    lines = error_lines(out.stderr)
    assert len(lines) == 1 and fragment in lines[0], out.stderr
    assert "Traceback" not in out.stderr and not list(tmp_path.iterdir())


@pytest.mark.process
def test_tune_sweep_checks_its_output_before_any_job(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = run_local(["tune-sweep", "-n", "2", "--collectives", "allreduce", "-o", str(notes)], timeout=60)
    assert out.returncode == 2 and "not a fabricprobe results file" in error_lines(out.stderr)[0]
    assert notes.read_text() == "my notes\n" and "[1/" not in out.stderr  # no job was launched


@pytest.mark.parametrize("where", ["arena", "imports", "parser"])
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(where, monkeypatch, capsys):
    """Ctrl-C while the command line's modules load printed a KeyboardInterrupt traceback from inside
    the imports (issue 53: tune-sweep, 5 of 5 tries 0.05-2.3 s after start)."""
    import builtins
    import sys

    from fabricprobe.cli import main as cli_main
    from fabricprobe.cli import start
    from fabricprobe.memory import arena

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(start, "interrupted_as_a_process", lambda: None)  # this process is pytest's
    monkeypatch.setattr(sys, "argv", ["fabricprobe", "tune-sweep", "-n", "2"])
    if where == "arena":
        monkeypatch.setattr(arena, "reserve", interrupt)
    elif where == "imports":
        real_import = builtins.__import__
        monkeypatch.setattr(
            builtins,
            "__import__",
            lambda name, *a, **k: interrupt() if name == "fabricprobe.cli.main" else real_import(name, *a, **k),
        )
    else:
        monkeypatch.setattr(cli_main, "build_parser", interrupt)
    assert start.main() == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["fabricprobe: error: interrupted by SIGINT"], err


@pytest.mark.process
@pytest.mark.parametrize("args", [["--buffer", "cupy"], ["--buffer", "numba"]])
def test_refused_after_the_library_as_one_process_is_still_one_line(args, results):
    """The "running as one process" warning came before an error refused after MPI started (issue 53)."""
    out = run_local(["sweep", "-o", str(results), "--collectives", "allreduce", "--sizes", "8", *args], process=True)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("fabricprobe: error:"), out.stderr


def test_an_internal_error_has_a_status_of_its_own(monkeypatch, capsys):
    """A bug exited 1, the status of wrong results: a script could not tell the two apart (issue 53)."""
    from fabricprobe.cli import main as cli_main
    from fabricprobe.cli import report_cmd

    def bug(args):
        raise RuntimeError("planted")

    monkeypatch.setattr(report_cmd, "run", bug)
    monkeypatch.setattr(cli_main, "_abort_mpi", lambda code: None)
    assert cli_main.main(["report", "x.h5"]) == 70
    err = capsys.readouterr().err
    assert err.startswith("fabricprobe: internal error: RuntimeError: planted") and "Traceback" in err


@pytest.mark.parametrize("spelling", ["--window-size", "--window"])
def test_the_window_size_and_its_old_spelling(spelling, capsys):
    """--window (messages per window in bw/bibw) was one word with --mode window (a timing mode): it is
    now --window-size, OMB's name; the old spelling still works and says what it is now called."""
    from fabricprobe.cli.main import build_parser
    from fabricprobe.cli.sweep_cmd import build_config

    args = build_parser().parse_args(["sweep", spelling, "8"])
    assert args.window == 8 and build_config(args).window == 8
    warned = capsys.readouterr().err
    assert ("--window is now --window-size" in warned) == (spelling == "--window")
    assert build_parser().parse_args(["sweep"]).window == 64  # OMB's default, whichever spelling exists


def test_an_error_line_shows_control_characters_as_text(capsys):
    """A path or a file's text in an error reached the terminal raw: an escape sequence set its title
    or cleared it (issue 65's hostile paths, issue 67's strings)."""
    from fabricprobe.console import error_line, warn_line

    error_line("cannot write /x/a\x1b]0;pwn\x07b\x9b2J: refused")
    warn_line("a \x1b[31mred\x1b[0m value")
    err = capsys.readouterr().err
    assert err == (
        "fabricprobe: error: cannot write /x/a\\x1b]0;pwn\\x07b\\x9b2J: refused\n"
        "fabricprobe: warning: a \\x1b[31mred\\x1b[0m value\n"
    )
    assert "\x1b" not in err and "\x07" not in err
