"""The HDF5 results store: schema, writer (rank 0) and reader."""

from fabricprobe.store.fold import being_written
from fabricprobe.store.reader import Run, check_results_file, count_runs, load_runs, no_runs, select_run
from fabricprobe.store.schema import POINT_DTYPE, SCHEMA_VERSION
from fabricprobe.store.writer import ResultsWriter, check_output_path

__all__ = [
    "POINT_DTYPE",
    "SCHEMA_VERSION",
    "ResultsWriter",
    "Run",
    "being_written",
    "check_output_path",
    "check_results_file",
    "count_runs",
    "load_runs",
    "no_runs",
    "select_run",
]
