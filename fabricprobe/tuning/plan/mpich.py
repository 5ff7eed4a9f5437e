"""MPICH: `mpivars` prints every control variable with its values; forcing is
`MPIR_CVAR_<COLL>_INTRA_ALGORITHM=name`. On one node at thread level single MPICH hands bcast,
allreduce and reduce to its POSIX shared-memory path after a few calls, bypassing both the CVAR and
the tuning file, so forced runs of those also set `MPIR_CVAR_<COLL>_POSIX_INTRA_ALGORITHM=mpir`, and
"mpir" (MPICH's own tree without the POSIX path) is measured as a candidate too. Where the job's
communicator has a hierarchy (several nodes, more than one rank on some node), the CH4 compositions
join them (plan/mpich_composition.py)."""

from __future__ import annotations

import re

import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.mpienv.coll_path import MPICH_HIERARCHY
from fabricprobe.mpienv.mpich_names import inline_values
from fabricprobe.tuning.plan import mpich_composition, mpich_tree
from fabricprobe.tuning.plan.library import Library, Variant, names, run_tool, tool


class MPICH(Library):
    vendor = "MPICH"
    switches_at_run_time = True
    EXCLUDED = ("auto", "nb", "ccl")  # nb is the non-blocking path under another name; ccl needs an external library
    hierarchy_component = MPICH_HIERARCHY

    def __init__(self, mpivars: str | None = None, text: str | None = None) -> None:
        if text is None:
            path = mpivars or tool("mpivars")
            if path is None:
                raise UsageError("mpivars not found next to mpiexec or on PATH: it lists MPICH's algorithms")
            text = run_tool([path])
        self.choices = parse_mpivars(text)
        self.cvars = {m.group(1): m.group(2) for m in re.finditer(r"^\s*(MPIR_CVAR_\w+)\s*=(\S+)", text, re.M)}
        if not self.choices:
            raise UsageError("mpivars lists no MPIR_CVAR_*_INTRA_ALGORITHM values")
        self.hierarchy = False  # the compositions measured too: tune-sweep sets it where they serve the job
        self._trees: dict | None = None  # MPICH's compiled-in trees, read when first asked (default_choice)

    default_decider = "MPICH's own selection tree"

    def default_choice(self, collective: str, nranks: int, nbytes: int, dtype: str, version: str) -> str | None:
        """The MPIR algorithm MPICH's compiled-in tree picks (plan/mpich_tree.py), read out of the libmpi
        loaded here; None for bcast, allreduce and reduce, which MPICH's POSIX path serves on one node
        after a few calls (no MPIR algorithm is the default there)."""
        if names(collective).mpich_posix:
            return None
        if self._trees is None:
            self._trees = mpich_tree.default_trees(mpich_tree.loaded_libmpi())
        itemsize = np.dtype(dtype).itemsize
        return mpich_tree.mpir_choice(
            self._trees["mpir"], collective, names(collective).mpich_json, nranks, nbytes, itemsize
        )

    def hierarchy_variants(self, collective: str) -> list[Variant]:
        """The CH4 compositions of the collective (plan/mpich_composition.py)."""
        return mpich_composition.composition_variants(collective, names(collective).mpich, self.cvars)

    def flat_variants(self, collective: str) -> list[Variant]:
        cvar = names(collective).mpich
        posix = {f"MPIR_CVAR_{cvar}_POSIX_INTRA_ALGORITHM": "mpir"} if names(collective).mpich_posix else {}
        out = [self.default(collective)]
        if posix:
            out.append(Variant(collective, "mpir", "auto", dict(posix)))
        for alg in self.choices.get(cvar, []):
            if alg not in self.EXCLUDED:
                out.append(Variant(collective, alg, alg, {f"MPIR_CVAR_{cvar}_INTRA_ALGORITHM": alg, **posix}))
        return out

    def variants(self, collective: str) -> list[Variant]:
        out = self.flat_variants(collective)
        return out + self.hierarchy_variants(collective) if self.hierarchy else out

    def control_variable(self, env_name: str) -> str | None:
        """MPIR_CVAR_X in the environment is the control variable MPIR_CVAR_X."""
        return env_name if env_name.startswith("MPIR_CVAR_") else None

    def default_value(self, variable: str) -> str | None:
        return "auto" if variable.endswith("_INTRA_ALGORITHM") else None


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
