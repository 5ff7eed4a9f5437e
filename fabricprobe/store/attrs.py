"""Run attributes to and from HDF5: scalars as plain attributes, structures as JSON text."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from fabricprobe.store.schema import JSON_ATTRS
from fabricprobe.text import as_text


def write_attrs(obj: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if key in JSON_ATTRS or isinstance(value, (list, tuple, dict)):
            obj.attrs[key] = json.dumps(value, sort_keys=True)
        elif value is None:
            obj.attrs[key] = ""
        elif isinstance(value, str):
            obj.attrs[key] = value.replace("\x00", "")  # HDF5 strings cannot hold NUL
        else:
            obj.attrs[key] = value


def read_attrs(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.attrs.items():
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
