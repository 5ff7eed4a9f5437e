"""The lab's slow shared file system (benchmarks/slowfs.py), which docs/scale.md's start-up figures on a
shared file system come from: what it serves is the folder's, read-only; every metadata operation
waits its latency and is counted, a failed lookup every time (nothing negative is cached, as Python's
failed opens reached LLNL's metadata servers), a name found is kept by the kernel for a second; a
Python package imports through it; SIGTERM unmounts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # the FUSE server and a Python that imports through it
SLOWFS = Path(__file__).resolve().parents[2] / "benchmarks" / "slowfs.py"
LATENCY_MS = 30.0


def _needs_fuse() -> None:
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0:
        pytest.skip("needs /dev/fuse and root (the site session installs fuse3)")
    pytest.importorskip("mfusepy")


@pytest.fixture
def mounted(tmp_path):
    _needs_fuse()
    source, mountpoint = tmp_path / "source", tmp_path / "mnt"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "__init__.py").write_text("")
    (source / "pkg" / "mod.py").write_text("VALUE = 'served'\n")
    (source / "data.bin").write_bytes(bytes(range(256)) * 1000)
    mountpoint.mkdir()
    server = subprocess.Popen(
        [sys.executable, str(SLOWFS), str(source), str(mountpoint), "--latency-ms", str(LATENCY_MS)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not os.path.ismount(mountpoint):
        assert server.poll() is None and time.monotonic() < deadline, server.communicate()[1][-2000:]
        time.sleep(0.1)
    yield source, mountpoint, server
    if server.poll() is None:
        server.terminate()
        server.wait(timeout=30)


def _counts(mountpoint: Path) -> dict[str, int]:
    return json.loads((mountpoint / ".slowfs-ops").read_text())


def test_it_serves_the_folder_read_only_and_counts_every_metadata_operation(mounted):
    source, mountpoint, _ = mounted
    assert (mountpoint / "data.bin").read_bytes() == (source / "data.bin").read_bytes()
    assert sorted(os.listdir(mountpoint)) == ["data.bin", "pkg"]  # the counts file is never listed
    with pytest.raises(OSError) as refused:
        (mountpoint / "new").write_text("x")
    assert refused.value.errno == 30  # EROFS
    before = _counts(mountpoint)
    took = []
    for _ in range(3):
        t0 = time.perf_counter()
        assert not (mountpoint / "missing.py").exists()
        took.append(time.perf_counter() - t0)
    after = _counts(mountpoint)
    assert after["failed"] - before.get("failed", 0) == 3  # each failed lookup reached the server
    assert min(took) >= LATENCY_MS / 1e3  # and waited its latency
    (mountpoint / "pkg" / "mod.py").stat()
    cached = _counts(mountpoint)
    (mountpoint / "pkg" / "mod.py").stat()  # within a second: the kernel's entry and attributes
    assert _counts(mountpoint) == cached


def test_a_python_package_imports_through_it_and_sigterm_unmounts_it(mounted):
    source, mountpoint, server = mounted
    before = sum(_counts(mountpoint).values())
    code = "import pkg.mod; print(pkg.mod.VALUE)"
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(mountpoint)}, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "served", done.stderr[-2000:]
    assert sum(_counts(mountpoint).values()) > before  # the import's lookups were served
    server.terminate()
    assert server.wait(timeout=30) == 0
    assert not os.path.ismount(mountpoint) and os.listdir(mountpoint) == []
