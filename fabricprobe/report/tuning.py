"""`fabricprobe report tuning.json`: every table `tune` keeps off its one screen (the rules chosen,
the fingerprints, the before/after, what was left to the default and why, fabricprobe's own
selection), fitted to the terminal like the results' tables: a narrow terminal leaves whole columns
out, never cuts a number (report/fit.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from fabricprobe.errors import UsageError
from fabricprobe.inputs import regular_file
from fabricprobe.report.fit import Column, fitted_table, left_out_line
from fabricprobe.report.units import ratio, usec
from fabricprobe.sizes import format_size, format_span

MANIFEST_KEYS = ("rules", "files", "proof")  # what makes a JSON file tune's manifest


def is_tuning_manifest(path: str) -> bool:
    """Whether `path` starts as a JSON object does, so is meant as `tune`'s tuning.json (a results file
    is HDF5); load_manifest checks that it is one."""
    if not regular_file(path, "input"):  # a named pipe would block here; missing: the results reader says so
        return False
    try:
        with open(path, "rb") as f:
            if f.read(1) != b"{":
                return False
    except OSError:
        return False
    return True


def load_manifest(path: str) -> dict[str, Any]:
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path} cannot be read as tune's tuning.json: {exc}") from None
    if not isinstance(manifest, dict) or not all(k in manifest for k in MANIFEST_KEYS):
        raise UsageError(f"{path} is JSON but not tune's tuning.json (it lacks {', '.join(MANIFEST_KEYS)})")
    return manifest


def _table(console: Console, title: str, columns: list[Column]) -> None:
    table, left_out = fitted_table(columns, console.width, title=f"[bold]{title}[/]", title_justify="left")
    console.print(table)
    if left_out:
        console.print(left_out_line(left_out, console.width), highlight=False)


def _add_row(columns: list[Column], cells: list[str]) -> None:
    for column, cell in zip(columns, cells):
        column.cells.append(cell)


def _rules(manifest: dict) -> list[Column]:
    cols = [
        Column("collective", 1, "left"),
        Column("ranks", 1),
        Column("message sizes", 1),
        Column("winner", 1, "left"),
        Column("sweep speedup", 2),
        Column("default µs", 3),
        Column("noise ±", 4),
    ]
    for coll, sections in manifest["rules"]["rules"].items():
        for n, ranges in sorted(sections.items(), key=lambda kv: int(kv[0])):
            for r in ranges:
                decisions = r.get("decisions") or []
                speedup = min((d["default_s"] / d["winner_s"] for d in decisions if d["winner_s"] > 0), default=1.0)
                cells = [
                    escape(coll),
                    str(n),
                    format_span(r["lo"], r["hi"]),
                    escape(r["winner"]) if r["winner"] == "default" else f"[bold green]{escape(r['winner'])}[/]",
                    f"{speedup:.2f}×",
                    usec(decisions[0]["default_s"]) if decisions else "",
                    f"{max((d['noise'] for d in decisions), default=0):.1%}",
                ]
                _add_row(cols, cells)
    return cols


def _checks(checks: list[dict]) -> list[Column]:
    cols = [
        Column("collective", 1, "left"),
        Column("ranks", 1),
        Column("size", 1),
        Column("expected", 1, "left"),
        Column("status", 1, "left"),
        Column("detail", 2, "left", wrap=True),
    ]
    for c in checks:
        colour = {"verified": "green", "MISMATCH": "bold red", "error": "red"}.get(c["status"], "yellow")
        level = f" ({c['level']})" if c.get("level") else ""
        cells = [
            escape(c["collective"]),
            str(c["comm_size"]),
            format_size(c["size"]),
            escape(c["expected"] + level),
            f"[{colour}]{escape(c['status'])}[/]",
            escape(c.get("detail") or ""),
        ]
        _add_row(cols, cells)
    return cols


def _before_after(rows: list[dict]) -> list[Column]:
    cols = [
        Column("collective", 1, "left"),
        Column("ranks", 1),
        Column("size", 1),
        Column("speedup", 1),
        Column("95% CI", 1),
        Column("verdict", 1, "left"),
        Column("reps", 2),
        Column("default µs", 3),
        Column("tuned µs", 3),
        Column("range", 4),
    ]
    for r in rows:
        colour = "green" if r["verdict"].startswith("faster") else "red" if r["slower"] else "yellow"
        cells = [
            escape(r["collective"]),
            str(r["comm_size"]),
            format_size(r["size"]),
            f"{ratio(r['speedup'])}×",
            "—" if r["ci_low"] is None else f"{ratio(r['ci_low'])}–{ratio(r['ci_high'])}",
            f"[{colour}]{escape(r['verdict'])}[/]",
            str(r["reps"]) if r["reps"] == r["planned"] else f"{r['reps']}/{r['planned']}",
            usec(r["baseline_s"]),
            usec(r["tuned_s"]),
            f"{min(r['ratios']):.2f}–{max(r['ratios']):.2f}",
        ]
        _add_row(cols, cells)
    return cols


def _selection(rows: list[dict]) -> list[Column]:
    cols = [
        Column("collective", 1, "left"),
        Column("ranks", 1),
        Column("message sizes", 1),
        Column("winner", 1, "left"),
        Column("speedup", 1),
        Column("nodes", 2, "left"),
        Column("density", 2),
        Column("noise ±", 3),
    ]
    for row in rows:
        own = row["winner"] != row["reference"]
        cells = [
            escape(row["collective"]),
            str(row["comm_size"]),
            escape(row["span"]),
            f"[bold green]{escape(row['winner'])}[/]" if own else escape(row["winner"]),
            f"{row['speedup']:.2f}×",
            escape(row["layout"]),
            f"{row['density']:g}" if row["density"] else "",
            f"{row['noise']:.1%}",
        ]
        _add_row(cols, cells)
    return cols


def render_tuning(manifest: dict, console: Console) -> None:
    """Every table of a tuning.json, in the order `tune` decided them."""
    say = lambda text, style=None: console.print(escape(text), style=style, highlight=False)  # noqa: E731
    say(f"tuning from {manifest.get('source', '?')}", "bold")
    say(f"proof: {manifest['proof']}")
    rules = manifest["rules"]
    _table(
        console,
        f"rules the files keep ({rules.get('vendor', '?')}, {rules.get('dtype', '?')}; the tune-sweep's speedups)",
        _rules(manifest),
    )
    verification = manifest.get("verification")
    if verification:
        _table(
            console,
            "verification (fingerprints with the files vs. the rule's algorithm forced)",
            _checks(verification["checks"]),
        )
    if manifest.get("before_after"):
        _table(console, "before / after (speedup = default time / tuned time)", _before_after(manifest["before_after"]))
        if any(r["reps"] < r["planned"] for r in manifest["before_after"]):
            say("k/N reps: settled after k of N repetitions: no ratio the others could give changes the verdict")
    for line in manifest.get("kept") or []:
        say(f"kept: {line}", "green")
    for entry in manifest.get("left_to_default") or []:
        say(f"left to the default: {entry['line']}", "yellow")
    selection = (manifest.get("selection") or {}).get("rows")
    if selection:
        _table(
            console,
            "fabricprobe's selection (fabricprobe.tuned): its own algorithm where it beats the library's best",
            _selection(selection),
        )
    for kind, path in manifest["files"].items():
        say(f"{kind}: {path}")
