"""Which component of the MPI library serves a collective on a communicator, and inside it which
component serves each level: the fact a tuning file is about. On one node Open MPI's `coll/tuned`
serves every collective fabricprobe measures; on several nodes Open MPI 5 enables `han` (priority 35,
above tuned's 30) for allreduce, bcast, reduce, allgather, gather, scatter and barrier, and han runs a
node-local step and an inter-node step on sub-communicators of its own, each served by another
component (tuned, sm, libnbc, adapt), so a coll_tuned rule keyed on the whole communicator's size is
never consulted for those collectives. A site's `hcoll` (priority 90) or `ucc` takes collectives over
completely. MPICH's CH4 device runs a composition (node-local step, node leaders' step) and the MPIR
algorithm only on the step the composition hands to MPIR.

How it is found: by Open MPI's own selection rule (ompi/mca/coll/base/coll_base_comm_select.c: every
component that qualifies on the communicator is enabled in increasing priority, each replacing the
functions it provides; read in v5.0.10) applied to what the library says through MPI_T in the job —
each registered component's priority and enable switch, the `coll` include/exclude list, han's
per-collective level modules, its algorithm and rules-file settings — and to where the
communicator's ranks are (nodes, ranks per node). Open MPI's verbose selection output
(`--mca coll_base_verbose 10`, "selecting han, priority 35, Enabled") is the check in the tests, on one
node and in the lab. What it cannot see: the algorithm hcoll or ucc pick inside themselves; a
component fabricprobe does not know (named as such, with its priority); han's run-time fallbacks on
inputs fabricprobe does not measure (non-commutative operations); which rule of a rules file applies
at each size (named as "per the rules file"; the file's name is in the run's coll_settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What each Open MPI component provides among the blocking collectives (its comm_query sets these
# function pointers; v5.0.10 sources: coll_<name>_module.c). han's set is for the whole communicator.
# The non-blocking (i<coll>) and persistent (<coll>_init) ones are libnbc's (coll_libnbc_module.c);
# hcoll's and ucc's non-blocking collectives are not modelled here.
_BASIC = (
    "allgather allgatherv allreduce alltoall alltoallv alltoallw barrier bcast exscan gather gatherv "
    "reduce reduce_scatter reduce_scatter_block scan scatter scatterv".split()
)
PROVIDES: dict[str, frozenset[str]] = {
    "libnbc": frozenset(["i" + c for c in _BASIC] + [c + "_init" for c in _BASIC]),
    "basic": frozenset(
        "allgather allgatherv allreduce alltoall alltoallv alltoallw barrier bcast exscan gather gatherv "
        "reduce reduce_scatter reduce_scatter_block scan scatter scatterv".split()
    ),
    "tuned": frozenset(
        "allgather allgatherv allreduce alltoall alltoallv barrier bcast exscan gather reduce "
        "reduce_scatter reduce_scatter_block scan scatter".split()
    ),
    "sm": frozenset("allreduce barrier bcast reduce".split()),
    "adapt": frozenset("bcast reduce".split()),
    "han": frozenset("allreduce allgather barrier bcast gather reduce scatter".split()),
    "hcoll": frozenset(
        "allgather allgatherv allreduce alltoall alltoallv barrier bcast gatherv reduce reduce_scatter "
        "reduce_scatter_block scatterv".split()
    ),
    "ucc": frozenset(
        "allgather allgatherv allreduce alltoall alltoallv barrier bcast gather gatherv reduce "
        "reduce_scatter reduce_scatter_block scatter scatterv".split()
    ),
}
_DEFAULT_PRIORITY = {"libnbc": 10, "basic": 10, "tuned": 30, "sm": 0, "adapt": 0, "han": 35, "hcoll": 90, "ucc": 10}
# han: the components its level settings name (coll_han.h's COMPONENT_T order), its up/low module
# choices ("0 libnbc, 1 adapt" / "0 tuned, 1 sm"), and the collectives whose default is the "simple"
# algorithm (sub-communicators served by han's own per-level module choice) rather than the tasks one.
HAN_COMPONENTS = ("self", "basic", "libnbc", "tuned", "sm", "adapt", "han")
HAN_UP = ("libnbc", "adapt")
HAN_LOW = ("tuned", "sm")
_HAN_SIMPLE_ONLY = frozenset({"barrier"})
_HAN_SIMPLE_DEFAULT = frozenset({"gather"})
# han falls back to the next component for these when nodes hold different numbers of ranks
_HAN_NEEDS_BALANCE = frozenset({"bcast", "reduce", "allgather", "gather", "scatter"})
_LEVELS = {"global": "global_communicator", "inter-node": "inter_node", "node-local": "intra_node"}


@dataclass(frozen=True)
class CommShape:
    """Where a communicator's ranks are: what the libraries' selection looks at."""

    size: int
    nodes: int
    balanced: bool  # every node holds the same number of its ranks
    most_per_node: int = 2  # the most of its ranks on one node

    @classmethod
    def of(cls, node_of: list[int] | tuple[int, ...]) -> "CommShape":
        counts: dict[int, int] = {}
        for node in node_of:
            counts[node] = counts.get(node, 0) + 1
        return cls(len(node_of), len(counts), len(set(counts.values())) <= 1, max(counts.values(), default=0))

    @classmethod
    def of_hosts(cls, hosts: list[str] | tuple[str, ...]) -> "CommShape":
        """From each rank's host name, in rank order."""
        names = sorted(set(hosts))
        return cls.of([names.index(h) for h in hosts])

    def describe(self) -> str:
        return f"{self.size} ranks of {self.nodes} node{'s' if self.nodes != 1 else ''}"


@dataclass(frozen=True)
class Path:
    """The component that serves a collective and, for a hierarchical one, each level's component."""

    component: str
    levels: tuple[tuple[str, str], ...] = ()  # ("inter-node", "libnbc"), ("node-local", "tuned")
    note: str = ""

    def describe(self) -> str:
        text = self.component
        if self.levels:
            text += " (" + ", ".join(f"{level}: {name}" for level, name in self.levels) + ")"
        return text + (f"; {self.note}" if self.note else "")

    @property
    def tuned_rules_consulted(self) -> bool:
        """Whether a coll_tuned rule keyed on the whole communicator's size can apply (tune --verify)."""
        return self.component == "tuned"


@dataclass
class Settings:
    """What the library says about its collective components (MPI_T control variables, by name)."""

    vendor: str
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        value = self.values.get(name)
        return default if value is None else value


def openmpi_names(collectives: list[str] | tuple[str, ...]) -> list[str]:
    """The MPI_T control variables `openmpi_path` reads."""
    names = ["coll", "coll_tuned_use_dynamic_rules", "coll_tuned_dynamic_rules_filename"]
    names += [f"coll_{c}_priority" for c in (*PROVIDES, "acoll", "xhc", "accelerator", "cuda")]
    names += ["coll_hcoll_enable", "coll_hcoll_np", "coll_ucc_enable", "coll_ucc_np"]
    names += ["coll_han_use_dynamic_file_rules", "coll_han_dynamic_rules_filename", "coll_han_reproducible"]
    for c in collectives:
        names += [f"coll_han_{c}_dynamic_{level}_module" for level in _LEVELS.values()]
        names += [f"coll_han_{c}_up_module", f"coll_han_{c}_low_module", f"coll_han_use_{c}_algorithm"]
        names += [f"coll_han_use_simple_{c}"]
    return names


def _include_list(settings: Settings) -> tuple[set[str] | None, set[str]]:
    """The `coll` variable: (only these, or None for all; never these)."""
    text = str(settings.get("coll", "") or "").strip()
    if not text:
        return None, set()
    names = {n.strip() for n in text.lstrip("^").split(",") if n.strip()}
    return (None, names) if text.startswith("^") else (names, set())


def _enabled(settings: Settings, shape: CommShape) -> list[tuple[int, str]]:
    """(priority, component) of every component enabled on the communicator, lowest priority first."""
    only, never = _include_list(settings)
    out = []
    for name in PROVIDES:
        priority = settings.get(f"coll_{name}_priority")
        if priority is None or (only is not None and name not in only) or name in never:
            continue  # not built into this library, or excluded
        priority = int(priority)
        if priority < 0 or shape.size < 2:
            continue
        if name == "han" and shape.nodes < 2:
            continue  # "comm has only local processes; disqualifying myself"
        if name == "sm" and shape.nodes > 1:
            continue  # "not all peers local"
        if name in ("sm", "adapt") and priority <= _DEFAULT_PRIORITY["basic"]:
            continue  # enabled before any component providing reduce: "no underlying reduce"
        if name == "hcoll" and (
            not int(settings.get("coll_hcoll_enable", 1)) or shape.size < int(settings.get("coll_hcoll_np", 2))
        ):
            continue
        if name == "ucc" and (
            not int(settings.get("coll_ucc_enable", 0)) or shape.size < int(settings.get("coll_ucc_np", 2))
        ):
            continue
        out.append((priority, name))
    return sorted(out)


def _unknown(settings: Settings, top: int) -> str:
    """Components this module does not know that could outrank the one it found."""
    extra = []
    for name in ("acoll", "xhc"):
        priority = settings.get(f"coll_{name}_priority")
        if priority is not None and int(priority) >= top:
            extra.append(f"{name} (priority {priority})")
    return "may be taken by " + ", ".join(extra) + ": what it provides is not known here" if extra else ""


def _han_module(value: Any, choices: tuple[str, str]) -> str:
    """An up/low module setting: a number or a name, as han's mca_coll_han_query_module_from_mca reads
    it (a name becomes its COMPONENT_T number; 5.0's default string is "self", number 0)."""
    text = str(value).strip()
    if text in choices:
        return text
    number = int(text) if text.isdigit() else (HAN_COMPONENTS.index(text) if text in HAN_COMPONENTS else 0)
    return choices[number] if 0 <= number < len(choices) else f"module {text}"


def _han_levels(settings: Settings, api: str) -> tuple[tuple[str, str], ...]:
    def dynamic(level: str) -> str:
        value = int(settings.get(f"coll_han_{api}_dynamic_{_LEVELS[level]}_module", 3))
        return HAN_COMPONENTS[value] if 0 <= value < len(HAN_COMPONENTS) else f"component {value}"

    algorithm = str(settings.get(f"coll_han_use_{api}_algorithm", "default"))  # read by name (its enumeration)
    simple = (
        api in _HAN_SIMPLE_ONLY
        or algorithm == "simple"
        or (
            algorithm in ("0", "default")
            and bool(int(settings.get(f"coll_han_use_simple_{api}", int(api in _HAN_SIMPLE_DEFAULT))))
        )
    )
    if simple:
        up, low = dynamic("inter-node"), dynamic("node-local")
    else:
        up = _han_module(settings.get(f"coll_han_{api}_up_module", 0), HAN_UP)
        low = _han_module(settings.get(f"coll_han_{api}_low_module", 0), HAN_LOW)
    return (("inter-node", up), ("node-local", low))


def openmpi_path(settings: Settings, api: str, shape: CommShape) -> Path:
    """The component Open MPI selects for blocking collective `api` (its coll API name: allreduce,
    reduce_scatter_block, ...) on an intra-communicator of this shape, host buffers."""
    if shape.size < 2:
        return Path("self")
    enabled = _enabled(settings, shape)
    serving = [(p, name) for p, name in enabled if api in PROVIDES[name]]
    if not serving:
        return Path("unknown", note="no known component provides it")
    priority, name = serving[-1]
    below = [n for _, n in serving[:-1]]
    unknown = _unknown(settings, priority)
    if name == "han":
        fallback = below[-1] if below else "basic"
        if shape.most_per_node <= 1:
            # coll_han_subcomms.c: "HAN is not yet optimized for a single process per node case":
            # at the first call it gives every collective back to the component below and stays out
            # (seen in the lab's 4 × 1: the allreduce trace is tuned's, and a forced tuned ring shows)
            return Path(fallback, note="han passes through: one rank a node")
        if int(settings.get("coll_han_reproducible", 0)) and api in ("allreduce", "reduce"):
            return Path("han", note=f"reproducible: its fallback to {fallback}")
        if not shape.balanced and api in _HAN_NEEDS_BALANCE:
            return Path(fallback, note="han falls back: nodes hold different numbers of ranks")
        if int(settings.get("coll_han_use_dynamic_file_rules", 0)) and settings.get("coll_han_dynamic_rules_filename"):
            return Path(
                "han", note="per han's rules file (coll_han_dynamic_rules_filename: component and levels per size)"
            )
        top = int(settings.get(f"coll_han_{api}_dynamic_global_communicator_module", 6))
        if top != 6:
            component = HAN_COMPONENTS[top] if 0 <= top < len(HAN_COMPONENTS) else f"component {top}"
            return Path(component, note=f"han hands the whole communicator to {component}")
        return Path("han", _han_levels(settings, api), note=unknown)
    if name == "tuned" and int(settings.get("coll_tuned_use_dynamic_rules", 0)):
        if settings.get("coll_tuned_dynamic_rules_filename"):
            return Path("tuned", note="per tuned's rules file" + (f"; {unknown}" if unknown else ""))
    if name in ("hcoll", "ucc"):
        return Path(name, note="its own algorithms: Open MPI's tuning files do not apply")
    return Path(name, note=unknown)


MPICH_COMPOSITIONS = {  # MPIR_CVAR_<C>_COMPOSITION's values (their descriptions in MPICH 4.0-5.0)
    "ALLREDUCE": ("auto", "NM + SHM with reduce + bcast", "NM only", "SHM only", "multi-leaders"),
    "BCAST": ("auto", "NM + SHM with send-recv to root", "NM + SHM", "NM only"),
    "REDUCE": ("auto", "NM + SHM with send-recv to root", "NM + SHM", "NM only"),
    "ALLGATHER": ("auto", "multi-leaders", "NM only"),
    "ALLTOALL": ("auto", "multi-leaders", "NM only"),
    "BARRIER": ("auto", "NM + SHM", "NM only"),
}


def mpich_names(collectives: list[str] | tuple[str, ...]) -> list[str]:
    names = ["MPIR_CVAR_DEVICE_COLLECTIVES", "MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE"]
    for c in collectives:
        names += [f"MPIR_CVAR_{c}_DEVICE_COLLECTIVE", f"MPIR_CVAR_{c}_COMPOSITION", f"MPIR_CVAR_{c}_INTRA_ALGORITHM"]
    return names


def mpich_path(settings: Settings, api: str, shape: CommShape) -> Path:
    """MPICH (CH4): the device's composition or the flat MPIR algorithm for `api` (MPICH's name:
    ALLREDUCE, REDUCE_SCATTER_BLOCK, ...)."""
    algorithm = str(settings.get(f"MPIR_CVAR_{api}_INTRA_ALGORITHM", "auto") or "auto")
    device = str(settings.get("MPIR_CVAR_DEVICE_COLLECTIVES", "percoll"))
    per_coll = int(settings.get(f"MPIR_CVAR_{api}_DEVICE_COLLECTIVE", 1))
    flat = Path("MPIR", (("whole communicator", algorithm),))
    if device in ("none", "1") or (device in ("percoll", "2") and not per_coll) or shape.size < 2:
        return flat
    names = MPICH_COMPOSITIONS.get(api)
    if names is None:
        return Path("CH4", (("whole communicator", f"MPIR {algorithm}"),), note="no composition for it")
    value = settings.get(f"MPIR_CVAR_{api}_COMPOSITION", 0)
    composition = names[int(value)] if str(value).isdigit() and int(value) < len(names) else str(value)
    json_file = settings.get("MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE") or ""
    component, note = "CH4", ""
    if mpich_hierarchical(shape):
        component = MPICH_HIERARCHY
    elif shape.nodes > 1:
        note = "one rank a node: every composition is the NM step on the whole communicator; "
    if composition == "auto":
        how = "per the CH4 selection file" if json_file else "from CH4's built-in selection tree"
        return Path(
            component,
            (("composition", "auto"),),
            note=f"{note}chosen per call {how}; MPIR {algorithm} where it calls MPIR",
        )
    if shape.nodes < 2 and composition.startswith("NM"):
        composition += " (one node: NM is the whole communicator)"
    return Path(component, (("composition", composition),), note=f"{note}MPIR {algorithm} on its NM step")


# What serves a collective on a communicator with node and node-leader sub-communicators (several nodes,
# more than one rank on some node): the CH4 composition steers it, and an MPIR algorithm runs only on
# the steps the composition hands to MPIR, on sub-communicators of other sizes.
MPICH_HIERARCHY = "CH4 composition"


def mpich_hierarchical(shape: CommShape) -> bool:
    """Whether MPICH composes a collective from node-local and node-leader steps on this communicator.
    With one rank a node the node communicators hold one rank each and every composition is the same
    messages as the NM step on the whole communicator: measured in the lab (MPICH 5.0.2 wheel, 2 x 1,
    1 MiB allreduce), compositions 1-4 and the default leave one trace, [[262144], [262144]]; on 2 x 2
    they differ (NM + SHM: rank 0 reduces 2,048-element chunks, then 262,144 between the leaders; NM
    only: 2 steps of 262,144 on every rank; multi-leaders: chunks of 128)."""
    return shape.nodes > 1 and shape.most_per_node > 1


def read(MPI: Any, vendor: str, collectives: list[str]) -> Settings:
    """Every variable the resolver reads, from the library in this process (absent ones are None)."""
    from fabricprobe.mpienv.mpit import MpitError, ToolInterface

    names = (
        openmpi_names(collectives) if vendor == "Open MPI" else mpich_names(collectives) if vendor == "MPICH" else []
    )
    values: dict[str, Any] = {}
    if not names:
        return Settings(vendor)
    try:
        with ToolInterface(MPI) as tool:
            for name in names:
                var = tool.find(name)
                if var is None:
                    continue
                try:
                    value = tool.read(var)
                except MpitError:
                    continue
                if var.values and name.endswith(("_INTRA_ALGORITHM", "DEVICE_COLLECTIVES", "_algorithm")):
                    value = var.name_of(value)  # the name, where the library enumerates the values
                values[name] = value
    except MpitError:
        return Settings(vendor, {"unavailable": "no MPI tool interface"})
    return Settings(vendor, values)


def resolve(settings: Settings, api: str, shape: CommShape) -> Path | None:
    """The path for `api` under the library the settings came from; None where it is not known."""
    if settings.values.get("unavailable"):
        return None
    if settings.vendor == "Open MPI":
        return openmpi_path(settings, api, shape)
    if settings.vendor == "MPICH":
        return mpich_path(settings, api, shape)
    return None
