"""Model parameters: per-message latency α, per-byte time β (per link level) and per-byte
reduction time γ (Thakur, Rabenseifner & Gropp 2005), plus the software overheads of
fabricprobe's Python implementations, measured separately so the fabric terms stay the fabric's."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Link:
    alpha: float  # seconds per message
    beta: float  # seconds per byte


@dataclass(frozen=True)
class Params:
    intra: Link  # between ranks of one node
    inter: Link  # between nodes (equal to intra when the run had one level)
    gamma: float  # seconds per byte reduced
    message_overhead: float = 0.0  # extra seconds per message when sent through mpi4py calls
    reduce_overhead: float = 0.0  # seconds per call of the reduction kernel
    nic_sharing: bool = True  # g concurrent inter-node flows from a node share its link (β_eff = g·β)

    def as_dict(self) -> dict:
        return asdict(self)
