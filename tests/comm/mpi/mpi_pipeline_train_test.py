#!/usr/bin/env python3
"""`tessera train --backend mpi --plan pp=...` under mpirun: the pipeline's stages on MPI ranks
against the same pipeline on host devices. Every step's loss (written exactly by --losses) is
bitwise the same, and only rank 0 prints. With --fault instead: rank 0 cannot write --losses and
leaves; the rank waiting for its activations stops at once naming rank 0, and the job exits
non-zero well within the timeout (with stages on rank pairs, rank 0's stage peer rank 1 stops too,
naming rank 0, in whatever it waits for: a collective of the stage, or a transfer). With
--checkpoint: 3 steps saved over MPI (rank 0 writes the device files from every rank's stages'
pieces) give the same files, byte for byte, as the same save on host devices; resumed over MPI
(each rank reading its own stages' pieces) and on host devices, steps 4 and 5 are bitwise the
unbroken run's (with clipping, whose norm sums every rank's stages, and a cosine schedule, which
continues)."""
import argparse
import os
import re
import sys
import tempfile

from mpi_cli import expect_printed_once, expect_same_losses, mpirun, printed_losses, run

parser = argparse.ArgumentParser()
parser.add_argument("--mpirun", required=True)
parser.add_argument("--tessera", required=True)
parser.add_argument("--np", type=int, required=True)
parser.add_argument("--plan", default="pp=2")
parser.add_argument("--schedule", default="1f1b")
parser.add_argument("--fault", action="store_true")
parser.add_argument("--checkpoint", action="store_true")
args = parser.parse_args()

STEPS = 5
MODEL = ["--d-model", "32", "--layers", "4", "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "8",
         "--seq", "16", "--steps", str(STEPS), "--lr", "1e-2", "--no-progress-bar", "--sample", "0",
         "--microbatches", "4"]
MPIRUN = mpirun(args.mpirun, args.np)

problems = []
with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 400)
    common = ["train", *MODEL, "--corpus", corpus, "--plan", args.plan, "--schedule", args.schedule]
    mpi_args = [*MPIRUN, args.tessera, *common, "--backend", "mpi"]

    if args.fault:
        mpi, elapsed = run([*mpi_args, "--losses", os.path.join(tmp, "missing", "losses.txt")])
        if mpi.returncode == 0:
            problems.append("mpirun exited 0 though rank 0 failed")
        if mpi.returncode == 124 or elapsed >= 30:
            problems.append(f"the job took {elapsed:.1f} s (exit {mpi.returncode}); a failed rank must end it at once")
        if "cannot write the file" not in mpi.stdout:
            problems.append("rank 0 did not print its error")
        if not re.search(r"from stage 0 \(on rank 0\): .*rank 0 exited before sending it", mpi.stdout):
            problems.append("no rank named rank 0 as the one that left")
        if args.np == 4 and "dp=2" in args.plan and not re.search(r"on rank 1\b.*rank 0 exited", mpi.stdout):
            problems.append("rank 1, on stage 0 with rank 0, did not name rank 0 as the one that left")
        if printed_losses(mpi.stdout):
            problems.append("a step was printed though rank 0 failed before the first")
    elif args.checkpoint:
        at = common.index("--steps")
        common = common[:at] + common[at + 2:]  # each run below sets its own
        # The schedule and the clipping continue across the resume; the norm is summed over ranks.
        common += ["--clip-norm", "0.5", "--lr-schedule", "cosine", "--warmup", "2", "--lr-steps", str(STEPS)]
        host, _ = run([args.tessera, *common, "--steps", str(STEPS), "--losses", os.path.join(tmp, "host.txt")])
        mpi_args = [*MPIRUN, args.tessera, *common, "--backend", "mpi"]
        first = ["--steps", "3"]
        saved = [run([*mpi_args, *first, "--save", os.path.join(tmp, "mpi_ckpt")])[0],
                 run([args.tessera, *common, *first, "--save", os.path.join(tmp, "host_ckpt")])[0]]
        resumed = [run([*mpi_args, "--steps", "2", "--resume", os.path.join(tmp, "mpi_ckpt"),
                        "--losses", os.path.join(tmp, "mpi_resumed.txt")])[0],
                   run([args.tessera, *common, "--steps", "2", "--resume", os.path.join(tmp, "mpi_ckpt"),
                        "--losses", os.path.join(tmp, "host_resumed.txt")])[0]]
        if any(p.returncode != 0 for p in [host, *saved, *resumed]):
            problems.append("exit status: " + ", ".join(str(p.returncode) for p in [host, *saved, *resumed]))
        else:
            names = sorted(os.listdir(os.path.join(tmp, "host_ckpt", "step-3")))
            if sorted(os.listdir(os.path.join(tmp, "mpi_ckpt", "step-3"))) != names:
                problems.append(f"the MPI checkpoint's files differ from the host's {names}")
            for name in names:
                with open(os.path.join(tmp, "host_ckpt", "step-3", name), "rb") as a, \
                        open(os.path.join(tmp, "mpi_ckpt", "step-3", name), "rb") as b:
                    if a.read() != b.read():
                        problems.append(f"step-3/{name} saved over MPI differs from the host save's")
            with open(os.path.join(tmp, "host.txt")) as f:
                want = f.read().splitlines()[3:]
            for who in ("mpi_resumed", "host_resumed"):
                with open(os.path.join(tmp, who + ".txt")) as f:
                    got = f.read().splitlines()
                if got != want:
                    problems.append(f"{who}: steps 4-5 {got}, the unbroken run's {want}")
    else:
        host, _ = run([args.tessera, *common, "--losses", os.path.join(tmp, "host.txt")])
        mpi, _ = run([*mpi_args, "--losses", os.path.join(tmp, "mpi.txt")])
        if host.returncode != 0 or mpi.returncode != 0:
            problems.append(f"exit status: host {host.returncode}, mpi {mpi.returncode}")
        else:
            expect_same_losses(os.path.join(tmp, "host.txt"), host.stdout, os.path.join(tmp, "mpi.txt"), mpi.stdout,
                               STEPS, problems)
            expect_printed_once(mpi.stdout, ("tessera train:", f"step {STEPS}/{STEPS}", "per stage (", "pipeline bubble over"), problems)
            stages = int(re.match(r"pp=([0-9]+)", args.plan).group(1))
            where = f"plan {args.plan} on {args.np} MPI ranks ("
            # Whole stages per rank (np divides P), or each stage on np / P ranks (P divides np).
            per_stage = args.np // stages if args.np > stages else 0
            layout = f"{per_stage} ranks per stage" if per_stage else f"{stages // args.np} stage"
            if where not in mpi.stdout or layout not in mpi.stdout:
                problems.append(f"no '{where}... {layout}' in the header")
            # The table names each stage's ranks: stage s on rank s * np / P, or ranks s * k .. s * k + k - 1.
            for s in range(stages):
                ranks = f"r{s * per_stage}-{s * per_stage + per_stage - 1}" if per_stage else f"r{s * args.np // stages}"
                if not re.search(rf"^ +{s}  {ranks}:", mpi.stdout, re.M):
                    problems.append(f"the per-stage table does not put stage {s} on {ranks}")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
