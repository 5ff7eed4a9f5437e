"""Open MPI 5's han outputs, for the sections of a table where han served the default (several
nodes): han's dynamic rules file, which hands a collective to coll/tuned on the whole communicator at
the message sizes a flat algorithm won (the tuned rules file, keyed on the same communicator size,
then names the algorithm), and the MCA lines of the one han setting a section keeps (its inter-node
or node-local module, its segment size).

The file's format is the one v5.0.10 reads (ompi/mca/coll/han/coll_han_dynamic_file.c), not the
numeric one its header comment shows: a collective count; per collective its name, a count of
topology levels; per level its name (`global_communicator`: the user's communicator), a count of
configurations; per configuration its size (the communicator's size there; the last one <= the
communicator's applies, and the first must be 1), a count of message-size rules; per rule a message
size (the last one <= the call's applies; the first must be 0) and a component name. Comments run from
`#` to the end of the line. The message size is han's: the whole vector for allreduce, bcast and
reduce, one rank's block for allgather (count × datatype size of the send).
"""

from __future__ import annotations

from pathlib import Path

from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.specs import SPECS
from fabricprobe.tuning.choose.rules import Range, Table
from fabricprobe.tuning.emit.rule_tokens import Tokens
from fabricprobe.tuning.emit.site_syntax import shell_export, shell_word
from fabricprobe.tuning.plan.library import DEFAULT, names
from fabricprobe.tuning.plan.openmpi_han import FLAT, HAN, is_hierarchy
from fabricprobe.version import __version__


def han_sections(table: Table) -> dict[str, dict[int, list[Range]]]:
    """collective -> comm size -> ranges, where han served the default and some range's winner is han's."""
    out: dict[str, dict[int, list[Range]]] = {}
    for coll, served in table.served_elsewhere.items():
        for n, component in served.items():
            ranges = table.rules.get(coll, {}).get(n, [])
            if component.startswith("han") and any(is_hierarchy(r.winner) for r in ranges):
                out.setdefault(coll, {})[n] = ranges
    return out


def component(winner: str) -> str:
    """Who serves a range: han's own steps, or coll/tuned on the whole communicator (flat, flat_<alg>)."""
    return "tuned" if winner == FLAT or winner.startswith(FLAT + "_") else "han"


def han_message_size(collective: str, nbytes: int, nranks: int, dtype: str) -> int:
    """fabricprobe's S as han's message size (count × datatype size of the call's vector)."""
    itemsize = numpy_dtype(dtype).itemsize
    return SPECS[collective].layout(nbytes, itemsize, nranks).count * itemsize


def rules_file(table: Table) -> str | None:
    """han's dynamic rules file, or None where no flat algorithm won a range (han keeps every size)."""
    sections = {
        coll: per
        for coll, per in han_sections(table).items()
        if any(component(r.winner) == "tuned" for ranges in per.values() for r in ranges)
    }
    if not sections:
        return None
    library_name = table.library_version.splitlines()[0] if table.library_version else "Open MPI"
    lines = [
        f"# fabricprobe {__version__} han rules for {library_name}",
        "# load: --mca coll_han_use_dynamic_file_rules 1 --mca coll_han_dynamic_rules_filename THIS_FILE",
        f"{len(sections)}  # collectives",
    ]
    for coll, per in sections.items():
        configs: list[tuple[int, list[tuple[int, str, str]]]] = [(1, [(0, "han", "not measured: han")])]
        for n in sorted(per):
            rules: list[tuple[int, str, str]] = []
            for r in per[n]:
                size = 0 if not rules else han_message_size(coll, r.lo, n, table.dtype)
                who = component(r.winner)
                if rules and rules[-1][1] == who:
                    continue
                rules.append((size, who, f"{r.span} -> {r.winner}"))
            configs = [c for c in configs if c[0] != n] + [(n, rules)]
            if n + 1 not in per:
                configs.append((n + 1, [(0, "han", "not measured: han")]))
        lines += [
            f"{names(coll).openmpi}  # collective",
            "1  # topology levels",
            "global_communicator",
            f"{len(configs)}  # communicator sizes",
        ]
        for size, rules in configs:
            lines.append(f"{size}  # communicator size >= {size}")
            lines.append(f"{len(rules)}  # message-size rules")
            lines += [f"{msg} {who}  # {why}" for msg, who, why in rules]
    return "\n".join(lines) + "\n"


def parse_rules_file(text: str) -> dict[str, list[tuple[str, list[tuple[int, list[tuple[int, str]]]]]]]:
    """A reader as strict as v5.0.10's: collective -> [(level, [(comm size, [(message size, component)])])].
    Raises ValueError on what Open MPI would refuse (counts that do not add up, a first communicator size
    other than 1, a first message size above 1, an unknown component)."""
    tokens = [tok for line in text.splitlines() for tok in line.split("#", 1)[0].split()]
    reader = Tokens(tokens, "tokens")
    take = reader.take
    out = {}
    for _ in range(int(take())):
        coll, levels = take(), []
        for _ in range(int(take())):
            level, configs = take(), []
            for k in range(int(take())):
                size, rules = int(take()), []
                if k == 0 and size != 1:
                    raise ValueError(f"{coll}/{level}: first communicator size {size}, not 1")
                for j in range(int(take())):
                    msg, who = int(take()), take()
                    if j == 0 and msg > 1:
                        raise ValueError(f"{coll}/{level}/{size}: first message size {msg}, not 0")
                    if who not in ("self", "basic", "libnbc", "tuned", "sm", "adapt", "han"):
                        raise ValueError(f"{coll}: unknown component {who!r}")
                    rules.append((msg, who))
                configs.append((size, rules))
            levels.append((level, configs))
        out[coll] = levels
    reader.done()
    return out


def settings(table: Table, known: dict[str, dict[str, dict[str, str]]]) -> dict[str, str]:
    """The environment of the one han setting each section keeps (`known`: collective -> variant name ->
    its environment, from the library)."""
    env: dict[str, str] = {}
    for coll, per in han_sections(table).items():
        for ranges in per.values():
            for r in ranges:
                if r.winner.startswith(HAN):
                    env.update(known.get(coll, {}).get(r.winner, {}))
    return env


def load_env(rules_path: Path | None, han_settings: dict[str, str]) -> dict[str, str]:
    env = dict(han_settings)
    if rules_path is not None:
        env["OMPI_MCA_coll_han_use_dynamic_file_rules"] = "1"
        env["OMPI_MCA_coll_han_dynamic_rules_filename"] = str(rules_path.resolve())
    return env


def load_lines(env: dict[str, str]) -> str:
    if not env:
        return ""
    mca = " ".join(f"--mca {k[len('OMPI_MCA_') :]} {shell_word(v)}" for k, v in env.items())
    exports = "".join(shell_export(k, v) + "\n" for k, v in env.items())
    return f"# Open MPI: han's settings from fabricprobe (several nodes)\nmpirun {mca} ...\n{exports}"


def tuned_winner(winner: str) -> str:
    """The algorithm coll/tuned's rules file names for a range (han's own winners: tuned's decision)."""
    if winner.startswith(FLAT + "_"):
        return winner[len(FLAT) + 1 :]
    return DEFAULT if is_hierarchy(winner) else winner
