"""NCCL output: the CSV NCCL's example tuner plugin reads (NCCL_TUNER_CONFIG_FILE):
collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks. Written only from NCCL
measurements whose algorithm is named ALGORITHM.PROTOCOL (e.g. ring.simple); not verified here
(no GPU in this environment)."""

from __future__ import annotations

from fabricprobe.specs import SPECS
from fabricprobe.tuning.choose import Table
from fabricprobe.tuning.libraries import DEFAULT


def tuner_csv(table: Table, nodes: int = -1) -> str:
    lines = ["# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks"]
    for coll, sections in table.rules.items():
        nccl_name = SPECS[coll].vendor.nccl if SPECS[coll].vendor else ""
        if not nccl_name:
            continue
        for n, ranges in sorted(sections.items()):
            for r in ranges:
                if r.winner == DEFAULT:
                    continue
                algorithm, _, protocol = r.winner.partition(".")
                hi = -1 if r.hi is None else r.hi - 1
                lines.append(f"{nccl_name},{r.lo},{hi},{algorithm},{protocol or 'simple'},-1,{nodes},{n}")
    return "\n".join(lines) + "\n"
