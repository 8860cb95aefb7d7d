#!/usr/bin/env python3
"""The multihost tests (label `multihost`): MPI jobs across 4 network namespaces joined by veths and
a bridge (netns.py), TCP only, so every message between ranks crosses a network interface.

  --case train --plan P   `tessera train --backend mpi` on 4 ranks, one per namespace, gives the
                          losses of `--backend host --devices 4` bit for bit; and each rank's eth0
                          sent at least the gradient reduction's lower bound, (R-1)/R x 4 bytes x
                          parameters per step, while loopback carried almost nothing.
  --case fault-driver M   mpi_fault_driver across the namespaces, rank 1 failing by mode M: the
                          job ends within 30 s, every other rank naming rank 1 and the collective.
  --case fault-train      rank 1 of a long `tessera train --backend mpi` SIGKILL-ed in its
                          namespace mid-training: the job ends within 30 s, naming rank 1.
  --case cleanup          removes tmh-* namespaces whose run is gone (ctest runs it last).

Exits 77 (ctest's SKIP_RETURN_CODE) when network namespaces cannot be made (not root, no `ip`)."""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "comm", "mpi"))
import netns  # noqa: E402
from mpi_cli import expect_same_losses, run  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--case", required=True, choices=["train", "fault-driver", "fault-train", "cleanup"])
parser.add_argument("--mpirun", default="mpirun")
parser.add_argument("--tessera")
parser.add_argument("--driver")
parser.add_argument("--plan", default="fsdp")
parser.add_argument("--mode", default="kill")
args = parser.parse_args()

if args.case == "cleanup":
    # Only namespaces whose creating process is gone: another ctest may be running its own now.
    print("removed:", netns.remove_stale())
    sys.exit(0)

why = netns.unavailable()
if why:
    print(f"SKIP: network namespaces unavailable: {why}")
    sys.exit(77)

NP = 4
STEPS = 3
MODEL = ["--d-model", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "8",
         "--seq", "16", "--lr", "1e-2", "--no-progress-bar", "--sample", "0"]
problems = []


def names_rank_1_lines(out, r):
    """Rank r's lines naming rank 1 as failed, exited or awaited (the wording of mpi_fault_test.py)."""
    pat = re.compile(r"\brank 1 (failed|exited)\b|waiting for ranks? ([0-9]+, )*1\b")
    return [l for l in out.splitlines() if re.search(rf"(on|tessera:) rank {r}\b", l) and pat.search(l)]


def case_train(net, tmp):
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 400)
    common = ["train", *MODEL, "--steps", str(STEPS), "--corpus", corpus, "--plan", args.plan]
    host, _ = run([args.tessera, *common, "--backend", "host", "--devices", "4", "--losses", os.path.join(tmp, "host.txt")])
    before = net.counters()
    mpi, _ = run([*net.mpirun(args.mpirun, NP, net.hostfile(os.path.join(tmp, "hosts"))), args.tessera, *common,
                  "--backend", "mpi", "--devices", "1", "--losses", os.path.join(tmp, "mpi.txt")], env=net.env())
    after = net.counters()
    if host.returncode != 0 or mpi.returncode != 0:
        problems.append(f"exit status: host {host.returncode}, mpi {mpi.returncode}")
        return
    expect_same_losses(os.path.join(tmp, "host.txt"), host.stdout, os.path.join(tmp, "mpi.txt"), mpi.stdout,
                       STEPS, problems)
    if f"plan {args.plan} on 4 devices (4 MPI ranks of 1)" not in mpi.stdout:
        problems.append("the MPI run's header does not say 4 ranks of 1 device")
    m = re.search(r"tessera train: ([0-9]+) parameters", host.stdout)
    if not m:
        problems.append("no parameter count in the host run's header")
        return
    # Whatever the plan, a step must at least reduce the gradients across the 4 ranks: each rank
    # sends no less than (R-1)/R of them (reduce-scatter's lower bound); TCP/IP headers only add.
    floor = STEPS * (NP - 1) / NP * 4 * int(m.group(1))
    for ns in net.namespaces:
        eth, lo = after[ns][0] - before[ns][0], after[ns][1] - before[ns][1]
        print(f"{ns}: eth0 sent {eth} B, lo sent {lo} B (floor {floor:.0f} B on eth0)")
        if eth < floor:
            problems.append(f"{ns}: eth0 sent {eth} B, less than the gradients' lower bound {floor:.0f} B")
        if lo > eth / 10:
            problems.append(f"{ns}: loopback sent {lo} B against eth0's {eth} B: the ranks did not talk over the network")


def case_fault_driver(net, tmp):
    marker = f"tessera-multihost-fault-{args.mode}-{os.getpid()}"
    p, elapsed = run([*net.mpirun(args.mpirun, NP, net.hostfile(os.path.join(tmp, "hosts"))), args.driver, args.mode,
                      marker], env=net.env())
    print(f"mpirun exited with {p.returncode} after {elapsed:.1f} s")
    if p.returncode == 0:
        problems.append("mpirun exited 0; the fault must make the job fail")
    if elapsed >= 30:
        problems.append(f"the job took {elapsed:.1f} s; the other ranks must exit within 30 s")
    for r in range(NP):
        if r != 1 and not [l for l in names_rank_1_lines(p.stdout, r) if "stablehlo.all_reduce" in l]:
            problems.append(f"no line of rank {r} names rank 1 and the collective")


def rank_pid(exe, marker, rank):
    """The pid of `exe` whose command line holds `marker` and whose MPI rank is `rank`, or None."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.realpath(argv[0].decode()) == os.path.realpath(exe) and marker.encode() in argv \
                and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


def case_fault_train(net, tmp):
    corpus = os.path.join(tmp, "corpus.txt")  # tmp's name is unique: it marks this run's ranks
    with open(corpus, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 400)
    cmd = [*net.mpirun(args.mpirun, NP, net.hostfile(os.path.join(tmp, "hosts"))), args.tessera, "train", *MODEL,
           "--steps", "100000", "--corpus", corpus, "--plan", args.plan, "--backend", "mpi", "--devices", "1"]
    print("$", " ".join(cmd))
    job = subprocess.Popen(cmd, env=net.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, step1 = [], threading.Event()

    def pump():
        for line in job.stdout:
            lines.append(line)
            if line.startswith("step 1/"):  # printed (and flushed) after the first step
                step1.set()
    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        if not step1.wait(40):
            problems.append("training did not finish step 1 within 40 s")
            return
        time.sleep(1)  # some steps later: ranks in the middle of a step's collectives
        pid = rank_pid(args.tessera, corpus, 1)
        if pid is None:
            problems.append("rank 1's process not found")
            return
        # Rank 1 must be in the second namespace: the kill happens on another "host" than mpirun's.
        if str(pid) not in netns.sh("ip", "netns", "pids", net.namespaces[1]).split():
            problems.append(f"rank 1 (pid {pid}) is not in {net.namespaces[1]}")
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        try:
            rc = job.wait(timeout=45)
        except subprocess.TimeoutExpired:
            rc = None
        elapsed = time.monotonic() - killed
        reader.join(5)
        out = "".join(lines)
        print(out)
        print(f"mpirun exited with {rc} {elapsed:.1f} s after rank 1 was killed")
        if rc is None or elapsed >= 30:
            problems.append(f"the job did not end within 30 s of the kill (exit {rc}, {elapsed:.1f} s)")
        elif rc == 0:
            problems.append("mpirun exited 0 after a rank was killed")
        if not re.search(r"rank 1 with PID [0-9]+ on node 10\.77\.0\.2 exited on signal 9", out):
            problems.append("mpirun did not name rank 1 on 10.77.0.2 as killed")
        # The survivors' own lines are informative, not required: a rank whose TCP peer hung up
        # may be ended by mpirun before it prints.
        named = [r for r in (0, 2, 3) if names_rank_1_lines(out, r)]
        print(f"ranks naming rank 1 themselves: {named}")
        left = [r for r in range(NP) if rank_pid(args.tessera, corpus, r)]
        if left:
            problems.append(f"ranks {left} still running after mpirun exited")
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


with netns.Network(NP) as net, tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o755)
    {"train": case_train, "fault-driver": case_fault_driver, "fault-train": case_fault_train}[args.case](net, tmp)
left = [l for l in netns.sh("ip", "netns", "list").splitlines() if l.startswith(f"{netns.PREFIX}{os.getpid()}-")]
if left:
    problems.append(f"namespaces left behind: {left}")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
