"""The documentation must describe the program as it is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fabricprobe.store.schema import JSON_ATTRS, POINT_DTYPE

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.process
def test_cli_reference_is_current():
    generated = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "gen_cli.py")], capture_output=True, text=True, check=True
    ).stdout
    assert (ROOT / "docs" / "cli.md").read_text() == generated, "run: python docs/gen_cli.py > docs/cli.md"


@pytest.mark.process
def test_algorithm_table_is_current():
    """docs/algorithms.md's table is generated from the registry: every algorithm's summary and cost formula."""
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_algorithms.py"), "--check"])
    assert done.returncode == 0, "run: python docs/gen_algorithms.py"


def test_every_algorithm_is_in_the_table_with_its_formula():
    from fabricprobe import collectives

    text = (ROOT / "docs" / "algorithms.md").read_text()
    for a in collectives.algorithms():
        if a.name != collectives.LIBRARY:
            assert f"| {a.collective} | `{a.name}` |" in text, a
            assert a.cost is None or a.cost.text.replace("|", "\\|") in text, a


def test_every_schema_field_is_documented():
    text = (ROOT / "docs" / "schema.md").read_text()
    for name in POINT_DTYPE.names + JSON_ATTRS:
        assert f"`{name}`" in text, name


def test_readme_quick_start_has_two_commands():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", quick, re.S)
    assert len(commands) == 2
    assert "mpiexec" in commands[0] and "sweep" in commands[0]
    assert commands[1] == "python3 -m venv .venv-test && .venv-test/bin/pip install 'nox[uv]' && .venv-test/bin/nox"
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


# Options of other programs that the docs quote: the launchers, ompi_info, pip, unshare, ruff and the
# benchmark scripts. Anything else that looks like an option must be one of fabricprobe's.
FOREIGN_OPTIONS = {
    "--bind-to": "mpiexec (Open MPI)",
    "--host": "mpiexec (Open MPI)",
    "--mca": "mpiexec (Open MPI)",
    "--oversubscribe": "mpiexec (Open MPI)",
    "--with-cuda": "configure (Open MPI, MPICH: benchmarks/gpu/build_cuda_mpi.sh)",
    "--parsable": "ompi_info",
    "--param": "ompi_info",
    "--level": "ompi_info",
    "--no-binary": "pip",
    "--uts": "unshare",
    "--check": "ruff format",
    "--omb": "benchmarks/omb_imb_side_by_side.py",
    "--per-side": "benchmarks/compare_drift.py",
    "--env": "benchmarks/slow_fs_startup.py",
    "--repeats": "benchmarks/slow_fs_startup.py",
    "--parts": "benchmarks/scale_costs.py",
    "--bound": "benchmarks/scale_costs.py",
    "--imb": "benchmarks/omb_imb_side_by_side.py",
    "--aa": "benchmarks/omb_imb_side_by_side.py",
    "--probe": "benchmarks/omb_imb_side_by_side.py",
    "--blocks": "docs/studies/2026-11-27-4mib-pingpong/omb_loop_same_launch.py",
    "--transfer": "tests/drivers/check_algorithms.py",
    "--plant-fault": "tests/drivers/check_algorithms.py",
    "--ntasks-per-node": "srun (Slurm)",
    "--mpi": "srun (Slurm)",
    "--cpu-bind": "srun (Slurm)",
    "--task-prolog": "srun (Slurm)",
    "--wait": "sbatch (Slurm)",
    "--no-cache-dir": "pip",
    "--force-reinstall": "pip",
    "--showme": "mpicc (Open MPI)",
    "--with-slurm": "configure (Open MPI, MPICH)",
    "--with-pmix": "configure (Open MPI, MPICH)",
    "--with-ucx": "configure (Open MPI, MPICH)",
    "--trials": "benchmarks/doctor_study.py",
    "--fractions": "benchmarks/doctor_study.py",
    "--busy-trials": "benchmarks/doctor_study.py",
    "--controls": "benchmarks/doctor_study.py",
    "--scaling": "benchmarks/doctor_study.py",
    "--record": "benchmarks/doctor_study.py",
    "--rediagnose": "benchmarks/doctor_study.py",
    "--doctor-args": "benchmarks/doctor_study.py",
    "--rates": "benchmarks/tuned_training_study.py",
    "--out": "benchmarks/tuned_training_study.py",
    "--summarize": "benchmarks/tuned_training_study.py",
    "--durations": "pytest",
    "--dist": "pytest-xdist",
    "--lab": "benchmarks/slurm_kills.py",
    "--kinds": "benchmarks/slurm_kills.py",
    "--commands": "benchmarks/slurm_kills.py",
    "--table": "benchmarks/slurm_kills.py",
}


def _fabricprobe_options() -> set[str]:
    import argparse

    from fabricprobe.cli.main import build_parser

    found: set[str] = set()

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            found.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    walk(build_parser())
    return found


def _help_texts() -> dict[str, str]:
    """`fabricprobe ... --help` of every command and subcommand, as a user reads it."""
    import argparse

    from fabricprobe.cli.main import build_parser

    texts: dict[str, str] = {}

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        texts[path] = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "fabricprobe")
    return texts


# What a measured figure looks like in prose: a speed ratio (1.12 faster, 1.09x, 2.2-9.3×), a p-value, a
# count of repetitions or trials (78/100, 55 of 100 repetitions), a time taken (0.4 s at 2 ranks).
MEASURED = [
    r"\d\.\d+ ?[x×]",
    r"\d\.\d+[x×]? (faster|slower)",
    r"\bp ?[=<>] ?0?\.\d",
    r"\b\d+ ?/ ?\d+ (repetitions|runs|trials|launches)",
    r"\b\d+ of \d+ (repetitions|runs|trials|launches|pairs)",
    r"\(\d\.\d+,",
    r"\d+(\.\d+)? ?(s|ms|µs) (at|on) \d+ ranks",
    r"[~≈]\d+(\.\d+)? ?(MiB|GB|s|ms|µs)",
]


def test_no_help_text_carries_a_measured_figure():
    """Figures go stale in --help; docs/ holds them beside their commands, and help points there."""
    found = {
        (path, match.group(0))
        for path, text in _help_texts().items()
        for pattern in MEASURED
        for match in re.finditer(pattern, " ".join(text.split()))
    }
    assert not found, sorted(found)


@pytest.mark.parametrize(
    "planted", ["read 1.12 faster", "1.09x with 64 MiB", "(1.03, 55/100 repetitions", "0.4 s at 2 ranks", "p = 0.37"]
)
def test_the_figure_check_finds_a_planted_figure(planted):
    assert any(re.search(pattern, planted) for pattern in MEASURED), planted


@pytest.mark.parametrize("columns", [80, 100, 132])
def test_every_help_fits_the_terminal_without_a_broken_word(monkeypatch, columns):
    """Issue 69: --help wraps at the terminal's width (argparse's formatter reads $COLUMNS), so no line is
    wider than the terminal (which would wrap it mid-word), and the words are those of a help printed
    on a terminal too wide to wrap anything: none is broken."""
    monkeypatch.setenv("COLUMNS", "1000")
    unwrapped = {path: text.split() for path, text in _help_texts().items()}
    monkeypatch.setenv("COLUMNS", str(columns))
    texts = _help_texts()
    assert len(texts) > 15 and texts.keys() == unwrapped.keys()
    wide = {(path, line) for path, text in texts.items() for line in text.splitlines() if len(line) > columns}
    assert not wide, sorted(wide)
    broken = {path for path, text in texts.items() if text.split() != unwrapped[path]}
    assert not broken, sorted(broken)


def test_the_width_check_finds_a_hard_wrapped_description(monkeypatch):
    """The check above can fail: argparse's raw layout keeps a description's 95-character lines."""
    import argparse

    monkeypatch.setenv("COLUMNS", "80")
    parser = argparse.ArgumentParser(
        prog="x", formatter_class=argparse.RawDescriptionHelpFormatter, description="word " * 19 + "\nend"
    )
    assert max(len(line) for line in parser.format_help().splitlines()) > 80


def test_internal_commands_and_options_are_not_in_help():
    texts = _help_texts()
    assert "tune-sweep-job" not in texts["fabricprobe"]
    assert "--library-variant" not in texts["fabricprobe sweep"]
    assert "fabricprobe tune-sweep-job" in texts  # still a command: tune-sweep's launches run it


def test_every_option_the_docs_name_exists():
    """A documented option that the program does not have (renamed, removed, mistyped) fails here."""
    known = _fabricprobe_options() | set(FOREIGN_OPTIONS)
    assert "--point-timeout" in known and "--format" in known
    docs = [ROOT / "README.md"] + [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "cli.md"]
    missing = {
        (path.name, option)
        for path in docs
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", path.read_text())
        if option not in known
    }
    assert not missing, sorted(missing)


def test_every_benchmark_script_is_in_its_readme():
    folder = ROOT / "benchmarks"
    text = (folder / "README.md").read_text()
    assert not [p.name for p in folder.iterdir() if p.is_file() and p.name != "README.md" and f"`{p.name}`" not in text]


def test_the_readme_loads_the_files_tune_writes_by_the_names_it_gives_them(tmp_path):
    """tests/readme_paths.py reads the README's load lines for the site tests: /shared/tuning/NAME is
    the file tune wrote, its marked name where it was not wholly proven, and a file not written is
    not loaded (a rules file Open MPI cannot open leaves the default in place, without a word)."""
    from readme_paths import loading_ways

    (tmp_path / "ompi_rules.partly-verified.conf").write_text("1\n")
    (tmp_path / "mpich_mpir_tuned.json").write_text("{}\n")
    (openmpi, _), _, _ = loading_ways("Open MPI", tmp_path).values()
    assert openmpi == {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(tmp_path / "ompi_rules.partly-verified.conf"),
    }
    assert "coll_tuned_dynamic_rules_filename" in (tmp_path / "readme-mca-params.conf").read_text()
    (mpich, _), _ = loading_ways("MPICH", tmp_path).values()
    assert mpich == {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(tmp_path / "mpich_mpir_tuned.json")}


COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
DATE = re.compile(r"(?<!studies/)\b20\d\d-\d\d-\d\d\b")


def notebook_traits(text: str) -> list[str]:
    """What makes a page a lab notebook rather than a reference: commit hashes, dated measurements (a
    date in a link to docs/studies/ is the study's name), "to be measured again"."""
    found = [f"commit {m}" for m in COMMIT.findall(text)] + [f"date {m}" for m in DATE.findall(text)]
    return found + [m for m in re.findall(r"(?i)to be measured again", text)]


def test_the_docs_are_references():
    """Issue 69: a site deploys from the docs, so each is a reference of at most 400 lines, and one over
    300 lines holds no commit hash, dated measurement or "to be measured again": those go to docs/studies/
    (linked). docs/cli.md is every command's --help, generated (test_cli_reference_is_current)."""
    pages = [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "cli.md"]
    long = {p.name: len(p.read_text().splitlines()) for p in pages if len(p.read_text().splitlines()) > 400}
    assert not long, long
    notebooks = {p.name: notebook_traits(p.read_text())[:5] for p in pages if len(p.read_text().splitlines()) > 300}
    assert not {name: found for name, found in notebooks.items() if found}
    assert len((ROOT / "docs" / "tuning.md").read_text().splitlines()) <= 400


@pytest.mark.parametrize("planted", ["measured at e367f53", "on 2026-11-26 at 12:00", "To be measured again (open)"])
def test_the_reference_check_finds_a_notebook_line(planted):
    assert notebook_traits(planted), planted
    assert not notebook_traits("see [studies/2026-11-26-live-budget.md](studies/2026-11-26-live-budget.md)")


def test_the_front_pages_stay_short():
    """Issue 52: the README is a front page (at most 150 lines, its three paths on the first screen of
    40 lines) and docs/testing.md a reference (at most 120 lines; the diary of runs is git log)."""
    readme = (ROOT / "README.md").read_text().splitlines()
    assert len(readme) <= 150
    first_screen = "\n".join(readme[:40])
    for path in ("## Quick start", "## Measure your site's MPI", "## Tune your site's MPI and load the result"):
        assert path in first_screen, path
    assert len((ROOT / "docs" / "testing.md").read_text().splitlines()) <= 120


def test_benchmarks_readme_names_every_script_there():
    """Issue 52: benchmarks/ holds reusable tools beside a few studies' scripts; its README says what
    each one is for, so a file added without a line there fails here."""
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    scripts = [p.name for p in (ROOT / "benchmarks").rglob("*") if p.suffix in (".py", ".sh", ".c")]
    assert scripts and not [name for name in scripts if name not in readme]
