"""A small network of "hosts" on this machine for the multihost tests: N network namespaces, each
with loopback and one veth (eth0, 10.77.0.<i+1>/24) whose peer is a port of a bridge that lives in
a further namespace (the switch), so the test network touches nothing of the machine's own. mpirun
runs in the first namespace with a hostfile of the addresses and netns_rsh_agent.sh as its launch
agent, TCP only, so every MPI message between ranks crosses a veth and the bridge.

Names carry the creating process's id (tmh-<pid>-...): a run removes its own namespaces on exit,
on SIGINT/SIGTERM and on errors, and at start removes those of runs whose process is gone (a
SIGKILL-ed test cannot clean up; the next one, or the multihost_cleanup test, does)."""
import os
import re
import shutil
import signal
import subprocess

PREFIX = "tmh-"
SUBNET = "10.77.0.0/24"
HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(HERE, "netns_rsh_agent.sh")


def sh(*cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stdout.strip()}")
    return p.stdout


def unavailable():
    """Why namespaces cannot be made here (a reason to skip), or None."""
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"no `{tool}` in PATH"
    probe = f"{PREFIX}{os.getpid()}-probe"
    p = subprocess.run(["ip", "netns", "add", probe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return f"`ip netns add` failed: {p.stdout.strip()}"
    # veth and bridge devices too (kernel modules a container may lack); made inside the probe
    # namespace, they go with it.
    why = None
    for cmd in (["link", "add", "v0", "type", "veth", "peer", "name", "v1"], ["link", "add", "b0", "type", "bridge"]):
        q = subprocess.run(["ip", "-n", probe, *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if q.returncode != 0 and why is None:
            why = f"`ip {' '.join(cmd)}` failed: {q.stdout.strip()}"
    subprocess.run(["ip", "netns", "del", probe])
    return why


def _delete(ns):
    # Processes still inside keep a namespace (and its veth) alive after `ip netns del`: end them
    # first. Only ours are in there: the namespace was made for this run.
    for pid in sh("ip", "netns", "pids", ns, check=False).split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    sh("ip", "netns", "del", ns, check=False)


def remove_stale(all_of_them=False):
    """Deletes namespaces of earlier runs whose process is gone (all tmh-* with all_of_them)."""
    removed = []
    for line in sh("ip", "netns", "list", check=False).splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(rf"{PREFIX}([0-9]+)-", name)
        if m and (all_of_them or not os.path.exists(f"/proc/{m.group(1)}")):
            _delete(name)
            removed.append(name)
    return removed


class Network:
    """with Network(4) as net: net.hosts (addresses), net.namespaces, net.mpirun(np, argv)."""

    def __init__(self, n):
        self.n = n
        tag = f"{PREFIX}{os.getpid()}"
        self.switch = f"{tag}-sw"
        self.namespaces = [f"{tag}-h{i}" for i in range(n)]
        self.hosts = [f"10.77.0.{i + 1}" for i in range(n)]
        self._made = []
        self._old_handlers = {}

    def __enter__(self):
        remove_stale()
        # SIGTERM (ctest, timeout) and SIGINT become exceptions, so __exit__ still runs.
        for s in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[s] = signal.signal(s, self._on_signal)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def _on_signal(self, signum, _frame):
        raise SystemExit(f"stopped by signal {signum}")

    def __exit__(self, *_):
        self.close()

    def close(self):
        for ns in reversed(self._made):
            _delete(ns)
        self._made = []
        for s, h in self._old_handlers.items():
            signal.signal(s, h)

    def _add_ns(self, ns):
        sh("ip", "netns", "add", ns)
        self._made.append(ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")

    def _build(self):
        self._add_ns(self.switch)
        sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.switch, "link", "set", "br0", "up")
        for i, (ns, addr) in enumerate(zip(self.namespaces, self.hosts)):
            self._add_ns(ns)
            # Both ends are born inside their namespaces: no interface of this run ever exists in
            # the machine's own namespace, even for a moment.
            sh("ip", "-n", self.switch, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", self.switch, "link", "set", f"p{i}", "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")

    def counters(self):
        """{namespace: (eth0 tx_bytes, lo tx_bytes)}."""
        out = {}
        for ns in self.namespaces:
            vals = sh("ip", "netns", "exec", ns, "cat", "/sys/class/net/eth0/statistics/tx_bytes",
                      "/sys/class/net/lo/statistics/tx_bytes").split()
            out[ns] = (int(vals[0]), int(vals[1]))
        return out

    def hostfile(self, path):
        with open(path, "w") as f:
            for h in self.hosts:
                f.write(f"{h} slots=1\n")
        return path

    def mpirun(self, mpirun_path, np, hostfile, limit=50):
        """The command prefix: mpirun started inside the first host's namespace, one rank per host,
        TCP between ranks (ob1 so that UCX cannot pick shared memory; btl self for a rank's own
        messages), daemons launched through the agent; `timeout` ends a hung job."""
        return ["timeout", "-k", "5", str(limit), "ip", "netns", "exec", self.namespaces[0],
                mpirun_path, "--allow-run-as-root", "-np", str(np), "--hostfile", hostfile, "--map-by", "node",
                "--mca", "plm_rsh_agent", AGENT, "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                "--mca", "btl_tcp_if_include", SUBNET, "--mca", "oob_tcp_if_include", SUBNET]

    def env(self):
        e = dict(os.environ)
        e["TESSERA_NETNS_MAP"] = " ".join(f"{h}={ns}" for h, ns in zip(self.hosts, self.namespaces))
        return e
