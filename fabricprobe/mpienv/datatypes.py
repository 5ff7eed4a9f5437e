"""Datatypes and reduction operations fabricprobe measures, by their CLI names."""

from __future__ import annotations

from typing import Any

import numpy as np

# CLI name -> numpy dtype. MPI datatypes are looked up by name at run time (mpi_datatype).
DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
}
_MPI_DTYPE_NAMES = {"float32": "FLOAT", "float64": "DOUBLE", "int32": "INT32_T", "int64": "INT64_T"}

OPS = ("sum", "max", "min", "prod")
_MPI_OP_NAMES = {"sum": "SUM", "max": "MAX", "min": "MIN", "prod": "PROD"}

NO_OP = "none"  # recorded for collectives that do not reduce
BYTE = "byte"  # recorded for point-to-point tests, which move raw bytes


def mpi_datatype(MPI: Any, name: str) -> Any:
    if name == BYTE:
        return MPI.BYTE
    return getattr(MPI, _MPI_DTYPE_NAMES[name])


def mpi_op(MPI: Any, name: str) -> Any:
    return getattr(MPI, _MPI_OP_NAMES[name])


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(np.uint8) if name == BYTE else DTYPES[name]
