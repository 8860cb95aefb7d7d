#!/usr/bin/env python3
"""`tessera train --backend mpi` under mpirun against `tessera train` on 4 host devices: every step's
loss (written exactly by --losses) and the checkpoint files are bitwise the same, and only rank 0
prints and writes. The MPI run's --trace, joined by rank 0, has a track per device under its
rank's pid, and the same collectives on every device in every step. With --bad-plan instead: a user error (an unknown --plan) makes every rank fail
alike before any collective, and the job exits non-zero at once."""
import argparse
import filecmp
import json
import os
import re
import sys
import tempfile

from mpi_cli import expect_printed_once, expect_same_losses, mpirun, run

parser = argparse.ArgumentParser()
parser.add_argument("--mpirun", required=True)
parser.add_argument("--tessera", required=True)
parser.add_argument("--np", type=int, required=True)
parser.add_argument("--devices-per-rank", type=int, required=True)
parser.add_argument("--plan", default="dp")
parser.add_argument("--bad-plan", action="store_true")
args = parser.parse_args()

STEPS = 5
MODEL = ["--d-model", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "8",
         "--seq", "16", "--steps", str(STEPS), "--lr", "1e-2", "--no-progress-bar", "--sample", "0"]
MPIRUN = mpirun(args.mpirun, args.np)

problems = []
with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 400)
    common = ["train", *MODEL, "--corpus", corpus, "--plan", "bogus" if args.bad_plan else args.plan]
    mpi_args = [*MPIRUN, args.tessera, *common, "--backend", "mpi", "--devices", str(args.devices_per_rank)]

    if args.bad_plan:
        mpi, elapsed = run(mpi_args)
        if mpi.returncode == 0:
            problems.append("mpirun exited 0 with --plan bogus")
        if mpi.returncode == 124 or elapsed >= 30:
            problems.append(f"the job took {elapsed:.1f} s (exit {mpi.returncode}); a user error must end it at once")
        if "error: --plan bogus: expected dp, fsdp, zero1, tp, dp,tp, ctx[=N], ep[=N], dp,ep or a pipeline plan" not in mpi.stdout:
            problems.append("no rank printed the --plan error")
        # Had one rank gone on, it would have waited in the step's first collective for the others.
        if re.search(r"stablehlo\.|exited without joining|waiting for rank", mpi.stdout):
            problems.append("a rank reached a collective: the error was not raised alike on every rank")
    else:
        host, _ = run([args.tessera, *common, "--backend", "host", "--devices", "4",
                       "--losses", os.path.join(tmp, "host.txt"), "--save", os.path.join(tmp, "host_ckpt")])
        trace = os.path.join(tmp, "trace.json")
        mpi, _ = run([*mpi_args, "--losses", os.path.join(tmp, "mpi.txt"), "--save", os.path.join(tmp, "mpi_ckpt"),
                      "--trace", trace])
        if host.returncode != 0 or mpi.returncode != 0:
            problems.append(f"exit status: host {host.returncode}, mpi {mpi.returncode}")
        else:
            expect_same_losses(os.path.join(tmp, "host.txt"), host.stdout, os.path.join(tmp, "mpi.txt"), mpi.stdout,
                               STEPS, problems)
            expect_printed_once(mpi.stdout, ("tessera train:", f"step {STEPS}/{STEPS}", "per device (4 devices", "saved to"), problems)
            collectives = {}  # (pid, device) -> step -> collective spans
            with open(trace) as f:
                for e in json.load(f)["traceEvents"]:
                    if e["ph"] == "X" and e["cat"] == "collective":
                        steps = collectives.setdefault((e["pid"], e["tid"]), {})
                        steps[e["args"]["step"]] = steps.get(e["args"]["step"], 0) + 1
            want = {(d // args.devices_per_rank, d) for d in range(4)}
            if set(collectives) != want:
                problems.append(f"trace tracks (rank, device) with collectives: {sorted(collectives)}, want {sorted(want)}")
            counts = {tuple(sorted(s.items())) for s in collectives.values()}
            if len(counts) != 1 or [t for t, _ in next(iter(counts))] != list(range(1, STEPS + 1)):
                problems.append(f"collective spans per step differ between devices or miss a step: {collectives}")
            ranks = "1 MPI rank" if args.np == 1 else f"{args.np} MPI ranks"
            where = f"plan {args.plan} on 4 devices ({ranks} of {args.devices_per_rank})"
            if where not in mpi.stdout:
                problems.append(f"no '{where}' in the header")
            # The checkpoint rank 0 wrote is the host run's, file for file and byte for byte (each
            # directory's `latest` names its step directory, which holds the files).
            host_ckpt, mpi_ckpt = os.path.join(tmp, "host_ckpt", f"step-{STEPS}"), os.path.join(tmp, "mpi_ckpt", f"step-{STEPS}")
            latest = [open(os.path.join(tmp, d, "latest")).read() if os.path.exists(os.path.join(tmp, d, "latest")) else None
                      for d in ("host_ckpt", "mpi_ckpt")]
            files = sorted(os.listdir(host_ckpt)) if os.path.isdir(host_ckpt) else []
            if latest != [f"step-{STEPS}\n"] * 2:
                problems.append(f"`latest` of the host and MPI checkpoints: {latest}")
            elif sorted(os.listdir(mpi_ckpt)) != files or "index.json" not in files:
                problems.append(f"checkpoint files differ: {files} on host")
            else:
                _, mismatch, errors = filecmp.cmpfiles(host_ckpt, mpi_ckpt, files, shallow=False)
                if mismatch or errors:
                    problems.append(f"checkpoint files differ from the host run's: {mismatch + errors}")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
