"""Which variants a tune-sweep measures (--only), and the label a forced algorithm's points carry."""

from __future__ import annotations

from fabricprobe.errors import UsageError
from fabricprobe.tuning.plan.library import Library, Variant
from fabricprobe.tuning.plan.own import SPARSE


def variant_label(name: str) -> str:
    """The label a forced algorithm's points carry (library:LABEL): the library's name, "-" as "_"."""
    return name.replace("-", "_")


def variants_for(library: Library, collectives: list[str], only: list[str] | None) -> list[Variant]:
    if only is not None:
        known = {v.name for coll in collectives if coll != SPARSE for v in library.variants(coll)}
        unknown = [name for name in only if name not in known]
        if unknown:
            raise UsageError(
                f"--only {','.join(unknown)}: not an algorithm of {library.vendor} for "
                f"{', '.join(collectives)} (it has: {', '.join(sorted(known))})"
            )
    out = []
    for coll in collectives:
        if coll == SPARSE:  # no library algorithm: one job of fabricprobe's own
            out.append(library.default(coll))
            continue
        for v in library.variants(coll):
            if only is None or v.name in only or v.name == "default":
                out.append(v)
    return out
