"""iptables rules of ours inside a node's network namespace: the KAFKA-CHAOS chain, each rule tagged per fault.

Every rule lives in the filter table's KAFKA-CHAOS chain, jumped to from INPUT and OUTPUT, and carries the comment
`kafka-chaos:<tag>` of the fault instance that added it, so one fault's heal removes its own rules and nothing
else, and `sweep` removes the chain and everything in it. A running node is reached through `docker exec`; a paused
node (where exec is refused) through nsenter from the host when we are root; a stopped node has no namespace to
change (a restart brings a fresh one, without any rule).
"""
from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from kafka_chaos.cluster.node import Node, NodeCommandError

log = logging.getLogger(__name__)

CHAIN = "KAFKA-CHAOS"
COMMENT_PREFIX = "kafka-chaos"
IPT = "iptables -w 30"     # a loaded machine can hold the xtables lock for seconds


@dataclass(frozen=True)
class Rule:
    """Drop packets from `src` (INPUT) or to `dst` (OUTPUT), optionally with a probability."""
    direction: str                # "in": match source; "out": match destination
    peer_ip: str
    probability: float | None = None

    def spec(self, tag: str) -> str:
        match = f"-s {self.peer_ip}/32" if self.direction == "in" else f"-d {self.peer_ip}/32"
        stat = f" -m statistic --mode random --probability {self.probability}" if self.probability is not None else ""
        return f"{match}{stat} -m comment --comment {COMMENT_PREFIX}:{tag} -j DROP"


def run_in_netns(node: Node, script: str) -> tuple[int, str]:
    """Run a shell script in the node's network namespace, whether the node runs or is paused."""
    state = node.state()
    if state == "running":
        return node.exec(["sh", "-c", script], check=False)
    if state == "paused":
        if os.geteuid() != 0 or not shutil.which("nsenter"):
            raise NodeCommandError(f"cannot change iptables on {node}: it is paused and docker exec refuses",
                                   "run as root (nsenter is used for paused nodes) or unpause it first")
        pid = str(node.container.attrs["State"]["Pid"])
        p = subprocess.run(["nsenter", "-t", pid, "-n", "sh", "-c", script], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr
    raise NodeCommandError(f"{node} is {state}: it has no network namespace now")


def has_namespace(node: Node) -> bool:
    return node.state() in ("running", "paused")


def _ensure_chain_script() -> str:
    # Every step must succeed: rules in a chain that INPUT/OUTPUT do not jump to drop nothing, and a fault that
    # dropped nothing must not be recorded as applied (the model would judge the run by a partition that never was).
    return ("set -e; "
            f"{IPT} -N {CHAIN} 2>/dev/null || {IPT} -S {CHAIN} >/dev/null; "
            f"{IPT} -C INPUT -j {CHAIN} 2>/dev/null || {IPT} -I INPUT 1 -j {CHAIN}; "
            f"{IPT} -C OUTPUT -j {CHAIN} 2>/dev/null || {IPT} -I OUTPUT 1 -j {CHAIN}; ")


def add_rules(node: Node, rules: list[Rule], tag: str) -> None:
    """Add the rules (once each: re-adding is a no-op), creating the chain and its jumps if needed; then check
    that the jumps and every rule are in place, so a fault is recorded as applied only when it is."""
    script = _ensure_chain_script() + " ".join(
        f"{IPT} -C {CHAIN} {r.spec(tag)} 2>/dev/null || {IPT} -A {CHAIN} {r.spec(tag)};" for r in rules) + \
        f" {IPT} -C INPUT -j {CHAIN}; {IPT} -C OUTPUT -j {CHAIN}; " + " ".join(
        f"{IPT} -C {CHAIN} {r.spec(tag)};" for r in rules)
    rc, out = run_in_netns(node, script)
    if rc != 0:
        raise NodeCommandError(f"adding iptables rules on {node} failed ({rc}): {out.strip()}")


_DROP_CHAIN = (f"while {IPT} -D INPUT -j {CHAIN} 2>/dev/null; do :; done; "
               f"while {IPT} -D OUTPUT -j {CHAIN} 2>/dev/null; do :; done; "
               f"{IPT} -F {CHAIN} 2>/dev/null; {IPT} -X {CHAIN} 2>/dev/null; ")


def remove_rules(node: Node, tag: str) -> None:
    """Remove every rule tagged `tag` from our chain, and the chain with its jumps once it is empty.
    A no-op when there are no such rules or no chain."""
    script = (f"{IPT} -S {CHAIN} 2>/dev/null | grep -F -- {shlex.quote(f'{COMMENT_PREFIX}:{tag}')} "
              f"| sed 's/^-A/-D/' | while read -r r; do eval \"{IPT} $r\" || exit 1; done || exit 1; "
              f"if {IPT} -S {CHAIN} >/dev/null 2>&1 && ! {IPT} -S {CHAIN} | grep -q '^-A'; then {_DROP_CHAIN} fi")
    rc, out = run_in_netns(node, script)
    if rc != 0:
        raise NodeCommandError(f"removing iptables rules {tag} on {node} failed ({rc}): {out.strip()}")


SWEEP_SCRIPT = (
    _DROP_CHAIN +
    # any rule of ours outside our chain (none by design, but heal-all is the last line of defence)
    f"{IPT} -S | grep -F -- '{COMMENT_PREFIX}:' | grep '^-A' | sed 's/^-A/-D/' "
    f"| while read -r r; do eval \"{IPT} $r\"; done; "
    "if tc qdisc show dev eth0 2>/dev/null | grep -q netem; then tc qdisc del dev eth0 root; fi; true"
)


def sweep(node: Node) -> None:
    """Remove our chain, its jumps, any rule tagged by us, and a netem qdisc (ours: Docker adds none)."""
    rc, out = run_in_netns(node, SWEEP_SCRIPT)
    if rc != 0:
        raise NodeCommandError(f"sweeping rules on {node} failed ({rc}): {out.strip()}")


def rules_of_ours(node: Node) -> list[str]:
    """Every iptables line in the node's namespace that is ours (chain, jump or tagged rule)."""
    rc, out = run_in_netns(node, f"{IPT} -S")
    if rc != 0:
        raise NodeCommandError(f"iptables -S on {node} failed: {out.strip()}")
    return [line for line in out.splitlines() if CHAIN in line or f"{COMMENT_PREFIX}:" in line]
