"""tune-sweep in one launch: the library's default, every algorithm it lets MPI_T switch at run time and
fabricprobe's own, on every communicator size, measured by one job (tuning.sweep_job, one sweep per
collective, each algorithm right after the default at every size). A launch per variant spent 50-86%
of tune-sweep's wall time not measuring (Python and MPI start-up, Numba's first point, teardown), and
on a cluster each launch costs more.

Where the one launch cannot measure a variant, that variant gets a launch of its own, as before
(tuning.measure.launch.run_job), and the outcome says why ("fallbacks"):
- the library cannot switch it at run time (tuning.plan.switch: no control variable, read-only);
- its points ended in an error (an algorithm the library refuses on some communicator: Open MPI's
  two_proc on more than 2 ranks) — only those communicator sizes;
- the job died in it (hung past the watchdog, crashed): the state file the switch writes names the
  variant it had switched to; the job is launched again for what is left, without that variant.
An interrupted tune-sweep is finished by `--resume`: the runs already in the file are kept, complete
sweeps are not repeated, and an incomplete one is measured again for its missing points only."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field, replace

from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.jobs import job_file, run_fabricprobe
from fabricprobe.engine.switching import variant_of
from fabricprobe.errors import EXIT_USAGE, UsageError
from fabricprobe.store import ResultsWriter, check_output_path, load_runs
from fabricprobe.store.journal import journal_path
from fabricprobe.store.schema import EMPTY, POINT_ERROR, STATUS_COMPLETE
from fabricprobe.tuning.measure import switch_state
from fabricprobe.tuning.measure.launch import (
    Launch,
    completed_launches,
    job_config,
    job_error,
    run_job,
    with_ranks,
)
from fabricprobe.tuning.plan.library import Library, Variant
from fabricprobe.tuning.plan.switch import SwitchPlan, describe_variables, plan_switch, variables_of
from fabricprobe.tuning.plan.variants import variant_label


@dataclass
class Fallback:
    collective: str
    variant: str
    comm_sizes: list[int]
    why: str


@dataclass
class TuneSweep:
    """What a tune-sweep did: its launches (one launch, its relaunches, then each fallback's) and why."""

    vendor: str
    switch: str  # "mpit" or "launch"
    launches: list[Launch] = field(default_factory=list)
    fallbacks: list[Fallback] = field(default_factory=list)
    refused: list[Fallback] = field(default_factory=list)  # errors by which the library refuses an algorithm
    runs: list[str] = field(default_factory=list)  # the runs it added to the file
    ok_points: int = 0  # points of those runs measured and validated
    wrong: list[str] = field(default_factory=list)  # labels of points whose validation failed
    began: float = field(default_factory=time.monotonic)
    interrupted: str = ""  # the signal that ended it before its end (a budgeted search cut short)

    @property
    def seconds(self) -> float:
        """Its wall time so far: printed by the command and stored with its runs (record)."""
        return round(time.monotonic() - self.began, 1)

    @property
    def summary(self) -> str:
        """ "1 launch, 2 fallbacks (3 launches)" with --switch mpit; "45 launches" with --switch launch."""
        if self.switch != "mpit":
            return _count(len(self.launches), "launch", "launches")
        one = sum(1 for launch in self.launches if launch.variant is ONE_LAUNCH)
        text = f"{_count(one, 'launch', 'launches')}, {_count(len(self.fallbacks), 'fallback', 'fallbacks')}"
        return text + (f" ({_count(len(self.launches) - one, 'launch', 'launches')})" if self.fallbacks else "")

    def record(self) -> dict:
        return {
            "switch": self.switch,
            "launches": len(self.launches),
            "seconds": self.seconds,
            "summary": self.summary,
            "fallbacks": [vars(f) for f in self.fallbacks],
            "refused": [vars(f) for f in self.refused],
            **({"interrupted": self.interrupted} if self.interrupted else {}),
        }


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


ONE_LAUNCH = Variant("*", "*", "", {})  # what a Launch of the one launch names as its variant


def part_config(
    template: SweepConfig, collective: str, comm_sizes: list[int], own: list[str], switched: list[str]
) -> SweepConfig:
    """One collective's sweep in the one launch: the default's job (the library, fabricprobe's own)
    with the switched variants beside it."""
    base = job_config(template, collective, comm_sizes, Variant(collective, "default", "", {}), own)
    return replace(base, library_variants={collective: list(switched)} if switched else None).check()


def measure_one_launch(
    library: Library,
    base: list[str],
    output: str,
    variants: list[Variant],
    collectives: list[str],
    comm_sizes: list[int],
    template: SweepConfig,
    prior: list,
    timeout: float = 900,
    own: dict[str, list[str]] | None = None,
    progress=None,
) -> TuneSweep:
    """`base` starts the job's n ranks (mpienv.launcher.launcher); `prior`: the runs a --resume continues
    (prior_runs). `timeout` is per variant (the one launch gets it times the variants it measures);
    progress(text) is told each launch."""
    own = own or {}
    n = int(base[-1])
    plan = plan_switch(library, variants, describe_variables(variables_of(library, variants)))
    result = TuneSweep(library.vendor, plan.method)
    fallbacks = {
        (v.collective, variant_label(v.name)): Fallback(v.collective, variant_label(v.name), comm_sizes, why)
        for v, why in plan.by_launch
    }
    parts = {c: part_config(template, c, comm_sizes, own.get(c, []), plan.switched(c)) for c in collectives}
    done, skip = _already(prior, parts)

    def errors(runs: list) -> None:
        """Switched points that ended in an error: a launch of their own, unless the library refused
        the algorithm on that communicator (it would refuse it in that launch too)."""
        for fb in _error_fallbacks(runs, plan):
            if library.refuses(fb.why):
                if all((r.collective, r.variant) != (fb.collective, fb.variant) for r in result.refused):
                    result.refused.append(fb)
            else:
                fallbacks.setdefault((fb.collective, fb.variant), fb)

    errors(prior)  # --resume: what failed when switched before the interruption
    known = {r.id for r in prior}
    state = switch_state.state_path(output)
    for _ in range(len(variants) + 1):
        pending = [c for c in collectives if c not in done]
        if not pending:
            break
        measuring = sum(1 + len(plan.switched(c)) for c in pending)
        if progress is not None:
            progress(f"one launch: {len(pending)} collectives, {measuring} variants at run time ({plan.method})")
        spec = {"parts": [parts[c].to_dict() for c in pending], "switch": plan.as_job(), "skip": sorted(skip)}
        launch = launch_job(base, output, {**spec, "state": state}, plan.launch_env, timeout * measuring, progress)
        result.launches.append(launch)
        new = [r for r in runs_of(output) if r.id not in known]
        known.update(r.id for r in new)
        result.runs += [r.id for r in new]
        more_done, more_skip = _already(new, parts)
        done |= more_done
        skip |= more_skip
        errors(new)
        if launch.returncode in (0, 1):
            break  # every sweep ran to its end (1: some points failed; their variants fall back)
        if launch.returncode == EXIT_USAGE:
            raise UsageError(launch.stderr_tail)
        culprit = switch_state.culprit(state)
        if culprit is None or not culprit[1] or culprit[1] not in plan.switched(culprit[0]):
            where = f" in {culprit[0]}" if culprit else ""
            raise UsageError(
                f"the one launch failed{where} outside a switched algorithm (exit {launch.returncode}): "
                f"{launch.stderr_tail}; measure with --switch launch"
            )
        coll, label = culprit[0], culprit[1]
        how = "did not finish" if launch.returncode in (3, 124) else f"crashed (exit {launch.returncode})"
        why = f"the one launch {how} in it: {launch.stderr_tail}"
        fallbacks[(coll, label)] = Fallback(coll, label, comm_sizes, why)
        del plan.writes[coll][label]
        parts[coll] = part_config(template, coll, comm_sizes, own.get(coll, []), plan.switched(coll))
    switch_state.discard(state)
    by_name = {(v.collective, variant_label(v.name)): v for v in variants}
    measured = completed_launches(prior)
    for (coll, label), fb in sorted(fallbacks.items()):
        if (coll, label) in measured:
            continue  # --resume: measured in a launch of its own before the interruption
        if progress is not None:
            progress(f"fallback: {coll}/{label} in a launch of its own ({fb.why})")
        variant = by_name[(coll, label)]
        before = {r.id for r in runs_of(output)}
        result.launches += run_job(
            with_ranks(base, n),
            output,
            variant,
            lambda sizes, v=variant: job_config(template, v.collective, sizes, v),
            fb.comm_sizes,
            timeout,
        )
        result.runs += [r.id for r in runs_of(output) if r.id not in before]
    result.fallbacks = list(fallbacks.values())
    finish(output, result)
    return result


def runs_of(output: str) -> list:
    """The runs of the results file, [] before it exists. A job killed before its first fold (a hang
    in the first points) leaves only the journal: a writer opened and closed folds it into the file."""
    if not os.path.exists(output):
        if not os.path.exists(journal_path(output)):
            return []
        ResultsWriter(output).close()
    return load_runs(output)


def prior_runs(output: str, resume: bool, vendor: str, n: int) -> list:
    """The runs a --resume continues (same library and job size), or none; a new tune-sweep refuses
    an output it would mix into (check_output_path's rules)."""
    if not resume:
        check_output_path(output)
        if os.path.exists(output) and not _tune_sweep_in(load_runs(output)):  # it appended to a plain sweep
            raise UsageError(f"{output} holds sweeps, not a tune-sweep: give tune-sweep a file of its own")
        return []
    runs = runs_of(output)
    if not runs or not _tune_sweep_in(runs):
        raise UsageError(f"--resume: {output} holds no tune-sweep to finish")
    others = {r.attrs.get("mpi_vendor") for r in runs} - {vendor}
    if others:
        raise UsageError(f"--resume: {output} was measured with {', '.join(sorted(map(str, others)))}, not {vendor}")
    sizes = {int(r.attrs.get("nranks", 0) or 0) for r in runs if r.config.get("library_variants") is not None}
    if sizes - {n}:
        raise UsageError(f"--resume: {output} was measured with -n {min(sizes - {n})}, not -n {n}")
    return runs


def _tune_sweep_in(runs: list) -> bool:
    """Whether runs hold a tune-sweep's jobs (an empty file holds nothing to mix with: True): a forced
    or switched library algorithm, a budgeted round's points, or the record a finished one stores."""
    return not runs or any(
        r.attrs.get("tune_sweep")
        or r.config.get("library_variant")
        or r.config.get("library_variants") is not None
        or r.config.get("points") is not None
        for r in runs
    )


def _already(runs: list, parts: dict[str, SweepConfig]) -> tuple[set[str], set[str]]:
    """(collectives whose one-launch sweep is complete, keys of points measured by incomplete ones)."""
    done, skip = set(), set()
    for run in runs:
        config = run.config
        colls = config.get("collectives") or []
        if len(colls) != 1 or colls[0] not in parts or config.get("library_variant"):
            continue
        if run.status == STATUS_COMPLETE:
            done.add(colls[0])
        else:
            skip.update(p["key"] for p in run.points)
    return done, skip


def launch_job(base: list[str], output: str, spec: dict, launch_env: dict[str, str], timeout: float, progress=None):
    """Start the one launch's ranks on `spec` (tuning.sweep_job); its lines shown by progress(text) as
    they come (each warning once). A Launch of ONE_LAUNCH."""
    path = job_file(output, json.dumps(spec))
    if spec.get("state"):
        switch_state.discard(spec["state"])  # an earlier job's: it must not name this one's culprit
    shown: set[str] = set()

    def line(text: str) -> None:
        """The job's progress ([k/N] points, rounds) and fabricprobe's own lines, each warning once; the
        launcher's banners are left to the error a failed job reports."""
        if not text.startswith(("[", "round ", "fabricprobe: ")):
            return
        if progress is not None and (text.startswith("[") or text not in shown):
            shown.add(text)
            progress(text)

    try:
        out = run_fabricprobe(base, ["tune-sweep-job", path, "-o", output], launch_env, timeout, line)
        return Launch("*", ONE_LAUNCH, out.returncode, job_error(out.stderr + "\n" + out.stdout))
    except subprocess.TimeoutExpired:
        return Launch("*", ONE_LAUNCH, 124, f"no result within {timeout:g} s")
    except KeyboardInterrupt:  # interrupted: no culprit to read; nothing of this job is left beside the results
        if spec.get("state"):
            switch_state.discard(spec["state"])
        raise
    finally:
        os.unlink(path)


def _error_fallbacks(runs: list, plan: SwitchPlan) -> list[Fallback]:
    """A switched variant whose points ended in an error, on those communicator sizes."""
    sizes: dict[tuple[str, str], set[int]] = {}
    why: dict[tuple[str, str], str] = {}
    for run in runs:
        for p in run.points:
            label = variant_of(p["algorithm"])
            if p["status"] == POINT_ERROR and p.get("forced_by") == plan.method and label:
                sizes.setdefault((p["collective"], label), set()).add(int(p["nranks"]))
                why.setdefault((p["collective"], label), p["note"])
    return [Fallback(c, lab, sorted(s), f"an error when switched: {why[(c, lab)]}") for (c, lab), s in sizes.items()]


def finish(output: str, result: TuneSweep) -> None:
    """Count what the runs this tune-sweep added measured, and store tune_sweep (launch count,
    fallbacks) on each of them."""
    if not result.runs:
        return
    mine = set(result.runs)
    for run in runs_of(output):
        if run.id in mine:
            result.ok_points += sum(p["status"] == "ok" and p["collective"] != EMPTY for p in run.points)
            result.wrong += [
                f"{p['collective']}/{p['algorithm']} {p['bytes']} B on {p['nranks']}"
                for p in run.points
                if p["status"] == "wrong"
            ]
    writer = ResultsWriter(output)
    try:
        for run_id in result.runs:
            writer.attach(run_id)
            writer.update_run({"tune_sweep": result.record()})
    finally:
        writer.close()
