"""The write-ahead journal beside a results file (FILE.journal): how a point becomes durable.

HDF5 is not crash-safe when a file is modified in place: a process killed inside a write can leave
its free lists or B-trees inconsistent and earlier data unreachable (seen: "bad heap free list" after
1 of 78 targeted SIGKILLs). So the writer never modifies the results file in place. Every change (a
run started, a point measured, a run's attributes updated) is appended to the journal as one record
and fsync'd: that is the moment the point is complete. The journal is folded into the HDF5 file by
writing a copy and renaming it over the original (fabricprobe.store.fold), which is atomic.

A record: b"FPJ1", the payload's length (uint64, little-endian), its CRC-32 (uint32), the payload:
a JSON header line, then the point's row and its timings (raw float64: the samples, then for a point
of many ranks each iteration's maximum and every rank's row, stats.PointTimes). The header names the row's
fields and their types (`row_fields`): a reader whose schema gained or lost a field since reads
every field by name (before, the raw row of one version was unreadable to the next: an interrupted
run's journal written before `served_by` was added lost every point, skipped as damaged). Each
record stands on its own checksum: a damaged one (a flipped bit, a record that names no run) is skipped
and reported, and reading goes on at the next record that checks out (found by its magic and
checksum), so one bad record never takes the ones after it. Bytes after the last intact record with
no intact record after them are a write cut short by a kill (torn): never reported complete.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricprobe.inputs import regular_file
from fabricprobe.stats import PointTimes
from fabricprobe.store.schema import POINT_DTYPE

MAGIC = b"FPJ1"
ROW_FIELDS = [[name, POINT_DTYPE[name].str] for name in POINT_DTYPE.names]
# Journals written before rows named their fields hold the POINT_DTYPE of their version: the current
# one less the fields added since, newest first (schema.py's order of addition).
ADDED_SINCE = ("served_by",)
_HEAD = struct.Struct("<4sQI")
START, POINT, UPDATE = "start_run", "point", "update_run"


def journal_path(path: str) -> str:
    return path + ".journal"


def _plain(value: Any) -> Any:
    """JSON for numpy scalars and arrays inside attributes."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a run's attributes")


def _row_dtype(fields: list | None, nbytes: int) -> np.dtype:
    """The dtype a record's row was written with: named in the record, or for a record written before
    rows named their fields, the version of POINT_DTYPE whose size it has."""
    if fields:
        return np.dtype([(str(name), str(kind)) for name, kind in fields])
    dtype = POINT_DTYPE
    for k in range(len(ADDED_SINCE) + 1):
        if dtype.itemsize == nbytes:
            return dtype
        if k < len(ADDED_SINCE):
            dtype = np.dtype([(n, POINT_DTYPE[n]) for n in dtype.names if n != ADDED_SINCE[k]])
    raise ValueError(f"a point row of {nbytes} bytes matches no schema this version knows")


def with_fields(row: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Rows of any version in `dtype`: fields matched by name, a field they lack zero/empty
    (row_to_dict reads those as PREDATING says), a field `dtype` does not have left out."""
    if row.dtype == dtype:
        return row.copy()
    out = np.zeros(len(row), dtype)
    for name in dtype.names:
        if name in row.dtype.names:
            out[name] = row[name]
    return out


def current_row(row: np.ndarray) -> np.ndarray:
    """A row of any version as a POINT_DTYPE row."""
    return with_fields(row, POINT_DTYPE)


@dataclass
class Record:
    kind: str  # START, POINT or UPDATE
    run: str
    attrs: dict[str, Any] | None = None  # START and UPDATE
    row: np.ndarray | None = None  # POINT: one POINT_DTYPE row
    times: PointTimes | None = None  # POINT: its timings (stats.PointTimes), or None

    @property
    def index(self) -> int:
        return int(self.row[0]["index"])

    def encode(self) -> bytes:
        header: dict[str, Any] = {"kind": self.kind, "run": self.run}
        body = b""
        if self.attrs is not None:
            header["attrs"] = self.attrs
        if self.row is not None:
            body = np.ascontiguousarray(self.row, POINT_DTYPE).tobytes()
            header["row_bytes"] = len(body)
            header["row_fields"] = ROW_FIELDS
            if self.times is not None:
                samples = np.ascontiguousarray(self.times.samples, np.float64)
                header["samples_shape"] = list(samples.shape)
                body += samples.tobytes()
                if not self.times.full:  # the kept ranks' columns, then each iteration's maximum and every rank's row
                    header["kept_ranks"] = list(self.times.ranks)
                    header["per_rank_shape"] = list(self.times.per_rank.shape)
                    body += np.ascontiguousarray(self.times.maxima, np.float64).tobytes()
                    body += np.ascontiguousarray(self.times.per_rank, np.float64).tobytes()
        payload = json.dumps(header, default=_plain, sort_keys=True).encode() + b"\n" + body
        return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload

    @classmethod
    def decode(cls, payload: bytes) -> Record:
        line, _, body = payload.partition(b"\n")
        header = json.loads(line)
        row = times = None
        if "row_bytes" in header:
            n = header["row_bytes"]
            row = current_row(np.frombuffer(body[:n], _row_dtype(header.get("row_fields"), n)))
            if "samples_shape" in header:
                times = _times(np.frombuffer(body[n:], np.float64), header)
        return cls(header["kind"], header["run"], header.get("attrs"), row, times)


def _times(values: np.ndarray, header: dict[str, Any]) -> PointTimes:
    """A POINT record's timings from the floats after its row, laid out as Record.encode wrote them."""
    shape = header["samples_shape"]
    size = int(np.prod(shape))
    samples = values[:size].reshape(shape).copy()
    if "kept_ranks" not in header:
        return PointTimes(samples)
    maxima = values[size : size + shape[0]].copy()
    per_rank = values[size + shape[0] :].reshape(header["per_rank_shape"]).copy()
    return PointTimes(samples, tuple(int(r) for r in header["kept_ranks"]), maxima, per_rank)


def append(path: str, record: Record) -> None:
    """Append one record to path's journal and make it durable (fsync) before returning."""
    data = record.encode()
    fd = os.open(journal_path(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            # A full disk wrote part of the record: cut it off, so a smaller record (the run's status)
            # can still follow the intact ones.
            try:
                os.ftruncate(fd, before)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)


@dataclass
class Journal:
    records: list[Record]
    torn_bytes: int  # bytes after the last intact record (a write cut short), ignored
    damaged: list[tuple[int, int]] = field(default_factory=list)  # (offset, bytes) skipped between intact records
    damaged_runs: list[str | None] = field(default_factory=list)  # the run each damaged record names, if readable
    damaged_kinds: list[str | None] = field(default_factory=list)  # the kind each damaged record names, if readable


KINDS = (START, POINT, UPDATE)


def _intact(data: bytes, at: int) -> tuple[Record, int] | None:
    """The record at `at` and its length, if its magic, length, checksum and content all hold."""
    if at + _HEAD.size > len(data):
        return None
    magic, length, crc = _HEAD.unpack_from(data, at)
    payload = data[at + _HEAD.size : at + _HEAD.size + length]
    if magic != MAGIC or len(payload) != length or zlib.crc32(payload) != crc:
        return None
    try:
        record = Record.decode(payload)
    except (ValueError, KeyError, TypeError):
        return None
    # a record must name its run; a point must carry one whole row (an interrupt at a sweep's start
    # once left an update without a run, and every later reader failed on it)
    if record.kind not in KINDS or not isinstance(record.run, str) or not record.run:
        return None
    if record.kind == POINT and (record.row is None or record.row.shape != (1,)):
        return None
    return record, _HEAD.size + length


def _next_intact(data: bytes, start: int) -> int | None:
    at = data.find(MAGIC, start)
    while at >= 0:
        if _intact(data, at) is not None:
            return at
        at = data.find(MAGIC, at + 1)
    return None


def read(path: str) -> Journal:
    """The intact records of path's journal, in order (none if there is no journal); damaged ones are
    skipped and listed, and a torn end is counted."""
    if not regular_file(journal_path(path), "journal"):
        return Journal([], 0)
    with open(journal_path(path), "rb") as f:
        data = f.read()
    records, damaged, at = [], [], 0
    while at < len(data):
        found = _intact(data, at)
        if found is not None:
            records.append(found[0])
            at += found[1]
            continue
        resume = _next_intact(data, at + 1)
        if resume is None:
            if _complete(data, at) or not _begun(data, at):  # damage, not a write cut short
                damaged.append((at, len(data) - at))
                at = len(data)
            break  # otherwise nothing intact after it: a record cut short by a kill
        damaged.append((at, resume - at))
        at = resume
    chunks = [data[a : a + n] for a, n in damaged]
    return Journal(records, len(data) - at, damaged, [_run_named(c) for c in chunks], [_kind_named(c) for c in chunks])


_RUN = re.compile(rb'"run": "([0-9]{1,12})"')


def _run_named(chunk: bytes) -> str | None:
    """The run a damaged record's header still names (a flipped bit elsewhere leaves it readable)."""
    found = {m.group(1).decode() for m in _RUN.finditer(chunk)}
    return found.pop() if len(found) == 1 else None


_KIND = re.compile(rb'"kind": "(start_run|point|update_run)"')


def _kind_named(chunk: bytes) -> str | None:
    """The kind of record a damaged one's header still names."""
    found = {m.group(1).decode() for m in _KIND.finditer(chunk)}
    return found.pop() if len(found) == 1 else None


def _begun(data: bytes, at: int) -> bool:
    """Whether the bytes from `at` can be the start of a record a kill cut short: they begin as every
    record does (its magic). Bytes that do not are damage, never a torn write (a journal of random
    bytes read as one long torn record, in silence)."""
    head = data[at : at + len(MAGIC)]
    return MAGIC.startswith(head)


def _complete(data: bytes, at: int) -> bool:
    """Whether the bytes from `at` to the end are as long as the record there says it is."""
    if at + _HEAD.size > len(data):
        return False
    magic, length, crc = _HEAD.unpack_from(data, at)
    if at + _HEAD.size + length == len(data):
        return True
    # a flipped bit in the last record's length field: its payload is all there and passes its checksum
    return magic == MAGIC and zlib.crc32(data[at + _HEAD.size :]) == crc
