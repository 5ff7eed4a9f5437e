"""`fabricprobe tune-sweep` (measure every library algorithm) and `fabricprobe tune FILE` (choose,
write the tuning files, and with --verify prove they apply and re-measure before/after)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fabricprobe.cli.options import choice_list
from fabricprobe.cli.parser import HelpFormatter
from fabricprobe.errors import EXIT_OK, EXIT_WRONG, UsageError
from fabricprobe.sizes import format_size
from fabricprobe.tuning import COLLECTIVES

EMITS = ("openmpi", "openmpi-json", "mpich", "intel", "nccl", "fabricprobe")
VENDOR_EMITS = {"Open MPI": ["openmpi", "openmpi-json"], "MPICH": ["mpich"], "Intel MPI": ["intel"]}


def add_parser(sub: Any) -> None:
    s = sub.add_parser("tune-sweep", formatter_class=HelpFormatter,
                       help="measure the library's default and every algorithm it has, forced one at a time",
                       description="Launch one mpiexec job per (collective, library algorithm), forcing the algorithm\n"
                                   "through the library's own settings (Open MPI MCA parameters, MPICH control\n"
                                   "variables, Intel MPI I_MPI_ADJUST_*), each job measuring every communicator size\n"
                                   "in --comm-sizes. Run it directly, not under mpiexec. Then: fabricprobe tune FILE.")
    s.add_argument("-n", "--ranks", type=int, required=True, help="ranks per job (the largest communicator size)")
    s.add_argument("-o", "--output", default="fabricprobe-tuning.h5", metavar="FILE", help="results file")
    s.add_argument("--collectives", default=",".join(COLLECTIVES), metavar="LIST", help="collectives to tune")
    s.add_argument("--comm-sizes", metavar="LIST", help="communicator sizes (default: 2, 4, 8, ... and -n)")
    s.add_argument("--only", metavar="LIST", help="only these library algorithms (and the default)")
    s.add_argument("--sizes", metavar="LIST", help="message sizes (default: 8 B to 4 MiB by ×4)")
    s.add_argument("--iters", type=int, default=100, metavar="N", help="first batch of timed iterations")
    s.add_argument("--max-time", type=float, default=0.5, metavar="SECONDS", help="time budget per point")
    s.add_argument("--mpiexec", metavar="PATH", help="launcher (default: the mpiexec next to this Python)")
    s.add_argument("--mpiexec-args", default="", metavar="ARGS", help="extra launcher arguments, quoted")
    s.add_argument("--job-timeout", type=float, default=900, metavar="SECONDS", help="limit per launched job")
    s.set_defaults(handler=run_sweep)

    t = sub.add_parser("tune", formatter_class=HelpFormatter,
                       help="choose the fastest algorithms and write the library's tuning files",
                       description="From a tune-sweep file, choose the fastest library algorithm per collective,\n"
                                   "communicator size and message-size range (the default is kept wherever the\n"
                                   "difference is inside the measured noise), and write the tuning files and the\n"
                                   "lines that load them. --verify launches the library with the files, proves with\n"
                                   "fingerprints that the chosen algorithm runs on both sides of every boundary,\n"
                                   "and re-measures default against tuned. Formats: docs/tuning.md.")
    t.add_argument("file", metavar="FILE", help="results file written by fabricprobe tune-sweep")
    t.add_argument("-o", "--output", default="tuning", metavar="DIR", help="directory for the files")
    t.add_argument("--emit", default="auto", metavar="LIST",
                   help=f"comma-separated: {', '.join(EMITS)}; auto = the measured library's formats + fabricprobe")
    t.add_argument("--collectives", metavar="LIST", help="only these collectives")
    t.add_argument("--dtype", default="float32", help="datatype whose measurements decide")
    t.add_argument("--min-gain", type=float, default=0.05, metavar="FRACTION",
                   help="a winner must be this much faster than the default, beyond both confidence intervals")
    t.add_argument("--verify", action="store_true", help="prove the files apply, then re-measure before/after")
    t.add_argument("--reps", type=int, default=2, metavar="N", help="before/after repetitions with --verify")
    t.add_argument("--mpiexec", metavar="PATH", help="launcher for --verify")
    t.add_argument("--mpiexec-args", default="", metavar="ARGS", help="extra launcher arguments, quoted")
    t.set_defaults(handler=run_tune)


def run_sweep(args: argparse.Namespace) -> int:
    from rich.console import Console

    from fabricprobe.mpienv.launcher import launched_by_mpiexec
    from fabricprobe.sizes import size_list
    from fabricprobe.tuning.measure import default_comm_sizes, measure

    if launched_by_mpiexec():
        raise UsageError("tune-sweep launches its own mpiexec jobs: run it directly, not under mpiexec")
    if args.ranks < 2:
        raise UsageError("-n must be at least 2")
    collectives = choice_list(args.collectives, COLLECTIVES, "collective")
    comm_sizes = [int(x) for x in args.comm_sizes.split(",")] if args.comm_sizes else default_comm_sizes(args.ranks)
    if any(c < 1 or c > args.ranks for c in comm_sizes):
        raise UsageError(f"--comm-sizes must lie between 1 and -n {args.ranks}")
    sizes = size_list(args.sizes) if args.sizes else [8 << (2 * k) for k in range(10)] + [4 << 20]
    sweep_args = ["--sizes", ",".join(map(str, sizes)), "--iters", str(args.iters), "--max-time", str(args.max_time)]
    console = Console(stderr=True)

    def progress(i: int, total: int, variant) -> None:
        if variant is not None:
            console.print(f"[{i + 1}/{total}] {variant.collective}: {variant.name}")

    only = args.only.split(",") if args.only else None
    vendor, launches = measure(args.ranks, args.output, collectives, comm_sizes, sweep_args, args.mpiexec,
                               args.mpiexec_args, only, args.job_timeout, progress)
    failed = [launch for launch in launches if launch.returncode != 0]
    for launch in failed:
        sizes = ",".join(map(str, launch.comm_sizes))
        console.print(f"[yellow]{launch.collective}/{launch.variant.name} on {sizes} ranks failed "
                      f"(exit {launch.returncode}):[/] {launch.stderr_tail}")
    console.print(f"{vendor}: {len(launches) - len(failed)} of {len(launches)} jobs measured into {args.output}; "
                  f"next: fabricprobe tune {args.output}")
    return EXIT_OK


def _rules_table(table, title: str):
    from rich.table import Table

    from fabricprobe.report.units import usec

    t = Table(title=title, title_justify="left", show_edge=False)
    for col in ("collective", "comm size", "message sizes", "default µs", "winner", "speedup", "noise ±"):
        t.add_column(col, justify="left" if col in ("collective", "winner") else "right")
    for coll, sections in table.rules.items():
        for n, ranges in sorted(sections.items()):
            for r in ranges:
                hi = "∞" if r.hi is None else format_size(r.hi)
                noise = max(d.noise for d in r.decisions)
                t.add_row(coll, str(n), f"[{format_size(r.lo)}, {hi})", usec(r.decisions[0].default_s),
                          r.winner if r.winner == "default" else f"[bold green]{r.winner}[/]",
                          f"{r.speedup:.2f}×", f"{noise:.1%}")
    return t


def run_tune(args: argparse.Namespace) -> int:
    from fabricprobe.console import make_console
    from fabricprobe.store import load_runs
    from fabricprobe.tuning import emit_selection
    from fabricprobe.tuning.choose import choose
    from fabricprobe.tuning.libraries import for_vendor
    from fabricprobe.tuning.measure import library_in_use

    runs = load_runs(args.file)
    colls = choice_list(args.collectives, COLLECTIVES, "collective") if args.collectives else None
    table = choose(runs, args.dtype, args.min_gain, collectives=colls)
    if not any(p["algorithm"].startswith("library:") for run in runs for p in run.points):
        raise UsageError(f"{args.file} has no forced-algorithm measurements (library:NAME): run fabricprobe tune-sweep")
    emits = VENDOR_EMITS.get(table.vendor, []) + ["fabricprobe"] if args.emit == "auto" else \
        choice_list(args.emit, EMITS, "format")
    for e in emits:
        needs = {"openmpi": "Open MPI", "openmpi-json": "Open MPI", "mpich": "MPICH", "intel": "Intel MPI"}.get(e)
        if needs and needs != table.vendor:
            raise UsageError(f"--emit {e} needs {needs} measurements; {args.file} measured {table.vendor}")
    if "nccl" in emits:
        raise UsageError(f"{args.file} holds no NCCL measurements (they come with GPU runs): leave out --emit nccl")
    library = None
    if any(e in emits for e in ("openmpi", "openmpi-json", "mpich", "intel")) or args.verify:
        in_use = library_in_use()
        if in_use != table.vendor:
            raise UsageError(f"{args.file} was measured with {table.vendor}, but this environment's MPI is {in_use}")
        library = for_vendor(table.vendor)
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc.strerror}") from None
    console = make_console()
    console.print(_rules_table(table, f"[bold]tuning rules[/] from {args.file} ({table.vendor}, {table.dtype})"))
    files, tuned_env, loads = _emit_library(table, emits, library, runs, out, console)
    if "fabricprobe" in emits:
        own = choose(runs, args.dtype, args.min_gain, include_handwritten=True, collectives=colls,
                     library_variants=False)
        files["fabricprobe"] = out / "fabricprobe_selection.json"
        files["fabricprobe"].write_text(emit_selection.selection_json(own))
        loads.append(f"# fabricprobe.tuned: export FABRICPROBE_SELECTION={files['fabricprobe'].resolve()}\n")
    for kind, path in files.items():
        console.print(f"wrote {kind}: {path}")
    for text in loads:
        console.print(text, markup=False, highlight=False)
    manifest = {"source": str(Path(args.file).resolve()), "rules": table.as_dict(),
                "files": {k: str(v) for k, v in files.items()}, "load_env": tuned_env}
    status = EXIT_OK
    if args.verify and tuned_env:
        status = _verify(args, table, library, tuned_env, files, manifest, console,
                         reemit=lambda t: _emit_library(t, emits, library, runs, out, console))
    (out / "tuning.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
    return status


def _emit_library(table, emits, library, runs, out: Path, console) -> tuple[dict[str, Path], dict[str, str], list[str]]:
    """Write the MPI library's files for `table`: (files, the environment that loads them, load lines)."""
    from fabricprobe.tuning import emit_intel, emit_mpich, emit_openmpi

    files: dict[str, Path] = {}
    tuned_env: dict[str, str] = {}
    loads: list[str] = []
    if not table.tuned():
        console.print("[yellow]no algorithm beats the library's default beyond the measured noise: nothing to "
                      "write for the library[/]")
    elif "openmpi" in emits or "openmpi-json" in emits:
        if "openmpi" in emits:
            files["openmpi"] = out / "ompi_rules.conf"
            text = emit_openmpi.classic_rules(table, library)
            emit_openmpi.parse_classic_rules(text)  # re-read with our own strict reader before writing
            files["openmpi"].write_text(text)
            tuned_env = emit_openmpi.load_env(files["openmpi"])
            loads.append(emit_openmpi.load_lines(files["openmpi"]))
        if "openmpi-json" in emits:
            files["openmpi-json"] = out / "ompi_rules.json"
            files["openmpi-json"].write_text(emit_openmpi.json_rules(table))
    if table.tuned() and "mpich" in emits:
        trees = emit_mpich.default_trees(emit_mpich.loaded_libmpi())
        trees["_cvars"] = getattr(library, "cvars", {})  # the values the forced measurements ran with
        written = emit_mpich.write(table, out, trees)
        files.update({f"mpich-{k}": v for k, v in written.items()})
        tuned_env = emit_mpich.load_env(written)
        loads.append(emit_mpich.load_lines(written))
    if table.tuned() and "intel" in emits:
        fallbacks = _intel_fallbacks(runs, table)
        for line in _write_intel_fallbacks(table, fallbacks):
            console.print(line, markup=False, highlight=False)
        adjust, left = emit_intel.adjust_strings(table, fallbacks)
        files["intel-tuning"] = out / "impi_tuning.json"
        files["intel-tuning"].write_text(emit_intel.tuning_json(table, fallbacks, ppn=table.world))
        tuned_env = emit_intel.load_env(files["intel-tuning"])
        loads.append(f"export I_MPI_TUNING={tuned_env['I_MPI_TUNING']}\n")
        if adjust:
            files["intel-adjust"] = out / "impi_adjust.env"
            files["intel-adjust"].write_text(emit_intel.adjust_file(adjust, left))
    return files, tuned_env, loads


def _verify_adjust(table, library, files, manifest, base, console) -> None:
    """The Intel ADJUST alternative, proven on its own for the collectives it carries; withdrawn if not."""
    from dataclasses import replace

    from fabricprobe.tuning import emit_intel
    from fabricprobe.tuning.libraries import names
    from fabricprobe.tuning.verify import passed, summary, verify

    env = emit_intel.read_adjust(files["intel-adjust"])
    carried = {c: s for c, s in table.rules.items() if f"I_MPI_ADJUST_{names(c).intel}" in env}
    checks = verify(replace(table, rules=carried), library, env, base,
                    progress=lambda text: console.print(f"verifying the ADJUST file: {text}"))
    ok = passed(checks)
    manifest["verification_adjust"] = {"passed": ok, "summary": summary(checks), "checks": [c.as_dict() for c in checks]}
    console.print(f"impi_adjust.env: {', '.join(f'{k} {v}' for k, v in summary(checks).items())}")
    if not ok:
        files["intel-adjust"].rename(files["intel-adjust"].with_name("impi_adjust.env.UNVERIFIED"))
        console.print("[bold red]the ADJUST file is not applied as intended: renamed impi_adjust.env.UNVERIFIED[/]")


def _intel_fallbacks(runs, table) -> dict[tuple[str, int, int], int]:
    """For ranges the default won: the fastest preset measured there (Intel MPI cannot keep its default)."""
    from fabricprobe.tuning.choose import candidates

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


def _write_intel_fallbacks(table, fallbacks: dict[tuple[str, int, int], int]) -> list[str]:
    """Intel MPI cannot keep its default inside its rules (JSON or ADJUST), so a range the default won in a
    collective the file tunes is written with the fastest preset measured there. Say so, and make it the
    range's rule: verification must then prove that preset applies (the default's fingerprint is not
    what the file asks for)."""
    from fabricprobe.tuning.libraries import DEFAULT

    lines = []
    for coll, sections in table.rules.items():
        if all(r.winner == DEFAULT for rs in sections.values() for r in rs):
            continue  # not in the file: Intel keeps its own default for this collective
        for n, ranges in sections.items():
            for r in ranges:
                chosen = fallbacks.get((coll, n, r.lo))
                if r.winner == DEFAULT and chosen is not None:
                    r.winner = f"preset{chosen}"
                    lines.append(f"Intel MPI keeps no default inside its tuning rules: {coll} on {n} ranks "
                                 f"[{format_size(r.lo)}, {'∞' if r.hi is None else format_size(r.hi)}), won by "
                                 f"the default, is written as its fastest measured preset, {r.winner}")
    return lines


def _prune(table, checks) -> list[str]:
    """Give the default back the ranges whose rule the library did not apply (the file would not do
    what was measured there); returns what was dropped."""
    from fabricprobe.tuning.libraries import DEFAULT
    from fabricprobe.tuning.verify import ERROR, MISMATCH

    dropped = []
    for c in checks:
        if c.status not in (MISMATCH, ERROR):
            continue
        for r in table.rules.get(c.collective, {}).get(c.comm_size, []):
            if r.lo <= c.size and (r.hi is None or c.size < r.hi) and r.winner != DEFAULT:
                dropped.append(f"{c.collective} on {c.comm_size} ranks [{format_size(r.lo)}, "
                               f"{'∞' if r.hi is None else format_size(r.hi)}): {r.winner}")
                r.winner = DEFAULT
    return dropped


def _withdraw(files: dict[str, Path]) -> None:
    """Rename the library's files *.UNVERIFIED so nobody loads them (fabricprobe's own table stays)."""
    for kind, path in files.items():
        if kind != "fabricprobe" and path.exists():
            path.rename(path.with_name(path.name + ".UNVERIFIED"))


def _verify(args, table, library, tuned_env, files, manifest, console, reemit=None) -> int:
    from rich.table import Table

    from fabricprobe.report.units import usec
    from fabricprobe.store import load_runs
    from fabricprobe.tuning.measure import before_after, launcher, speedups
    from fabricprobe.tuning.verify import passed, summary, verify

    base = launcher(args.mpiexec, args.mpiexec_args, table.world, table.vendor)[:-2]  # without "-n N"
    checks = verify(table, library, tuned_env, base, progress=lambda text: console.print(f"verifying {text}"))
    dropped: list[str] = []
    if not passed(checks) and reemit is not None:
        # Rules the library does not apply as measured (an algorithm that calls other collectives
        # which the file also retunes, a JSON leaf that takes another path) are given back to the
        # default; the smaller file is written and verified again, once.
        dropped = _prune(table, checks)
        console.print("[yellow]not applied as measured, given back to the default:[/] " + "; ".join(dropped))
        if table.tuned():
            files_now, tuned_env, _ = reemit(table)
            files.update(files_now)
            manifest["rules"], manifest["load_env"] = table.as_dict(), tuned_env
            checks = verify(table, library, tuned_env, base,
                            progress=lambda text: console.print(f"verifying again {text}"))
    t = Table(title="[bold]verification[/] (fingerprints with the files vs. the rule's algorithm forced)",
              title_justify="left", show_edge=False)
    for col in ("collective", "comm size", "size", "expected", "status", "detail"):
        t.add_column(col)
    for c in checks:
        colour = {"verified": "green", "MISMATCH": "bold red", "error": "red"}.get(c.status, "yellow")
        t.add_row(c.collective, str(c.comm_size), format_size(c.size), c.expected, f"[{colour}]{c.status}[/]",
                  c.detail[:100])
    console.print(t)
    ok = passed(checks)
    manifest["verification"] = {"passed": ok, "summary": summary(checks), "checks": [c.as_dict() for c in checks],
                                "dropped_rules": dropped}
    if ok and files.get("intel-adjust") is not None and files["intel-adjust"].exists():
        _verify_adjust(table, library, files, manifest, base, console)
    if not ok:
        _withdraw(files)
        console.print("[bold red]the library did not apply the files as intended: they are renamed *.UNVERIFIED "
                      "and must not be used[/]")
        return EXIT_WRONG
    full = launcher(args.mpiexec, args.mpiexec_args, table.world, table.vendor)
    launches = before_after(full, args.file, table, tuned_env, ["--iters", "100", "--max-time", "0.5"], reps=args.reps)
    failed = [la for la in launches if la.returncode != 0]
    if failed:
        manifest["before_after_failures"] = [f"{la.collective} {la.variant.name}: {la.stderr_tail}" for la in failed]
        if any(la.variant.name == "tuned" for la in failed):
            _withdraw(files)
            console.print("[bold red]the library failed with the files while re-measuring: "
                          + "; ".join(manifest["before_after_failures"]) + ". The files are renamed *.UNVERIFIED.[/]")
            return EXIT_WRONG
    rows = speedups(load_runs(args.file), table)
    manifest["before_after"] = rows
    st = Table(title="[bold]before / after[/] (median of repetitions; default vs tuned)", title_justify="left",
               show_edge=False)
    for col in ("collective", "comm size", "size", "default µs", "tuned µs", "speedup"):
        st.add_column(col, justify="right")
    for r in rows:
        st.add_row(r["collective"], str(r["comm_size"]), format_size(r["size"]), usec(r["baseline_s"]),
                   usec(r["tuned_s"]), f"{r['speedup']:.2f}×")
    console.print(st)
    slower = [r for r in rows if r["speedup"] < 0.9]
    manifest["regressions"] = slower
    if slower:
        # The rule was chosen on the sweep's medians; a re-measurement that disagrees means one of
        # them caught a slow phase of the machine. Say so rather than offer the rule silently.
        console.print("[yellow]slower with the files than without at: " + "; ".join(
            f"{r['collective']} on {r['comm_size']} ranks at {format_size(r['size'])} ({r['speedup']:.2f}×)"
            for r in slower) + ". Re-run tune-sweep with more --iters before trusting those rules.[/]")
    console.print(f"verification: {summary(checks)}; before/after stored in {args.file}")
    return EXIT_OK
