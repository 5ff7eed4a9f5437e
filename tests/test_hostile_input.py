"""Hostile input, across every subcommand (issue 32: 517 bad inputs tried, 150 of them got a traceback,
a silent success or a changed file). Each case must end in exactly one line on stderr and exit status
2, before anything runs (MPI, a launcher, a lab) and with no file changed. The cases are generated from
the parsers themselves — every whole-number and real-number option of every subcommand, with values
that Python's own parsing takes (Unicode digits, nan, inf, 1e999) — plus sizes, lists, names, paths and
configuration files of the wrong types; the count is checked (at least 500).

They run in this process through fabricprobe.cli.main.main, with MPI_Init, every subprocess and the
lab's system calls replaced by a tripwire: a case that reaches one of them got past the checks."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fabricprobe.cli import main as cli_main
from fabricprobe.cli.parser import attach_values

BAD_WHOLE = ["", " ", "x", "1.5", "-1", "²", "٣", "1e3", "nan", "inf", "10**12", "9" * 40, "0x10", "1_000"]
BAD_REAL = ["", "x", "nan", "inf", "-inf", "1e999", "²", "٣.5", "1,5", "--", "0x1p3", "NaN"]
BAD_SIZES = ["", "²", "8T", "1000000T", "-8", "8,", ",", "8..16", "1e3", "8 K B", "٨"]

# what each subcommand needs besides the option tried (placeholders filled per test: {file})
PREFIX = {
    "sweep": ["sweep"],
    "tune-sweep": ["tune-sweep", "-n", "2"],
    "tune": ["tune", "{file}"],
    "tune-eval": ["tune-eval", "{file}"],
    "train": ["train", "dp_sgd"],
    "doctor": ["doctor"],
    "model": ["model", "{file}"],
    "lab up": ["lab", "up"],
    "lab run": ["lab", "run"],
}


class Tripwire(Exception):
    pass


def _parsers():
    """(subcommand words, option string, its type function's kind) for every typed option."""
    parser = cli_main.build_parser()
    out = []

    def walk(p, words):
        for action in p._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                for name, sub in action.choices.items():
                    walk(sub, words + [name])
            elif action.option_strings and callable(action.type) and getattr(action.type, "__name__", "") == "<lambda>":
                out.append((" ".join(words), action.option_strings[-1], action))
        return out

    return walk(parser, [])


def _kind(action) -> str:
    """whole or real: what the type function takes (asked with a probe value)."""
    try:
        action.type("1.5")
        return "real"
    except Exception:  # noqa: BLE001 - a whole-number option refuses 1.5
        return "whole"


def _cases() -> list[tuple[str, list[str]]]:
    cases = []
    for words, option, action in _parsers():
        if words not in PREFIX:
            continue
        values = BAD_WHOLE if _kind(action) == "whole" else BAD_REAL
        for value in values:
            cases.append((f"{words} {option} {value!r}", [*PREFIX[words], option, value]))
    for words, option in (
        ("sweep", "-b"),
        ("sweep", "-e"),
        ("sweep", "-i"),
        ("sweep", "--sizes"),
        ("sweep", "--stage-chunk"),
        ("tune-sweep", "--sizes"),
        ("doctor", "--ring-size"),
    ):
        for value in BAD_SIZES:
            cases.append((f"{words} {option} {value!r}", [*PREFIX[words], option, value]))
    lists = {
        "--comm-sizes": ["", "0", "2,,4", "²", "-2", "2;4", "1e3"],
        "--density": ["", "0", "1.5", "nan", "-0.1", "inf", "x"],
        "--ranks-per-node": ["", "0", "2,0", "x", "²", "-1"],
        "--collectives": ["", "allreduc", ",", "allreduce,,bcast"],
        "--algorithms": ["", "nope", ","],
    }
    for option, values in lists.items():
        for words in ("sweep", "tune-sweep"):
            if option in ("--algorithms",) and words == "tune-sweep":
                continue
            for value in values:
                cases.append((f"{words} {option} {value!r}", [*PREFIX[words], option, value]))
    for value in ["", "0", "1,0", "x", "²", "-4"]:
        cases.append((f"train --hidden {value!r}", ["train", "dp_sgd", "--hidden", value]))
    for argv in (
        ["report", "{file}"],
        ["plot", "{file}", "-o", "x.png"],
        ["compare", "{file}", "{file}"],
        ["tune", "{file}"],
        ["tune-eval", "{file}"],
    ):
        for value in ["", ",", "allreduc"]:
            cases.append((f"{argv[0]} --collectives {value!r}", [*argv, "--collectives", value]))
    for value in ["", ","]:
        cases.append((f"tune-sweep --only {value!r}", ["tune-sweep", "-n", "2", "--only", value]))
    for value in ["", "1", "1x", "x4", "0x4", "²x4", "1024x64x2"]:
        cases.append((f"model --scale {value!r}", ["model", "{file}", "--scale", value]))
    for extra in ([], ["--format", "json"], ["--format", "csv"]):  # --tolerance was ignored in silence
        cases.append((f"report {extra} --tolerance", ["report", "{file}", *extra, "--tolerance", "0.2"]))
    for value in ["nan", "-0.1", "100", "²"]:
        argv = ["report", "{file}", "--format", "reframe-references", "--tolerance", value]
        cases.append((f"report --tolerance {value!r}", argv))
    for extra in (["--gpudirect", "on"], ["--gpudirect", "off"], ["--stage-chunk", "256K"], ["--assume-cuda-aware"]):
        cases.append((f"sweep {' '.join(extra)} (host buffers)", ["sweep", *extra]))  # ignored in silence
    for colls, sync in (("acc_latency", "lock"), ("fop_latency,cas_latency", "pscw"), ("put_latency", "fence")):
        argv = ["sweep", "--collectives", colls, "--rma-sync", sync, "--timer", "native"]  # was a point error, exit 1
        cases.append((f"sweep {colls} --rma-sync {sync} --timer native", argv))
    for value in ["0", "none", "0mbit", "²gbit"]:  # a rate of 0 built an unlimited lab
        cases.append((f"lab up --rate {value!r}", ["lab", "up", "--rate", value]))
    for value in ["", "..", "/", "/tmp", "Bad", "a" * 9, "ab\n", "fp²", "1lab"]:
        for action in ("up", "down", "run", "status", "slow"):
            cases.append((f"lab {action} --name {value!r}", ["lab", action, "--name", value]))
    for argv in (["sweep", "--launches", "2"], ["tune-sweep", "-n", "2"], ["tune", "{file}", "--verify"]):
        for value in ['"', "--mca 'x", "a\\"]:  # unbalanced quotes, a trailing escape: shlex raised
            cases.append((f"{argv[0]} --mpiexec-args {value!r}", [*argv, "--mpiexec-args", value]))
    for argv in (["sweep"], ["tune-sweep", "-n", "2"], ["tune", "{file}"], ["report", "{file}"], ["train", "dp_sgd"]):
        for value in ("", " "):  # an empty name was taken for the default path
            cases.append((f"{argv[0]} -o {value!r}", [*argv, "-o", value]))
    return cases


# A run named by something other than ASCII digits: str.isdigit took '²' and int() then raised. The
# refusal names the file (no such run in it; FILE:² is no such file), so these are apart from CASES.
BAD_RUNS = ["²", "-²", "٣", "1.5", "--1"]


CONFIG_FIELDS = {  # a wrong type for each field a configuration file holds
    "validate": "no",
    "iterations_small": "100",
    "iterations_large": 1.5,
    "warmup_small": -1,
    "warmup_large": True,
    "max_time": "fast",
    "ci_target": None,
    "min_iterations": 10**13,
    "check_iters": 0,
    "window": [64],
    "root": -1,
    "point_timeout": float("nan"),
    "hugepages": "yes",
    "early_buffers": "32",
    "quick": 1,
    "sizes": ["8"],
    "densities": [0.1, "x"],
    "collectives": "allreduce",
    "in_place": [0],
    "comm_sizes": [2.5],
    "ranks_per_node": [True],
    "stage_chunk": "1M",
    "large_threshold": 2.0,
    "assume_cuda_aware": "false",
    "dtypes": [1],
    "iterations_small_big": 10**12,
    "sizes_huge": [10**30],  # stored a "complete" run with no point measured
}
RENAMED = {"iterations_small_big": "iterations_small", "sizes_huge": "sizes"}


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A working folder with one results-like file, every way out of the checks tripwired."""
    monkeypatch.chdir(tmp_path)
    _results(tmp_path / "results.h5")

    def trip(*args, **kwargs):
        raise Tripwire(f"reached {args[:1]}")

    import fabricprobe.mpienv.init as init

    monkeypatch.setattr(init, "init_mpi", trip)
    monkeypatch.setattr(subprocess, "run", trip)
    monkeypatch.setattr(subprocess, "Popen", trip)
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # the lab's checks as root, but nothing reaches ip(8)
    return tmp_path


def _results(path: Path) -> None:
    """A real results file (a tune-sweep's: the default and one forced algorithm), so that a command
    reading it gets as far as its options."""
    import numpy as np

    from fabricprobe.store import ResultsWriter

    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2, "mpi_vendor": "Open MPI", "mpi_library_version": "Open MPI v5", "config": {}})
    for i, (alg, size) in enumerate((a, s) for a in ("library", "library:ring") for s in (8, 1024)):
        t = 1e-6 * (i + 1)
        w.append_point(
            dict(index=i, key=f"k{i}", collective="allreduce", algorithm=alg, status="ok", bytes=size, nranks=2)
            | dict(requested_bytes=size, dtype="float32", op="sum", mode="barrier", median_s=t, ci_low_s=t)
            | dict(ci_high_s=t, min_s=t, p90_s=t, mean_s=t, iterations=10, busbw_factor=1.0),
            np.full((10, 2), t),
        )
    w.close()


def _tree(top: Path) -> dict[str, bytes]:
    return {str(p.relative_to(top)): p.read_bytes() for p in top.rglob("*") if p.is_file()}


def _refused(argv: list[str], sandbox: Path, capsys, for_the_value: bool = True) -> None:
    argv = [a.replace("{file}", str(sandbox / "results.h5")) for a in argv]
    before = _tree(sandbox)
    try:
        code = cli_main.main(argv)
    except Tripwire as exc:
        pytest.fail(f"{argv}: bad input got past the checks ({exc})")
    except SystemExit as exc:  # argparse's own exits (--help) never come here for bad input
        code = exc.code
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (argv, code, err[-500:])
    assert len(lines) == 1 and lines[0].startswith("fabricprobe: error:"), (argv, err)
    assert "Traceback" not in err + out, argv
    if for_the_value:
        assert "results.h5" not in lines[0], (argv, lines[0])  # refused for the value, not for the file
    assert _tree(sandbox) == before, argv


CASES = _cases()


def test_there_are_at_least_500_cases():
    assert len(CASES) + len(CONFIG_FIELDS) >= 500, len(CASES)


@pytest.mark.parametrize("argv", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_value_is_one_line_and_exit_2(argv, sandbox, capsys):
    _refused(argv, sandbox, capsys)


@pytest.mark.parametrize("field", sorted(CONFIG_FIELDS))
def test_a_configuration_file_of_the_wrong_types_is_refused_before_anything_runs(field, sandbox, capsys):
    from fabricprobe.engine.config import SweepConfig

    data = SweepConfig().to_dict()
    name = RENAMED.get(field, field)
    data[name] = CONFIG_FIELDS[field]
    config = sandbox / "run.json"
    config.write_text(json.dumps(data, allow_nan=True))
    _refused(["sweep", "--config", str(config)], sandbox, capsys)


def test_a_configuration_file_nested_too_deeply_is_refused(sandbox, capsys):
    """200,000 nested arrays: json's parser raised RecursionError, a traceback."""
    config = sandbox / "deep.json"
    config.write_text("[" * 200_000 + "]" * 200_000)
    _refused(["sweep", "--config", str(config)], sandbox, capsys)


@pytest.mark.parametrize("value", BAD_RUNS)
def test_a_run_named_by_other_than_digits_is_refused(value, sandbox, capsys):
    _refused(["report", "{file}", "--run", value], sandbox, capsys, for_the_value=False)
    _refused(["compare", "{file}:" + value, "{file}"], sandbox, capsys, for_the_value=False)


@pytest.mark.parametrize("value", ["--oversubscribe", "-x FOO=1 --bind-to none", "--mca btl ^ofi"])
def test_launcher_arguments_may_begin_with_a_dash(value):
    """`--mpiexec-args "--oversubscribe"`, as the help suggests writing it, was refused by argparse."""
    parser = cli_main.build_parser()
    for argv in (["sweep", "--mpiexec-args", value], ["tune-sweep", "-n", "2", "--mpiexec-args", value]):
        assert parser.parse_args(attach_values(argv)).mpiexec_args == value
    assert attach_values(["sweep", "--mpiexec-args"]) == ["sweep", "--mpiexec-args"]  # no value: argparse says so
