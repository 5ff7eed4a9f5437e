"""Open MPI: `ompi_info --parsable --param coll tuned --level 9` enumerates each coll/tuned algorithm
parameter; forcing is `coll_tuned_use_dynamic_rules=1` + `coll_tuned_<coll>_algorithm=ID` (MCA
parameters, read at MPI_Init by a launch, or written through MPI_T before a communicator is made).
Where han serves the job (several nodes), han's own variants join them (plan/openmpi_han.py)."""

from __future__ import annotations

import re

from fabricprobe.errors import UsageError
from fabricprobe.tuning.plan import openmpi_fixed, openmpi_han
from fabricprobe.tuning.plan.library import Library, Variant, names, run_tool, tool

# The environment that loads coll/tuned's rules file: files_off() can switch these off inside a launch
TUNED_RULES = frozenset({"OMPI_MCA_coll_tuned_use_dynamic_rules", "OMPI_MCA_coll_tuned_dynamic_rules_filename"})


class OpenMPI(Library):
    vendor = "Open MPI"
    switches_at_run_time = True
    new_communicator = True  # measured: a write without a new communicator changes nothing
    launch_wide = {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1"}  # read-only before 5.0.6 and 4.1.7
    hierarchy_component = "han"

    def __init__(self, ompi_info: str | None = None, text: str | None = None, han_text: str | None = None) -> None:
        if text is None:
            path = ompi_info or tool("ompi_info")
            if path is None:
                raise UsageError("ompi_info not found next to mpiexec or on PATH: it lists Open MPI's algorithms")
            text = run_tool([path, "--parsable", "--param", "coll", "tuned", "--level", "9"])
            if han_text is None:
                han_text = run_tool([path, "--parsable", "--param", "coll", "han", "--level", "9"])
        self.han_params = openmpi_han.parse_han_params(han_text or "")
        self.hierarchy = False  # han's variants measured too: tune-sweep sets it where han serves the job
        self.enumerators = parse_ompi_info(text)
        self.chain_fanout = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"coll_tuned_(\w+?)_algorithm_chain_fanout:value:(\d+)", text)
        }
        if not self.enumerators:
            raise UsageError("ompi_info lists no coll/tuned algorithms (is coll/tuned built?)")

    default_decider = openmpi_fixed.DECIDED_BY

    def default_choice(self, collective: str, nranks: int, nbytes: int, dtype: str, version: str) -> str | None:
        """coll/tuned's fixed decision (plan/openmpi_fixed.py), for the releases it was read from."""
        api = names(collective).openmpi
        if openmpi_fixed.release(version) not in openmpi_fixed.RELEASES or api not in openmpi_fixed.TREES:
            return None
        ident = openmpi_fixed.fixed_algorithm(api, nranks, nbytes)
        return next((name.replace("-", "_") for i, name in self.enumerators.get(api, []) if i == ident), None)

    def tuned_variants(self, collective: str) -> list[Variant]:
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

    def hierarchy_variants(self, collective: str) -> list[Variant]:
        """han's variants of the collective (plan/openmpi_han.py); none where this Open MPI has no han."""
        if not self.han_params:
            return []
        api = names(collective).openmpi
        return openmpi_han.han_variants(collective, api, self.han_params, self.enumerators.get(api, []))

    def variants(self, collective: str) -> list[Variant]:
        out = self.tuned_variants(collective)
        return out + self.hierarchy_variants(collective) if self.hierarchy else out

    def read_at_init(self, variable: str) -> str:
        return openmpi_han.read_at_init(variable)

    def control_variable(self, env_name: str) -> str | None:
        """OMPI_MCA_coll_tuned_X is the MCA parameter coll_tuned_X, which MPI_T names the same."""
        prefix = "OMPI_MCA_"
        return env_name[len(prefix) :] if env_name.startswith(prefix) else None

    def files_off(self, load_env: dict[str, str]) -> dict[str, str]:
        """coll/tuned reads its rules file when the component opens, if the dynamic rules are on then,
        and each communicator made later follows coll_tuned_use_dynamic_rules as it stands: 0 gives the
        fixed decision, the default (docs/studies/2026-11-29-pairing-in-one-launch). Only for files
        that are coll/tuned's rules alone: han's settings have no such switch."""
        if set(load_env) != TUNED_RULES:
            return {}
        return {"coll_tuned_use_dynamic_rules": "0"}

    def why_files_stay(self, load_env: dict[str, str]) -> str:
        others = sorted(name.removeprefix("OMPI_MCA_") for name in set(load_env) - TUNED_RULES)
        also = ", ".join(others)
        return f"only coll/tuned's rules alone are switched off inside a launch, and these files also set {also}"

    def refuses(self, error: str) -> bool:
        """coll/tuned's two_proc on more than 2 ranks returns MPI_ERR_UNSUPPORTED_OPERATION; its launches
        of its own on 4 and 8 ranks failed with the same error in every run (benchmarks/onelaunch_study.py)."""
        return "MPI_ERR_UNSUPPORTED_OPERATION" in error

    def default_value(self, variable: str) -> str | None:
        if variable == "coll_tuned_use_dynamic_rules":
            return "false"
        return "ignore" if variable.startswith("coll_tuned_") and variable.endswith("_algorithm") else None


def parse_ompi_info(text: str) -> dict[str, list[tuple[int, str]]]:
    """collective -> [(id, name)] from `ompi_info --parsable` coll_tuned_<coll>_algorithm enumerators."""
    out: dict[str, list[tuple[int, str]]] = {}
    pattern = re.compile(r"^mca:coll:tuned:param:coll_tuned_(\w+?)_algorithm:enumerator:value:(\d+):(\S+)$")
    for line in text.splitlines():
        m = pattern.match(line.strip())
        if m:
            out.setdefault(m.group(1), []).append((int(m.group(2)), m.group(3)))
    return out
