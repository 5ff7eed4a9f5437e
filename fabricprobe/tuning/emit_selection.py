"""fabricprobe's own selection table: per collective and communicator size, which implementation —
the library's (as launched) or one of fabricprobe's hand-written algorithms — to call at each
message size. `fabricprobe.tuned` reads it."""

from __future__ import annotations

import json

from fabricprobe.tuning.choose import Table
from fabricprobe.tuning.libraries import DEFAULT
from fabricprobe.version import __version__

FORMAT = "fabricprobe-selection"
VERSION = 1


def selection_json(table: Table) -> str:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "written_by": f"fabricprobe {__version__}",
        "library": table.library_version.splitlines()[0] if table.library_version else "",
        "dtype": table.dtype,
        "collectives": {
            coll: [
                {
                    "comm_size": n,
                    "rules": [
                        {
                            "min_bytes": r.lo,
                            "max_bytes": r.hi,
                            "algorithm": "library" if r.winner == DEFAULT else r.winner,
                            "speedup": round(r.speedup, 3),
                        }
                        for r in ranges
                    ],
                }
                for n, ranges in sorted(sections.items())
            ]
            for coll, sections in table.rules.items()
        },
    }
    return json.dumps(doc, indent=1) + "\n"
