"""The fingerprints one verification rests on, taken in as few launches as the environments allow.

Why: every fingerprint used to be a launch of its own (per collective, communicator size, message size
and environment), and a launch pays Python, numpy and MPI start-up: `tune --verify` spent most of its
time starting jobs (issue 54). Here the verification's own logic (checks._checks) is run first in
planning rounds: each fingerprint it asks for and that is not known yet is noted and answered with a
stand-in, and after the round the noted ones are taken in one launch per (environment, job size,
monitored or not) (fingerprint.probe_group). A round stops at a section whose serving path is not
known yet (Unknown), since the path decides which fingerprints it needs; the next round goes further
with what the last one took. The verdicts are then computed once more, as before, taking in a launch
of its own (probe(), with its retries and messages) any fingerprint still unknown: so a group changes
the launches, never what a verdict rests on. A fingerprint a group could not give is left to that last
pass: every one of a job that printed none, and any later one of that environment (it fails: a file
the library refuses), and the first missing one of a job that stopped part way (it ended the job; the
rest are grouped again). A path is the exception: a section's plan starts from it, so it is taken
alone as soon as its group failed."""

from __future__ import annotations

import hashlib
import os
import time
from typing import Callable

from fabricprobe.tuning.verify.fingerprint import Item, probe, probe_group

Key = tuple  # (collective, nranks, bytes, method, environment_key(env), settle)
PLANNING_ROUNDS = 4  # paths; fingerprints; those the fingerprints' results call for; one spare


class Unknown(Exception):
    """Planning: a section's serving path is not known yet."""


class Fingerprints:
    """fingerprint(collective, nranks, bytes, method, env, settle) -> the fingerprint string, cached;
    counts the launches it made and the seconds they took."""

    def __init__(self, launcher: list[str], scratch: str | None) -> None:
        self.launcher = launcher
        self.scratch = scratch
        self.known: dict[Key, str] = {}
        self.asked: dict[Key, None] = {}  # noted while planning, in the order asked
        self.alone: set[Key] = set()  # a group could not give them: one launch each, if still asked
        self.failing: set[tuple] = set()  # (environment, nranks) whose grouped job printed nothing
        # False once a monitored group printed nothing: Open MPI 4.1.4 (Debian's) has no MPI_T variables
        # for the pml monitoring's counters, so its monitoring probes are taken one per launch
        self.monitoring_groups = True
        # env -> (launch environment, MPI_T writes) where the env's forced algorithm can be switched
        # inside a job (checks.run_time_writes), None where it cannot; set by verify()
        self.run_time: Callable[[dict[str, str]], tuple[dict, dict] | None] | None = None
        self.planning = False
        self.launches = 0
        self.seconds = 0.0

    def __call__(self, coll: str, nranks: int, nbytes: int, method: str, env: dict[str, str], settle: bool) -> str:
        key = (coll, nranks, nbytes, method, environment_key(env), settle)
        if key in self.known:
            return self.known[key]
        if self.planning and ((key[4], nranks) in self.failing or (method == "monitor" and not self.monitoring_groups)):
            self.alone.add(key)  # its environment's job printed nothing, or no monitored job can
        if not self.planning or (method == "path" and key in self.alone):
            return self._alone(key)
        if key not in self.alone:
            self.asked[key] = None
            if method == "path":
                raise Unknown(key)
        return f"pending {key}"  # not an error, and equal to no other fingerprint

    def _alone(self, key: Key) -> str:
        """The fingerprint of `key` in a launch of its own (probe(): its retries, its messages)."""
        coll, nranks, nbytes, method, env, settle = key
        began = time.monotonic()
        self.known[key] = probe(
            self.launcher, nranks, coll, nbytes, method, as_env(env), scratch=self.scratch, settle=settle
        )
        self.launches += 2 if settle and method == "monitor" else 1
        self.seconds += time.monotonic() - began
        return self.known[key]

    def plan(self, run: Callable[[], object], progress: Callable[[str], None] | None = None) -> None:
        """Run `run` (the verification, asking this object) in planning rounds, taking after each the
        fingerprints it asked for in grouped launches, until it asks for nothing new."""
        for _ in range(PLANNING_ROUNDS):
            self.planning = True
            try:
                run()
            finally:
                self.planning = False
            if not self.asked:
                return
            self.take(list(self.asked), progress)
            self.asked = {}

    def take(self, keys: list[Key], progress: Callable[[str], None] | None = None) -> None:
        """The fingerprints of `keys`, one launch per (environment, job size, monitored or not)."""
        groups: dict[tuple, list[tuple[Item, Key]]] = {}
        for key in keys:
            coll, nranks, nbytes, method, env, settle = key
            item = (coll, nbytes, "monitor2" if settle and method == "monitor" else method)
            switched = self.run_time(as_env(env)) if method == "monitor" and self.run_time else None
            if switched is not None:  # the forced algorithms of one launch environment: one job
                launch, writes = switched
                env, item = environment_key(launch), (*item, tuple(sorted(writes.items())))
            groups.setdefault((env, nranks, method == "monitor"), []).append((item, key))
        for i, ((env, nranks, monitored), members) in enumerate(groups.items(), 1):
            if monitored and not self.monitoring_groups:
                self.alone.update(key for _, key in members)
                continue
            if progress is not None:
                progress(f"probes: launch {i} of {len(groups)}, {len(members)} fingerprints on {nranks} ranks")
            began = time.monotonic()
            found = probe_group(self.launcher, nranks, [item for item, _ in members], as_env(env))
            self.seconds += time.monotonic() - began
            self.launches += 1
            missing = [key for item, key in members if item not in found]
            if len(missing) == len(members):
                self.failing.add((env, nranks))
                self.monitoring_groups = self.monitoring_groups and not monitored
            self.alone.update(missing if len(missing) == len(members) else missing[:1])
            self.known.update((key, found[item]) for item, key in members if item in found)


def environment_key(env: dict[str, str]) -> tuple:
    """The environment as a cache key: each (name, value), and where the value names a file, a digest of
    what the file holds. One `tune` verifies several rounds of files rewritten under the same names
    (rules given back to the default), and a fingerprint of the old content must not stand for the new."""
    return tuple((k, v, _digest(v)) for k, v in sorted(env.items()))


def as_env(key: tuple) -> dict[str, str]:
    return {k: v for k, v, _ in key}


def _digest(value: str) -> str:
    if not os.path.isfile(value):
        return ""
    with open(value, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
