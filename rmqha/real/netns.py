"""Network namespaces for a real cluster: every node on its own host, nothing reachable from outside the machine.

RocketMQ binds its remoting listeners to ``bindAddress`` but its HA listener (``AutoSwitchHAService`` /
``DefaultHAService.AcceptSocketService``: ``new InetSocketAddress(port)``) and the JRaft RPC server to every
interface. So the harness does not run the nodes in the machine's own network: each run creates

* one namespace per node (``rmqha-<run>-<node>``) with ``lo`` and one veth end, ``eth0``, addressed
  ``10.77.0.<10+i>/24``: an address that exists only inside the run;
* a hub namespace (``rmqha-<run>-hub``) holding the other veth ends on a bridge (``10.77.0.1/24``) and, on the
  bridge, one *front* address per node, ``10.77.0.<100+i>``: the address the node advertises (``brokerIP1``,
  ``brokerIP2``, the controller address the brokers dial, the nameserver address), where the run's proxy
  (``rmqha/real/proxy.py``) listens and forwards to the node's own address. The clients run in the hub too.

Everything the JVMs listen on therefore lives in namespaces with no route to the outside world; the machine's
own ``ss -ltn`` shows none of it. The same topology gives real link faults: ``tc netem`` (loss, delay, reorder,
duplicate) and drops on a node's ``eth0``, filtered by destination.

Every namespace of a run carries the run's id; ``teardown(run)`` deletes them all (``ip netns del`` also ends
the veth pairs), and is safe to call twice. Creating them needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and
iproute2; ``available()`` says in one line what is missing.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

SUBNET = "10.77.0"
HUB_ADDR = f"{SUBNET}.1"
PREFIX = "rmqha-"


class NetnsError(RuntimeError):
    """A namespace operation failed; one line, fit for a user."""


def _ip(args: Sequence[str], *, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *(["-n", ns] if ns else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if check and proc.returncode != 0:
        raise NetnsError(f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout).strip()[:200]}")
    return proc


def _tc(ns: str, args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", "netns", "exec", ns, "tc", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if check and proc.returncode != 0:
        raise NetnsError(f"`tc {' '.join(args)}` in {ns} failed: {(proc.stderr or proc.stdout).strip()[:200]}")
    return proc


def available() -> tuple[bool, str]:
    """(usable, one line): can this process create network namespaces?"""
    if not shutil.which("ip"):
        return False, "no `ip` command: install iproute2 (Debian/Ubuntu: apt-get install -y iproute2)"
    if os.geteuid() != 0:
        return False, "rmqha real runs every node in its own network namespace, which needs root"
    probe = f"{PREFIX}probe-{os.getpid()}"
    proc = _ip(["netns", "add", probe], check=False)
    if proc.returncode != 0:
        return False, f"cannot create a network namespace: {proc.stderr.strip()[:160]}"
    _ip(["netns", "del", probe], check=False)
    tc = shutil.which("tc") is not None
    return True, "network namespaces usable" + ("" if tc else " (no `tc`: link faults unavailable)")


NETEM_USERS = "rmqha real test --faults net-loss-master, rmqha real fault netem"
"""What a machine without ``tc netem`` cannot run (the proxy's faults, partitions and kills do not need it)."""


@functools.cache
def netem_status() -> tuple[bool, str]:
    """(usable, one line): can a link take a ``tc netem`` qdisc? As root, tried on ``lo`` of a scratch namespace
    (made and deleted here); otherwise the kernel is asked whether ``sch_netem`` is loaded or can be
    (``/sys/module/sch_netem``, ``modprobe -n``). Asked once per process."""
    if not shutil.which("tc"):
        return False, "no `tc` command (install iproute2)"
    if os.geteuid() == 0 and shutil.which("ip"):
        probe = f"{PREFIX}netem-{os.getpid()}"
        if _ip(["netns", "add", probe], check=False).returncode == 0:
            try:
                proc = _tc(probe, ["qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"], check=False)
            finally:
                _ip(["netns", "del", probe], check=False)
            if proc.returncode == 0:
                return True, "tc netem works (tried on a scratch namespace)"
            return False, f"`tc qdisc add ... netem` fails: {(proc.stderr or proc.stdout).strip()[:120]} (the " \
                          "kernel has no sch_netem module)"
    if os.path.isdir("/sys/module/sch_netem"):
        return True, "the kernel's sch_netem module is loaded"
    modprobe = shutil.which("modprobe")
    if modprobe is None:
        return False, "cannot tell: not root, sch_netem not loaded and no modprobe to ask"
    proc = subprocess.run([modprobe, "-n", "sch_netem"], capture_output=True, text=True, timeout=20)
    if proc.returncode == 0:
        return True, "the kernel's sch_netem module can be loaded"
    return False, f"no sch_netem module ({(proc.stderr or proc.stdout).strip()[:120] or 'modprobe -n fails'})"


@dataclass(frozen=True)
class Host:
    """One node's place in the run's network."""

    node: str
    index: int  # 0..89

    @property
    def addr(self) -> str:  # where the node listens, inside its namespace
        return f"{SUBNET}.{10 + self.index}"

    @property
    def front(self) -> str:  # where the proxy listens for it, in the hub: the address the node advertises
        return f"{SUBNET}.{100 + self.index}"


def ns_name(run: str, node: str) -> str:
    return f"{PREFIX}{run}-{node}"


def _veth(run: str, index: int) -> tuple[str, str]:
    # interface names are at most 15 bytes; the run id is 6 hex digits
    return f"rq{run}h{index}", f"rq{run}n{index}"


def existing(run: str | None = None) -> list[str]:
    """The namespaces of ``run`` (every rmqha run's when None) that exist now."""
    proc = _ip(["netns", "list"], check=False)
    names = [ln.split()[0] for ln in proc.stdout.splitlines() if ln.strip()]
    want = f"{PREFIX}{run}-" if run else PREFIX
    return [n for n in names if n.startswith(want)]


def setup(run: str, hosts: Sequence[Host]) -> None:
    """Create the hub and one namespace per host; idempotent only through ``teardown`` first."""
    teardown(run)
    hub = ns_name(run, "hub")
    try:
        _ip(["netns", "add", hub])
        _ip(["link", "set", "lo", "up"], ns=hub)
        _ip(["link", "add", "br0", "type", "bridge"], ns=hub)
        _ip(["addr", "add", f"{HUB_ADDR}/24", "dev", "br0"], ns=hub)
        _ip(["link", "set", "br0", "up"], ns=hub)
        for h in hosts:
            ns = ns_name(run, h.node)
            outer, inner = _veth(run, h.index)
            _ip(["netns", "add", ns])
            _ip(["link", "set", "lo", "up"], ns=ns)
            _ip(["link", "add", outer, "type", "veth", "peer", "name", inner], ns=hub)
            _ip(["link", "set", inner, "netns", ns], ns=hub)
            _ip(["link", "set", outer, "master", "br0"], ns=hub)
            _ip(["link", "set", outer, "up"], ns=hub)
            _ip(["link", "set", inner, "name", "eth0"], ns=ns)
            _ip(["addr", "add", f"{h.addr}/24", "dev", "eth0"], ns=ns)
            _ip(["link", "set", "eth0", "up"], ns=ns)
            _ip(["addr", "add", f"{h.front}/24", "dev", "br0"], ns=hub)
    except NetnsError:
        teardown(run)
        raise


def teardown(run: str) -> list[str]:
    """Delete every namespace of ``run``; returns their names. Processes still inside keep running: end them
    first (``ip netns del`` only unmounts the name)."""
    gone = existing(run)
    for ns in gone:
        _ip(["netns", "del", ns], check=False)
    return gone


def exec_prefix(run: str, node: str) -> list[str]:
    """The argv prefix that runs a command inside ``node``'s namespace (``hub`` for the proxy and the clients)."""
    return ["ip", "netns", "exec", ns_name(run, node)]


def pids_inside(run: str) -> list[int]:
    """Every process inside one of ``run``'s namespaces (what ``ip netns pids`` reports)."""
    out: list[int] = []
    for ns in existing(run):
        proc = _ip(["netns", "pids", ns], check=False)
        out.extend(int(p) for p in proc.stdout.split() if p.isdigit())
    return sorted(set(out))


# ------------------------------------------------------------------------------------------- link faults
# A node's egress on eth0 goes through a prio qdisc; band 3 carries a netem with the fault, and one u32 filter
# per destination steers the packets to it (no filter: the whole link). One fault per node at a time.


def set_link_fault(run: str, node: str, netem: Sequence[str], dst: Sequence[str] = ()) -> None:
    """Apply ``tc netem`` arguments (e.g. ``["loss", "100%"]``, ``["delay", "200ms", "50ms"]``, ``["duplicate",
    "5%"]``, ``["reorder", "25%", "delay", "10ms"]``) to what ``node`` sends, to the addresses ``dst`` (all when
    empty)."""
    ns = ns_name(run, node)
    clear_link_fault(run, node)
    if not dst:
        _tc(ns, ["qdisc", "add", "dev", "eth0", "root", "netem", *netem])
        return
    _tc(ns, ["qdisc", "add", "dev", "eth0", "root", "handle", "1:", "prio", "bands", "4",
             "priomap", "1", "2", "2", "2", "1", "2", "0", "0", "1", "1", "1", "1", "1", "1", "1", "1"])
    _tc(ns, ["qdisc", "add", "dev", "eth0", "parent", "1:4", "handle", "40:", "netem", *netem])
    for d in dst:
        _tc(ns, ["filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                 "match", "ip", "dst", f"{d}/32", "flowid", "1:4"])


def clear_link_fault(run: str, node: str) -> None:
    _tc(ns_name(run, node), ["qdisc", "del", "dev", "eth0", "root"], check=False)
