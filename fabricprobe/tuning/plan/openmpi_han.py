"""Open MPI 5's han, measured by tune-sweep beside coll/tuned's algorithms where han serves the
communicator (several nodes, more than one rank on some node: mpienv.coll_path). On such a
communicator a coll/tuned rule keyed on its size is never read, so what can be tuned is han itself:

- `flat_<alg>` (and `flat`, tuned's own decision): han hands the collective to coll/tuned on the whole
  communicator, one tuned algorithm forced. Forced by han's own per-collective switch
  `coll_han_<c>_dynamic_global_communicator_module` = 3 (tuned), the same switch a han rules file sets
  per message size (coll_han_dynamic.c: get_module, read at every call), so a winner's file is proven
  against exactly the setting it was measured with;
- `han_up_adapt` / `han_low_sm`: han's inter-node step on adapt instead of libnbc, its node-local step
  on sm instead of tuned (`coll_han_<c>_up_module` / `_low_module`);
- `han_seg_<size>`: the pipeline's segment size (`coll_han_<c>_segsize`, 64 KiB by default; allreduce,
  bcast and reduce are segmented).

The module settings are strings that han turns into its module id only while it registers its
parameters at MPI_Init (coll_han_component.c, mca_coll_han_query_module_from_mca, v5.0.10): MPI_T lets
them be written and nothing changes, so their variants are measured in launches of their own
(read_at_init). Every other setting here is read when a call or a communicator needs it.
"""

from __future__ import annotations

import re

from fabricprobe.tuning.plan.library import Variant

# han's component ids (coll_han.h COMPONENT_T), as its rules file and dynamic module settings name them
COMPONENT_ID = {"self": 0, "basic": 1, "libnbc": 2, "tuned": 3, "sm": 4, "adapt": 5, "han": 6}
SEGMENTS = (16 * 1024, 512 * 1024)  # around han's default of 64 KiB
FLAT = "flat"
HAN = "han_"

# The level of the hierarchy a variant changes (what its proof is about)
GLOBAL, INTER, INTRA, BOTH = "global", "inter-node", "node-local", "both levels"


def parse_han_params(text: str) -> set[str]:
    """The han parameters `ompi_info --parsable --param coll han --level 9` lists."""
    return set(re.findall(r"^mca:coll:han:param:(coll_han_\w+?):value:", text, re.M))


def is_hierarchy(name: str) -> bool:
    """Whether a variant (or a rule's winner) is one of han's: flat, flat_<alg>, han_*."""
    return name == FLAT or name.startswith((FLAT + "_", HAN))


def level_of(name: str) -> str:
    if name == FLAT or name.startswith(FLAT + "_"):
        return GLOBAL
    if name.startswith("han_up"):
        return INTER
    if name.startswith("han_low"):
        return INTRA
    return BOTH


def tuned_algorithm(name: str) -> str:
    """flat_ring -> ring; flat -> "" (tuned's own decision)."""
    return name[len(FLAT) + 1 :] if name.startswith(FLAT + "_") else ""


def han_variants(collective: str, api: str, params: set[str], tuned: list[tuple[int, str]]) -> list[Variant]:
    """han's variants of one collective (`api`: Open MPI's name for it; `tuned`: coll/tuned's (id,
    name) algorithms from ompi_info); none where this han has no switch for it."""
    prefix = f"OMPI_MCA_coll_han_{api}_"
    out: list[Variant] = []
    if f"coll_han_{api}_dynamic_global_communicator_module" in params:
        handoff = {f"{prefix}dynamic_global_communicator_module": str(COMPONENT_ID["tuned"])}
        out.append(Variant(collective, FLAT, "", dict(handoff)))
        for ident, alg in tuned:
            if ident == 0:
                continue
            env = {
                **handoff,
                "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                f"OMPI_MCA_coll_tuned_{api}_algorithm": str(ident),
            }
            out.append(Variant(collective, f"{FLAT}_{alg}", str(ident), env))
    if f"coll_han_{api}_up_module" in params:
        out.append(Variant(collective, "han_up_adapt", "1", {f"{prefix}up_module": "1"}))
    if f"coll_han_{api}_low_module" in params:
        out.append(Variant(collective, "han_low_sm", "1", {f"{prefix}low_module": "1"}))
    if f"coll_han_{api}_segsize" in params:
        for seg in SEGMENTS:
            out.append(Variant(collective, f"han_seg_{seg // 1024}k", str(seg), {f"{prefix}segsize": str(seg)}))
    return out


def read_at_init(variable: str) -> str:
    """Why a han setting cannot be switched at run time although MPI_T lets it be written ("" if it can)."""
    if re.fullmatch(r"coll_han_\w+_(up|low)_module", variable):
        return (
            f"{variable} is turned into han's module id only at MPI_Init (coll_han_component.c: "
            "mca_coll_han_query_module_from_mca); a write through MPI_T changes nothing"
        )
    return ""
