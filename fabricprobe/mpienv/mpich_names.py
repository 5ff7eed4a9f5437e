"""The names of an MPICH control variable's values, in order, read from its description: MPICH
attaches no MPI_T enumeration to its algorithm variables, and their integer values follow the order
of the names in the description (mpienv.mpit writes by that order). `mpivars` prints the same
descriptions (tuning.libraries reads the algorithms from it). MPICH 5.0 puts one value per line
("ring   - Force ring algorithm"); 4.0 glues them into one line (inline_values)."""

from __future__ import annotations

import re

_VALUE_LINE = re.compile(r"^(\w+)\s+-\s")


def description_values(description: str) -> list[str]:
    """The value names of one description, in order (5.0: one per line; 4.0: glued into one line)."""
    lines = description.splitlines()
    if len(lines) > 1:
        return [m.group(1) for m in map(_VALUE_LINE.match, lines) if m]
    return inline_values(description)


# MPICH 4.0's mpivars prints a CVAR's description with its newlines removed, so the algorithm values
# run into the text before them: "...select allreduce algorithmauto - Internal ...)nb<pad>- Force
# nonblocking algorithmsmp<pad>- Force smp algorithm...". 5.0 prints one value per line.
_SEPARATOR = re.compile(r"([A-Za-z0-9_]+)( +)- (?=[A-Z])")


def _endings(text: str, start: int) -> list[tuple[str, str]]:
    """(name, ending) pairs: `text` (a description followed by a glued name) split after a word a
    description ends with; the name begins at or after `start`."""
    found = []
    for end in ("algorithm", "algorithms", ")"):
        i = text.find(end)
        while i >= 0:
            cut = i + len(end)
            if cut >= start and cut < len(text) and text[cut].isalpha() and text[cut].islower():
                found.append((text[cut:], end))
            i = text.find(end, i + 1)
    return found


def _padded(texts: list[str], pads: list[int], j: int) -> bool:
    """Whether value j is one of a padded block ("auto" and "sched_auto", whose descriptions begin
    "Internal", are not)."""
    described = texts[j + 1] if j + 1 < len(texts) else ""
    return not described.startswith("Internal") and (pads[j] > 1 or j > 1)


def inline_values(description: str) -> list[str]:
    """The algorithm values in one MPICH 4.0 description line, in order. A value is the text a
    description's last word ("algorithm", "algorithms", ")") is glued to, unless that is ambiguous
    ("algorithmsmp": smp, "algorithmssched_ring": sched_ring) or the description ends otherwise
    ("Force Binomial Treenb"): then the padding decides, since a value and its padding are as wide
    as its neighbours'. Checked on every *_ALGORITHM variable of Debian's MPICH 4.0.2."""
    seps = list(_SEPARATOR.finditer(description))
    texts, pads, starts = [], [], []  # per value: the description before it + the value; its padding
    for k, m in enumerate(seps):
        begin = seps[k - 1].end() if k else 0
        texts.append(description[begin : m.end(1)])  # previous description + the glued name
        starts.append(m.start(1) - begin)
        pads.append(len(m.group(2)))
    options = [_endings(t, s) for t, s in zip(texts, starts)]
    chosen: list[str | None] = [o[0][0] if len({n for n, _ in o}) == 1 else None for o in options]

    def neighbour_width(k: int) -> list[int]:
        out = []
        for j in (k - 1, k + 1, k - 2, k + 2):
            if 0 <= j < len(chosen) and chosen[j] is not None and _padded(texts, pads, j):
                out.append(len(chosen[j]) + pads[j])
        return out

    for k, opts in enumerate(options):
        if chosen[k] is not None:
            continue
        widths = neighbour_width(k)
        fit = [n for n, _ in opts if len(n) + pads[k] in widths]
        if fit:
            chosen[k] = fit[0]
        elif opts:
            plural = texts[k].startswith("Internal")
            chosen[k] = next((n for n, e in opts if (e == "algorithms") == plural), opts[0][0])
        elif widths and 0 < widths[0] - pads[k] <= len(texts[k]):
            chosen[k] = texts[k][-(widths[0] - pads[k]) :]
        else:
            chosen[k] = seps[k].group(1)
    return [c for c in chosen if c]
