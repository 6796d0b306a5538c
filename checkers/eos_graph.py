"""Dependency cycles among transactions (Adya's G0 and G1c, as Jepsen's Elle finds them), on integer ids.

Nodes are transactions numbered 0..n-1; edges are (src, dst, type) arrays with type WW (dst overwrote a version
src wrote: the next version of a key) or WR (dst read a version src wrote). A cycle of WW edges alone is G0 (write
cycle); a cycle with at least one WR edge and otherwise WW edges is G1c (circular information flow). Both are found
as strongly connected components (scipy.sparse.csgraph.connected_components, connection="strong": Tarjan-like, linear
in nodes + edges, in C): first over the WW edges (G0), then over WW + WR, where a component that holds a WR edge is
G1c. Each component is reported with its transactions and one concrete cycle through it (a breadth-first search
inside the component, in Python: only for the components found, which a clean history has none of).
"""
from __future__ import annotations

from collections import deque

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

WW, WR = 0, 1
EDGE_NAMES = {WW: "ww", WR: "wr"}
MAX_NODES_SHOWN = 20


def _components(n: int, src: np.ndarray, dst: np.ndarray):
    """(labels, inner): each node's strong component, and which edges lie inside a component of 2+ nodes."""
    g = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    count, labels = connected_components(g, directed=True, connection="strong")
    sizes = np.bincount(labels, minlength=count)
    inner = (labels[src] == labels[dst]) & (sizes[labels[src]] > 1)
    return labels, inner


def _cycle(src: np.ndarray, dst: np.ndarray, kind: np.ndarray, through: int) -> list[tuple[int, int, int]]:
    """One cycle among these edges (one strong component's) that uses edge number `through`."""
    adj: dict[int, list[int]] = {}
    for i, s in enumerate(src.tolist()):
        adj.setdefault(s, []).append(i)
    start, goal = int(dst[through]), int(src[through])
    came: dict[int, int | None] = {start: None}
    queue = deque([start])
    while queue and goal not in came:
        node = queue.popleft()
        for i in adj.get(node, ()):
            nxt = int(dst[i])
            if nxt not in came:
                came[nxt] = i
                queue.append(nxt)
    path, node = [], goal
    while came.get(node) is not None:
        i = came[node]
        path.append(i)
        node = int(src[i])
    return [(int(src[through]), int(dst[through]), int(kind[through]))] + \
        [(int(src[i]), int(dst[i]), int(kind[i])) for i in reversed(path)]


def find_cycles(n: int, src, dst, kind) -> list[dict]:
    """G0 and G1c components: [{"kind": "g0"|"g1c", "nodes": [ids...], "edges": n, "cycle": [(a, b, type)...]}]."""
    src, dst, kind = (np.asarray(a, dtype=np.int64) for a in (src, dst, kind))
    keep = src != dst
    src, dst, kind = src[keep], dst[keep], kind[keep]
    out: list[dict] = []
    if not len(src) or n < 2:
        return out
    ww = kind == WW
    in_g0 = np.zeros(n, dtype=bool)
    for name, mask in (("g0", ww), ("g1c", np.ones(len(src), dtype=bool))):
        s, d, k = src[mask], dst[mask], kind[mask]
        if not len(s):
            continue
        labels, inner = _components(n, s, d)
        s, d, k = s[inner], d[inner], k[inner]
        comp = labels[s]
        order = np.argsort(comp, kind="stable")
        s, d, k, comp = s[order], d[order], k[order], comp[order]
        bounds = np.flatnonzero(np.diff(comp)) + 1
        for cs, cd, ck in zip(np.split(s, bounds), np.split(d, bounds), np.split(k, bounds)):
            if not len(cs):
                continue
            nodes = np.unique(np.concatenate([cs, cd]))
            if name == "g1c":
                wr = np.flatnonzero(ck == WR)
                if not len(wr) or in_g0[nodes].all():
                    continue                  # a write cycle alone, already reported as G0
                through = int(wr[0])
            else:
                in_g0[nodes] = True
                through = 0
            out.append({"kind": name, "nodes": nodes.tolist(), "edges": int(len(cs)),
                        "cycle": _cycle(cs, cd, ck, through)})
    return out


def describe(cycle: list[tuple[int, int, int]], names) -> str:
    """A cycle in words: `A -ww-> B -wr-> A`, each node named by names(id)."""
    if not cycle:
        return ""
    parts = [names(cycle[0][0])]
    for a, b, k in cycle:
        parts.append(f"-{EDGE_NAMES[k]}->")
        parts.append(names(b))
    return " ".join(parts)
