"""A sweep's configuration: everything that decides which points are measured and how.

It is stored with every run (as JSON) so `sweep --resume` can rebuild the same plan, and it
is compared across ranks before anything is measured.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from fabricprobe.errors import UsageError
from fabricprobe.specs import SPECS, family

# The --collectives groups, from the spec registry: "all" is everything but the sparse tests.
GROUPS = {"all": family("collective") + family("pt2pt") + family("kernel"), "collectives": family("collective"),
          "pt2pt": family("pt2pt"), "kernels": family("kernel"), "sparse": family("sparse")}
KNOWN = tuple(SPECS)
PAIRS = ("intra", "inter", "all")

# OMB's defaults: 1000 iterations / 100 warm-up up to 8 KiB, 100 / 10 above.
FULL = dict(sizes=[1 << k for k in range(3, 23)], iterations_small=1000, iterations_large=100,
            warmup_small=100, warmup_large=10, max_time=2.0, ci_target=0.02)
# About a minute at n=2 on a 2-core machine, every collective and point-to-point test included.
QUICK = dict(sizes=[8 << (2 * k) for k in range(10)] + [4 << 20], iterations_small=200, iterations_large=40,
             warmup_small=20, warmup_large=4, max_time=0.3, ci_target=0.05)


@dataclass
class SweepConfig:
    collectives: list[str] = field(default_factory=lambda: list(GROUPS["all"]))
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
    window: int = 64
    pairs: list[str] = field(default_factory=lambda: ["intra", "inter"])
    ranks_per_node: list[int] | None = None  # virtual topology; None = the hardware's
    comm_sizes: list[int] | None = None  # sub-communicators of the first k ranks; None = the world only
    library_variant: str = ""  # the forced library algorithm this run measures (tune-sweep), recorded as library:NAME
    root: int = 0
    point_timeout: float = 120.0
    hugepages: bool = False
    buffer: str = "host"  # host, cupy or numba (fabricprobe.memory)
    gpudirect: str = "both"  # device buffers: on, off or both (fabricprobe.engine.gpudirect)
    stage_chunk: int = 1 << 20  # bytes per chunk of the pipelined staging
    assume_cuda_aware: bool = False  # claim direct points although the library does not say it is CUDA-aware
    quick: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> "SweepConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UsageError(f"stored configuration has unknown fields: {', '.join(sorted(unknown))}")
        return cls(**data)

    def iterations_for(self, nbytes: int) -> int:
        return self.iterations_small if nbytes <= self.large_threshold else self.iterations_large

    def warmup_for(self, nbytes: int) -> int:
        return self.warmup_small if nbytes <= self.large_threshold else self.warmup_large


def differing_fields(a: dict, b: dict) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
