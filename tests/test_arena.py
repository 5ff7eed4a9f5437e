"""OMB's buffer setting (--early-buffers, fabricprobe/memory/arena.py): the early memory is written when
reserved, message buffers are carved from it and given back, what does not fit is made late and counted,
and the moment each setting reads RssAnon is the one it says."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from fabricprobe.memory import arena
from fabricprobe.memory.host import PAGE, BufferPool

linux = pytest.mark.skipif(arena.rss_anon_mib() is None, reason="RssAnon is read from Linux's /proc/self/status")


@pytest.fixture
def fresh(monkeypatch):
    """arena's process-wide state, as a process that has reserved nothing yet."""
    monkeypatch.setattr(arena, "EARLY", None)
    monkeypatch.setattr(arena, "SETTING", arena.Setting())
    return arena


def _inside(a: np.ndarray, region: arena.Arena) -> bool:
    start = np.frombuffer(region.region, dtype=np.uint8).ctypes.data
    return start <= a.ctypes.data and a.ctypes.data + a.nbytes <= start + region.size


def test_blocks_are_whole_pages_first_fit_and_merge_when_given_back():
    region = arena.Arena(4 * PAGE)
    assert region.size == 4 * PAGE
    a, b, c = region.take(1), region.take(PAGE + 1), region.take(PAGE)
    assert (a, b, c) == (0, PAGE, 3 * PAGE)  # 1 byte takes a page, PAGE + 1 two
    assert region.take(1) is None and region.used == region.peak == 4 * PAGE
    region.give(b)
    assert region.take(3 * PAGE) is None  # two free pages between a and c: not three
    region.give(a)
    assert region.free == [(0, 3 * PAGE)]  # a's page merged with b's two
    assert region.take(3 * PAGE) == 0 and region.used == 4 * PAGE
    region.give(0)
    region.give(c)
    assert region.free == [(0, 4 * PAGE)] and region.used == 0


@linux
def test_the_early_memory_is_written_when_it_is_reserved():
    before = arena.rss_anon_mib()
    region = arena.Arena(32 << 20)
    assert arena.rss_anon_mib() - before >= 30  # every page has its frame now, not when a buffer is first used
    assert bytes(region.view(0, 4)) == b"\x01" * 4
    del region


@pytest.mark.parametrize(
    ("argv", "mib"),
    [
        (["sweep", "--early-buffers", "32", "--sizes", "4M"], 32),
        (["sweep", "--early-buffers=8"], 8),
        (["sweep", "--sizes", "4M"], 0),
        (["sweep", "--early-buffers", "-3"], 0),  # left to the parser, which refuses it
        (["sweep", "--early-buffers", "lots"], 0),
        (["sweep", "--early-buffers", "²"], 0),  # a digit to str.isdigit, not to int()
        (["sweep", "--early-buffers", str(arena.MAX_MIB + 1)], 0),  # above the parser's bound
        (["sweep", "--early-buffers"], 0),
        (["sweep", "--", "--early-buffers", "32"], 0),
    ],
)
def test_the_option_is_read_from_the_command_line_before_parsing(argv, mib):
    assert arena.requested_mib(argv) == mib


def test_message_buffers_come_from_the_early_memory_and_go_back_to_it(fresh):
    fresh.reserve(1)
    region = fresh.EARLY
    pool = BufferPool()
    send = pool.get("send", 1000, np.float32)
    recv = pool.get("recv", 1000, np.float32)
    assert _inside(send, region) and _inside(recv, region) and send.ctypes.data != recv.ctypes.data
    assert send.ctypes.data % PAGE == 0 and send.shape == (1000,) and send.dtype == np.float32
    send[:] = 7
    recv[:] = 1
    assert (send == 7).all() and (recv == 1).all()  # separate blocks: neither overwrote the other
    assert pool.get("send", 1000, np.float32) is send  # same layout: the very same buffer
    used = region.used
    bigger = pool.get("send", 2000, np.float64)  # a new layout: the old block goes back
    assert _inside(bigger, region) and region.used == used - PAGE + 4 * PAGE
    pool.clear()
    assert region.used == 0 and region.free == [(0, region.size)]
    record = fresh.record()
    assert (
        record["early_mib"] == 1 and record["missed"] == 0 and region.peak == 5 * PAGE
    )  # recv's page and bigger's four
    assert record["peak_used_mib"] == round(5 * PAGE / (1 << 20), 1)


def test_a_buffer_that_does_not_fit_is_made_late_and_counted(fresh):
    fresh.reserve(1)
    pool = BufferPool()
    big = pool.get("send", 1 << 20, np.float32)  # 4 MiB: more than the 1 MiB reserved
    assert not _inside(big, fresh.EARLY) and big.shape == (1 << 20,)
    big[:] = 2
    record = fresh.record()
    assert record["missed"] == 1 and record["peak_used_mib"] == 4.0  # what was held, the late buffer included
    empty = pool.get("recv", 0, np.float32)  # a count-0 buffer takes no block and misses nothing
    assert empty.shape == (0,) and fresh.EARLY.used == 0 and fresh.record()["missed"] == 1


@linux
def test_late_buffers_read_what_was_written_before_the_first_large_one(fresh):
    pool = BufferPool()
    pool.get("send", 100, np.float32)  # small: not the moment
    assert fresh.record()["written_before_mib"] == -1.0
    kept = np.ones(16 << 20, dtype=np.uint8)  # 16 MiB written before the large buffer
    now = fresh.rss_anon_mib()
    pool.get("recv", 1 << 20, np.float32)
    written = fresh.record()["written_before_mib"]
    assert abs(written - now) < 2 and fresh.record()["early_mib"] == 0
    kept2 = np.ones(16 << 20, dtype=np.uint8)
    pool.get("send", 1 << 19, np.float32)  # a later large buffer does not move the figure
    assert fresh.record()["written_before_mib"] == written
    del kept, kept2


@linux
def test_early_buffers_read_what_was_written_before_the_reservation(fresh):
    now = fresh.rss_anon_mib()
    fresh.reserve(4)
    assert abs(fresh.record()["written_before_mib"] - now) < 1
    fresh.reserve(8)  # once per process: a second call changes nothing
    assert fresh.record()["early_mib"] == 4 and fresh.EARLY.size == 4 << 20


@pytest.mark.process
def test_the_arena_module_imports_no_numpy():
    """It runs at the process's first step: importing it must not write numpy's memory first."""
    import subprocess

    code = "import sys, fabricprobe.memory.arena; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_run_whose_options_and_process_disagree_on_early_buffers_is_refused(fresh):
    """--config and --resume bring a stored early_buffers: the process must have reserved just that."""
    from fabricprobe.errors import UsageError

    fresh.check_applied(0)  # neither: nothing to say
    with pytest.raises(UsageError, match="give --early-buffers 8 on the fabricprobe command line"):
        fresh.check_applied(8)
    fresh.reserve(4)
    with pytest.raises(UsageError, match="--early-buffers 4 was given but the run's options"):
        fresh.check_applied(0)
    with pytest.raises(UsageError, match="give --early-buffers 8"):
        fresh.check_applied(8)
    fresh.check_applied(4)


def test_a_reservation_the_kernel_refuses_is_said_in_one_line_when_the_sweep_starts(fresh, monkeypatch):
    from fabricprobe.errors import UsageError

    def refused(nbytes):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(arena, "Arena", refused)
    fresh.reserve(8)
    assert fresh.EARLY is None and fresh.record()["early_mib"] == 0
    with pytest.raises(UsageError, match=r"--early-buffers 8: could not map 8 MiB \(Cannot allocate memory\)"):
        fresh.check_applied(8)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_memory_is_given_back_without_starting_a_process(monkeypatch):
    """memory/heap.py finds glibc's malloc_trim among the process's own symbols: it ran ldconfig -p in
    a subprocess on every rank before (the unit session refuses any process a test starts)."""
    from fabricprobe.memory import heap

    monkeypatch.setattr(heap, "_libc", None)
    assert heap._glibc() is not None and heap._glibc().malloc_trim(0) in (0, 1)
    heap.release_freed()
