"""What each MPI library offers for tuning: its algorithms (read from the library's own tools at run
time), how to force one, and the environment a measurement or a tuned run needs.

- Open MPI: `ompi_info --parsable --param coll tuned --level 9` enumerates each coll/tuned
  algorithm parameter; forcing is `coll_tuned_use_dynamic_rules=1` + `coll_tuned_<coll>_algorithm=ID`
  (MCA parameters, read at MPI_Init, so one launch per algorithm).
- MPICH: `mpivars` prints every control variable with its values; forcing is
  `MPIR_CVAR_<COLL>_INTRA_ALGORITHM=name`. On one node at thread level single MPICH hands bcast,
  allreduce and reduce to its POSIX shared-memory path after a few calls, bypassing both the CVAR and
  the tuning file, so forced runs of those also set `MPIR_CVAR_<COLL>_POSIX_INTRA_ALGORITHM=mpir`, and
  "mpir" (MPICH's own tree without the POSIX path) is measured as a candidate too.
- Intel MPI: `impi_info -v I_MPI_ADJUST_<COLL>` gives the preset range; forcing is `I_MPI_ADJUST_<COLL>=ID`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fabricprobe.errors import UsageError
from fabricprobe.specs import SPECS
from fabricprobe.specs import TUNABLE as COLLECTIVES
from fabricprobe.specs.base import VendorNames

DEFAULT = "default"


def names(collective: str) -> VendorNames:
    """What the libraries call a collective (from its spec)."""
    vendor = SPECS[collective].vendor
    if vendor is None:
        raise KeyError(f"{collective} is not tuned: its spec names it for no library")
    return vendor


@dataclass(frozen=True)
class Variant:
    """One way to run a collective: the library's default, or one algorithm forced."""

    collective: str
    name: str  # "default", or the library's name for the algorithm
    ident: str  # the value that forces it (Open MPI id, MPICH name, Intel preset)
    env: dict = field(default_factory=dict, hash=False, compare=False)


def tool(name: str) -> str | None:
    """A library tool next to this Python's mpiexec, else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def _run(argv: list[str]) -> str:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    # A wheel's tools (impi-rt's impi_info) find their libmpi only through the library path: add the
    # lib/ beside the tool's bin/, as the wheel's mpiexec does for the ranks it starts.
    lib = Path(argv[0]).resolve().parent.parent / "lib"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"could not run {argv[0]}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise UsageError(f"{' '.join(argv)} failed: {last}")
    return done.stdout


class Library:
    vendor = "unknown"

    def variants(self, collective: str) -> list[Variant]:
        raise NotImplementedError

    def default(self, collective: str) -> Variant:
        return Variant(collective, DEFAULT, "", {})


class OpenMPI(Library):
    vendor = "Open MPI"

    def __init__(self, ompi_info: str | None = None, text: str | None = None) -> None:
        if text is None:
            path = ompi_info or tool("ompi_info")
            if path is None:
                raise UsageError("ompi_info not found next to mpiexec or on PATH: it lists Open MPI's algorithms")
            text = _run([path, "--parsable", "--param", "coll", "tuned", "--level", "9"])
        self.enumerators = parse_ompi_info(text)
        self.chain_fanout = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"coll_tuned_(\w+?)_algorithm_chain_fanout:value:(\d+)", text)
        }
        if not self.enumerators:
            raise UsageError("ompi_info lists no coll/tuned algorithms (is coll/tuned built?)")

    def variants(self, collective: str) -> list[Variant]:
        name = names(collective).openmpi
        out = [self.default(collective)]
        for ident, alg in self.enumerators.get(name, []):
            if ident == 0:  # "ignore": the fixed decision, i.e. the default
                continue
            out.append(
                Variant(
                    collective,
                    alg,
                    str(ident),
                    {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", f"OMPI_MCA_coll_tuned_{name}_algorithm": str(ident)},
                )
            )
        return out


def parse_ompi_info(text: str) -> dict[str, list[tuple[int, str]]]:
    """collective -> [(id, name)] from `ompi_info --parsable` coll_tuned_<coll>_algorithm enumerators."""
    out: dict[str, list[tuple[int, str]]] = {}
    pattern = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+?)_algorithm:enumerator:value:(\d+):(\S+)$")
    for line in text.splitlines():
        m = pattern.match(line.strip())
        if m:
            out.setdefault(m.group(1), []).append((int(m.group(2)), m.group(3)))
    return out


class MPICH(Library):
    vendor = "MPICH"
    EXCLUDED = ("auto", "nb", "ccl")  # nb is the non-blocking path under another name; ccl needs an external library

    def __init__(self, mpivars: str | None = None, text: str | None = None) -> None:
        if text is None:
            path = mpivars or tool("mpivars")
            if path is None:
                raise UsageError("mpivars not found next to mpiexec or on PATH: it lists MPICH's algorithms")
            text = _run([path])
        self.choices = parse_mpivars(text)
        self.cvars = {m.group(1): m.group(2) for m in re.finditer(r"^\s*(MPIR_CVAR_\w+)\s*=(\S+)", text, re.M)}
        if not self.choices:
            raise UsageError("mpivars lists no MPIR_CVAR_*_INTRA_ALGORITHM values")

    def variants(self, collective: str) -> list[Variant]:
        cvar = names(collective).mpich
        posix = {f"MPIR_CVAR_{cvar}_POSIX_INTRA_ALGORITHM": "mpir"} if names(collective).mpich_posix else {}
        out = [self.default(collective)]
        if posix:
            out.append(Variant(collective, "mpir", "auto", dict(posix)))
        for alg in self.choices.get(cvar, []):
            if alg not in self.EXCLUDED:
                out.append(Variant(collective, alg, alg, {f"MPIR_CVAR_{cvar}_INTRA_ALGORITHM": alg, **posix}))
        return out


# MPICH 4.0's mpivars prints a CVAR's description with its newlines removed, so the algorithm values
# run into the text before them: "...select allreduce algorithmauto - Internal ...)nb<pad>- Force
# nonblocking algorithmsmp<pad>- Force smp algorithm...". 5.0 prints one value per line.
_SEPARATOR = re.compile(r"([A-Za-z0-9_]+)( +)- (?=[A-Z])")


def _endings(text: str, start: int) -> list[tuple[str, str]]:
    """(name, ending) pairs: `text` (a description followed by a glued name) split after a word a
    description ends with; the name begins at or after `start`."""
    found = []
    for end in ("algorithm", "algorithms", ")"):
        i = text.find(end)
        while i >= 0:
            cut = i + len(end)
            if cut >= start and cut < len(text) and text[cut].isalpha() and text[cut].islower():
                found.append((text[cut:], end))
            i = text.find(end, i + 1)
    return found


def _padded(texts: list[str], pads: list[int], j: int) -> bool:
    """Whether value j is one of a padded block ("auto" and "sched_auto", whose descriptions begin
    "Internal", are not)."""
    described = texts[j + 1] if j + 1 < len(texts) else ""
    return not described.startswith("Internal") and (pads[j] > 1 or j > 1)


def inline_values(description: str) -> list[str]:
    """The algorithm values in one MPICH 4.0 description line, in order. A value is the text a
    description's last word ("algorithm", "algorithms", ")") is glued to, unless that is ambiguous
    ("algorithmsmp": smp, "algorithmssched_ring": sched_ring) or the description ends otherwise
    ("Force Binomial Treenb"): then the padding decides, since a value and its padding are as wide
    as its neighbours'. Checked on every *_ALGORITHM variable of Debian's MPICH 4.0.2."""
    seps = list(_SEPARATOR.finditer(description))
    texts, pads, starts = [], [], []  # per value: the description before it + the value; its padding
    for k, m in enumerate(seps):
        begin = seps[k - 1].end() if k else 0
        texts.append(description[begin : m.end(1)])  # previous description + the glued name
        starts.append(m.start(1) - begin)
        pads.append(len(m.group(2)))
    options = [_endings(t, s) for t, s in zip(texts, starts)]
    chosen: list[str | None] = [o[0][0] if len({n for n, _ in o}) == 1 else None for o in options]

    def neighbour_width(k: int) -> list[int]:
        out = []
        for j in (k - 1, k + 1, k - 2, k + 2):
            if 0 <= j < len(chosen) and chosen[j] is not None and _padded(texts, pads, j):
                out.append(len(chosen[j]) + pads[j])
        return out

    for k, opts in enumerate(options):
        if chosen[k] is not None:
            continue
        widths = neighbour_width(k)
        fit = [n for n, _ in opts if len(n) + pads[k] in widths]
        if fit:
            chosen[k] = fit[0]
        elif opts:
            plural = texts[k].startswith("Internal")
            chosen[k] = next((n for n, e in opts if (e == "algorithms") == plural), opts[0][0])
        elif widths and 0 < widths[0] - pads[k] <= len(texts[k]):
            chosen[k] = texts[k][-(widths[0] - pads[k]) :]
        else:
            chosen[k] = seps[k].group(1)
    return [c for c in chosen if c]


def parse_mpivars(text: str) -> dict[str, list[str]]:
    """CVAR prefix (ALLREDUCE, ...) -> algorithm names, from `mpivars` output: one value per line
    after the variable's line (MPICH 5.0), or all on the variable's line (4.0: inline_values)."""
    out: dict[str, list[str]] = {}
    current = None
    head = re.compile(r"^\s+MPIR_CVAR_(\w+)_INTRA_ALGORITHM\s*=")  # names are padded before "="
    value = re.compile(r"^(\w+)\s+-\s")
    for line in text.splitlines():
        m = head.match(line)
        if m:
            current = m.group(1)
            out[current] = inline_values(line.split("\t")[-1])
            continue
        if current is not None:
            v = value.match(line)
            if v:
                out[current].append(v.group(1))
            elif line.startswith("\t") or not line.strip():
                current = None
    return {k: v for k, v in out.items() if v}


class IntelMPI(Library):
    vendor = "Intel MPI"

    def __init__(self, impi_info: str | None = None, ranges: dict[str, int] | None = None) -> None:
        if ranges is None:
            path = impi_info or tool("impi_info")
            if path is None:
                raise UsageError("impi_info not found: it lists Intel MPI's I_MPI_ADJUST presets")
            ranges = {}
            for coll in COLLECTIVES:
                name = names(coll).intel
                text = _run([path, "-v", f"I_MPI_ADJUST_{name}"])
                found = re.findall(r"(\d+)\s*[-–]\s*(\d+)", text)
                if found:
                    ranges[coll] = int(found[0][1])
            if not ranges:
                raise UsageError(f"{path} listed no I_MPI_ADJUST preset ranges: nothing to force")
        self.ranges = ranges

    def variants(self, collective: str) -> list[Variant]:
        name = names(collective).intel
        return [self.default(collective)] + [
            Variant(collective, f"preset{i}", str(i), {f"I_MPI_ADJUST_{name}": str(i)})
            for i in range(1, self.ranges.get(collective, 0) + 1)
        ]


def for_vendor(vendor: str) -> Library:
    if vendor == "Open MPI":
        return OpenMPI()
    if vendor == "MPICH":
        return MPICH()
    if vendor == "Intel MPI":
        return IntelMPI()
    raise UsageError(f"tuning supports Open MPI, MPICH and Intel MPI; this MPI is {vendor!r}")
