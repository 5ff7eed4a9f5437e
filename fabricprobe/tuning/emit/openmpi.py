"""Open MPI coll/tuned outputs: the classic dynamic-rules file (what 5.0.x reads), the rule-file
format 3 JSON (6.0 and later; not verified here: no 6.0 wheel), and the lines that load them.

Classic format (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c), every quirk of the reference notes
respected: numbers written plainly (a leading zero would make `%li` read octal), the first
communicator section keyed 0 (sections are looked up as "the last key <= comm size", and the first
applies even below it), every section's first rule at message size 0 (otherwise the whole file is
dropped silently), algorithm 0 meaning "Open MPI's fixed decision". Rules hold only on the
communicator sizes they were measured on: every other size gets a section of algorithm 0 (rules
measured on 2 ranks once served 3 and 1000 ranks alike).
"""

from __future__ import annotations

import json
from pathlib import Path

from fabricprobe.tuning.choose.rules import Range, Table
from fabricprobe.tuning.emit.openmpi_han import tuned_winner
from fabricprobe.tuning.emit.rule_tokens import Tokens
from fabricprobe.tuning.emit.site_syntax import shell_word
from fabricprobe.tuning.plan.library import DEFAULT, names
from fabricprobe.tuning.plan.openmpi import OpenMPI
from fabricprobe.version import __version__


def _tuned_collectives(table: Table) -> list[str]:
    return [
        c
        for c, sections in table.rules.items()
        if any(tuned_winner(r.winner) != DEFAULT for ranges in sections.values() for r in ranges)
    ]


def _alg(library: OpenMPI, collective: str, r: Range) -> int:
    """Open MPI's id for the winner (read from ompi_info); labels turned "-" into "_" (in-order_binary).
    Where han served the section, a flat_<alg> winner is tuned's <alg> (han hands it the whole
    communicator there: emit/openmpi_han.py) and han's own winners leave tuned's decision."""
    winner = tuned_winner(r.winner)
    if winner == DEFAULT:
        return 0
    for ident, name in library.enumerators.get(names(collective).openmpi, []):
        if name.replace("-", "_") == winner:
            return ident
    raise KeyError(f"Open MPI has no {collective} algorithm {winner!r}")


def classic_rules(table: Table, library: OpenMPI) -> str:
    colls = _tuned_collectives(table)
    library_name = table.library_version.splitlines()[0] if table.library_version else "Open MPI"
    lines = [
        f"# fabricprobe {__version__} tuning rules for {library_name}",
        "# load: --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename THIS_FILE",
        *table.case_lines(),
        f"{len(colls)}  # number of collectives",
    ]
    for coll in colls:
        sections = table.rules[coll]
        fanout = getattr(library, "chain_fanout", {}).get(names(coll).openmpi, 0)
        blocks = []
        for key, ranges in measured_only(sections):
            if ranges is None:  # a size nothing was measured on: Open MPI's own decision
                blocks.append(f"{key} 1  # comm size >= {key}: not measured, Open MPI's fixed decision")
                blocks.append("0 0 0 0")
                continue
            served = table.served.get(coll, {}).get(key)
            blocks.append(
                f"{key} {len(ranges)}  # comm size {key} (measured"
                + (f", served by {served}" if served else "")
                + "); message-size rules"
            )
            for r in ranges:
                hi = "inf" if r.hi is None else r.hi
                # A forced algorithm (how it was measured) gets the chain fan-out MCA default; a rule's
                # fan-in/out of 0 builds a different tree (bcast "chain" became a plain pipeline).
                blocks.append(f"{r.lo} {_alg(library, coll, r)} {fanout} 0  # [{r.lo}, {hi}) -> {r.winner}")
        lines.append(f"{names(coll).openmpi_id}  # {names(coll).openmpi}")
        lines.append(f"{sum(1 for b in blocks if '# comm size' in b)}  # number of communicator-size sections")
        lines += blocks
    return "\n".join(lines) + "\n"


def measured_only(sections: dict[int, list[Range]]) -> list[tuple[int, list[Range] | None]]:
    """The communicator-size sections that confine each measured size's rules to that size: Open MPI
    takes the last section whose key is <= the communicator's size (and the first below its key too),
    so a section of Open MPI's own decision (None) is keyed 0 and put after every measured size that
    the next measured size does not follow directly."""
    out: list[tuple[int, list[Range] | None]] = [(0, None)]
    for c in sorted(sections):
        out.append((c, sections[c]))
        if c + 1 not in sections:
            out.append((c + 1, None))
    return out


def parse_classic_rules(text: str) -> dict[int, list[tuple[int, list[tuple[int, int, int, int]]]]]:
    """A reader of the classic format, as strict as Open MPI's: collective id -> [(comm size,
    [(message size, algorithm, fan in/out, segment size)])]. Raises ValueError on what Open MPI
    would drop silently (counts that do not add up, a section not starting at 0, octal-looking numbers)."""
    tokens = []
    for line in text.splitlines():
        body = line.split("#", 1)[0]
        if body.strip().startswith("["):  # optional version line
            continue
        for tok in body.split():
            if len(tok) > 1 and tok.startswith("0") and tok.isdigit():
                raise ValueError(f"{tok!r} would be read as octal")
            tokens.append(int(tok))
    reader = Tokens(tokens, "numbers")
    take = reader.take
    out = {}
    for _ in range(take()):
        coll, sections = take(), []
        for _ in range(take()):
            comm_size, rules = take(), []
            for j in range(take()):
                rule = (take(), take(), take(), take())
                if j == 0 and rule[0] != 0:
                    raise ValueError(f"collective {coll}, comm size {comm_size}: first rule at {rule[0]}, not 0")
                rules.append(rule)
            sections.append((comm_size, rules))
        out[coll] = sections
    reader.done()
    return out


def json_rules(table: Table) -> str:
    """Open MPI >= 6.0 dynamic rules (rule_file_version 3). First match wins; sizes not covered keep
    the fixed decision, so default ranges are simply left out."""
    colls = {}
    for coll in _tuned_collectives(table):
        sizes = sorted(table.rules[coll])
        entries = []
        for i, comm_size in enumerate(sizes):
            lo = 1 if i == 0 else comm_size
            hi = "inf" if i == len(sizes) - 1 else sizes[i + 1] - 1
            rules = [
                {
                    "msg_size_min": r.lo,
                    "msg_size_max": "inf" if r.hi is None else r.hi - 1,
                    "alg": tuned_winner(r.winner),
                }
                for r in table.rules[coll][comm_size]
                if tuned_winner(r.winner) != DEFAULT
            ]
            if rules:
                entries.append(
                    {"comm_size_min": lo, "comm_size_max": hi, "comm_rank_distribution": "any", "rules": rules}
                )
        colls[names(coll).openmpi_json] = entries
    return json.dumps({"rule_file_version": 3, "module": "tuned", "collectives": colls}, indent=1) + "\n"


def load_lines(rules_path: Path) -> str:
    p = shell_word(str(rules_path.resolve()))
    return (
        f"# Open MPI: use fabricprobe's tuned collective rules\n"
        f"mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename {p} ...\n"
        f"export OMPI_MCA_coll_tuned_use_dynamic_rules=1\n"
        f"export OMPI_MCA_coll_tuned_dynamic_rules_filename={p}\n"
    )


def load_env(rules_path: Path) -> dict[str, str]:
    return {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(rules_path.resolve()),
    }
