"""Intel MPI: `impi_info -v I_MPI_ADJUST_<COLL>` gives the preset range; forcing is
`I_MPI_ADJUST_<COLL>=ID` (environment variables, read at MPI_Init: one launch per preset)."""

from __future__ import annotations

import re

from fabricprobe.errors import UsageError
from fabricprobe.specs import TUNABLE as COLLECTIVES
from fabricprobe.tuning.plan.library import Library, Variant, names, run_tool, tool


class IntelMPI(Library):
    vendor = "Intel MPI"

    def __init__(self, impi_info: str | None = None, ranges: dict[str, int] | None = None) -> None:
        if ranges is None:
            path = impi_info or tool("impi_info")
            if path is None:
                raise UsageError("impi_info not found: it lists Intel MPI's I_MPI_ADJUST presets")
            ranges = {}
            for coll in COLLECTIVES:
                name = names(coll).intel
                text = run_tool([path, "-v", f"I_MPI_ADJUST_{name}"])
                found = re.findall(r"(\d+)\s*[-–]\s*(\d+)", text)
                if found:
                    ranges[coll] = int(found[0][1])
            if not ranges:
                raise UsageError(f"{path} listed no I_MPI_ADJUST preset ranges: nothing to force")
        self.ranges = ranges

    def variants(self, collective: str) -> list[Variant]:
        name = names(collective).intel
        return [self.default(collective)] + [
            Variant(collective, f"preset{i}", str(i), {f"I_MPI_ADJUST_{name}": str(i)})
            for i in range(1, self.ranges.get(collective, 0) + 1)
        ]
