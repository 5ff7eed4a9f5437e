"""`tune --verify`'s before/after: the library's default and the tuning files re-measured alternately,
and what the repetitions allow one to say of their ratio."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from fabricprobe.collectives.algorithm import LIBRARY
from fabricprobe.engine.config import SweepConfig
from fabricprobe.stats import median_ci_exact
from fabricprobe.tuning.choose.rules import winner_at
from fabricprobe.tuning.measure.launch import Launch, run_variant
from fabricprobe.tuning.measure.onelaunch import launch_job
from fabricprobe.tuning.plan.library import DEFAULT, Library, Variant
from fabricprobe.tuning.plan.switch import METHOD, refusal

# Before/after re-measurements: a first batch of 100 iterations and 0.5 s per point, as tune-sweep's defaults.
BEFORE_AFTER = SweepConfig(iterations_small=100, iterations_large=100, max_time=0.5)
BASELINE, TUNED = "baseline", "tuned"  # the two sides' labels (choose.rules.RESERVED keeps them from rules)
PAIRED = "paired"  # the variant name of a paired launch
MIN_REPS = 6  # the fewest repetitions whose [min, max] ratio is a distribution-free 95% interval of the median


def tuned_collectives(table) -> list[str]:
    """The collectives some rule of which is not the default's: those the files change."""
    return [
        c for c, sections in table.rules.items() if any(r.winner != DEFAULT for rs in sections.values() for r in rs)
    ]


def measured_at(table, collective: str) -> tuple[list[int], list[int]]:
    """(communicator sizes, message sizes) a collective's rules were decided at: every size of every range."""
    sections = table.rules[collective]
    return sorted(sections), sorted({d.size for rs in sections.values() for r in rs for d in r.decisions})


@dataclass
class Remeasured:
    """What before_after() launched, and whether the default and the files shared each launch."""

    launches: list[Launch] = field(default_factory=list)
    paired: bool = False  # every repetition one launch, the default switched off the files inside it
    why_unpaired: str = ""  # why a launch per side (from the start, or since a paired launch failed)


def pairing(library: Library, tuned_env: dict[str, str], described: dict[str, dict | None]) -> tuple[dict, str]:
    """({control variable: value} that give the library's default back inside a launch with the files,
    ""), or ({}, why not): the library has no such switch for these files (Library.files_off), or MPI_T
    does not let it be written at run time (`described`: tuning.plan.switch.describe_variables)."""
    writes = library.files_off(tuned_env)
    if not writes:
        why = library.why_files_stay(tuned_env)
        return {}, f"{library.vendor} has no run-time switch between its default and these files: {why}"
    for variable in writes:
        why = refusal(library, variable, described)
        if why:
            return {}, why
    return writes, ""


def before_after(
    base: list[str],
    output: str,
    table,
    tuned_env: dict[str, str],
    reps: int = 6,
    timeout: float = 900,
    still_open: Callable[[], set[tuple]] | None = None,
    files_off: dict[str, str] | None = None,
) -> Remeasured:
    """Re-measure the tuned collectives with the library's default and with the tuning files,
    alternately, up to `reps` times (which runs first alternates too), labelled library:baseline and
    library:tuned. Each repetition measures every tuned collective at once (the sizes and communicator
    sizes of all of them: speedups() keeps each collective's own), since the spread between launches
    is what the interval must hold, not between collectives. With `files_off` (pairing()), a
    repetition is one launch with the files, the default measured beside them at each point on a
    communicator made after writing those variables; otherwise (or once a paired launch fails: the
    rest go that way) a launch per side. `still_open()`, asked after each repetition, names the rows
    (collective, communicator size, bytes) whose verdict the repetitions left could still change
    (speedups with `planned`): the next repetitions measure those only, and none is made once every
    row is decided."""
    done = Remeasured(paired=bool(files_off))
    collectives = tuned_collectives(table)
    if not collectives:
        return done
    comm_sizes = sorted({n for c in collectives for n in measured_at(table, c)[0]})
    sizes = sorted({s for c in collectives for s in measured_at(table, c)[1]})
    template = replace(BEFORE_AFTER, sizes=sizes, collectives=collectives, algorithms=[LIBRARY], comm_sizes=comm_sizes)
    for rep in range(reps):
        if done.paired:
            launch = _paired_repetition(base, output, template, tuned_env, files_off, rep, timeout)
            done.launches.append(launch)
            if launch.returncode != 0:
                failed = f"exit {launch.returncode}: {launch.stderr_tail}"
                done.paired, done.why_unpaired = False, f"a paired launch failed ({failed}); a launch per side"
        if not done.paired:
            order = ((BASELINE, {}), (TUNED, tuned_env))
            for label, env in order if rep % 2 == 0 else order[::-1]:  # neither always runs first
                variant = Variant(",".join(template.collectives), label, "", env)
                config = replace(template, library_variant=label).check()
                done.launches.append(run_variant(base, output, variant, config, timeout))
        if still_open is None or rep + 1 == reps:
            continue
        rows = sorted(still_open())
        if not rows:
            break
        template = replace(
            template,
            collectives=[c for c in collectives if any(r[0] == c for r in rows)],
            comm_sizes=sorted({n for _, n, _ in rows}),
            sizes=sorted({size for _, _, size in rows}),
            points=[[c, name, n, size] for c, n, size in rows for name in (LIBRARY, f"{LIBRARY}:{BASELINE}")],
        )
    return done


def _paired_repetition(base, output, template, tuned_env, files_off, rep: int, timeout: float) -> Launch:
    """One repetition in one launch with the files (tuning.sweep_job): at each point the files as
    launched (library:tuned) and the default switched beside them (library:baseline), the default
    first in odd repetitions. Its Launch, named as the variant PAIRED."""
    config = replace(
        template,
        library_variant=TUNED,
        library_variants={c: [BASELINE] for c in template.collectives},
        switched_first=rep % 2 == 1,
    ).check()
    switch = {
        "method": METHOD,
        "new_communicator": True,
        "writes": {c: {BASELINE: dict(files_off)} for c in template.collectives},
        "served_by": {},
    }
    launch = launch_job(base, output, {"parts": [config.to_dict()], "switch": switch}, tuned_env, timeout)
    variant = Variant(",".join(template.collectives), PAIRED, "", tuned_env)
    return replace(launch, collective=variant.collective, variant=variant)


def verdict_of(ratios: np.ndarray) -> tuple[str, float, float, bool]:
    """(verdict, interval low, interval high, exact interval) of sorted per-repetition ratios. With at
    least 6 repetitions the median ratio gets a distribution-free 95% interval and a verdict only when
    the interval excludes 1; with fewer, a verdict only when every repetition agrees."""
    ci = median_ci_exact(ratios)
    low, high = ci if ci is not None else (float(ratios[0]), float(ratios[-1]))
    if low > 1:
        verdict = "faster" if ci is not None else f"faster in all {ratios.size}"
    elif high < 1:
        verdict = "slower" if ci is not None else f"slower in all {ratios.size}"
    else:
        verdict = "no difference shown" if ci is not None else "repetitions disagree"
    return verdict, low, high, ci is not None


def settled_verdict(ratios: np.ndarray, planned: int) -> str | None:
    """The verdict `planned` repetitions will give whatever the ones left measure, or None while it is
    open: the same at both extremes (every ratio left above all, or below all), and the interval's ends
    are order statistics, so any ratios in between give it too."""
    left = planned - ratios.size
    if left <= 0:
        return verdict_of(ratios)[0]
    above = verdict_of(np.sort(np.concatenate([ratios, np.full(left, np.inf)])))[0]
    below = verdict_of(np.sort(np.concatenate([ratios, np.zeros(left)])))[0]
    return above if above == below else None


def speedups(runs, table, planned: int | None = None) -> list[dict]:
    """Per tuned point, default against tuned over the alternating repetitions of `runs` (the
    before/after runs of one `tune --verify`): each repetition's ratio (default time / tuned time,
    above 1: the files are faster), their median, and what the repetitions allow one to claim
    (verdict_of). Disagreeing repetitions are reported as such, never as one ratio. `planned`: the
    repetitions asked for; a row with fewer gets the verdict they settle (settled_verdict; "decided"
    says whether it is), its interval left out. Only each collective's own sizes (measured_at); `rule`:
    the files' algorithm at the row ("default": they keep the library's own choice there)."""
    times: dict[tuple, dict[str, list[float]]] = {}
    for run in runs:  # in file order: baseline, tuned, baseline, tuned, ... (or both in one paired run)
        measured: dict[tuple, dict[str, float]] = {}
        for p in run.points:
            if p["algorithm"] in (f"{LIBRARY}:{BASELINE}", f"{LIBRARY}:{TUNED}") and p["status"] == "ok":
                key = (p["collective"], p["nranks"], p["bytes"])
                measured.setdefault(key, {})[p["algorithm"].split(":")[1]] = p["median_s"]
        paired = bool(run.config.get("library_variants"))
        for key, sides in measured.items():
            if paired and len(sides) < 2:
                continue  # a paired launch that stopped between the two sides of a point: no pair
            for side, median in sides.items():
                times.setdefault(key, {}).setdefault(side, []).append(median)
    out = []
    for (coll, n, size), t in sorted(times.items()):
        if table is not None and not _measured_row(table, coll, n, size):
            continue
        pairs = list(zip(t.get(BASELINE, []), t.get(TUNED, [])))
        ratios = np.sort([b / u for b, u in pairs if u > 0])
        if ratios.size == 0:
            continue
        verdict, low, high, exact = verdict_of(ratios)
        early = planned is not None and ratios.size < planned
        if early:
            verdict, exact = settled_verdict(ratios, planned), False
        out.append(
            dict(
                collective=coll,
                comm_size=n,
                size=size,
                reps=int(ratios.size),
                planned=planned or int(ratios.size),
                decided=verdict is not None,
                baseline_s=float(np.median([b for b, _ in pairs])),
                tuned_s=float(np.median([u for _, u in pairs])),
                ratios=[float(r) for r in ratios],
                speedup=float(np.median(ratios)),
                ci_low=low if exact else None,
                ci_high=high if exact else None,
                verdict=verdict or "open",
                slower=bool(verdict) and verdict.startswith("slower"),
                rule=None if table is None else winner_at(table.rules[coll][n], size),
            )
        )
    return out


def _measured_row(table, collective: str, comm_size: int, size: int) -> bool:
    if collective not in table.rules:
        return False
    comm_sizes, sizes = measured_at(table, collective)
    return comm_size in comm_sizes and size in sizes
