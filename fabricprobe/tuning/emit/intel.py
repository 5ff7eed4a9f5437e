"""Intel MPI outputs: the I_MPI_TUNING JSON (mpitune's format; the file `tune` loads and verifies)
and I_MPI_ADJUST_<COLL> strings.

A size outside every range does not return to the default: it takes a neighbouring rule, so every
output covers message sizes 0 … 2147483647 without a gap. Intel MPI has no "keep the default" preset
(0 is "basic logic"), so a range where the default won is given the fastest preset measured there.

Measured on Intel MPI 2021.18.1 (impi-rt): ADJUST rules with communicator conditions
("10:0-4095@1-64;1:4096-262143@1-64") ignore their message sizes — the last rule of a communicator
range applies to every size — while rules without them ("10:0-4095;1:4096-262143") select by size
as documented. So ADJUST strings are written only for collectives tuned at one communicator size,
without "@" conditions; the JSON, keyed by comm_size and msg_size, carries everything.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from fabricprobe.tuning.choose.rules import Range, Table, candidates
from fabricprobe.tuning.emit.site_syntax import shell_export
from fabricprobe.tuning.plan.library import DEFAULT, names

MAX = 2147483647


def preset(r: Range, fallback: int | None) -> int:
    """The preset number of a range's winner (variants are named presetN)."""
    if r.winner != DEFAULT:
        return int(r.winner.removeprefix("preset"))
    if fallback is None:
        raise ValueError("Intel MPI cannot keep its default inside an ADJUST string: a measured preset is needed")
    return fallback


def fallbacks(runs: list[Any], table: Table) -> dict[tuple[str, int, int], int]:
    """For ranges the default won: the fastest preset measured there (Intel MPI cannot keep its default)."""
    measured, _ = candidates(runs, table.dtype, False)
    out = {}
    for coll, sections in table.rules.items():
        for n, ranges in sections.items():
            for r in ranges:
                by_name = measured.get((coll, n, r.decisions[0].size), {})
                presets = [(p["median_s"], name) for name, p in by_name.items() if name.startswith("preset")]
                if presets:
                    out[(coll, n, r.lo)] = int(min(presets)[1].removeprefix("preset"))
    return out


def adjust_strings(table: Table, fallbacks: dict[tuple[str, int, int], int]) -> tuple[dict[str, str], list[str]]:
    """(I_MPI_ADJUST_<COLL> -> value, collectives left to the JSON because their rules differ by
    communicator size). fallbacks[(coll, comm size, range lo)] = best measured preset."""
    out, left = {}, []
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue
        per_comm = {
            c: [(preset(r, fallbacks.get((coll, c, r.lo))), r.lo, r.hi) for r in rs] for c, rs in sections.items()
        }
        if len({tuple(v) for v in per_comm.values()}) > 1:
            left.append(coll)  # "@p-q" conditions would be needed, and Intel MPI ignores sizes under them
            continue
        rules = next(iter(per_comm.values()))
        out[f"I_MPI_ADJUST_{names(coll).intel}"] = ";".join(
            f"{p}:{lo}-{MAX if hi is None else hi - 1}" for p, lo, hi in rules
        )
    return out, left


def tuning_json(table: Table, fallbacks: dict[tuple[str, int, int], int], ppn: int) -> str:
    """mpitune-style JSON: coll -> ppn -> comm_size -> comm_id -> msg_size upper bound -> preset."""
    doc: dict = {}
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue
        by_comm = {}
        for c in sorted(sections):
            rules = {}
            for r in sections[c]:
                bound = -1 if r.hi is None else r.hi - 1
                rules[f"msg_size={bound}"] = {f"{names(coll).intel}={preset(r, fallbacks.get((coll, c, r.lo)))}": {}}
            by_comm[f"comm_size={c}"] = {"comm_id=-1": rules}
        doc[f"coll={names(coll).intel_json}"] = {f"ppn={ppn}": by_comm}
    return json.dumps(doc, indent=1) + "\n"


def parse_adjust(value: str) -> list[tuple[int, int, int, int, int]]:
    """(preset, lo, hi, comm lo, comm hi) rules of an ADJUST string; ValueError when the cover has gaps."""
    rules = []
    for item in value.split(";"):
        alg, _, cond = item.partition(":")
        sizes, _, comms = cond.partition("@")
        lo, _, hi = sizes.partition("-")
        clo, _, chi = (comms or f"1-{MAX}").partition("-")
        rules.append((int(alg), int(lo), int(hi), int(clo), int(chi)))
    buckets: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for _, lo, hi, clo, chi in rules:
        buckets.setdefault((clo, chi), []).append((lo, hi))
    edges = sorted(buckets)
    if edges[0][0] != 1 or edges[-1][1] != MAX or any(a[1] + 1 != b[0] for a, b in zip(edges, edges[1:])):
        raise ValueError("communicator sizes are not covered from 1 to 2147483647 without a gap")
    for spans in buckets.values():
        spans.sort()
        if spans[0][0] != 0 or spans[-1][1] != MAX or any(a[1] + 1 != b[0] for a, b in zip(spans, spans[1:])):
            raise ValueError("message sizes are not covered from 0 to 2147483647 without a gap")
    return rules


def load_env(tuning_path: Path) -> dict[str, str]:
    """The environment that makes Intel MPI load the JSON (the file tune verifies)."""
    return {"I_MPI_TUNING": str(tuning_path.resolve())}


def load_lines(env: dict[str, str]) -> str:
    return shell_export("I_MPI_TUNING", env["I_MPI_TUNING"]) + "\n"


def adjust_file(adjust: dict[str, str], left: list[str]) -> str:
    """impi_adjust.env: the ADJUST alternative, and a line for each collective only the JSON carries."""
    return (
        "# Alternative to I_MPI_TUNING, verified on its own (docs/tuning.md)\n"
        + "".join(f"export {k}='{v}'\n" for k, v in adjust.items())
        + "".join(f"# {c}: rules differ by communicator size; only impi_tuning.json carries them\n" for c in left)
    )


def read_adjust(path: Path) -> dict[str, str]:
    """The I_MPI_ADJUST_* settings of an impi_adjust.env."""
    return dict(re.findall(r"^export (I_MPI_ADJUST_\w+)='([^']*)'", path.read_text(), re.M))
