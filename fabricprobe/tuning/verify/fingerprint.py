"""Fingerprints of which algorithm ran: launch probe.py with a given environment and read its trace
(reduction steps per rank, any MPI) or Open MPI's pml monitoring (messages between every pair of ranks).
Two runs of the same algorithm at the same size on the same ranks give the same fingerprint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from fabricprobe import interrupts
from fabricprobe.errors import INTERRUPTED_STATUSES
from fabricprobe.mpienv import orphans, slurm_env
from fabricprobe.mpienv.launcher import failure_message, run_launch, signal_name
from fabricprobe.specs import SPECS

# The monitoring's point-to-point lines, internal (I: a negative tag) and external (E): the collectives'
# messages are not all internal. Open MPI 5.0.11's linear alltoall (persistent requests) is recorded as E,
# and a fingerprint of the I lines alone was empty ("recorded no messages": an error verdict for a file
# that applies; the grouped probes' counters, which count both, showed it). A probe job sends nothing
# else, so the two are summed per pair.
_MONITOR = re.compile(r"^[IE]\s+(\d+)\s+(\d+)\s+(\d+) bytes\s+(\d+) msgs sent", re.M)


def method_for(vendor: str, collective: str, hierarchical: bool = False) -> str | None:
    """How to fingerprint a collective's algorithm. Open MPI: its pml monitoring (every internal
    message), except for reductions under han (`hierarchical`: a section han serves), where the trace
    is used: with han serving, the monitoring itself crashes the job (segmentation fault, lab 2 × 2,
    Open MPI 5.0.11: allreduce and reduce at 64 KiB and 1 MiB, bcast at 64 KiB; with no tuning file)."""
    if vendor == "Open MPI" and not (hierarchical and SPECS[collective].reduces):
        return "monitor"
    if SPECS[collective].reduces:  # the trace counts the reduction steps of a user-defined op
        return "trace"
    return None


def probe(
    launcher: list[str],
    nranks: int,
    collective: str,
    nbytes: int,
    method: str,
    env: dict[str, str],
    timeout: float = 120,
    scratch: str | None = None,
    settle: bool = False,
) -> str:
    """The fingerprint as a canonical string, or "error: ..." when the probe failed.

    `settle` (monitoring, several nodes): the messages of a second call only, as a job of two calls
    less a job of one. On several nodes Open MPI's han sets itself up at a communicator's first call
    with a few small calls served by tuned (an allreduce of one int: is any node holding more than one
    rank?), even where it then passes every call to tuned (one rank a node), and a tuned rules file's
    rule for those sizes changes them: in the lab (4 × 1) every allreduce size of a file whose rules
    differed below 128 B read as a MISMATCH, the monitoring counting the job's messages from MPI_Init.

    Open MPI's pml
    monitoring writes one file per rank (enable_output=3 with a filename) in a folder under `scratch`,
    which every node must see: printed to the launcher's output instead, Open MPI 4.1's long records
    from different ranks were glued into one line now and then (1 run in 20 lost a record, and the
    verification a spurious MISMATCH). Its parameters go in the environment, which mpiexec and srun
    both pass on (srun has no --mca)."""
    if settle and method == "monitor":
        two, one = (probe(launcher, nranks, collective, nbytes, f"monitor{k}", env, timeout, scratch) for k in (2, 1))
        return two if two.startswith("error") else one if one.startswith("error") else second_call(two, one)
    argv, full_env = _probe_job(launcher, nranks, [collective, str(nbytes), method], env)
    if not method.startswith("monitor"):
        return _probe(argv, full_env, timeout, method, None)
    for _ in range(MONITOR_ATTEMPTS):
        folder = Path(tempfile.mkdtemp(prefix=".fabricprobe-monitor-", dir=scratch))
        try:
            found = _probe(argv, monitoring_env(full_env, str(folder)), timeout, method, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if not crashed(found):
            break
    return found


def _probe_job(launcher: list[str], nranks: int, args: list[str], env: dict[str, str]) -> tuple[list[str], dict]:
    """The command line of probe.py ARGS on nranks ranks (an srun step fills an allocation's first nodes)
    and its environment: this one with `env` added."""
    argv = launcher + slurm_env.step_nodes(launcher, nranks) + ["-n", str(nranks)]
    argv += [sys.executable, "-m", "fabricprobe.tuning.verify.probe", *args]
    return argv, {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **env}


# (collective, bytes, method[, MPI_T writes]) of one probe; "monitor2": probe(settle=True); the writes,
# ((control variable, value), ...), force an algorithm inside the job (probe.forced)
Item = tuple


def probe_group(
    launcher: list[str],
    nranks: int,
    items: list[Item],
    env: dict[str, str],
    timeout: float = 120,
) -> dict[Item, str]:
    """The fingerprints of many probes that share an environment and a job size, taken in one job
    (probe.py --group), each what probe() gives in a launch of its own: a monitoring fingerprint is of
    the call on a new communicator (its first call, or its second for "monitor2", as settle). Only what
    the job printed before it ended is returned: a job that failed, crashed or timed out part way
    leaves the rest to the caller (probes.Fingerprints takes them one per launch, with probe()'s
    retries and messages). Monitoring and the other methods belong in separate groups (the caller's):
    han's own runs crash under the monitoring, and a trace must not run with it on."""
    if not items:
        return {}
    argv, full_env = _probe_job(launcher, nranks, ["--group", json.dumps(items)], env)
    if any(item[2].startswith("monitor") for item in items):
        full_env = counting_env(full_env)
    try:
        with orphans.ended_if_interrupted():
            out = run_launch(argv, env=full_env, timeout=timeout + GROUP_SECONDS_PER_ITEM * len(items))
        printed = out.stdout
        if out.returncode < 0:
            orphans.end()
    except subprocess.TimeoutExpired as exc:  # as probe(): what it printed counts, the rest goes alone
        printed = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
    found: dict[Item, str] = {}
    for line in printed.splitlines():
        if line.startswith('{"item"'):
            record = json.loads(line)
            found[tuple(items[record["item"]])] = record["found"]
    return found


GROUP_SECONDS_PER_ITEM = 15  # a group's time limit: probe()'s for one, and this for each probe in it

# Open MPI 4.1.4's pml monitoring now and then ends a job with a segmentation fault that the same job
# does not repeat: in the lab under Slurm (2 × 2), 3 of 10 runs of the site test's planted-rule check
# had one crashed probe among their dozen (once at 8 B, twice at 64 KiB, with the rules file), and 0 of
# 160 probes crashed when run alone in a loop; the CI at af00386 failed on one. A crash says nothing of
# the rule (the instrument failed), so a crashed monitoring probe is launched again, and only a crash
# that repeats MONITOR_ATTEMPTS times is the verdict (han's own runs under monitoring crash every time:
# method_for, _under_failed_monitoring).
MONITOR_ATTEMPTS = 3
TIMED_OUT = "error: timed out"
LAUNCHER_ENDED = "error: the launcher "  # a probe whose launcher was killed: a failed job, not a verdict


def crashed(found: str) -> bool:
    """Whether a probe's job died from a signal (the library's own "Process received signal" report), or
    never ended: under Slurm a monitoring probe whose rank crashed can hold its step until the timeout
    (once in a clean-clone CI's site session, 2026-11-28: one of 12 planted-rule probes)."""
    return found.startswith("error") and (
        "received signal" in found or "Segmentation fault" in found or found == TIMED_OUT
    )


def second_call(two: str, one: str) -> str:
    """The per-pair (bytes, messages) of a two-call job less those of a one-call job."""
    first = {(s, d): (b, m) for s, d, b, m in json.loads(one)}
    pairs = []
    for s, d, b, m in json.loads(two):
        b0, m0 = first.pop((s, d), (0, 0))
        if (b - b0, m - m0) != (0, 0):
            pairs.append((s, d, b - b0, m - m0))
    if first or not pairs:
        return "error: the second call's messages could not be told (a pair only in the one-call job, or none)"
    return json.dumps(pairs)


def monitoring_env(env: dict[str, str], folder: str) -> dict[str, str]:
    """`env` with Open MPI's pml monitoring on, one file per rank in `folder` (FOLDER/rank.R.prof)."""
    out = {
        **env,
        "OMPI_MCA_pml_monitoring_enable": "2",
        "OMPI_MCA_pml_monitoring_enable_output": "3",
        "OMPI_MCA_pml_monitoring_filename": os.path.join(folder, "rank"),
    }
    return _monitoring_pml(out)


def counting_env(env: dict[str, str]) -> dict[str, str]:
    """`env` with Open MPI's pml monitoring on at level 1 and no file: the counters a grouped job reads
    (mpienv.monitoring: at level 2 they leave the collectives' messages out)."""
    return _monitoring_pml({**env, "OMPI_MCA_pml_monitoring_enable": "1"})


def _monitoring_pml(out: dict[str, str]) -> dict[str, str]:
    # the monitoring PML sits on top of the one selected: a PML include list (a site's
    # OMPI_MCA_pml=ucx, the lab's ob1) must name it too, or nothing is recorded
    pml = out.get("OMPI_MCA_pml", "")
    if pml and not pml.startswith("^") and "monitoring" not in pml.split(","):
        out["OMPI_MCA_pml"] = f"{pml},monitoring"
    return out


def _probe(argv: list[str], env: dict[str, str], timeout: float, method: str, folder: Path | None) -> str:
    try:
        with orphans.ended_if_interrupted():
            out = run_launch(argv, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return TIMED_OUT
    if out.returncode < 0:  # the launcher itself was killed (its stderr is empty): say so, end its ranks
        ended = orphans.end()
        left = f"; {ended} processes it left were ended" if ended else ""
        return f"{LAUNCHER_ENDED}{os.path.basename(argv[0])} was ended by {signal_name(-out.returncode)}{left}"
    if out.returncode in INTERRUPTED_STATUSES:  # the job was interrupted, not the rule: so is tune
        raise interrupts.Interrupted(out.returncode - 128)
    if out.returncode != 0:
        return "error: " + failure_message(out.stderr + "\n" + out.stdout)[:300]
    if folder is not None:
        text = "".join(p.read_text(errors="replace") for p in sorted(folder.glob("rank.*.prof")))
        sums: dict[tuple[int, int], tuple[int, int]] = {}
        for src, dst, b, m in _MONITOR.findall(text):
            b0, m0 = sums.get((int(src), int(dst)), (0, 0))
            sums[(int(src), int(dst))] = (b0 + int(b), m0 + int(m))
        pairs = sorted((src, dst, b, m) for (src, dst), (b, m) in sums.items() if (b, m) != (0, 0))
        if not pairs:
            # Two empty fingerprints are equal, so "[]" would let a file the library ignores pass.
            return "error: pml monitoring recorded no messages (no fingerprint to compare)"
        return json.dumps(pairs)
    if method == "smoke":
        return "ok" if '{"smoke": "ok"}' in out.stdout else "error: the smoke run printed nothing"
    if method == "path":
        lines = [line for line in out.stdout.splitlines() if line.startswith('{"path"')]
        return json.dumps(json.loads(lines[-1])["path"], sort_keys=True) if lines else "error: no path printed"
    lines = [line for line in out.stdout.splitlines() if line.startswith('{"trace"')]
    return json.dumps(json.loads(lines[-1])["trace"]) if lines else "error: no trace printed"
