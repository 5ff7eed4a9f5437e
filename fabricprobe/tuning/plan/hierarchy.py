"""Whether a variant (or a rule's winner) is one of the library's hierarchy settings rather than a flat
algorithm: Open MPI's han (flat, flat_<alg>, han_*: plan/openmpi_han.py) or MPICH's CH4 compositions
(composition_*: plan/mpich_composition.py). Where the hierarchy serves a communicator, only these are
candidates: a flat rule keyed on its size is not what runs there."""

from __future__ import annotations

from fabricprobe.tuning.plan import mpich_composition, openmpi_han


def is_hierarchy(name: str) -> bool:
    return openmpi_han.is_hierarchy(name) or mpich_composition.is_composition(name)
