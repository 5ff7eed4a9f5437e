"""Where buffers live: host memory with an explicit placement (host.py), the memory a process maps and
writes at its start for its message buffers (arena.py), and the device kinds (device.py). `on_device` is
the one answer to "is this array in device memory?".

The names below are resolved when first used, not when the package is imported: arena.py must be
importable at the process's first step, before numpy (which device.py and host.py load) has written
any memory (arena.py says why)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BUFFER_KINDS",
    "DIRECT",
    "PIPELINED",
    "STAGED",
    "TRANSFERS",
    "BufferUnavailable",
    "device_pointer",
    "memory_for",
    "memory_of",
    "on_device",
    "select_device",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("fabricprobe.memory.device"), name)
    raise AttributeError(f"module 'fabricprobe.memory' has no attribute {name!r}")
