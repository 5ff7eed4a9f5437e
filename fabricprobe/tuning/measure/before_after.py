"""`tune --verify`'s before/after: the library's default and the tuning files re-measured alternately,
and what the repetitions allow one to say of their ratio."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabricprobe.engine.config import SweepConfig
from fabricprobe.stats import median_ci_exact
from fabricprobe.tuning.measure.launch import Launch, job_config, run_variant
from fabricprobe.tuning.plan.library import DEFAULT, Variant

# Before/after re-measurements: a first batch of 100 iterations and 0.5 s per point, as tune-sweep's defaults.
BEFORE_AFTER = SweepConfig(iterations_small=100, iterations_large=100, max_time=0.5)


def before_after(
    base: list[str], output: str, table, tuned_env: dict[str, str], reps: int = 6, timeout: float = 900
) -> list[Launch]:
    """Re-measure the tuned collectives with the library's default and with the tuning files,
    alternately `reps` times (which runs first alternates too), labelled library:baseline and library:tuned."""
    launches = []
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue
        sizes = sorted({d.size for rs in sections.values() for r in rs for d in r.decisions})
        template = replace(BEFORE_AFTER, sizes=sizes)
        for rep in range(reps):
            order = (("baseline", {}), ("tuned", tuned_env))
            for label, env in order if rep % 2 == 0 else order[::-1]:  # neither always runs first
                variant = Variant(coll, label, "", env)
                launches.append(
                    run_variant(base, output, variant, job_config(template, coll, sorted(sections), variant), timeout)
                )
    return launches


def speedups(runs, table) -> list[dict]:
    """Per tuned point, default against tuned over the alternating repetitions of `runs` (the
    before/after runs of one `tune --verify`): each repetition's ratio (default time / tuned time,
    above 1: the files are faster), their median, and what the repetitions allow one to claim. With at
    least 6 repetitions the median ratio gets a distribution-free 95% interval and a verdict only when
    the interval excludes 1; with fewer, a verdict only when every repetition agrees. Disagreeing
    repetitions are reported as such, never as one ratio."""
    times: dict[tuple, dict[str, list[float]]] = {}
    for run in runs:  # in file order: baseline, tuned, baseline, tuned, ...
        for p in run.points:
            if p["algorithm"] in ("library:baseline", "library:tuned") and p["status"] == "ok":
                key = (p["collective"], p["nranks"], p["bytes"])
                times.setdefault(key, {}).setdefault(p["algorithm"].split(":")[1], []).append(p["median_s"])
    out = []
    for (coll, n, size), t in sorted(times.items()):
        pairs = list(zip(t.get("baseline", []), t.get("tuned", [])))
        ratios = np.sort([b / u for b, u in pairs if u > 0])
        if ratios.size == 0:
            continue
        ci = median_ci_exact(ratios)
        low, high = ci if ci is not None else (float(ratios[0]), float(ratios[-1]))
        if low > 1:
            verdict = "faster" if ci is not None else f"faster in all {ratios.size}"
        elif high < 1:
            verdict = "slower" if ci is not None else f"slower in all {ratios.size}"
        else:
            verdict = "no difference shown" if ci is not None else "repetitions disagree"
        out.append(
            dict(
                collective=coll,
                comm_size=n,
                size=size,
                reps=int(ratios.size),
                baseline_s=float(np.median([b for b, _ in pairs])),
                tuned_s=float(np.median([u for _, u in pairs])),
                ratios=[float(r) for r in ratios],
                speedup=float(np.median(ratios)),
                ci_low=None if ci is None else low,
                ci_high=None if ci is None else high,
                verdict=verdict,
                slower=high < 1,
            )
        )
    return out
