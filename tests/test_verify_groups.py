"""The planning of grouped probes (tuning/verify/probes.py), with the launches replaced by a fake
library whose fingerprints depend only on (collective, size, method, environment): the grouped
verification gives the verdicts of one probe per launch, in one launch per environment, and a group
that fails leaves its probes to launches of their own. The real libraries: test_tuning_mpi.py."""

from __future__ import annotations

import json

import pytest

from fabricprobe.tuning.choose.rules import Decision, Range, Table
from fabricprobe.tuning.plan.library import Library, Variant
from fabricprobe.tuning.verify import probes
from fabricprobe.tuning.verify.checks import INDISTINGUISHABLE, MISMATCH, NOT_CONSULTED, VERIFIED, verify

RING = {"ALG": "ring"}
FILES = {"FILE": "rules.conf"}


class FakeLibrary(Library):
    vendor = "Open MPI"

    def variants(self, collective: str) -> list[Variant]:
        return [self.default(collective), Variant(collective, "ring", "4", RING)]


def fingerprint(coll: str, nbytes: int, method: str, env: dict[str, str], served: str = "tuned") -> str:
    """What the fake library leaves: the files run the ring above 1 KiB, the default below; bcast is
    served by another component."""
    if method == "path":
        component = "sm" if coll == "bcast" else served
        return json.dumps({"component": component, "shape": "4 ranks of 1 node", "text": component}, sort_keys=True)
    ring = env.get("ALG") == "ring" or ("FILE" in env and nbytes > 1024)
    return f"{method}:{coll}:{nbytes}:{'ring' if ring else 'default'}"


def table() -> Table:
    d = lambda size: Decision(size, "x", 1.0, 1.0, 0.0)  # noqa: E731
    ranges = [Range(0, 1024, "ring", [d(8), d(512)]), Range(1024, None, "ring", [d(1024), d(1 << 20)])]
    return Table("Open MPI", "", 4, "float32", {"allreduce": {4: ranges}, "bcast": {4: ranges}})


@pytest.fixture
def fake(monkeypatch):
    """Every launch the verification makes, recorded: ("alone", item, env) or ("group", items, env)."""
    launches: list[tuple] = []
    failing: dict[str, object] = {}

    def probe(launcher, nranks, coll, nbytes, method, env, scratch=None, settle=False):
        launches.append(("alone", (coll, nbytes, method), env))
        return "error: refused" if failing.get("refused") and "FILE" in env else fingerprint(coll, nbytes, method, env)

    def probe_group(launcher, nranks, items, env, timeout=120):
        launches.append(("group", list(items), env))
        if failing.get("refused") and "FILE" in env:
            return {}  # the library refuses the file: the job prints nothing
        monitored = any(i[2] == "monitor" for i in items)
        stop = failing.pop("stop_at", None) if monitored else None  # a fingerprint job ends at this item, once
        return {tuple(i): fingerprint(i[0], i[1], i[2], env) for i in items[:stop]}

    monkeypatch.setattr(probes, "probe", probe)
    monkeypatch.setattr(probes, "probe_group", probe_group)
    return launches, failing


def _verdicts(grouped: bool) -> list[dict]:
    return [c.as_dict() for c in verify(table(), FakeLibrary(), FILES, ["mpiexec"], grouped=grouped)]


def test_grouped_verdicts_are_those_of_one_probe_per_launch_in_one_launch_per_environment(fake):
    launches, _ = fake
    alone = _verdicts(grouped=False)
    singles = len(launches)
    launches.clear()
    assert _verdicts(grouped=True) == alone
    statuses = {(c["collective"], c["size"]): c["status"] for c in alone}
    assert statuses[("allreduce", 8)] == MISMATCH  # the files leave the default there
    assert statuses[("allreduce", 1 << 20)] == VERIFIED
    assert statuses[("bcast", 8)] == NOT_CONSULTED
    # the paths first (one launch), then one launch per environment: the files, the default, the ring
    assert [kind for kind, _, _ in launches] == ["group"] * 4
    assert {i[2] for i in launches[0][1]} == {"path"}
    assert singles == 2 + 3 * 4  # two paths, and three fingerprints at each of allreduce's four sizes


def test_a_group_the_library_refuses_leaves_its_probes_to_launches_of_their_own(fake):
    launches, failing = fake
    failing["refused"] = True
    alone = _verdicts(grouped=False)
    launches.clear()
    assert _verdicts(grouped=True) == alone
    assert {c["status"] for c in alone if c["collective"] == "allreduce"} == {"error"}
    # alone: what the files' environment was asked (the paths, and one fingerprint per checked size of
    # both collectives, since no path said another component serves bcast); the default's and the
    # ring's groups gave theirs
    taken_alone = [(item, env) for kind, item, env in launches if kind == "alone"]
    assert {item[2] for item, _ in taken_alone} == {"path", "monitor"}
    assert all(env == FILES for _, env in taken_alone) and len(taken_alone) == 2 + 8


def test_a_job_that_stops_part_way_keeps_what_it_printed_and_groups_the_rest_again(fake):
    launches, failing = fake
    alone = _verdicts(grouped=False)
    launches.clear()
    failing["stop_at"] = 1  # the first fingerprint group ends after its first item
    assert _verdicts(grouped=True) == alone
    kinds = [kind for kind, _, _ in launches]
    assert kinds.count("alone") == 1  # only the item that ended the job, taken alone
    assert kinds.count("group") == 5  # paths, three environments, and the rest of the stopped group


def test_an_indistinguishable_rule_stays_so(fake, monkeypatch):
    monkeypatch.setattr(
        FakeLibrary, "variants", lambda self, c: [self.default(c), Variant(c, "ring", "4", {"ALG": "same"})]
    )
    checks = verify(table(), FakeLibrary(), {"ALG": "same"}, ["mpiexec"])
    assert {c.status for c in checks if c.collective == "allreduce"} == {INDISTINGUISHABLE}


def test_a_file_rewritten_under_the_same_name_is_probed_again(fake, tmp_path):
    """tune verifies again after giving rules back to the default, writing the files under the same
    names: the fingerprints of the old content must not stand for the new."""
    launches, _ = fake
    rules = tmp_path / "rules.conf"
    rules.write_text("first")
    fingerprints = probes.Fingerprints(["mpiexec"], None)
    env = {"FILE": str(rules)}
    fingerprints("allreduce", 4, 8, "monitor", env, False)
    fingerprints("allreduce", 4, 8, "monitor", env, False)
    assert len(launches) == 1  # the same content: known
    rules.write_text("second")
    fingerprints("allreduce", 4, 8, "monitor", env, False)
    assert len(launches) == 2 and fingerprints.launches == 2


def test_a_library_without_monitoring_counters_takes_its_monitoring_probes_alone(fake, monkeypatch):
    """Open MPI 4.1.4 has no MPI_T variables for the pml monitoring's counters: the first monitored job
    prints nothing, and no other monitored group is launched; the paths still come in one launch."""
    launches, _ = fake
    alone = _verdicts(grouped=False)
    launches.clear()
    real = probes.probe_group

    def no_counters(launcher, nranks, items, env, timeout=120):
        found = real(launcher, nranks, items, env, timeout)
        return {} if any(i[2] == "monitor" for i in items) else found

    monkeypatch.setattr(probes, "probe_group", no_counters)
    assert _verdicts(grouped=True) == alone
    groups = [items for kind, items, _ in launches if kind == "group"]
    assert len(groups) == 2 and {i[2] for i in groups[0]} == {"path"}  # the paths, one monitored try
    assert sum(kind == "alone" for kind, _, _ in launches) == 12  # as many as one probe per launch, paths aside
