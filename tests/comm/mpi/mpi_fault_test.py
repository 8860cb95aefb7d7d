#!/usr/bin/env python3
"""The fault test: mpi_fault_driver under mpirun, rank 1 failing in one way (--mode). Passes when
mpirun exits non-zero within 30 s, every other rank printed a line naming itself, rank 1 and the
collective it was in, and no process of the run is left behind."""
import argparse
import os
import re
import subprocess
import sys
import time

from mpi_cli import mpirun

parser = argparse.ArgumentParser()
parser.add_argument("--mpirun", required=True)
parser.add_argument("--driver", required=True)
parser.add_argument("--np", type=int, default=4)
parser.add_argument("--mode", required=True, choices=["throw", "exit", "kill", "device", "inflight-exit", "inflight-kill"])
args = parser.parse_args()

marker = f"tessera-fault-{args.mode}-{os.getpid()}"
cmd = [*mpirun(args.mpirun, args.np), args.driver, args.mode, marker]
start = time.monotonic()
run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
elapsed = time.monotonic() - start
out = run.stdout
print(out)
print(f"mpirun exited with {run.returncode} after {elapsed:.1f} s")

problems = []
if run.returncode == 0:
    problems.append("mpirun exited 0; the fault must make the job fail")
if run.returncode == 124 or elapsed >= 50:
    problems.append("the job hung: timeout ended it")
if elapsed >= 30:
    problems.append(f"the job took {elapsed:.1f} s; the other ranks must exit within 30 s")
# Each other rank names itself, rank 1 and the collective: "error: ... on rank 0 ...: rank 1
# failed/exited ..." or, when mpirun ends the job with SIGTERM, "tessera: rank 0 stopped by SIGTERM
# while in stablehlo.all_reduce (...), waiting for rank 1 (...)".
names_rank_1 = re.compile(r"\brank 1 (failed|exited)\b|waiting for ranks? ([0-9]+, )*1\b")
for r in range(args.np):
    if r == 1:
        continue
    lines = [l for l in out.splitlines()
             if re.search(rf"(on|tessera:) rank {r}\b", l) and "stablehlo.all_reduce" in l and names_rank_1.search(l)]
    if not lines:
        problems.append(f"no line of rank {r} names rank 1 and the collective")


def leftovers():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv:
            found.append(int(pid))
    return found


deadline = time.monotonic() + 5
while leftovers() and time.monotonic() < deadline:
    time.sleep(0.1)
left = leftovers()
if left:
    problems.append(f"processes left behind: {left}")
    for pid in left:  # ours (they carry this run's marker); do not leave them to the next test
        try:
            os.kill(pid, 9)
        except OSError:
            pass

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
