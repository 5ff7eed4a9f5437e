"""The results file: schema, round trip, appends, and refusing files that are not ours."""

import json
import signal
import subprocess
import sys

import h5py
import numpy as np
import pytest

from fabricprobe.errors import UsageError
from fabricprobe.store import ResultsWriter, check_output_path, load_runs, select_run
from fabricprobe.store.repair import repair
from fabricprobe.store.safety import deferred_signals
from fabricprobe.store.schema import FORMAT, POINT_DTYPE, SCHEMA_VERSION


def _row(index, **kw):
    return {
        "index": index,
        "key": f"k{index}",
        "collective": "allreduce",
        "algorithm": "library",
        "dtype": "float32",
        "op": "sum",
        "bytes": 8 << index,
        "nranks": 2,
        "median_s": 1e-6 * (index + 1),
        "status": "ok",
        **kw,
    }


def test_round_trip(results):
    w = ResultsWriter(str(results))
    run_id = w.start_run(
        {
            "nranks": 2,
            "hosts": ["a", "b"],
            "environment": {"UCX_TLS": "shm"},
            "config": {"sizes": [8]},
            "oversubscribed": False,
        }
    )
    samples = np.arange(6.0).reshape(3, 2)
    w.append_point(_row(0), samples)
    w.append_point(_row(1, note="x" * 500), None)  # an over-long free-text note is cut, not fatal
    w.update_run({"status": "complete"})
    runs = load_runs(str(results))
    assert [r.id for r in runs] == [run_id] == ["0001"]
    run = runs[0]
    assert run.attrs["hosts"] == ["a", "b"] and run.attrs["environment"] == {"UCX_TLS": "shm"}
    assert run.config == {"sizes": [8]} and run.status == "complete" and run.attrs["oversubscribed"] is False
    assert [p["key"] for p in run.points] == ["k0", "k1"]
    assert len(run.points[1]["note"]) == POINT_DTYPE["note"].itemsize
    np.testing.assert_array_equal(run.samples(0), samples)
    assert run.samples(1) is None


def test_names_are_never_cut(results):
    """MPICH's longest algorithm names once lost their tail in a 32-byte field and stood for no
    algorithm at all; a name that does not fit must fail loudly instead."""
    from fabricprobe.store.schema import make_row

    longest = "library:" + "k_reduce_scatter_allgather"
    assert make_row({"algorithm": longest})["algorithm"][0].decode() == longest
    with pytest.raises(ValueError, match="algorithm"):
        make_row({"algorithm": "x" * (POINT_DTYPE["algorithm"].itemsize + 1)})


def test_plain_h5py_and_pandas_read_it(results):
    w = ResultsWriter(str(results))
    w.start_run({"nranks": 2})
    w.append_point(_row(0), np.ones((4, 2)))
    w.close()  # plain HDF5 readers see what is folded: at the end of a run (and every FOLD_EVERY_S)
    with h5py.File(results, "r") as f:
        assert f.attrs["format"] == FORMAT and f.attrs["schema_version"] == SCHEMA_VERSION
        table = f["runs/0001/points"][()]
        assert table["median_s"][0] == pytest.approx(1e-6)
        assert f["runs/0001/samples/000000"].shape == (4, 2)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(table)
    assert frame.loc[0, "collective"] == b"allreduce"


def test_runs_append(results, monkeypatch):
    for _ in range(3):
        ResultsWriter(str(results)).start_run({"nranks": 1})
    runs = load_runs(str(results))
    assert [r.id for r in runs] == ["0001", "0002", "0003"]
    from fabricprobe.store import reader

    def unread(*args):
        raise AssertionError("a new run's number read a run of the file")

    ResultsWriter(str(results)).close()  # the three runs folded into the file
    writer = ResultsWriter(str(results))
    monkeypatch.setattr(reader, "_read_run", unread)  # numbered from the runs' names alone
    assert writer.start_run({"nranks": 1}) == "0004"
    monkeypatch.undo()
    writer.close()
    assert [r.id for r in load_runs(str(results))] == ["0001", "0002", "0003", "0004"]
    assert select_run(runs, "-1", "f").id == "0003"
    assert select_run(runs, "2", "f").id == "0002"
    with pytest.raises(UsageError):
        select_run(runs, "9", "f")


def test_not_ours(tmp_path):
    text = tmp_path / "notes.h5"
    text.write_text("hello")
    with pytest.raises(UsageError, match="not HDF5"):
        load_runs(str(text))
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = 1
    with pytest.raises(UsageError, match="not a fabricprobe"):
        load_runs(str(other))
    with pytest.raises(UsageError, match="not a fabricprobe"):
        check_output_path(str(other))
    newer = tmp_path / "newer.h5"
    with h5py.File(newer, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(UsageError, match="schema version"):
        load_runs(str(newer))
    before = newer.read_bytes()
    with pytest.raises(UsageError, match="schema version.*repair changes nothing"):  # it said "intact"
        repair(str(newer))
    assert newer.read_bytes() == before


def test_output_path_checks(tmp_path):
    check_output_path(str(tmp_path / "new.h5"))  # fine, and creates nothing
    assert not (tmp_path / "new.h5").exists()
    with pytest.raises(UsageError, match="directory"):
        check_output_path(str(tmp_path))
    with pytest.raises(UsageError, match="does not exist"):
        check_output_path(str(tmp_path / "missing" / "x.h5"))


@pytest.mark.process
def test_signal_waits_for_the_write_to_finish():
    """SIGTERM during a write is delivered after it, not in the middle."""
    code = (
        "import os, signal, sys\n"
        "from fabricprobe.store.safety import deferred_signals\n"
        "log = []\n"
        "signal.signal(signal.SIGTERM, lambda *a: (log.append('signal'), sys.exit(5)))\n"
        "try:\n"
        "    with deferred_signals():\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        log.append('write done')\n"
        "finally:\n"
        "    print(','.join(log))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 5 and out.stdout.strip() == "write done,signal"


def test_deferral_restores_handlers():
    before = signal.getsignal(signal.SIGINT)
    with deferred_signals():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


def test_json_attrs_are_json(results):
    with ResultsWriter(str(results)) as w:
        w.start_run({"config": {"a": 1}, "notes": ["n"]})
    with h5py.File(results, "r") as f:
        assert json.loads(f["runs/0001"].attrs["config"]) == {"a": 1}


def test_points_from_files_before_device_buffers_read_as_host_memory():
    from fabricprobe.store.schema import POINT_DTYPE, row_to_dict

    old = np.dtype([(n, POINT_DTYPE[n]) for n in POINT_DTYPE.names if n not in ("buffer", "transfer")])
    row = np.zeros(1, old)
    row["collective"] = b"allreduce"
    point = row_to_dict(row[0])
    assert point["buffer"] == "host" and point["transfer"] == "" and point["collective"] == "allreduce"


def test_files_written_before_the_device_fields_still_read(results):
    """A results file from before `buffer` and `transfer` existed reads as host points, and every report
    keyed by the point's identity (series, cases, comparisons) works on it."""
    import io

    from rich.console import Console

    from fabricprobe.report.compare import Side, compare
    from fabricprobe.report.tables import render_run
    from fabricprobe.store.schema import POINT_FIELDS, identity, make_row

    old = np.dtype([(name, kind) for name, kind, _ in POINT_FIELDS if name not in ("buffer", "transfer")])
    rows = np.zeros(2, old)
    for i, algorithm in enumerate(("library", "ring")):
        new = make_row(
            {
                **_row(i, algorithm=algorithm, bytes=1024, nranks=2, mode="barrier", ci_low_s=1e-6, ci_high_s=2e-6),
                "key": f"allreduce|{algorithm}|float32|sum|outofplace|barrier|1024",
            }
        )
        for name in old.names:
            rows[i][name] = new[0][name]
    with h5py.File(results, "w") as f:
        f.attrs["format"], f.attrs["schema_version"] = FORMAT, 1
        g = f.create_group("runs").create_group("0001")
        g.attrs["status"], g.attrs["config"] = "complete", json.dumps({})
        g.create_dataset("points", data=rows)
        g.create_group("samples")
    run = load_runs(str(results))[0]
    assert [(p["buffer"], p["transfer"]) for p in run.points] == [("host", ""), ("host", "")]
    assert identity(run.points[0], without=("algorithm",)) == identity(run.points[1], without=("algorithm",))
    text = io.StringIO()
    render_run(run, Console(file=text, width=200))
    assert "algorithms side by side" in text.getvalue()
    rows = compare(Side("a", run, "library"), Side("b", run, "ring")).rows
    assert len(rows) == 1 and rows[0].key["bytes"] == 1024


def test_resume_keys_keep_their_spelling():
    """--resume matches the keys stored in earlier files: their spelling is part of the schema."""
    from fabricprobe.store.schema import point_key

    assert (
        point_key("allreduce", "ring", "float32", "sum", False, "barrier", 1024)
        == "allreduce|ring|float32|sum|outofplace|barrier|1024"
    )
    assert (
        point_key("latency", "library", "byte", "none", False, "loop", 8, pair="inter")
        == "latency|library|byte|none|outofplace|loop|8|inter"
    )
    assert (
        point_key(
            "sparse_allreduce",
            "gtopk",
            "float32",
            "sum",
            True,
            "barrier",
            4096,
            density=0.01,
            sub_nranks=2,
            buffer="numba",
            transfer="staged",
        )
        == "sparse_allreduce|gtopk|float32|sum|inplace|barrier|4096|d0.01|n2|numba-staged"
    )
    assert (
        point_key("reduce_local", "numba", "float32", "sum", False, "barrier", 8, buffer="cupy")
        == "reduce_local|numba|float32|sum|outofplace|barrier|8|cupy-local"
    )
