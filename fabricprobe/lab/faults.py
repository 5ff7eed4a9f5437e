"""Faults made on purpose, so the doctor can be tested on real ones: a host whose link is slower
than the others (`--slow HOST:RATE`: a tbf at RATE on both ends of its link) and a host whose
ranks are starved of CPU (`--busy HOST:CPU`: its cgroup capped at CPU cores). Recorded in lab.json,
so every run's provenance says what was injected; the doctor itself never reads them."""

from __future__ import annotations

from fabricprobe.errors import UsageError
from fabricprobe.lab import cpu, network
from fabricprobe.lab.config import LabConfig, format_rate, parse_rate


def _host(lab: LabConfig, name: str) -> str:
    if name not in lab.host_names:
        raise UsageError(f"{name} is not a host of lab {lab.name} ({', '.join(lab.host_names)})")
    return name


def parse_specs(lab: LabConfig, slow: list[str], busy: list[str]) -> dict[str, dict]:
    """--slow HOST:RATE and --busy HOST:CPU options -> host -> {"rate_bits", "cpu"}."""
    out: dict[str, dict] = {}
    for text, key in [*((t, "rate_bits") for t in slow), *((t, "cpu") for t in busy)]:
        host, sep, value = text.partition(":")
        if not sep:
            option = "--slow HOST:RATE" if key == "rate_bits" else "--busy HOST:CPU"
            raise UsageError(f"invalid {option} {text!r}: expected e.g. {lab.host_names[-1]}:600mbit or :10%")
        parsed = parse_rate(value) if key == "rate_bits" else cpu.parse_cpu(value)
        out.setdefault(_host(lab, host), {})[key] = parsed
    return {h: {k: v for k, v in f.items() if v} for h, f in out.items() if any(f.values())}


def update(lab: LabConfig, faults: dict[str, dict], host: str, rate: str | None, cpu_text: str | None) -> dict:
    """`lab slow HOST [RATE] [--cpu X]`: the faults with one host's changed ("normal" restores)."""
    f = dict(faults.get(_host(lab, host), {}))
    if rate is not None:
        f["rate_bits"] = None if rate.strip().lower() == "normal" else parse_rate(rate)
    if cpu_text is not None:
        f["cpu"] = cpu.parse_cpu(cpu_text)
    out = {h: v for h, v in faults.items() if h != host}
    kept = {k: v for k, v in f.items() if v}
    if kept:
        out[host] = kept
    return out


def apply(lab: LabConfig, faults: dict[str, dict]) -> None:
    """Every host's link rate and CPU cap as `faults` says (the lab's own where it says nothing)."""
    cpu.create(lab.name, lab.host_names)
    capped = any(f.get("cpu") for f in faults.values())
    if capped and cpu.folder(lab.name) is None:
        raise UsageError("this machine has no writable cgroup cpu controller: a busy host cannot be emulated here")
    for i, host in enumerate(lab.host_names):
        f = faults.get(host, {})
        network.shape_host(lab, i, f.get("rate_bits") or lab.rate_bits)
        if cpu.folder(lab.name) is not None:
            cpu.set_quota(lab.name, host, f.get("cpu"))


def describe(faults: dict[str, dict], host: str) -> str:
    f = faults.get(host, {})
    parts = []
    if f.get("rate_bits"):
        parts.append(f"link slowed to {format_rate(f['rate_bits'])}")
    if f.get("cpu"):
        parts.append(f"CPU capped at {f['cpu']:g} core")
    return ", ".join(parts) or "-"
