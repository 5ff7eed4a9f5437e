"""Where buffers live: host memory with an explicit placement (host.py) and the device kinds
(device.py). `on_device` is the one answer to "is this array in device memory?"."""

from fabricprobe.memory.device import (
    BUFFER_KINDS,
    DIRECT,
    PIPELINED,
    STAGED,
    TRANSFERS,
    BufferUnavailable,
    device_pointer,
    memory_for,
    memory_of,
    on_device,
    select_device,
)

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
