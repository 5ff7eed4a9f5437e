"""fabricprobe doctor: the tournament schedule, the diagnosis on measurements with planted faults
(a slow link at 60% and 80%, a slow rank, a slow pair, nothing), the record, the heat map, bad
input, and real runs under mpiexec (odd and even N). The doctor on injected lab faults is in
test_lab.py."""

from __future__ import annotations

import itertools
import json
import os

import h5py
import numpy as np
import pytest
from mpirun import error_lines, run_local, run_mpi

from fabricprobe.doctor import measure, record, schedule
from fabricprobe.doctor.diagnose import diagnose
from fabricprobe.doctor.plot import heatmap, matrices
from fabricprobe.doctor.results import Measurements, pair_table, rank_table
from fabricprobe.errors import UsageError
from fabricprobe.lab import cpu, faults
from fabricprobe.lab.config import LabConfig

# ---- schedule ----


@pytest.mark.parametrize("n", range(1, 14))
def test_every_pair_meets_once_in_n_minus_one_rounds(n):
    rounds = schedule.rounds(n)
    assert len(rounds) == (0 if n < 2 else n - 1 if n % 2 == 0 else n)
    met = [p for r in rounds for p in r]
    assert sorted(met) == list(itertools.combinations(range(n), 2))
    for r in rounds:
        ranks = [x for p in r for x in p]
        assert len(ranks) == len(set(ranks)) and len(r) == n // 2


@pytest.mark.parametrize("per_node", [1, 2, 3, 4])
def test_turns_give_each_node_link_one_pair(per_node):
    n = 4 * per_node + 1  # uneven: the last node has one rank
    node_of = [r // per_node for r in range(n)]
    plan = schedule.plan(n, node_of, every=True)
    assert sorted(p for r in plan for t in r for p in t) == list(itertools.combinations(range(n), 2))
    for turns in plan:
        assert len(turns) <= max(1, 2 * per_node - 1)
        for i, turn in enumerate(turns):
            inter = [p for p in turn if node_of[p[0]] != node_of[p[1]]]
            nodes = [node_of[x] for p in inter for x in p]
            assert len(nodes) == len(set(nodes))
            assert i == 0 or len(inter) == len(turn)  # intra-node pairs all go in the first turn
    if per_node == 1:
        assert all(len(turns) == 1 for turns in plan)


def _nodes_of(nodes: int, per_node: int, dealt: bool) -> list[int]:
    """`nodes` nodes of `per_node` ranks, the last with one fewer (uneven); ranks in node order (srun's
    block distribution) or dealt one per node in turn (its cyclic one)."""
    counts = [max(1, per_node - 1) if n == nodes - 1 else per_node for n in range(nodes)]
    if not dealt:
        return [n for n in range(nodes) for _ in range(counts[n])]
    return [n for i in range(per_node) for n in range(nodes) if i < counts[n]]


@pytest.mark.parametrize("nodes", range(1, 10))
@pytest.mark.parametrize("per_node", range(1, 7))
@pytest.mark.parametrize("dealt", [False, True])
def test_by_nodes_meets_each_node_pair_and_each_local_pair_once_in_n_plus_k_rounds(nodes, per_node, dealt):
    node_of = _nodes_of(nodes, per_node, dealt)
    plan = schedule.plan(len(node_of), node_of)
    assert len(plan) <= nodes + per_node
    assert all(len(turns) == 1 for turns in plan)  # no link carries two pairs in any round
    met = [p for r in plan for p in r[0]]
    inter = [tuple(sorted((node_of[a], node_of[b]))) for a, b in met if node_of[a] != node_of[b]]
    assert sorted(inter) == list(itertools.combinations(range(nodes), 2))  # each pair of nodes once
    local = sorted(p for p in met if node_of[p[0]] == node_of[p[1]])
    assert local == sorted(p for p in itertools.combinations(range(len(node_of)), 2) if node_of[p[0]] == node_of[p[1]])
    for r in plan:
        ranks = [x for p in r[0] for x in p]
        assert len(ranks) == len(set(ranks))
        links = [node_of[x] for p in r[0] if node_of[p[0]] != node_of[p[1]] for x in p]
        assert len(links) == len(set(links))
    if nodes - 1 >= per_node:  # every node's games go round its ranks: every rank crosses the fabric
        assert {x for a, b in met if node_of[a] != node_of[b] for x in (a, b)} == set(range(len(node_of)))
    if per_node == 1 and not dealt:  # one rank per node: the whole tournament, pair for pair
        assert sorted(met) == sorted(p for r in schedule.plan(nodes, node_of, every=True) for t in r for p in t)


def test_a_thousand_nodes_of_64_ranks_take_n_plus_k_rounds_not_n_times_k():
    node_of = [r // 64 for r in range(64_000)]
    assert len(schedule.plan(64_000, node_of)) == 999 + 63  # --every-pair: 63,999 rounds


# ---- diagnosis on planted faults ----

LARGE = 1 << 20
LINE = 50e6  # bytes/s of every healthy link


def _measurements(
    nodes: int,
    per_node: int,
    slow_node: int | None = None,
    link_fraction: float = 1.0,
    slow_rank: int | None = None,
    rank_factor: float = 1.0,
    slow_pair: tuple[int, int] | None = None,
    noise: float = 0.01,
    seed: int = 0,
    oversubscribed: bool = False,
    by_nodes: bool = False,
) -> Measurements:
    rng = np.random.default_rng(seed)
    n = nodes * per_node
    node_of = [r // per_node for r in range(n)]
    pairs = itertools.combinations(range(n), 2)
    if by_nodes:  # only the pairs the default schedule measures
        pairs = sorted(p for r in schedule.plan(n, node_of) for t in r for p in t)
    rows = []
    for a, b in pairs:
        inter = node_of[a] != node_of[b]
        bw = LINE if inter else 8 * LINE
        lat = 25e-6 if inter else 3e-6
        if inter and slow_node in (node_of[a], node_of[b]):
            bw *= link_fraction
        if slow_rank in (a, b):
            bw, lat = bw / 2, lat * 3  # a starved rank answers late too
        if slow_pair == (a, b):
            bw *= 0.5
        jitter = 1 + noise * rng.standard_normal(2)
        rows.append((a, b, 0, 0, inter, lat * jitter[0], LARGE / bw * jitter[1], 0.01, np.nan, np.nan))
    ranks = []
    for r in range(n):
        block = 2e-3 * (1 + noise * rng.standard_normal()) * (rank_factor if r == slow_rank else 1.0)
        ranks.append((r, node_of[r], block, 64e6, 0.02, 0.001, np.nan, np.nan))
    return Measurements(
        hosts=[f"h{node_of[r]}" for r in range(n)],
        node_of=node_of,
        small_bytes=8,
        large_bytes=LARGE,
        pairs=pair_table(rows),
        ranks=rank_table(ranks),
        oversubscribed=oversubscribed,
    )


def _named(d) -> list[tuple[str, str]]:
    return [(f.kind, f.where) for f in d.findings]


@pytest.mark.parametrize("per_node", [1, 2])
@pytest.mark.parametrize("fraction", [0.6, 0.8])
@pytest.mark.parametrize("nodes", [3, 4, 8])
def test_a_slow_link_is_named_and_nothing_else(nodes, per_node, fraction):
    for seed in range(5):
        victim = seed % nodes
        d = diagnose(_measurements(nodes, per_node, slow_node=victim, link_fraction=fraction, seed=seed))
        assert _named(d) == [("link", f"h{victim}'s link")], d.findings
        f = d.findings[0]
        assert f.metric == "bandwidth" and f.slowdown == pytest.approx(1 / fraction, rel=0.05)
        assert f.ranks == [r for r in range(nodes * per_node) if r // per_node == victim]


@pytest.mark.parametrize("per_node", [2, 3, 5])
@pytest.mark.parametrize("nodes", [3, 4, 8])
def test_the_pairs_by_nodes_name_a_slow_link_and_a_slow_rank_as_every_pair_does(nodes, per_node):
    for seed in range(3):
        victim = seed % nodes
        m = _measurements(nodes, per_node, slow_node=victim, link_fraction=0.8, seed=seed, by_nodes=True)
        assert len(m.pairs) < nodes * per_node * (nodes * per_node - 1) // 2
        assert _named(diagnose(m)) == [("link", f"h{victim}'s link")]
        slow = victim * per_node + per_node - 1
        m = _measurements(nodes, per_node, slow_rank=slow, rank_factor=3.0, seed=seed, by_nodes=True)
        assert _named(diagnose(m)) == [("rank", f"rank {slow} on h{victim}")]


def test_a_healthy_fabric_has_no_suspects_and_summarises_its_classes():
    d = diagnose(_measurements(4, 2, noise=0.02, seed=3))
    assert d.findings == [] and d.suspect_pairs == []
    names = {(c.name, c.metric) for c in d.classes}
    assert {("ranks", "reduction"), ("inter-node pairs", "bandwidth"), ("intra-node pairs", "latency")} <= names
    inter = next(c for c in d.classes if (c.name, c.metric) == ("inter-node pairs", "bandwidth"))
    assert inter.expected == pytest.approx(LINE, rel=0.03) and inter.margin == pytest.approx(0.15)
    assert inter.fit_beta_s_per_byte == pytest.approx(1 / LINE, rel=0.05)


def test_a_slow_rank_is_a_rank_not_a_link():
    d = diagnose(_measurements(4, 1, slow_rank=2, rank_factor=3.0))
    assert _named(d) == [("rank", "rank 2 on h2")]
    assert d.findings[0].slowdown == pytest.approx(3.0, rel=0.05)
    assert any("slow pairs through it" in e for e in d.findings[0].evidence)


def test_a_slow_pair_between_healthy_nodes_is_a_pair():
    d = diagnose(_measurements(4, 1, slow_pair=(1, 3)))
    assert [f.kind for f in d.findings] == ["pair"] and d.findings[0].ranks == [1, 3]


def test_below_the_threshold_or_the_noise_nothing_is_named():
    assert diagnose(_measurements(4, 1, slow_node=1, link_fraction=0.9)).findings == []
    noisy = _measurements(8, 1, slow_node=1, link_fraction=0.8, noise=0.1, seed=2)
    d = diagnose(noisy)
    inter = next(c for c in d.classes if (c.name, c.metric) == ("inter-node pairs", "bandwidth"))
    assert inter.margin > 0.2 and not [f for f in d.findings if f.kind == "link"]  # noisy: a larger deficit needed
    assert diagnose(_measurements(4, 1, slow_node=1, link_fraction=0.6), threshold=1.0).findings == []


def test_two_nodes_cannot_tell_which_link():
    d = diagnose(_measurements(2, 2, slow_node=0, link_fraction=0.6))
    assert not [f for f in d.findings if f.kind == "link"]
    assert any("cannot be told" in n for n in d.notes)


def test_oversubscribed_latencies_are_not_compared():
    m = _measurements(4, 1)
    m.pairs["small_s"][0] *= 5
    assert [f.kind for f in diagnose(m).findings] == ["pair"]
    d = diagnose(m, oversubscribed=True)
    assert d.findings == [] and any("oversubscribed" in n for n in d.notes)


def test_a_confirmation_clears_suspects_but_never_makes_one():
    m = _measurements(4, 1)
    m.ranks["confirm_compute_s"] = m.ranks["compute_s"]
    m.ranks["confirm_reduced_bytes"] = m.ranks["reduced_bytes"]
    m.ranks["confirm_compute_s"][2] *= 2  # slow only the second time
    m.pairs["confirm_large_s"][0] = m.pairs["large_s"][0] * 2
    assert diagnose(m).findings == []
    m.ranks["compute_s"][2] *= 2  # slow both times
    assert [f.where for f in diagnose(m).findings] == ["rank 2 on h2"]


def test_confirmed_times_clear_the_first_pass():
    m = _measurements(4, 1, slow_node=2, link_fraction=0.6)
    through = (m.pairs["a"] == 2) | (m.pairs["b"] == 2)
    m.pairs["confirm_large_s"][through] = m.pairs["large_s"][~through][0]  # alone, they were fine
    m.pairs["confirm_small_s"][through] = m.pairs["small_s"][~through][0]
    assert diagnose(m).findings == []


# ---- record and picture ----


class _Clock:
    """MPI stand-in for block_reductions: every reduction 'takes' the given seconds on this rank,
    and allreduce(MIN) sees another rank's time too; the barrier never waits."""

    MIN = "min"

    def __init__(self, per_reduction: float, other_rank: float):
        self.now, self.step, self.other, self.calls = 0.0, per_reduction, other_rank, 0

    def Wtime(self):  # noqa: N802 (MPI's name)
        self.calls += 1
        if self.calls % 2 == 0:  # the second reading of a pair: a reduction has run
            self.now += self.step
        return self.now

    def Ibarrier(self):  # noqa: N802
        return type("Done", (), {"Test": lambda _self: True})()

    def allreduce(self, value, op):
        assert op == self.MIN
        return min(value, self.other)


@pytest.mark.parametrize(
    ("mine", "other", "chunk", "expected"),
    [
        (1e-3, 1e-3, 2 << 20, 128),  # slow reductions: 256 MiB of 2 MiB chunks is already 128 ms
        (5e-5, 5e-5, 2 << 20, 600),  # a cached 2 MiB chunk at 50 us: 128 would be 6.4 ms, 600 make 30 ms
        (1e-3, 5e-5, 2 << 20, 600),  # a capped rank blocks as long as the fastest rank needs
        (5e-5, 1e-3, 2 << 20, 600),  # ...and the fastest rank decides, whoever it is
        (1e-6, 1e-6, 4 << 10, 65536),  # a small chunk: 256 MiB of them (65,536) is past 30 ms
    ],
)
def test_a_block_is_256_mib_and_at_least_30_ms_at_the_fastest_ranks_speed(mine, other, chunk, expected):
    clock = _Clock(mine, other)
    work, incoming = np.ones(chunk // 4, np.float32), np.ones(chunk // 4, np.float32)
    assert measure.block_reductions(clock, clock, 0, 1, work, incoming) == expected


def test_record_round_trip_appends_and_never_half_writes(tmp_path, monkeypatch):
    path = str(tmp_path / "d.h5")
    m = _measurements(3, 2, slow_node=1, link_fraction=0.6)
    d = diagnose(m).as_dict()
    (written, first), (_, second) = (
        record.save(path, m, d, {"lab": "x"}, {"threshold": 0.15}),
        record.save(path, m, d, {"lab": "y"}, {}),
    )
    assert written == path
    assert first != second and record.is_doctor_file(path)
    rid, back, meta = record.load(path)
    assert rid == second and meta["provenance"] == {"lab": "y"} and meta["diagnosis"] == json.loads(json.dumps(d))
    for name in m.pairs.dtype.names:
        assert np.array_equal(back.pairs[name], m.pairs[name], equal_nan=m.pairs[name].dtype.kind == "f")
    assert back.hosts == m.hosts and back.node_of == m.node_of
    assert record.load(path, first)[2]["options"] == {"threshold": 0.15}
    before = open(path, "rb").read()

    def crash(*a, **k):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        record.save(path, m, d, {}, {})
    assert open(path, "rb").read() == before and sorted(os.listdir(tmp_path)) == ["d.h5"]


def test_a_sweep_file_is_never_a_doctor_record(tmp_path):
    other = tmp_path / "sweep.h5"
    with h5py.File(other, "w") as f:
        f.attrs["schema"] = "something else"
    with pytest.raises(UsageError):
        record.check_writable(str(other))
    with pytest.raises(UsageError):
        record.load(str(other))


def test_heatmap_draws_the_pair_matrix(tmp_path):
    m = _measurements(3, 2, slow_node=2, link_fraction=0.5)
    bw, lat = matrices(m)
    assert np.allclose(bw, bw.T, equal_nan=True) and np.isnan(np.diag(bw)).all()
    assert bw[0, 4] == pytest.approx(LINE * 0.5 * 8 / 1e9, rel=0.05)
    assert bw[0, 2] == pytest.approx(LINE * 8 / 1e9, rel=0.05)
    out = heatmap(m, str(tmp_path / "pairs.png"))
    assert out.stat().st_size > 5000 and out.read_bytes()[:4] == b"\x89PNG"


# ---- lab fault options (no root needed) ----


def test_fault_options_parse_and_restore():
    lab = LabConfig("fplab", 4, 1, 1e9, "10.213.0.0/24")
    assert faults.parse_specs(lab, ["fplab3:600mbit"], ["fplab1:10%"]) == {
        "fplab3": {"rate_bits": 6e8},
        "fplab1": {"cpu": 0.1},
    }
    f = faults.update(lab, {"fplab3": {"rate_bits": 6e8}}, "fplab3", "normal", None)
    assert f == {}
    assert faults.update(lab, {}, "fplab2", None, "0.5") == {"fplab2": {"cpu": 0.5}}
    for bad in (["nohost:1gbit"], ["fplab1"], ["fplab1:fast"]):
        with pytest.raises(UsageError):
            faults.parse_specs(lab, bad, [])
    for bad in ("0%", "-1", "lots", "1000"):
        with pytest.raises(UsageError):
            cpu.parse_cpu(bad)
    assert cpu.parse_cpu("normal") is None and cpu.parse_cpu("25%") == 0.25


# ---- command line ----


@pytest.mark.process
@pytest.mark.parametrize(
    "args",
    [
        ["--sizes", "8"],
        ["--sizes", "1M,8"],
        ["--sizes", "8,2G"],
        ["--iterations", "0,5"],
        ["--iterations", "a,b"],
        ["--threshold", "0"],
        ["--ring-size", "2"],
        ["--ring-reps", "0"],
        ["--run", "x"],
        ["--show", "missing.h5"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, tmp_path):
    out = run_local(["doctor", *args], cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert len(error_lines(out.stderr)) == 1 and "Traceback" not in out.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.process
def test_one_rank_is_refused_not_given_a_clean_bill(tmp_path):
    """One process measured no pair and reported "No suspects", exit 0."""
    out = run_local(["doctor", "-o", str(tmp_path / "d.h5")], cwd=tmp_path)
    assert out.returncode == 2 and "pairs of ranks" in error_lines(out.stderr)[0], out.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.process
def test_doctor_never_writes_over_another_file(tmp_path):
    sweep = tmp_path / "results.h5"
    with h5py.File(sweep, "w") as f:
        f.attrs["schema"] = "fabricprobe"
    before = sweep.read_bytes()
    out = run_local(["doctor", "-o", str(sweep)])
    assert out.returncode == 2 and "not a doctor record" in out.stderr and sweep.read_bytes() == before


# ---- under mpiexec ----


@pytest.mark.process
@pytest.mark.parametrize("n", [2, 3, 4])
def test_doctor_under_mpiexec_measures_every_pair_once(n, tmp_path):
    path = tmp_path / "doctor.h5"
    args = ["doctor", "-o", str(path), "--sizes", "8,64K", "--iterations", "10,3", "--ring-size", "64K"]
    out = run_mpi(n, [*args, "--ring-reps", "2", "--confirm"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "fabricprobe doctor:" in out.stdout and "Classes of peers" in out.stdout
    rid, m, meta = record.load(str(path))
    pairs = sorted(zip(m.pairs["a"].tolist(), m.pairs["b"].tolist()))
    assert pairs == list(itertools.combinations(range(n), 2))
    assert m.rounds == (n - 1 if n % 2 == 0 else n) and m.ranks["rank"].tolist() == list(range(n))
    # measured, not ordered: under load a pair's 8 B time once read 2 ms, above its 64 KiB time (CI, 38c87f6)
    assert all(np.isfinite(m.pairs[f]).all() and (m.pairs[f] > 0).all() for f in ("small_s", "large_s"))
    assert (m.ranks["compute_s"] > 0).all() and (m.ranks["ring_step_s"] >= m.ranks["ring_reduce_s"]).all()
    assert meta["provenance"]["nranks"] == n and meta["options"]["large_bytes"] == 64 * 1024
    assert any(note.startswith("confirmation:") for note in meta["diagnosis"]["notes"])
    for show in (["doctor", "--show", str(path)], ["report", str(path), "--run", rid]):
        shown = run_local(show)
        assert shown.returncode == 0 and "fabricprobe doctor:" in shown.stdout, shown.stderr
    refused = run_local(["report", str(path), "--format", "csv"])
    assert refused.returncode == 2 and "doctor record" in refused.stderr
    png = tmp_path / "pairs.png"
    plotted = run_local(["plot", f"{path}:{rid}", "-o", str(png)])
    assert plotted.returncode == 0 and png.read_bytes()[:4] == b"\x89PNG", plotted.stderr
