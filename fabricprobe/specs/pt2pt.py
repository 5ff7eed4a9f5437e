"""Point-to-point tests between rank pairs, as OMB defines them.

- latency: blocking ping-pong (osu_latency); the time is half a round trip.
- bw: a window of non-blocking sends, one ack per window (osu_bw); time per message.
- bibw: windows in both directions at once (osu_bibw); time per message per direction.
Ranks that are not in a pair sit the point out (their samples are NaN).
"""

from __future__ import annotations

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec

ROLE_INITIATOR = 0  # latency: pings; bw: sends
ROLE_RESPONDER = 1  # latency: pongs; bw: receives
ROLE_BOTH = 2  # bibw: sends and receives


class PointToPoint(CollectiveSpec):
    pt2pt = True
    in_place_supported = False
    receives_on: tuple[int, ...] = ()  # roles that receive the partner's data

    def roles(self, first: bool) -> int:
        return ROLE_INITIATOR if first else ROLE_RESPONDER

    def prepare(self, case: Case) -> None:
        if case.send is not None:
            case.send[:] = patterns.data_at(case.rank, 0, case.count)
        patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        if case.role not in self.receives_on:
            return []
        return [(case.recv, patterns.data_at(case.peer, 0, case.count))]


class Latency(PointToPoint):
    name = "latency"
    busbw_formula = "1"
    osu_title = "Latency Test"
    receives_on = (ROLE_INITIATOR, ROLE_RESPONDER)

    def timed_region(self, mode: str, window: int) -> str:
        return "ping-pong, half a round trip, no barrier"


class Bandwidth(PointToPoint):
    name = "bw"
    busbw_formula = "1"
    osu_title = "Bandwidth Test"
    receives_on = (ROLE_RESPONDER,)

    def timed_region(self, mode: str, window: int) -> str:
        return f"window of {window} sends + ack, per message, no barrier"


class BidirectionalBandwidth(PointToPoint):
    name = "bibw"
    busbw_formula = "2 (both directions)"
    osu_title = "Bi-Directional Bandwidth Test"
    receives_on = (ROLE_BOTH,)

    def timed_region(self, mode: str, window: int) -> str:
        return f"windows of {window} sends both ways + ack, per message, no barrier"

    def busbw_factor(self, nranks: int) -> float:
        return 2.0

    def roles(self, first: bool) -> int:
        return ROLE_BOTH


LATENCY = Latency()
BW = Bandwidth()
BIBW = BidirectionalBandwidth()
