"""Open MPI 5 session directories left behind by jobs that were killed.

Open MPI 5's launcher (PRRTE) keeps its job's files in `$TMPDIR/ompi.<pid>` (its own pid; /tmp when
TMPDIR, TEMP and TMP are unset) and removes the folder when it ends. A launcher killed with SIGKILL
cannot, and the folder stays with PMIx's shared-memory job data (`1/pmix-gds-shmem2.*.<pid>`) in it.
When a later mpiexec is given the same pid (Linux reuses pids: pid_max is 32768 here, and a test
suite launching thousands of jobs wraps it), its PMIx server finds those files and stops with "The
PMIx server's listener thread failed to start" (exit 213) before any rank exists. Measured with the
Open MPI 5.0.11 wheel: with such folders planted for the next 380 pids, 36 of 40 launches failed (0 of
30 when the planted folders lacked the shared-memory files); with the 549 folders that killed test
jobs had left in /tmp, 12 of 400 back-to-back launches failed, and after removing them 0 in three runs
of 400. This is the failure that made CI red three times in a row at one
test, a launch and its two relaunches all given pids of such folders.

fabricprobe does not delete Open MPI's files on a user's machine: a folder whose pid is not alive
here could belong to a launcher in another pid namespace (a container sharing /tmp). It names them in
the failure (launcher.run_launch), and the test suite, which gives its jobs a TMPDIR of their own,
removes the ones its own killed jobs leave (tests/conftest.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from fabricprobe.processes import alive

_SESSION_DIR = re.compile(r"^(?:ompi|prte|prted)\.(\d+)$")


def session_tmpdir(env: dict[str, str] | None = None) -> Path:
    """Where Open MPI 5's launcher puts its session folder: TMPDIR, TEMP, TMP, then /tmp (PRRTE's
    order, docs/session-directory.rst)."""
    env = os.environ if env is None else env
    for var in ("TMPDIR", "TEMP", "TMP"):
        if env.get(var):
            return Path(env[var])
    return Path("/tmp")


def orphaned_session_dirs(tmpdir: Path) -> list[Path]:
    """This user's launcher session folders in tmpdir whose launcher pid is not alive here."""
    found = []
    try:
        entries = list(os.scandir(tmpdir))
    except OSError:
        return []
    for entry in entries:
        match = _SESSION_DIR.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.stat(follow_symlinks=False).st_uid == os.getuid() and not alive(int(match.group(1))):
            found.append(Path(entry.path))
    return sorted(found)


def orphans_hint(env: dict[str, str] | None = None) -> str:
    """One line naming the orphaned folders that make this failure, or '' when there are none."""
    orphans = orphaned_session_dirs(session_tmpdir(env))
    if not orphans:
        return ""
    shown = " ".join(str(p) for p in orphans[:3]) + (" ..." if len(orphans) > 3 else "")
    return (
        f"fabricprobe: {len(orphans)} Open MPI session folder(s) of launchers that are no longer running "
        f"are in {orphans[0].parent} ({shown}); a new mpiexec given one of their pids fails this way. "
        "Remove them when no job of yours is running (rm -rf), or give jobs another TMPDIR."
    )
