"""`fabricprobe tune FILE` as a workflow: choose the rules from a tune-sweep's measurements, write the
library's tuning files and fabricprobe's own selection table, and with verification prove the library
applies the files (rules it does not apply go back to the default, once), then re-measure default
against tuned. What it decides is handed to a Reporter (the CLI prints it); the manifest tuning.json
records everything."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from fabricprobe.errors import EXIT_OK, EXIT_WRONG, UsageError
from fabricprobe.mpienv.launcher import launcher
from fabricprobe.sizes import format_size
from fabricprobe.store import count_runs, load_runs
from fabricprobe.store.owned_folder import OwnedFolder
from fabricprobe.tuning.choose.left import LeftToDefault
from fabricprobe.tuning.choose.library_choice import leave_library_choice
from fabricprobe.tuning.choose.rules import MIN_GAIN, UNVERIFIED_MIN_GAIN, Table, choose
from fabricprobe.tuning.choose.selection import Selection, as_rows, choose_selection, describe_layout
from fabricprobe.tuning.emit import intel as emit_intel
from fabricprobe.tuning.emit import registry as emitters
from fabricprobe.tuning.emit import selection as emit_selection
from fabricprobe.tuning.emit import site as emit_site
from fabricprobe.tuning.emit.folder import MANIFEST, WRITER, output_folder, promote, replace_files, withdraw
from fabricprobe.tuning.emit.folder import reject as reject_file
from fabricprobe.tuning.emit.site_syntax import shell_export
from fabricprobe.tuning.measure.before_after import MIN_REPS, before_after, pairing, speedups, tuned_collectives
from fabricprobe.tuning.measure.launch import library_in_use
from fabricprobe.tuning.measure.shown import decisive, kept_rules
from fabricprobe.tuning.plan.hierarchy import is_hierarchy
from fabricprobe.tuning.plan.libraries import for_vendor
from fabricprobe.tuning.plan.library import DEFAULT, Library, names
from fabricprobe.tuning.plan.own import TUNE_COLLECTIVES
from fabricprobe.tuning.plan.switch import describe_variables
from fabricprobe.tuning.verify.checks import (
    ERROR,
    MISMATCH,
    Check,
    passed,
    summary,
    verify,
)
from fabricprobe.tuning.verify.probes import Fingerprints


class Reporter(Protocol):
    """Where the workflow says what it decided (the CLI prints; tests may collect)."""

    def line(self, text: str, style: str = "") -> None: ...  # style: "", "warning", "error", "command", "verdict"
    def progress(self, text: str) -> None: ...  # what is being done now (a terminal shows it until the next)
    def rules(self, table: Table, source: str) -> None: ...
    def selection(self, selection: Selection, source: str) -> None: ...
    def verification(self, checks: list[Check]) -> None: ...
    def before_after(self, rows: list[dict]) -> None: ...


@dataclass(frozen=True)
class TuneOptions:
    file: str
    output: str = "tuning"
    emit: list[str] | None = None  # None: the measured library's formats and fabricprobe's table
    collectives: list[str] | None = None
    dtype: str = "float32"
    min_gain: float | None = None  # None: MIN_GAIN with --verify, UNVERIFIED_MIN_GAIN without

    @property
    def gain(self) -> float:
        """The least gain a rule needs: --verify tries candidates from MIN_GAIN and keeps only those the
        before/after shows faster; without it the rules are written as chosen, so the floor is higher."""
        if self.min_gain is not None:
            return self.min_gain
        return MIN_GAIN if self.verify else UNVERIFIED_MIN_GAIN

    verify: bool = False
    reps: int = 6  # before/after repetitions: MIN_REPS, the fewest whose [min, max] ratio is a 95% interval
    mpiexec: str | None = None
    mpiexec_args: str = ""


@dataclass
class Phases:
    """Time to verified files: the wall time of `tune` and, per phase of the verification, its seconds
    and launches (probes: the fingerprints; before/after: the re-measurements); the rest is choosing
    the rules and writing the files."""

    began: float = field(default_factory=time.monotonic)
    probes: tuple[float, int] = (0.0, 0)
    before_after: tuple[float, int] = (0.0, 0)
    sweep_s: float | None = None  # the tune-sweep's wall time (sweep_span)

    def as_dict(self) -> dict:
        total = time.monotonic() - self.began
        return {
            "tune_sweep_s": self.sweep_s,
            "total_s": round(total, 2),
            "launches": self.probes[1] + self.before_after[1],
            "probes": {"seconds": round(self.probes[0], 2), "launches": self.probes[1]},
            "before_after": {"seconds": round(self.before_after[0], 2), "launches": self.before_after[1]},
            "choosing_and_writing_s": round(total - self.probes[0] - self.before_after[0], 2),
        }

    def line(self) -> str:
        t = self.as_dict()
        sweep = "" if t["tune_sweep_s"] is None else f"after the tune-sweep's {t['tune_sweep_s']:.0f} s, "
        return (
            f"time to verified files: {sweep}{t['total_s']:.0f} s, {t['launches']} launches (probes "
            f"{t['probes']['seconds']:.0f} s in {t['probes']['launches']}; before/after "
            f"{t['before_after']['seconds']:.0f} s in {t['before_after']['launches']}; choosing and writing "
            f"{t['choosing_and_writing_s']:.0f} s)"
        )


def _interrupted_search(run) -> bool:
    record = run.attrs.get("tune_sweep")
    return isinstance(record, dict) and bool(record.get("interrupted"))


def sweep_span(runs) -> float | None:
    """The tune-sweep's wall time as it stored it (tune_sweep.seconds), else the seconds from its first
    run's start to its last one's end (earlier before/after runs left out); None when neither is known."""
    from datetime import datetime

    spans = []
    for run in runs:
        if (run.config.get("library_variant") or "") in ("baseline", "tuned"):
            continue
        record = run.attrs.get("tune_sweep")
        if isinstance(record, dict) and record.get("seconds") is not None:
            return float(record["seconds"])
        try:
            spans.append((datetime.fromisoformat(run.attrs["started"]), datetime.fromisoformat(run.attrs["ended"])))
        except (KeyError, TypeError, ValueError):
            continue
    if not spans:
        return None
    return round((max(e for _, e in spans) - min(s for s, _ in spans)).total_seconds(), 1)


def tune(opts: TuneOptions, say: Reporter) -> int:
    phases = Phases()
    runs = load_runs(opts.file)
    phases.sweep_s = sweep_span(runs)
    cut = {str(r.attrs["tune_sweep"]["interrupted"]) for r in runs if _interrupted_search(r)}
    if cut:
        say.line(
            f"the budgeted tune-sweep in {opts.file} was interrupted ({', '.join(sorted(cut))}) before its search "
            "ended: the rules rest on what it had measured; run tune-sweep --budget again for a whole search",
            "warning",
        )
    _measured(runs, opts)
    table = choose(runs, opts.dtype, opts.gain, collectives=opts.collectives)
    if not any(p["algorithm"] != "library" for run in runs for p in run.points if p["collective"] in TUNE_COLLECTIVES):
        raise UsageError(
            f"{opts.file} has no forced-algorithm measurements (library:NAME) and none of fabricprobe's own "
            "algorithms: run fabricprobe tune-sweep"
        )
    emits = emitters.for_library(table.vendor) if opts.emit is None else opts.emit
    emitters.check(emits, table.vendor, opts.file)
    library = None
    if any(e in emitters.EMITTERS for e in emits) or opts.verify:
        in_use = library_in_use()
        if in_use != table.vendor:
            raise UsageError(f"{opts.file} was measured with {table.vendor}, but this environment's MPI is {in_use}")
        library = for_vendor(table.vendor)
    if opts.verify:  # refused before any file is written (the launcher is asked again when verifying)
        launcher(opts.mpiexec, opts.mpiexec_args, table.world, table.vendor)
    with output_folder(opts.output, emits, table.vendor, say.line) as out:
        return _tune(opts, say, phases, runs, table, emits, library, out)


def _measured(runs, opts: TuneOptions) -> None:
    """--collectives names only collectives the file measured (one it did not was an empty selection
    written in silence)."""
    held = {p["collective"] for run in runs for p in run.points}
    missing = [c for c in opts.collectives or () if c not in held]
    if missing:
        holds = ", ".join(sorted(held)) or "nothing"
        raise UsageError(f"--collectives {', '.join(missing)}: not measured in {opts.file} (it holds {holds})")


def _tune(opts, say, phases, runs, table, emits, library, out: OwnedFolder) -> int:
    say.rules(table, opts.file)
    if opts.min_gain is None and not opts.verify:
        say.line(
            f"without --verify a rule is written only where it was {1 / (1 - opts.gain):.2f}× faster than the "
            f"default in the tune-sweep; --verify tries every one from {1 / (1 - MIN_GAIN):.2f}× and keeps those "
            "the before/after shows faster (docs/tuning.md, Decisive files)"
        )
    for coll, sections in table.served_elsewhere.items():
        for n, path in sorted(sections.items()):
            hers = [r for r in table.rules.get(coll, {}).get(n, []) if is_hierarchy(r.winner)]
            if hers:
                say.line(
                    f"{coll} on {n} ranks was served by {path}: tuned through its hierarchy's own settings "
                    f"({', '.join(f'{r.span} {r.winner}' for r in hers)}; docs/tuning.md, On several nodes)"
                )
                continue
            say.line(
                f"{coll} on {n} ranks was served by {path}: no rule keyed on its size for it (it would never be read; "
                "docs/tuning.md, On several nodes)",
                "warning",
            )
    anyway = _leave_library_choice(table, library, say)
    if not table.tuned():
        say.line(
            "no algorithm beats the library's default beyond the measured noise: nothing to write for the library",
            "warning",
        )
    emitted = emitters.write_library_files(table, emits, library, runs, out)  # named *.unverified until proven
    for note in emitted.notes:
        say.line(note)
    manifest: dict[str, Any] = {
        "source": str(Path(opts.file).resolve()),
        "min_gain": opts.gain,
        "left_to_default": [g.as_dict() for g in anyway],
    }
    status, proof = EXIT_OK, NOT_VERIFIED
    if opts.verify and emitted.load_env:
        reemit = lambda t, marker=emitters.UNVERIFIED: emitters.write_library_files(  # noqa: E731
            t, emits, library, runs, out, marker
        )
        status, emitted, proof = _verify(opts, table, library, emitted, manifest, say, reemit, phases, out)
    elif opts.verify and emitted.files:
        say.line("nothing in these files can be loaded by this library, so nothing was verified", "warning")
    if emitters.SELECTION in emits:
        # After verification: where the library's rule was given back to its default, fabricprobe's
        # own algorithm must beat that default, not the rule the library did not apply.
        own = choose_selection(runs, table, opts.dtype, opts.gain, opts.collectives)
        say.selection(own, opts.file)
        path = out.write(emitters.SELECTION_FILE, emit_selection.selection_json(own))
        emitted.files[emitters.SELECTION] = path
        manifest["selection"] = {
            "own_winners": [
                f"{s.collective} on {s.comm_size} ranks ({describe_layout(s.ranks_per_node)})"
                f"{f' at density {s.density:g}' if s.density else ''} {r.span}: {r.winner}, "
                f"{r.speedup:.2f}× {s.reference}'s best"
                for s, r in own.own_winners()
            ],
            "rows": as_rows(own),
        }
    emitted.files.update(emit_site.write(emitted.load_env, proof, out))  # out/load/: env.sh, MCA params, ...
    manifest.update(
        rules=table.as_dict(),
        files={k: str(v) for k, v in emitted.files.items()},
        load_env=emitted.load_env,
        proof=proof,
        kept=kept_rules(table, manifest.get("before_after")),
    )
    if "verification" in manifest:
        manifest["time_to_verified_files"] = phases.as_dict()
        say.line(phases.line())
    out.write(MANIFEST, json.dumps(manifest, indent=1, default=str) + "\n")
    gone = out.finish()
    if gone:
        say.line(f"removed the previous {WRITER}'s files this one did not write again: {', '.join(gone)}")
    _offer(emitted, proof, manifest, out, say)
    return status


def _leave_library_choice(table: Table, library: Library | None, say: Reporter) -> list[LeftToDefault]:
    """No rule for the algorithm the library's own decision runs there anyway (choose/library_choice.py),
    where this library's decision is known."""
    if library is None or not library.default_decider:
        return []
    version, dtype = table.library_version, table.dtype
    left = leave_library_choice(
        table, lambda c, n, s: library.default_choice(c, n, s, dtype, version), library.default_decider
    )
    if left:
        say.line(
            f"{_rules(len(left))} named what {library.default_decider} runs there anyway: left to the default "
            "(they would change nothing)"
        )
    return left


# What the printed load lines say of the files' proof, and tuning.json's "proof".
NOT_VERIFIED = "unverified: written without --verify, nothing shows the library applies them"
ALL_VERIFIED = "verified: every rule the files keep was seen to run with them and shown faster than the default"
NONE_SHOWN = "nothing shown: no rule was both seen to run and shown faster, so no file for the library"
REJECTED = "rejected: the library did not apply them as measured (renamed *.REJECTED: do not use)"
SHOWN_ON_SCREEN = 6  # rules kept, and rules left to the default, listed on the screen; all in tuning.json


def _verdict(proof: str, kept: list[str], emitted: emitters.Emitted) -> str:
    """The first line of what `tune` offers: what to load, and how sure it is."""
    if proof == REJECTED:
        return "load nothing: the library did not apply the files as measured (renamed *.REJECTED)"
    if proof == NONE_SHOWN:
        return "nothing to load for the library: no rule was both seen to run and shown faster than its default"
    if not emitted.load_lines:
        return "nothing to load for the library: no algorithm beats its default beyond the noise"
    if proof == ALL_VERIFIED:
        return f"load the files below: {_rules(len(kept))}, each seen to run and shown faster than the default"
    return f"{_rules(len(kept))}, unverified: `tune --verify` proves them and keeps only those shown faster"


def _rules(n: int) -> str:
    return f"{n} rule{'' if n == 1 else 's'}"


def _listed(lines: list[str], what: str) -> list[str]:
    """At most SHOWN_ON_SCREEN of `lines`, indented, and how many more tuning.json holds."""
    out = [f"  {what}{line}" for line in lines[:SHOWN_ON_SCREEN]]
    if len(lines) > SHOWN_ON_SCREEN:
        out.append(f"  … and {len(lines) - SHOWN_ON_SCREEN} more (fabricprobe report tuning.json)")
    return out


def _offer(emitted: emitters.Emitted, proof: str, manifest: dict, out: OwnedFolder, say: Reporter) -> None:
    """The verdict first (what to load, the rules and their speedups, what was left to the default
    and why), then where everything is, then the load lines under their proof."""
    say.line(_verdict(proof, manifest["kept"], emitted), "verdict")
    if emitted.load_lines:
        for text in _listed(manifest["kept"], ""):
            say.line(text)
    for text in _listed([g["short"] for g in manifest.get("left_to_default", [])], "left to the default: "):
        say.line(text, "warning")
    names = ", ".join(out.name_of(p) for p in emitted.files.values())
    say.line(f"wrote in {out.path('.')}: {names}, tuning.json; every table: fabricprobe report {out.path(MANIFEST)}")
    if emitted.load_lines:
        say.line(f"# {proof}", "" if proof == ALL_VERIFIED else "warning")
        for text in emitted.load_lines:
            say.line(text, "command")
    if emitters.SELECTION in emitted.files:
        path = emitted.files[emitters.SELECTION].resolve()
        say.line(f"# fabricprobe.tuned: {shell_export('FABRICPROBE_SELECTION', str(path))}", "command")


def prune(table: Table, checks: list[Check], statuses: tuple[str, ...] = (MISMATCH, ERROR)) -> list[str]:
    """Give the default back the ranges whose rule the library did not apply (the file would not do
    what was measured there): every range a check of `statuses` covers; returns what was dropped."""
    dropped = []
    for c in checks:
        if c.status not in statuses:
            continue
        for r in table.rules.get(c.collective, {}).get(c.comm_size, []):
            if r.covers(c.size) and r.winner != DEFAULT:
                dropped.append(f"{c.collective} on {c.comm_size} ranks {r.span}: {r.winner}")
                r.winner = DEFAULT
    return dropped


def _verify_again(table, library, emitted, fingerprints, say, reemit, out) -> tuple[list[Check], emitters.Emitted]:
    """The files written again from the pruned rules (replacing `emitted`'s) and verified again (the
    fingerprints of environments already probed are not taken again)."""
    again = reemit(table)
    replace_files(out, emitted, again)
    checks = _verified(table, library, again.load_env, fingerprints, say, "verifying again ")
    return checks, again


def _verified(table, library, env, fingerprints: Fingerprints, say: Reporter, what: str) -> list[Check]:
    """verify() with the fingerprints of this `tune` (shared by its rounds), its progress said."""
    return verify(
        table,
        library,
        env,
        fingerprints.launcher,
        progress=lambda text: say.progress(f"{what}{text}"),
        scratch=fingerprints.scratch,
        fingerprints=fingerprints,
    )


def _verify(
    opts: TuneOptions,
    table: Table,
    library: Library,
    emitted: emitters.Emitted,
    manifest: dict,
    say: Reporter,
    reemit,
    phases: Phases,
    out: OwnedFolder,
) -> tuple[int, emitters.Emitted, str]:
    base = launcher(opts.mpiexec, opts.mpiexec_args, table.world, table.vendor)[:-2]  # without "-n N"
    fingerprints = Fingerprints(base, opts.output)
    status, emitted, proof = _prove(opts, table, library, emitted, manifest, say, reemit, fingerprints, phases, out)
    phases.probes = (fingerprints.seconds, fingerprints.launches)
    return status, emitted, proof


def _slower_where_default_kept(rows: list[dict], say: Reporter) -> None:
    """Rows slower with the files where they keep the library's own choice: no rule chose there, so
    another tune-sweep would not change them. Paired in one launch, the before/after resolves
    differences of about 1% (docs/tuning.md, Time to verified files), e.g. Open MPI consulting its
    rules at each call."""
    if rows:
        say.line(
            "slower with the files where they keep the library's own choice (no rule chose there): "
            + "; ".join(
                f"{r['collective']} on {r['comm_size']} ranks at {format_size(r['size'])} ({r['speedup']:.3f}×)"
                for r in rows
            ),
            "warning",
        )


def _pairing(library: Library, load_env: dict[str, str]) -> tuple[dict[str, str], str]:
    """The writes that give the default back inside a launch with the files, or why there are none
    (tuning.measure.before_after.pairing; MPI_T asked in a child process)."""
    wanted = library.files_off(load_env)
    try:
        described = describe_variables(sorted(wanted))
    except UsageError as exc:
        return {}, str(exc)
    return pairing(library, load_env, described)


def _prove(opts, table, library, emitted, manifest, say, reemit, fingerprints, phases, out):
    """The files proven (rules the library does not apply given back, once), re-measured, and made
    decisive: only what was seen to run and shown faster stays (_decide)."""
    checks = _verified(table, library, emitted.load_env, fingerprints, say, "verifying ")
    dropped: list[str] = []
    why_dropped = [c.as_dict() for c in checks if c.status in (MISMATCH, ERROR)]  # the first round's failures
    if not passed(checks):
        # Rules the library does not apply as measured (an algorithm that calls other collectives
        # which the file also retunes, a JSON leaf that takes another path) are given back to the
        # default; the smaller file is written and verified again, once.
        dropped = prune(table, checks)
        say.line("not applied as measured, given back to the default: " + "; ".join(dropped), "warning")
        if table.tuned():
            checks, emitted = _verify_again(table, library, emitted, fingerprints, say, reemit, out)
    say.verification(checks)
    ok = passed(checks)
    manifest["verification"] = {
        "passed": ok,
        "summary": summary(checks),
        "checks": [c.as_dict() for c in checks],
        "dropped_rules": dropped,
        "dropped_because": why_dropped,
    }
    if ok and emitted.files.get("intel-adjust") is not None and emitted.files["intel-adjust"].exists():
        _verify_adjust(table, library, emitted.files, manifest, fingerprints, say, out)
    if not ok:
        say.line(
            "the library did not apply the files as intended: they are renamed *.REJECTED and must not be used",
            "error",
        )
        return EXIT_WRONG, withdraw(out, emitted), REJECTED
    rows = _before_after(opts, table, library, emitted, manifest, say, phases)
    if rows is None:
        return EXIT_WRONG, withdraw(out, emitted), REJECTED
    return _decide(table, library, checks, rows, emitted, manifest, say, reemit, fingerprints, out, opts.file)


def _before_after(opts, table, library, emitted, manifest, say, phases) -> list[dict] | None:
    """The default and the files re-measured alternately (stored in the tune-sweep's file); the rows
    (before_after.speedups), or None when the library failed with the files."""
    full = launcher(opts.mpiexec, opts.mpiexec_args, table.world, table.vendor)
    runs_before = count_runs(opts.file)

    def still_open() -> set[tuple]:  # the rows whose verdict the repetitions left could still change
        rows = speedups(load_runs(opts.file, since=runs_before), table, opts.reps)
        return {(r["collective"], r["comm_size"], r["size"]) for r in rows if not r["decided"]}

    files_off, why_unpaired = _pairing(library, emitted.load_env)
    how = f"a launch per side: {why_unpaired}"
    if files_off:
        how = "each one launch, the default switched beside the files"
    say.line(
        f"before/after: {', '.join(tuned_collectives(table))} re-measured with the library's default and with "
        f"the files alternately, up to {opts.reps} repetitions ({how})"
    )
    if opts.reps < MIN_REPS:
        say.line(
            f"--reps {opts.reps}: fewer than {MIN_REPS} repetitions give no 95% interval, so no rule can be shown "
            "faster and every rule will be left to the default",
            "warning",
        )
    began = time.monotonic()
    remeasured = before_after(
        full, opts.file, table, emitted.load_env, opts.reps, still_open=still_open, files_off=files_off
    )
    launches = remeasured.launches
    phases.before_after = (time.monotonic() - began, len(launches))
    manifest["before_after_pairing"] = {"paired": remeasured.paired, "why_not": remeasured.why_unpaired or why_unpaired}
    if files_off and not remeasured.paired:
        say.line(f"before/after: {remeasured.why_unpaired}", "warning")
    failed = [la for la in launches if la.returncode != 0]
    if failed:
        manifest["before_after_failures"] = [f"{la.collective} {la.variant.name}: {la.stderr_tail}" for la in failed]
        if any(la.variant.name == "tuned" for la in failed):
            say.line(
                "the library failed with the files while re-measuring: "
                + "; ".join(manifest["before_after_failures"])
                + ". The files are renamed *.REJECTED.",
                "error",
            )
            return None
    rows = speedups(load_runs(opts.file, since=runs_before), table, opts.reps)
    manifest["before_after"] = rows
    say.before_after(rows)
    manifest["regressions"] = [r for r in rows if r["slower"]]
    _slower_where_default_kept([r for r in rows if r["slower"] and r["rule"] == DEFAULT], say)
    return rows


def _decide(table, library, checks, rows, emitted, manifest, say, reemit, fingerprints, out, source):
    """Decisive files: every size of a rule not verified or not shown faster goes back to the default
    (measure.shown.decisive); the smaller files are written and verified again until every rule left
    is verified (each round only removes rules). Returns (status, the files, their proof)."""
    left = decisive(table, checks, rows)
    while left and table.tuned():
        checks, emitted = _verify_again(table, library, emitted, fingerprints, say, reemit, out)
        if not passed(checks):
            say.line("the smaller files were not applied as intended: renamed *.REJECTED", "error")
            manifest["verification"].update(passed=False, checks=[c.as_dict() for c in checks])
            return EXIT_WRONG, withdraw(out, emitted), REJECTED
        more = decisive(table, checks, rows)
        if not more:
            manifest["verification"].update(summary=summary(checks), checks=[c.as_dict() for c in checks])
            break
        left += more
    manifest["left_to_default"] += [g.as_dict() for g in left]
    say.line(f"before/after stored in {source}")
    if not table.tuned():
        replace_files(out, emitted, emitters.Emitted())
        return EXIT_OK, emitters.Emitted(), NONE_SHOWN
    fresh = reemit(table, emitters.VERIFIED)
    promote(out, emitted, fresh)
    return EXIT_OK, fresh, ALL_VERIFIED


def _verify_adjust(
    table: Table,
    library: Library,
    files: dict[str, Path],
    manifest: dict,
    fingerprints: Fingerprints,
    say: Reporter,
    out: OwnedFolder,
) -> None:
    """The Intel ADJUST alternative, proven on its own for the collectives it carries; withdrawn if not."""
    env = emit_intel.read_adjust(files["intel-adjust"])
    carried = {c: s for c, s in table.rules.items() if f"I_MPI_ADJUST_{names(c).intel}" in env}
    checks = _verified(replace(table, rules=carried), library, env, fingerprints, say, "verifying the ADJUST file: ")
    ok = passed(checks)
    manifest["verification_adjust"] = {
        "passed": ok,
        "summary": summary(checks),
        "checks": [c.as_dict() for c in checks],
    }
    say.line(f"impi_adjust.env: {', '.join(f'{k} {v}' for k, v in summary(checks).items())}")
    if not ok:
        rejected = reject_file(out, files["intel-adjust"])
        say.line(f"the ADJUST file is not applied as intended: renamed {rejected.name}", "error")
