"""Message sizes: "8", "4K", "1M", nccl-tests style ranges (-b/-e/-f/-i), and readable output."""

from __future__ import annotations

from fabricprobe.errors import UsageError

_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": 1 << 20,
    "MB": 1 << 20,
    "MIB": 1 << 20,
    "G": 1 << 30,
    "GB": 1 << 30,
    "GIB": 1 << 30,
}
MAX_BYTES = 1 << 34  # 16 GiB per buffer; counts must also fit a C int, checked per datatype


def parse_size(text: str) -> int:
    """Bytes in "4096", "4K", "4KiB", "1M" (binary units). Raises UsageError."""
    raw = text.strip()
    digits = raw.rstrip("bBkKmMgGiI")
    unit = raw[len(digits) :].upper()
    if not (digits.isascii() and digits.isdigit()) or unit not in _UNITS:  # "²".isdigit() is True
        raise UsageError(f"invalid size {text!r}: expected a whole number of bytes such as 8, 4K or 1M")
    value = int(digits) * _UNITS[unit]
    if value > MAX_BYTES:
        raise UsageError(f"size {text!r} is larger than the {format_size(MAX_BYTES)} limit")
    return value


def size_range(begin: str, end: str, factor: str | None = None, increment: str | None = None) -> list[int]:
    """Sizes from begin to end inclusive, multiplied by factor or stepped by increment."""
    lo, hi = parse_size(begin), parse_size(end)
    if lo > hi:
        raise UsageError(f"empty size range: begin {begin} is larger than end {end}")
    if factor is not None and increment is not None:
        raise UsageError("give either a step factor (-f) or an increment (-i), not both")
    if increment is not None:
        step = parse_size(increment)
        if step <= 0:
            raise UsageError(f"invalid increment {increment!r}: it must be positive")
        return list(range(lo, hi + 1, step))
    try:
        mult = int(factor) if factor is not None else 2
    except ValueError:
        raise UsageError(f"invalid step factor {factor!r}: expected a whole number ≥ 2") from None
    if mult < 2:
        raise UsageError(f"invalid step factor {factor!r}: expected a whole number ≥ 2")
    if lo == 0:
        # 0 B is measured as its own point; the geometric range continues from 1 B.
        return [0] + (size_range("1", end, str(mult)) if hi >= 1 else [])
    sizes = []
    size = lo
    while size <= hi:
        sizes.append(size)
        size *= mult
    return sizes


def size_list(text: str) -> list[int]:
    """Sizes from a comma-separated list such as "8,1K,1M"; sorted, duplicates removed."""
    parts = text.split(",")
    if not text.strip():
        raise UsageError("empty size list")
    if any(not p.strip() for p in parts):
        raise UsageError(f"invalid size list {text!r}: an item is empty")
    return sorted({parse_size(p) for p in parts})


def format_size(nbytes: int) -> str:
    """Readable binary size: 8 B, 4 KiB, 1.5 MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{nbytes} B"


def format_span(lo: int, hi: int | None) -> str:
    """[64 KiB, 1 MiB) or [4 MiB, ∞): how every report and message names a message-size range."""
    return f"[{format_size(lo)}, {'∞' if hi is None else format_size(hi)})"
