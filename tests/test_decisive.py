"""Decisive files (issue 66): after `tune --verify` a rule stays at a size only where it was verified
applied and shown faster in the before/after; everything else goes back to the default with its
reason, and the ranges are rebuilt from the sizes kept."""

from __future__ import annotations

import numpy as np

from fabricprobe.tuning.choose.rules import Decision, Range, Table
from fabricprobe.tuning.measure.before_after import verdict_of
from fabricprobe.tuning.measure.shown import decisive
from fabricprobe.tuning.verify.checks import INDISTINGUISHABLE, VERIFIED, Check

KIB = 1024


def _table() -> Table:
    """allreduce on 4 ranks: default below 64 KiB, ring at 64 KiB, 256 KiB and 1 MiB; bcast on 4 ranks:
    binomial at every size (8 B and 1 MiB)."""
    d = lambda size, winner: Decision(size, winner, 2.0, 1.0, 0.01)  # noqa: E731
    allreduce = [
        Range(0, 64 * KIB, "default", [Decision(8, "default", 1.0, 1.0, 0.01)]),
        Range(64 * KIB, None, "ring", [d(64 * KIB, "ring"), d(256 * KIB, "ring"), d(1 << 20, "ring")]),
    ]
    bcast = [Range(0, None, "binomial", [d(8, "binomial"), d(1 << 20, "binomial")])]
    return Table("Open MPI", "5.0", 4, "float32", {"allreduce": {4: allreduce}, "bcast": {4: bcast}})


def _row(coll: str, size: int, ratios: list[float]) -> dict:
    """A before/after row as speedups() writes it, its verdict from the ratios."""
    ratios = sorted(ratios)
    verdict, low, high, exact = verdict_of(np.array(ratios))
    return dict(
        collective=coll,
        comm_size=4,
        size=size,
        reps=len(ratios),
        planned=len(ratios),
        verdict=verdict,
        speedup=float(np.median(ratios)),
        ci_low=low if exact else None,
        ci_high=high if exact else None,
    )


FASTER = [1.3, 1.4, 1.5, 1.5, 1.6, 1.7]
NO_DIFFERENCE = [0.9, 0.95, 1.0, 1.02, 1.05, 1.1]
VERIFIED_ALL = [
    Check("allreduce", 4, 64 * KIB, "ring", VERIFIED),
    Check("allreduce", 4, 1 << 20, "ring", VERIFIED),
    Check("bcast", 4, 8, "binomial", VERIFIED),
    Check("bcast", 4, 1 << 20, "binomial", VERIFIED),
]


def test_a_rule_verified_and_faster_everywhere_stays_whole():
    table = _table()
    rows = [_row("allreduce", s, FASTER) for s in (64 * KIB, 256 * KIB, 1 << 20)]
    rows += [_row("bcast", s, FASTER) for s in (8, 1 << 20)]
    assert decisive(table, VERIFIED_ALL, rows) == []
    assert [(r.span, r.winner) for r in table.rules["allreduce"][4]] == [
        ("[0 B, 64 KiB)", "default"),
        ("[64 KiB, ∞)", "ring"),
    ]


def test_sizes_not_shown_faster_go_back_to_the_default_and_the_ranges_are_rebuilt():
    table = _table()
    rows = [
        _row("allreduce", 64 * KIB, NO_DIFFERENCE),
        _row("allreduce", 256 * KIB, FASTER),
        _row("allreduce", 1 << 20, FASTER),
        _row("bcast", 8, FASTER),
        _row("bcast", 1 << 20, FASTER),
    ]
    left = decisive(table, VERIFIED_ALL, rows)
    assert [(g.collective, g.span, g.winner, g.sizes) for g in left] == [("allreduce", "[64 KiB, ∞)", "ring", [65536])]
    assert "no difference shown at 64 KiB" in left[0].reasons[0] and "95% CI 0.90–1.10" in left[0].reasons[0]
    assert [(r.span, r.winner) for r in table.rules["allreduce"][4]] == [
        ("[0 B, 256 KiB)", "default"),
        ("[256 KiB, ∞)", "ring"),
    ]
    assert [r.winner for r in table.rules["bcast"][4]] == ["binomial"]


def test_a_size_with_the_defaults_fingerprint_goes_back_even_when_faster():
    table = _table()
    checks = [
        c if (c.collective, c.size) != ("bcast", 8) else Check("bcast", 4, 8, "binomial", INDISTINGUISHABLE)
        for c in VERIFIED_ALL
    ]
    rows = [_row("allreduce", s, FASTER) for s in (64 * KIB, 256 * KIB, 1 << 20)]
    rows += [_row("bcast", s, FASTER) for s in (8, 1 << 20)]
    left = decisive(table, checks, rows)
    assert [(g.collective, g.sizes, g.reasons) for g in left] == [("bcast", [8], ["indistinguishable at 8 B"])]
    assert [(r.span, r.winner) for r in table.rules["bcast"][4]] == [
        ("[0 B, 1 MiB)", "default"),
        ("[1 MiB, ∞)", "binomial"),
    ]
    assert table.rules["allreduce"][4][1].winner == "ring"


def test_slower_too_few_repetitions_or_not_remeasured_each_say_why():
    table = _table()
    rows = [
        _row("allreduce", 64 * KIB, [0.5, 0.6, 0.6, 0.7, 0.7, 0.8]),  # slower
        _row("allreduce", 256 * KIB, [1.5]),  # one repetition: "faster in all 1", no interval
        # 1 MiB of allreduce and all of bcast not re-measured
    ]
    rows.append(dict(_row("bcast", 1 << 20, [1.0, 1.1]), planned=6, verdict="no difference shown"))  # settled early
    left = decisive(table, VERIFIED_ALL, rows)
    reasons = {g.collective: g.reasons for g in left}
    assert reasons["allreduce"][0].startswith("slower at 64 KiB")
    assert (
        reasons["allreduce"][1].startswith("faster in all 1 at 256 KiB")
        and "no 95% interval" in reasons["allreduce"][1]
    )
    assert reasons["allreduce"][2] == "not re-measured at 1 MiB"
    assert reasons["bcast"] == [
        "not re-measured at 8 B",
        "no difference shown at 1 MiB (1.05×, settled after 2 of 6 repetitions)",
    ]
    assert not any(r.winner != "default" for s in table.rules.values() for rs in s.values() for r in rs)
    assert [len(rs) for s in table.rules.values() for rs in s.values()] == [1, 1]  # one default range each


def test_a_rule_no_check_covers_is_not_kept():
    table = _table()
    rows = [_row("allreduce", s, FASTER) for s in (64 * KIB, 256 * KIB, 1 << 20)]
    rows += [_row("bcast", s, FASTER) for s in (8, 1 << 20)]
    left = decisive(table, [c for c in VERIFIED_ALL if c.collective == "allreduce"], rows)
    assert [(g.collective, g.sizes, g.reasons) for g in left] == [
        ("bcast", [8, 1 << 20], ["no size of its range was checked"])
    ]


def test_without_verify_a_rule_needs_the_stated_floor(tmp_path):
    """Without --verify nothing re-measures the rules, so a winner must be 1.25× faster in the
    tune-sweep (UNVERIFIED_MIN_GAIN); with --verify candidates start at 1.05× (MIN_GAIN)."""
    from fabricprobe.store import ResultsWriter, load_runs
    from fabricprobe.tuning.choose.rules import MIN_GAIN, UNVERIFIED_MIN_GAIN, choose
    from fabricprobe.tuning.workflow import TuneOptions

    w = ResultsWriter(str(tmp_path / "t.h5"))
    w.start_run({"mpi_vendor": "Open MPI", "mpi_library_version": "5.0", "nranks": 2})
    for i, (alg, size, t) in enumerate(
        [("library", 8, 1.0), ("library:ring", 8, 1 / 1.2), ("library", 1024, 1.0), ("library:ring", 1024, 1 / 1.3)]
    ):
        point = dict(index=i, key=str(i), collective="allreduce", algorithm=alg, dtype="float32", op="sum")
        point.update(mode="barrier", nranks=2, bytes=size, median_s=t, ci_low_s=t * 0.99, ci_high_s=t * 1.01)
        w.append_point(dict(point, status="ok"), None)
    w.close()
    runs = load_runs(str(tmp_path / "t.h5"))
    assert TuneOptions("f").gain == UNVERIFIED_MIN_GAIN and TuneOptions("f", verify=True).gain == MIN_GAIN
    assert TuneOptions("f", min_gain=0.01).gain == 0.01  # a gain asked for is the gain used
    winners = lambda gain: [(r.lo, r.winner) for r in choose(runs, min_gain=gain).rules["allreduce"][2]]  # noqa: E731
    assert winners(UNVERIFIED_MIN_GAIN) == [(0, "default"), (1024, "ring")]
    assert winners(MIN_GAIN) == [(0, "ring")]


def test_an_interval_just_above_one_never_reads_one():
    from fabricprobe.report.units import ratio

    assert (ratio(1.001), ratio(0.9961), ratio(1.2), ratio(4.351)) == ("1.001", "0.996", "1.20", "4.35")
    row = _row("allreduce", 8, [1.001, 1.002, 1.003, 1.004, 1.005, 1.2])
    assert row["verdict"] == "faster"
    from fabricprobe.tuning.measure.shown import kept_rules

    table = _table()
    line = kept_rules(table, [dict(row, size=s) for s in (65536, 262144, 1 << 20)])[0]
    assert "95% CIs from 1.001" in line, line
