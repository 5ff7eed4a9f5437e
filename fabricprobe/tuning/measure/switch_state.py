"""The state file of a one launch (tuning.measure.onelaunch): rank 0 notes in it the variant it has just
switched to (tuning.measure.mpit_switch), so that the driver can name the variant a hung or crashed job
died in. It lies beside the results and is written through a temporary file replaced atomically; a
rank killed between the two (a launcher's SIGKILL after the SIGTERM it forwards) leaves that temporary
file behind, so the driver discards both, whatever ended the job."""

from __future__ import annotations

import contextlib
import json
import os

SUFFIX = ".switching"  # beside the results: the variant the one launch switched to last


def state_path(output: str) -> str:
    return output + SUFFIX


def _tmp(path: str) -> str:
    return f"{path}.tmp"


def note(path: str, collective: str, variant: str, nranks: int) -> None:
    """Rank 0: `variant` of `collective` on `nranks` ranks is about to run (replaces the file whole)."""
    tmp = _tmp(path)
    with open(tmp, "w") as f:
        json.dump({"collective": collective, "variant": variant, "nranks": nranks}, f)
    os.replace(tmp, path)


def culprit(path: str) -> tuple[str, str, int] | None:
    """(collective, variant, ranks) noted last; None where nothing readable was noted."""
    try:
        with open(path) as f:
            found = json.load(f)
        return found["collective"], found["variant"], int(found["nranks"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def discard(path: str) -> None:
    """The state file and its temporary file gone (each may be missing)."""
    for name in (path, _tmp(path)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
