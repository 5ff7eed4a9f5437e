"""Who measures with whom, and when: a round-robin tournament (the circle method) gives N−1 rounds
of N/2 disjoint pairs for even N, N rounds with one rank resting per round for odd N, so every pair
meets exactly once and the pass grows with N, not with N(N−1)/2.

Within a round, two inter-node pairs that touch the same node would share that node's link, and a
pair's bandwidth would then say as much about its neighbour as about itself (a link slowed to 60%
still carries a fair half-share at full speed). So a round is split into turns: in one turn each
node's link carries at most one pair. With one rank per node a round is one turn; with k ranks per
node a round needs at most 2k−1 turns (greedy edge colouring)."""

from __future__ import annotations

Pair = tuple[int, int]


def rounds(n: int) -> list[list[Pair]]:
    """The tournament for n ranks: every unordered pair (a < b) exactly once, disjoint within a round."""
    if n < 2:
        return []
    players = list(range(n)) + ([-1] if n % 2 else [])  # -1: the rest seat of an odd count
    m = len(players)
    out = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = players[i], players[m - 1 - i]
            if a >= 0 and b >= 0:
                pairs.append((min(a, b), max(a, b)))
        out.append(sorted(pairs))
        players = [players[0], players[-1], *players[1:-1]]  # rotate all but the first seat
    return out


def turns(pairs: list[Pair], node_of: tuple[int, ...] | list[int]) -> list[list[Pair]]:
    """Split one round so that no node's link carries two inter-node pairs in one turn. Intra-node
    pairs never touch a link and go in the first turn."""
    out: list[list[Pair]] = [[]]
    busy: list[set[int]] = [set()]
    for a, b in pairs:
        na, nb = node_of[a], node_of[b]
        if na == nb:
            out[0].append((a, b))
            continue
        t = next((i for i, used in enumerate(busy) if na not in used and nb not in used), len(out))
        if t == len(out):
            out.append([])
            busy.append(set())
        out[t].append((a, b))
        busy[t].update((na, nb))
    return [t for t in out if t]


def plan(n: int, node_of: tuple[int, ...] | list[int]) -> list[list[list[Pair]]]:
    """rounds → turns → pairs, for every rank to follow in the same order."""
    return [turns(r, node_of) for r in rounds(n)]
