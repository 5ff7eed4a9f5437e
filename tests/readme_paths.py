"""The README's command blocks, read from README.md as written, for the tests that drive its paths
(tests/site/test_slurm_lab.py: "Measure your site's MPI" and "Tune your site's MPI and load the
result" in the fabric lab under its Slurm). A test runs what the README says, so the README cannot
drift from what works."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Callable

README = Path(__file__).resolve().parents[1] / "README.md"
SITE_DOC = README.parent / "docs" / "site.md"
MEASURE = "Measure your site's MPI"
TUNE = "Tune your site's MPI and load the result"
STAGE = "Start-up at scale: the environment on each node's disk"  # in SITE_DOC
# The set-up lines of MEASURE: what `nox -s site` does for the site tests' environment (Debian's
# library stands for the module; mpi4py's binary wheel loads it). tests/site/test_readme_site_path.py
# runs them as written, with modules of its own for Debian's libraries.
SITE_SETUP = [
    ["module", "load", "openmpi"],
    ["python3", "-m", "venv", "~/fp", "&&", ".", "~/fp/bin/activate"],
    ["pip", "install", "mpi4py", "."],
]
LAUNCHERS = ("srun", "salloc")  # the lines of a cluster's allocation; the others run on one node
SHARED = "/shared/tuning"  # the README's folder for the files a site keeps
# a cluster's shape in the README -> the lab's 2 hosts of 2 slots
LAB_SHAPE = {("--ntasks-per-node", "32"): "2", ("-n", "64"): "4"}
PREFIX = {"Open MPI": "OMPI_MCA_", "MPICH": "MPIR_CVAR_"}


def blocks(heading: str, source: Path = README) -> list[str]:
    """The text of each ```bash block under `## heading`, up to the next heading."""
    text = source.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end > 0 else len(text)]
    return [part.split("```", 1)[0] for part in section.split("```bash\n")[1:]]


def commands(heading: str, source: Path = README) -> list[list[str]]:
    """The first block's command lines as argument lists, comments left out."""
    lines = blocks(heading, source)[0].splitlines()
    return [argv for argv in (shlex.split(line, comments=True) for line in lines) if argv]


def in_allocation(lines: list[list[str]]) -> list[list[str]]:
    """The lines a Slurm allocation runs, and those that run anywhere (info, report), not the one-node
    lines (mpirun, a tune-sweep that starts mpiexec itself)."""
    return [
        argv
        for argv in lines
        if argv[0] in LAUNCHERS or argv[:2] in (["fabricprobe", "info"], ["fabricprobe", "report"])
    ]


def on_one_node(lines: list[list[str]]) -> list[list[str]]:
    """The lines a login or test node runs: every one but the allocation's."""
    return [argv for argv in lines if argv[0] not in LAUNCHERS]


def in_lab(argv: list[str], client: Callable[[str], str], plugin: str) -> list[str]:
    """A README command line for the lab: its Slurm clients, this Python's fabricprobe, the lab's
    shape, the library's PMI plugin (the README's comment: --mpi=pmi2 for MPICH)."""
    out: list[str] = []
    for i, word in enumerate(argv):
        before = argv[i - 1] if i else ""
        if word in ("srun", "salloc") and i == 0:
            out.append(client(word))
        elif word == "fabricprobe":
            out += [sys.executable, "-m", "fabricprobe"]
        elif (before, word) in LAB_SHAPE:
            out.append(LAB_SHAPE[(before, word)])
        elif word.startswith("--mpi="):
            out.append(f"--mpi={plugin}")
        else:
            out.append(word)
    return out


def as_written(value: str, tuned: Path) -> str | None:
    """A README value for the files `tune` wrote in `tuned`: /shared/tuning/NAME is tuned/NAME, or the
    name tune gave a file not wholly proven (NAME.partly-verified.conf: the README says so, and tune
    prints its lines with the names it wrote); None for a file tune did not write (MPICH's posix file
    when no posix rule was tuned: the README loads each file tune wrote)."""
    if not value.startswith(SHARED + "/"):
        return value
    path = tuned / value[len(SHARED) + 1 :]
    stem, _, ext = path.name.rpartition(".")
    found = [path] if path.exists() else sorted(tuned.glob(f"{stem}.*.{ext}"))
    return str(found[0]) if found else None


def loading_ways(vendor: str, tuned: Path) -> dict[str, tuple[dict[str, str], Path | None]]:
    """Each way the README loads the files for this library -> (the job's environment, the TaskProlog
    Slurm runs before each task or None): its export lines; Open MPI's parameter-file lines (in a file
    Open MPI reads, named by OMPI_MCA_mca_param_files, as <prefix>/etc/openmpi-mca-params.conf is);
    and the TaskProlog `tune` wrote in DIR/load/. /shared/tuning is `tuned`."""
    exports, params = {}, []
    for line in blocks(TUNE)[1].splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"] and words[1].startswith(PREFIX[vendor]):
            name, _, value = words[1].partition("=")
            if (value := as_written(value, tuned)) is not None:
                exports[name] = value
        elif len(words) == 3 and words[1] == "=" and vendor == "Open MPI":
            if (value := as_written(words[2], tuned)) is not None:
                params.append(f"{words[0]} = {value}\n")
    ways: dict[str, tuple[dict[str, str], Path | None]] = {"README's export lines": (exports, None)}
    if params:
        conf = tuned / "readme-mca-params.conf"
        conf.write_text("".join(params))
        ways["README's parameter-file lines"] = ({"OMPI_MCA_mca_param_files": str(conf)}, None)
    ways["the TaskProlog tune wrote"] = ({}, tuned / "load" / "slurm-task-prolog.sh")
    return ways
