"""fabricprobe's own selection file (fabricprobe_selection.json): the one place its format is written
and read. fabricprobe.tuned loads it.

    {"format": "fabricprobe-selection", "version": 2,
     "library": {"vendor": "Open MPI", "version": "Open MPI v5.0.11, ..."},
     "world": {"size": 4, "ranks_per_node": [2, 2], "virtual": true},
     "dtype": "float32",
     "sections": [{"collective": "allreduce", "comm_size": 4, "ranks_per_node": [2, 2], "density": 0,
                   "rules": [{"min_bytes": 0, "max_bytes": 65536, "algorithm": "library", ...}, ...]}]}

"library" in a rule means the library as launched, with the tuning files the same `tune` wrote
(the rule's "against" names the library algorithm those files run there)."""

from __future__ import annotations

import json
from typing import Any

from fabricprobe.tuning.choose.rules import Decision, Range
from fabricprobe.tuning.choose.selection import Section, Selection
from fabricprobe.version import __version__

FORMAT = "fabricprobe-selection"
VERSION = 2


class FormatError(ValueError):
    """Not a selection file this fabricprobe can read (the message says why)."""


def selection_json(sel: Selection) -> str:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "written_by": f"fabricprobe {__version__}",
        "library": {"vendor": sel.vendor, "version": sel.library_version},
        "world": {"size": sel.world_size, "ranks_per_node": list(sel.world_ranks_per_node), "virtual": sel.virtual},
        "dtype": sel.dtype,
        "sections": [
            {
                "collective": s.collective,
                "comm_size": s.comm_size,
                "ranks_per_node": list(s.ranks_per_node),
                "density": s.density,
                "rules": [
                    {
                        "min_bytes": r.lo,
                        "max_bytes": r.hi,
                        "algorithm": r.winner,
                        "against": sorted({s.against.get(d.size, s.reference) for d in r.decisions}),
                        "speedup": round(r.speedup, 3),
                        "measured_bytes": [d.size for d in r.decisions],
                    }
                    for r in s.ranges
                ],
            }
            for s in sel.sections
        ],
    }
    return json.dumps(doc, indent=1) + "\n"


def parse(doc: Any) -> Selection:
    """A Selection from a loaded JSON document; FormatError says what is wrong with it."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError("not a fabricprobe selection file")
    if doc.get("version") != VERSION:
        raise FormatError(
            f"selection format version {doc.get('version')}, this fabricprobe reads {VERSION}: "
            "run fabricprobe tune again"
        )
    try:
        sections = [
            Section(
                s["collective"],
                int(s["comm_size"]),
                tuple(int(x) for x in s["ranks_per_node"]),
                float(s["density"]),
                [
                    Range(
                        int(r["min_bytes"]),
                        None if r["max_bytes"] is None else int(r["max_bytes"]),
                        str(r["algorithm"]),
                        [Decision(int(m), str(r["algorithm"]), 0.0, 0.0, 0.0) for m in r.get("measured_bytes", [])],
                    )
                    for r in s["rules"]
                ],
            )
            for s in doc["sections"]
        ]
        world = doc["world"]
        return Selection(
            str(doc["library"]["vendor"]),
            str(doc["library"]["version"]),
            int(world["size"]),
            tuple(int(x) for x in world["ranks_per_node"]),
            bool(world.get("virtual", False)),
            str(doc.get("dtype", "float32")),
            sections,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"malformed selection file ({type(exc).__name__}: {exc})") from None
