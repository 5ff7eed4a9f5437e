"""Run attributes to and from HDF5: scalars as plain attributes, structures as JSON text, and a
checksum over all of them (HDF5's Fletcher-32 covers a dataset's chunks, never an attribute: 11 of 150
flipped bits changed a stored fact, `algorithms` read `algoritlms`, with exit 0)."""

from __future__ import annotations

import json
import zlib
from typing import Any

import numpy as np

from fabricprobe.store.schema import JSON_ATTRS
from fabricprobe.text import as_text

CHECKSUM = "attrs_crc32"  # CRC-32 of every other attribute of the run, as stored (_canonical)
MARKED = "attrs_checksummed"  # written with the checksum: a run that has it and lacks the checksum is damaged


class AttrsDamaged(ValueError):
    """A run's attributes do not match their checksum (the reader's damage: exit 4, named)."""


def _canonical(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def checksum(obj: Any) -> int:
    """The CRC-32 of obj's attributes other than the checksum, each as stored (name and value)."""
    items = sorted((str(k), _canonical(v)) for k, v in obj.attrs.items() if k != CHECKSUM)
    return zlib.crc32(repr(items).encode("utf-8", "surrogatepass"))


def verify(obj: Any) -> None:
    """Raise AttrsDamaged when obj's attributes fail their checksum, or lack the one they were written
    with; attributes written before checksums (no MARKED) are not checked."""
    if CHECKSUM not in obj.attrs and MARKED not in obj.attrs:
        return
    stored = obj.attrs.get(CHECKSUM)
    name = str(obj.name).rsplit("/", 1)[-1]
    if stored is None:
        raise AttrsDamaged(f"run {as_text(name)}'s attributes lost their checksum")
    if int(_canonical(stored)) != checksum(obj):
        raise AttrsDamaged(f"run {as_text(name)}'s attributes fail their checksum")


def write_attrs(obj: Any, values: dict[str, Any]) -> None:
    """Set values on obj and its checksum; attributes already damaged are never blessed with a new one
    (AttrsDamaged)."""
    verify(obj)
    for key, value in values.items():
        if key in JSON_ATTRS or isinstance(value, (list, tuple, dict)):
            obj.attrs[key] = json.dumps(value, sort_keys=True)
        elif value is None:
            obj.attrs[key] = ""
        elif isinstance(value, str):
            obj.attrs[key] = value.replace("\x00", "")  # HDF5 strings cannot hold NUL
        else:
            obj.attrs[key] = value
    seal(obj)


def seal(obj: Any) -> None:
    """Mark obj's attributes as checksummed and store their checksum as they are now."""
    obj.attrs[MARKED] = 1
    obj.attrs[CHECKSUM] = checksum(obj)


def read_attrs(obj: Any, checked: bool = True) -> dict[str, Any]:
    """obj's attributes as values, shown as text; checked (AttrsDamaged) unless `checked` is False
    (repair, which keeps what reads and says it could not vouch for it)."""
    if checked:
        verify(obj)
    out: dict[str, Any] = {}
    for key, value in obj.attrs.items():
        if key in (CHECKSUM, MARKED):
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if key in JSON_ATTRS and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        elif isinstance(value, np.generic):
            value = value.item()
        out[as_text(str(key))] = shown_as_text(value)
    return out


def shown_as_text(value: Any) -> Any:
    """Every string in an attribute (a JSON one's too) with its control characters escaped: a library
    version or a host name with an escape sequence in it would act on the terminal it is shown on."""
    if isinstance(value, str):
        return as_text(value)
    if isinstance(value, list):
        return [shown_as_text(v) for v in value]
    if isinstance(value, dict):
        return {as_text(str(k)): shown_as_text(v) for k, v in value.items()}
    return value
