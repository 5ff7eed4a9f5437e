"""A sweep's configuration: everything that decides which points are measured and how.

It is stored with every run (as JSON) so `sweep --resume` can rebuild the same plan, and it
is compared across ranks before anything is measured.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from fabricprobe import collectives
from fabricprobe.choices import check_choices
from fabricprobe.engine.gpudirect import GPUDIRECT
from fabricprobe.errors import UsageError
from fabricprobe.inputs import MAX_ITERATIONS, MAX_RANKS, MAX_SECONDS, checked, regular_file
from fabricprobe.memory import BUFFER_KINDS
from fabricprobe.mpienv.datatypes import DTYPES, OPS
from fabricprobe.mpienv.init import THREAD_LEVELS
from fabricprobe.sizes import MAX_BYTES, format_size
from fabricprobe.specs import SPECS, family
from fabricprobe.specs.base import OMB_WINDOW
from fabricprobe.specs.rma import SYNCS
from fabricprobe.timing.choice import TIMERS
from fabricprobe.timing.loops import MODES

# The --collectives groups, from the spec registry: "all" is everything but the sparse tests; "default"
# (a sweep without --collectives) leaves out the specs that say default_sweep = False.
GROUPS = {
    "all": family("collective") + family("pt2pt") + family("kernel"),
    "default": tuple(n for n in family("collective") + family("pt2pt") + family("kernel") if SPECS[n].default_sweep),
    "collectives": family("collective"),
    "pt2pt": family("pt2pt"),
    "kernels": family("kernel"),
    "sparse": family("sparse"),
}
KNOWN = tuple(SPECS)
PAIRS = ("intra", "inter", "all")
ORDERS = ("fixed", "random")
SEED_MAX = 2**32 - 1
MAX_LAUNCHES = 1000

# OMB's defaults: 1000 iterations / 100 warm-up up to 8 KiB, 100 / 10 above.
VARIANT_MAX = 56  # "library:" + the name must fit the schema's 64-byte algorithm field

STAGE_CHUNK = 1 << 20  # the pipelined staging's default chunk (sweep --stage-chunk)

FULL = dict(
    sizes=[1 << k for k in range(3, 23)],
    iterations_small=1000,
    iterations_large=100,
    warmup_small=100,
    warmup_large=10,
    max_time=2.0,
    ci_target=0.02,
)
# About a minute at n=2 on a 2-core machine, every collective and point-to-point test included.
QUICK = dict(
    sizes=[8 << (2 * k) for k in range(10)] + [4 << 20],
    iterations_small=200,
    iterations_large=40,
    warmup_small=20,
    warmup_large=4,
    max_time=0.3,
    ci_target=0.05,
)


@dataclass
class SweepConfig:
    collectives: list[str] = field(default_factory=lambda: list(GROUPS["default"]))
    algorithms: list[str] = field(default_factory=lambda: ["library"])
    sizes: list[int] = field(default_factory=lambda: list(FULL["sizes"]))
    dtypes: list[str] = field(default_factory=lambda: ["float32"])
    ops: list[str] = field(default_factory=lambda: ["sum"])
    densities: list[float] = field(default_factory=lambda: [0.001, 0.01, 0.1])
    modes: list[str] = field(default_factory=lambda: ["barrier"])
    in_place: list[bool] = field(default_factory=lambda: [False])
    iterations_small: int = FULL["iterations_small"]
    iterations_large: int = FULL["iterations_large"]
    warmup_small: int = FULL["warmup_small"]
    warmup_large: int = FULL["warmup_large"]
    large_threshold: int = 8192
    max_time: float = FULL["max_time"]
    ci_target: float = FULL["ci_target"]
    min_iterations: int = 10
    validate: bool = True
    check_iters: int = 1
    timer: str = "auto"
    thread_level: str = "single"
    window: int = OMB_WINDOW
    pairs: list[str] = field(default_factory=lambda: ["intra", "inter"])
    rma_syncs: list[str] = field(default_factory=lambda: ["flush"])  # one-sided tests' synchronizations (OMB's -s)
    ranks_per_node: list[int] | None = None  # virtual topology; None = the hardware's
    comm_sizes: list[int] | None = None  # sub-communicators of the first k ranks; None = the world only
    # tune-sweep --budget: [algorithm, communicator size, bytes] to measure only; tune --verify's later
    # before/after repetitions: [collective, algorithm, communicator size, bytes] (the rows still open)
    points: list[list] | None = None
    library_variant: str = ""  # the forced library algorithm this run measures (tune-sweep), recorded as library:NAME
    # tune-sweep's one launch: collective -> names of the library's algorithms switched at run time (a
    # LibrarySwitch does it) and measured beside its default, each point labelled library:NAME; with a
    # library_variant, the library's own points are that variant as launched (tune --verify's paired
    # before/after: the files as launched, the default switched beside them)
    library_variants: dict[str, list[str]] | None = None
    # the switched variants measured right before the library's own point at each size, not after (tune
    # --verify's paired before/after alternates which side runs first)
    switched_first: bool = False
    root: int = 0
    point_timeout: float = 120.0
    hugepages: bool = False
    # MiB of message-buffer memory each rank mapped and wrote at its start (memory/arena.py, OMB's
    # setting); 0: buffers mapped when a point needs them. The process applies it, before this is read.
    early_buffers: int = 0
    buffer: str = "host"  # host, cupy or numba (fabricprobe.memory)
    gpudirect: str = "both"  # device buffers: on, off or both (fabricprobe.engine.gpudirect)
    stage_chunk: int = STAGE_CHUNK  # bytes per chunk of the pipelined staging
    assume_cuda_aware: bool = False  # claim direct points although the library does not say it is CUDA-aware
    quick: bool = False
    # The points' order: "fixed" (the plan's: communicator sizes outermost, algorithms innermost) or
    # "random" (blocks of points shuffled with `seed`; -1: rank 0 draws one at the start, recorded)
    order: str = "fixed"
    seed: int = -1
    # sweep --launches K: the K runs of one group (its name), and this run's place among them
    launch_group: str = ""
    launch_index: int = 0
    launches: int = 1
    # the short point-to-point probe for the bound of each collective row (engine/bound_probe.py), made
    # when the run measures no point-to-point test of its own; the sweep command turns it on
    bound_probe: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> "SweepConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UsageError(f"stored configuration has unknown fields: {', '.join(sorted(unknown))}")
        return cls(**data)

    def check(self) -> SweepConfig:
        """Raise UsageError (one line naming the option) unless this sweep can run as configured: one check
        for the command line and for configurations read from a file (--config, --resume)."""
        self._check_types()
        check_choices(self.collectives, KNOWN, "collective", GROUPS)
        check_choices(self.algorithms, collectives.choices(self.algorithms), "algorithm")
        check_choices(self.dtypes, DTYPES, "datatype")
        check_choices(self.ops, OPS, "op")
        check_choices(self.modes, MODES, "mode")
        check_choices(self.pairs, PAIRS, "pair kind")
        check_choices(self.rma_syncs, SYNCS, "one-sided synchronization")
        for what, values in (
            ("collective", self.collectives),
            ("algorithm", self.algorithms),
            ("datatype", self.dtypes),
            ("op", self.ops),
            ("mode", self.modes),
            ("pair kind", self.pairs),
            ("--rma-sync", self.rma_syncs),
            ("--sizes", self.sizes),
            ("--density", self.densities),
            ("--in-place", self.in_place),
        ):
            if not values:
                raise UsageError(f"empty {what} list")
        for option, value, choices in (
            ("--buffer", self.buffer, BUFFER_KINDS),
            ("--gpudirect", self.gpudirect, GPUDIRECT),
            ("--timer", self.timer, TIMERS),
            ("--thread-level", self.thread_level, THREAD_LEVELS),
            ("--order", self.order, ORDERS),
        ):
            if value not in choices:
                raise UsageError(f"invalid {option} {value!r}: choose from {', '.join(choices)}")
        for option, value, minimum in (
            ("--iters", self.iterations_small, 1),
            ("--iters", self.iterations_large, 1),
            ("--warmup", self.warmup_small, 0),
            ("--warmup", self.warmup_large, 0),
            ("--min-iters", self.min_iterations, 1),
            ("--check-iters", self.check_iters, 1),
            ("--window-size", self.window, 1),
            ("--point-timeout", self.point_timeout, 0),
            ("--root", self.root, 0),
            ("--stage-chunk", self.stage_chunk, 1024),
            ("--early-buffers", self.early_buffers, 0),
        ):
            if not value >= minimum:  # NaN fails too
                raise UsageError(f"{option} must be at least {minimum:g} (got {value:g})")
        if not (self.max_time > 0 and math.isfinite(self.max_time)):
            raise UsageError(f"--max-time must be positive (got {self.max_time:g})")
        if not 0 <= self.ci_target < 1:
            raise UsageError(f"--ci-target must be a fraction in [0, 1) (got {self.ci_target:g})")
        if any(not isinstance(s, int) or not 0 <= s <= MAX_BYTES for s in self.sizes):
            # a configuration file's 1e30 bytes gave a "complete" run with no point measured
            raise UsageError(f"invalid --sizes {self.sizes}: sizes are byte counts from 0 to {format_size(MAX_BYTES)}")
        for d in self.densities:
            if not 0 < d <= 1:
                raise UsageError(f"invalid density {d!r}: it must be in (0, 1]")
        for option, counts in (("--ranks-per-node", self.ranks_per_node), ("--comm-sizes", self.comm_sizes)):
            if counts is not None and (not counts or any(not isinstance(c, int) or c < 1 for c in counts)):
                raise UsageError(f"invalid {option} {counts}: expected positive rank counts")
        if self.points is not None and any(not _is_point(p) for p in self.points):
            raise UsageError("invalid points: expected [[collective,] algorithm, communicator size, bytes]")
        if self.library_variant and not _variant_name(self.library_variant):
            raise UsageError(f"invalid --library-variant {self.library_variant!r}: letters, digits, _ - . only")
        if len(self.library_variant) > VARIANT_MAX:
            raise UsageError(f"invalid --library-variant {self.library_variant!r}: at most {VARIANT_MAX} characters")
        if self.library_variants is not None:
            if not isinstance(self.library_variants, dict) or not all(
                isinstance(names, list)
                and all(isinstance(n, str) and _variant_name(n) and len(n) <= VARIANT_MAX for n in names)
                for names in self.library_variants.values()
            ):
                raise UsageError(
                    f"invalid library_variants: collective -> list of algorithm names (letters, digits, _ - .; "
                    f"at most {VARIANT_MAX})"
                )
            check_choices(list(self.library_variants), KNOWN, "collective")
        if self.launch_group and not (_variant_name(self.launch_group) and self.launch_index < self.launches):
            raise UsageError(
                f"invalid launch {self.launch_group!r} {self.launch_index} of {self.launches}: "
                "a name of letters, digits, _ - . and an index below the count"
            )
        if self.early_buffers and (self.hugepages or self.buffer != "host"):
            other = "--hugepages" if self.hugepages else f"--buffer {self.buffer}"
            raise UsageError(f"--early-buffers gives host buffers on 4 KiB pages, as OMB's: leave out {other}")
        if self.buffer == "host":  # device-buffer settings were ignored in silence with host buffers
            device = [
                option
                for option, given in (
                    (f"--gpudirect {self.gpudirect}", self.gpudirect != "both"),
                    ("--stage-chunk", self.stage_chunk != STAGE_CHUNK),
                    ("--assume-cuda-aware", self.assume_cuda_aware),
                )
                if given
            ]
            if device:
                raise UsageError(f"{', '.join(device)}: device-buffer settings; give --buffer cupy or numba")
        if self.buffer != "host" and self.timer == "native":
            raise UsageError(
                "--timer native cannot time device buffers: their copies and stream synchronisations "
                "are Python calls (use --timer auto or python)"
            )
        if self.timer == "native":  # such a point ended in an error, exit 1 (issue 53)
            untimed = [
                f"{name} with --rma-sync {sync}"
                for name in self.collectives
                if name in SPECS and SPECS[name].rma
                for sync in self.rma_syncs
                if not SPECS[name].native_timer(sync)
            ]
            if untimed:
                more = f" (and {len(untimed) - 1} more)" if len(untimed) > 1 else ""
                raise UsageError(
                    f"--timer native cannot time {untimed[0]}{more}: only --rma-sync flush has a compiled "
                    "loop (use --timer auto)"
                )
        return self

    def _check_types(self) -> None:
        """Every field of its type, before any value is used: a configuration file's "validate": "no"
        was a true string (validation stayed on), a string count crashed after the run had started."""
        for name, kind in _SCALARS.items():
            checked(getattr(self, name), name, kind, None, None)
        for name, kind in _LISTS.items():
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            if not isinstance(value, list):
                raise UsageError(f"invalid {name} {value!r}: expected a list")
            for item in value:
                checked(item, name, kind, None, None)
        for name, lo, hi in _COUNTS:
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise UsageError(f"invalid {name} {value}: from {lo:g} to {hi:g}")

    @classmethod
    def from_file(cls, path: str) -> SweepConfig:
        """A configuration written as JSON (a results file's run config, as `report --format json` shows it)."""
        import json

        try:
            if not regular_file(path, "--config"):
                raise UsageError(f"cannot read --config {path}: no such file")
            with open(path) as f:
                data = json.load(f)
        except OSError as exc:
            raise UsageError(f"cannot read --config {path}: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(f"--config {path} is not JSON: {exc}") from None
        except RecursionError:  # json's parser recurses once per nested array or object
            raise UsageError(f"--config {path} nests arrays or objects too deeply to be a configuration") from None
        if not isinstance(data, dict):
            raise UsageError(f"--config {path} holds no configuration object")
        try:
            return cls.from_dict(data).check()
        except TypeError as exc:
            raise UsageError(f"--config {path}: {exc}") from None

    def iterations_for(self, nbytes: int) -> int:
        return self.iterations_small if nbytes <= self.large_threshold else self.iterations_large

    def warmup_for(self, nbytes: int) -> int:
        return self.warmup_small if nbytes <= self.large_threshold else self.warmup_large


_SCALARS = {
    "iterations_small": int,
    "iterations_large": int,
    "warmup_small": int,
    "warmup_large": int,
    "large_threshold": int,
    "max_time": float,
    "ci_target": float,
    "min_iterations": int,
    "validate": bool,
    "check_iters": int,
    "timer": str,
    "thread_level": str,
    "window": int,
    "library_variant": str,
    "switched_first": bool,
    "root": int,
    "point_timeout": float,
    "hugepages": bool,
    "early_buffers": int,
    "buffer": str,
    "gpudirect": str,
    "stage_chunk": int,
    "assume_cuda_aware": bool,
    "quick": bool,
    "order": str,
    "seed": int,
    "launch_group": str,
    "launch_index": int,
    "launches": int,
    "bound_probe": bool,
}
_LISTS = {
    "collectives": str,
    "algorithms": str,
    "sizes": int,
    "dtypes": str,
    "ops": str,
    "densities": float,
    "modes": str,
    "in_place": bool,
    "pairs": str,
    "rma_syncs": str,
    "ranks_per_node": int,
    "comm_sizes": int,
    "points": list,
}
_OPTIONAL = ("ranks_per_node", "comm_sizes", "points")
_COUNTS = (  # the largest values anyone means (10**12 iterations asked numpy for terabytes)
    ("iterations_small", 1, MAX_ITERATIONS),
    ("iterations_large", 1, MAX_ITERATIONS),
    ("warmup_small", 0, MAX_ITERATIONS),
    ("warmup_large", 0, MAX_ITERATIONS),
    ("min_iterations", 1, MAX_ITERATIONS),
    ("check_iters", 1, 1000),
    ("window", 1, 1 << 20),
    ("root", 0, MAX_RANKS),
    ("point_timeout", 0, MAX_SECONDS),
    ("max_time", 0, MAX_SECONDS),
    ("seed", -1, SEED_MAX),
    ("launch_index", 0, MAX_LAUNCHES - 1),
    ("launches", 1, MAX_LAUNCHES),
)


def _variant_name(name: str) -> bool:
    """A library algorithm's name as a point label carries it: ASCII letters, digits, _ - . only."""
    return bool(name) and name.isascii() and all(c.isalnum() or c in "_-." for c in name)


def differing_fields(a: dict, b: dict) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _is_point(p) -> bool:
    """[algorithm, communicator size, bytes] or [collective, algorithm, communicator size, bytes]."""
    if not isinstance(p, (list, tuple)) or len(p) not in (3, 4):
        return False
    names, numbers = p[:-2], p[-2:]
    return all(isinstance(x, str) for x in names) and all(
        isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in numbers
    )
