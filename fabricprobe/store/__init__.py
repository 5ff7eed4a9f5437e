"""The HDF5 results store: schema, writer (rank 0) and reader.

Its names are loaded when first used (PEP 562): `fabricprobe.store.schema`, which every rank needs,
does not bring h5py, which only rank 0 writes and reads with (issue 68: start-up at scale)."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "being_written": "fold",
    "Run": "reader",
    "check_results_file": "reader",
    "count_runs": "reader",
    "run_ids": "reader",
    "load_runs": "reader",
    "no_runs": "reader",
    "select_run": "reader",
    "POINT_DTYPE": "schema",
    "SCHEMA_VERSION": "schema",
    "ResultsWriter": "writer",
    "check_output_path": "writer",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
