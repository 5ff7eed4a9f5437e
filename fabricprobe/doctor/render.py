"""The doctor's report, from a diagnosis as stored (so a run prints the same live and from its
record): the suspects first, each with what was measured, what was expected and the evidence; then
each class of peers (expected value, noise, the margin a member had to exceed); then the notes."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from fabricprobe.doctor.results import Measurements


def _value(metric: str, v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if metric == "bandwidth":
        return f"{v * 8 / 1e9:.3g} Gbit/s"
    if metric == "reduction":
        return f"{v * 1e9:.3g} ns/B"
    return f"{v * 1e6:.3g} µs" if v < 1e-2 else f"{v * 1e3:.3g} ms"


def header(m: Measurements, provenance: dict[str, Any]) -> str:
    n = len(m.hosts)
    nodes = len(set(m.node_of))
    secs = ", ".join(f"{k} {v:.2f} s" for k, v in m.pass_seconds.items())
    lab = f"; {provenance['lab']}" if provenance.get("lab") else ""
    every = n * (n - 1) // 2
    pairs = f"{len(m.pairs)} pairs" if len(m.pairs) == every else f"{len(m.pairs)} of {every} pairs"
    return (
        f"fabricprobe doctor: {n} ranks on {nodes} node{'s' if nodes != 1 else ''} "
        f"({provenance.get('mpi_vendor', '?')} {provenance.get('mpi_version', '')}{lab}); "
        f"{pairs} in {m.rounds} rounds ({m.turns} turns), {m.small_bytes} B and "
        f"{m.large_bytes} B ping-pongs; {secs}"
    )


def render(console: Console, m: Measurements, diagnosis: dict[str, Any], provenance: dict[str, Any]) -> None:
    console.print(header(m, provenance))
    findings = diagnosis["findings"]
    if findings:
        t = Table(title="Suspects (slowest first within each kind)", title_justify="left")
        for col in ("kind", "where", "measured", "expected", "slower", "evidence"):
            t.add_column(col, overflow="fold")
        for f in findings:
            conf = {True: " (confirmed)", False: " (not confirmed)", None: ""}[f.get("confirmed")]
            t.add_row(
                f["kind"] + conf,
                f["where"],
                _value(f["metric"], f["measured"]),
                _value(f["metric"], f["expected"]),
                f"{f['slowdown']:.2f}× (margin {f['margin']:.0%})",
                "; ".join(f["evidence"]),
            )
        console.print(t)
    else:
        console.print("No suspects: every pair, link and rank is within its class's margin (below).")
    t = Table(title="Classes of peers (expected = the median pair between healthy nodes)", title_justify="left")
    for col in ("class", "members", "metric", "expected", "range", "noise (σ)", "margin", "α-β fit"):
        t.add_column(col)
    for c in diagnosis["classes"]:
        lo, hi = c["lowest"], c["highest"]
        fit = "-"
        if not math.isnan(c.get("fit_alpha_s", math.nan)):
            beta = c["fit_beta_s_per_byte"]
            fit = f"α {c['fit_alpha_s'] * 1e6:.3g} µs, 1/β {(8 / beta / 1e9) if beta > 0 else math.inf:.3g} Gbit/s"
        t.add_row(
            c["name"],
            str(c["members"]),
            c["metric"],
            _value(c["metric"], c["expected"]),
            f"{_value(c['metric'], lo)} – {_value(c['metric'], hi)}",
            f"{c['noise']:.1%}",
            f"{c['margin']:.0%}",
            fit,
        )
    console.print(t)
    for note in diagnosis.get("notes", []):
        console.print(f"note: {note}")
