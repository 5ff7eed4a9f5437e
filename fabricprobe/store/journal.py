"""The write-ahead journal beside a results file (FILE.journal): how a point becomes durable.

HDF5 is not crash-safe when a file is modified in place: a process killed inside a write can leave
its free lists or B-trees inconsistent and earlier data unreachable (seen: "bad heap free list" after
1 of 78 targeted SIGKILLs). So the writer never modifies the results file in place. Every change (a
run started, a point measured, a run's attributes updated) is appended to the journal as one record
and fsync'd: that is the moment the point is complete. The journal is folded into the HDF5 file by
writing a copy and renaming it over the original (fabricprobe.store.fold), which is atomic.

A record: b"FPJ1", the payload's length (uint64, little-endian), its CRC-32 (uint32), the payload:
a JSON header line, then the point's row (POINT_DTYPE bytes) and its samples (raw float64). A record
cut short by a kill, or whose checksum fails, ends the journal: what follows it is not trusted.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricprobe.store.schema import POINT_DTYPE

MAGIC = b"FPJ1"
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


@dataclass
class Record:
    kind: str  # START, POINT or UPDATE
    run: str
    attrs: dict[str, Any] | None = None  # START and UPDATE
    row: np.ndarray | None = None  # POINT: one POINT_DTYPE row
    samples: np.ndarray | None = None  # POINT: float64 (iterations × ranks), or None

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
            if self.samples is not None:
                samples = np.ascontiguousarray(self.samples, np.float64)
                header["samples_shape"] = list(samples.shape)
                body += samples.tobytes()
        payload = json.dumps(header, default=_plain, sort_keys=True).encode() + b"\n" + body
        return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload

    @classmethod
    def decode(cls, payload: bytes) -> Record:
        line, _, body = payload.partition(b"\n")
        header = json.loads(line)
        row = samples = None
        if "row_bytes" in header:
            n = header["row_bytes"]
            row = np.frombuffer(body[:n], POINT_DTYPE).copy()
            if "samples_shape" in header:
                samples = np.frombuffer(body[n:], np.float64).reshape(header["samples_shape"]).copy()
        return cls(header["kind"], header["run"], header.get("attrs"), row, samples)


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


def read(path: str) -> Journal:
    """The intact records of path's journal, in order (none if there is no journal)."""
    try:
        with open(journal_path(path), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return Journal([], 0)
    records, at = [], 0
    while at + _HEAD.size <= len(data):
        magic, length, crc = _HEAD.unpack_from(data, at)
        payload = data[at + _HEAD.size : at + _HEAD.size + length]
        if magic != MAGIC or len(payload) != length or zlib.crc32(payload) != crc:
            break
        try:
            records.append(Record.decode(payload))
        except (ValueError, KeyError):
            break
        at += _HEAD.size + length
    return Journal(records, len(data) - at)
