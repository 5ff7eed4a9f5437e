from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mpirun import launcher  # noqa: E402


def pytest_report_header(config):
    found = launcher()
    return f"mpiexec: {found.mpiexec} ({found.vendor})" if found else "mpiexec: none (MPI tests skipped)"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A path for a results file inside the test's own directory."""
    return tmp_path / "results.h5"
