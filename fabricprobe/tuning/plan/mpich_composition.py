"""MPICH's CH4 compositions, measured by tune-sweep beside the MPIR algorithms where the communicator
has a hierarchy (several nodes, more than one rank on some node: mpienv.coll_path.mpich_hierarchical).
There MPICH composes a collective from a node-local step (SHM) and a node leaders' step (NM, which
calls MPIR on the leaders' sub-communicator), and an MPIR rule keyed on the whole communicator's size
is not what runs: what can be tuned is the composition.

`composition_<letter>` forces `MPIR_CVAR_<C>_COMPOSITION=<n>`, which CH4 reads at every call
(ch4_coll.h, MPID_Allreduce: `switch (MPIR_CVAR_ALLREDUCE_COMPOSITION)`), so it is switched inside the
one launch. Its CH4 selection-tree leaf is `composition=MPIDI_<Coll>_intra_composition_<letter>`, the
letters following the variable's values: 1 alpha, 2 beta, 3 gamma, 4 delta (the same switch). The
"SHM only" composition is for a communicator inside one node and is not a candidate here: forced on
several nodes CH4 falls back, and reached through a selection tree it would run without its check.
"""

from __future__ import annotations

from fabricprobe.mpienv.coll_path import MPICH_COMPOSITIONS
from fabricprobe.tuning.plan.library import Variant

PREFIX = "composition_"
LETTERS = ("alpha", "beta", "gamma", "delta")  # MPIR_CVAR_<C>_COMPOSITION = 1, 2, 3, 4


def is_composition(name: str) -> bool:
    return name.startswith(PREFIX)


def letter(name: str) -> str:
    """composition_alpha -> alpha."""
    return name[len(PREFIX) :]


def describe(api: str, name: str) -> str:
    """What MPICH's description calls a composition variant (e.g. "NM + SHM with reduce + bcast")."""
    return MPICH_COMPOSITIONS[api][LETTERS.index(letter(name)) + 1]


def composition_variants(collective: str, api: str, cvars: dict[str, str]) -> list[Variant]:
    """The compositions of one collective (`api`: MPICH's name, e.g. ALLREDUCE); none where this MPICH
    has no composition variable for it (`cvars`: what mpivars lists)."""
    variable = f"MPIR_CVAR_{api}_COMPOSITION"
    if api not in MPICH_COMPOSITIONS or variable not in cvars:
        return []
    out = []
    for value, text in enumerate(MPICH_COMPOSITIONS[api][1:], start=1):
        if text.startswith("SHM only") or value > len(LETTERS):
            continue
        out.append(Variant(collective, PREFIX + LETTERS[value - 1], str(value), {variable: str(value)}))
    return out
