"""Who measures with whom, and when: a round-robin tournament (the circle method) gives N−1 rounds
of N/2 disjoint pairs for even N, N rounds with one rank resting per round for odd N, so every pair
meets exactly once and the pass grows with N, not with N(N−1)/2.

Within a round, two inter-node pairs that touch the same node would share that node's link, and a
pair's bandwidth would then say as much about its neighbour as about itself (a link slowed to 60%
still carries a fair half-share at full speed). So a round is split into turns: in one turn each
node's link carries at most one pair. With one rank per node a round is one turn; with k ranks per
node a round needs at most 2k−1 turns (greedy edge colouring).

Every pair of N nodes × k ranks is N·k−1 rounds: 63,999 at 1,000 nodes × 64 ranks. What the
diagnosis needs is less: each link's pairs and each node's ranks against each other. So by default
(`by_nodes`) the nodes play the tournament, each node's games played by its ranks in turn (with N−1 ≥ k
every rank crosses the fabric; each link carries one pair at a time: a round is one turn),
and then every node's ranks play their own tournament, all nodes at once (intra-node pairs touch no
link): N−1 + k−1 rounds for even counts, at most N + k. With one rank per node this is the whole
tournament, pair for pair; `every_pair` keeps the N·k−1 rounds for a job small enough to afford them."""

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


def every_pair(n: int, node_of: tuple[int, ...] | list[int]) -> list[list[list[Pair]]]:
    """rounds → turns → pairs: every pair of ranks, N·k−1 rounds."""
    return [turns(r, node_of) for r in rounds(n)]


def by_nodes(node_of: tuple[int, ...] | list[int]) -> list[list[list[Pair]]]:
    """rounds → turns → pairs: every pair of nodes once (through a rank that rotates with the round),
    then every pair within each node, all nodes at once: at most N + k rounds of one turn."""
    members: dict[int, list[int]] = {}
    for rank, node in enumerate(node_of):
        members.setdefault(node, []).append(rank)
    nodes = sorted(members)
    played = dict.fromkeys(nodes, 0)  # a node's next game is played by its rank `played` mod k
    out = []
    for node_pairs in rounds(len(nodes)):
        pairs = []
        for i, j in node_pairs:
            a, b = (members[nodes[x]][played[nodes[x]] % len(members[nodes[x]])] for x in (i, j))
            played[nodes[i]] += 1
            played[nodes[j]] += 1
            pairs.append(_pair(a, b))
        out.append([sorted(pairs)])
    local = [(members[node], rounds(len(members[node]))) for node in nodes]
    for r in range(max(len(t) for _, t in local)):
        pairs = [_pair(ranks[a], ranks[b]) for ranks, t in local if r < len(t) for a, b in t[r]]
        out.append([sorted(pairs)])
    return out


def _pair(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


def plan(n: int, node_of: tuple[int, ...] | list[int], every: bool = False) -> list[list[list[Pair]]]:
    """rounds → turns → pairs, for every rank to follow in the same order."""
    return every_pair(n, node_of) if every else by_nodes(node_of)
