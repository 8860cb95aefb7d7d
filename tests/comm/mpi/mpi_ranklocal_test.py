#!/usr/bin/env python3
"""Rank-local buffers under `tessera train --backend mpi` on 4 ranks (issue 15's acceptance):
- the live bytes of parameters and optimizer state each rank holds (the runtime's own count,
  printed per rank) under --plan fsdp are at most 0.3x those under --plan dp, and each rank's
  peak RSS is reported for both;
- the bytes each rank sent in the last training step (counted where Tessera hands them to MPI)
  equal the ring model of the partitioned step's collectives within 5 %: nothing else moves, in
  particular no gather of the results after the step;
- the losses equal those of 4 host devices bit for bit (the logged loss is the program's own
  replicated reduction, read where it is)."""
import argparse
import os
import re
import sys
import tempfile

from mpi_cli import expect_same_losses, mpirun, run

parser = argparse.ArgumentParser()
parser.add_argument("--mpirun", required=True)
parser.add_argument("--tessera", required=True)
args = parser.parse_args()

STEPS = 3
MODEL = ["--d-model", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "8",
         "--seq", "16", "--steps", str(STEPS), "--lr", "1e-2", "--no-progress-bar", "--sample", "0"]
ROW = re.compile(r"^  rank ([0-9]+)  live parameters\+optimizer ([0-9]+) B .*peak RSS ([0-9]+) B .*"
                 r"sent in step ([0-9]+) ([0-9]+) B  ring model ([0-9]+) B$", re.M)

problems = []
with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 400)
    figures = {}
    for plan in ("dp", "fsdp"):
        common = ["train", *MODEL, "--corpus", corpus, "--plan", plan]
        mpi, _ = run([*mpirun(args.mpirun, 4), args.tessera, *common, "--backend", "mpi", "--devices", "1",
                      "--losses", os.path.join(tmp, f"mpi_{plan}.txt")])
        host, _ = run([args.tessera, *common, "--backend", "host", "--devices", "4",
                       "--losses", os.path.join(tmp, f"host_{plan}.txt")])
        if mpi.returncode != 0 or host.returncode != 0:
            problems.append(f"--plan {plan}: exit status mpi {mpi.returncode}, host {host.returncode}")
            continue
        expect_same_losses(os.path.join(tmp, f"host_{plan}.txt"), host.stdout, os.path.join(tmp, f"mpi_{plan}.txt"),
                           mpi.stdout, STEPS, problems)
        rows = {int(r[0]): [int(x) for x in r[1:]] for r in ROW.findall(mpi.stdout)}
        if sorted(rows) != [0, 1, 2, 3]:
            problems.append(f"--plan {plan}: per-rank rows for ranks {sorted(rows)}, expected 0-3")
            continue
        figures[plan] = rows
        for r, (live, rss, step, sent, ring) in rows.items():
            if step != STEPS or live <= 0 or rss <= 0 or ring <= 0:
                problems.append(f"--plan {plan} rank {r}: step {step}, live {live}, RSS {rss}, ring {ring}")
            elif abs(sent - ring) > 0.05 * ring:
                problems.append(f"--plan {plan} rank {r}: sent {sent} bytes in step {step}, the ring model "
                                f"{ring} (off by {100 * (sent - ring) / ring:+.1f} %, more than 5 %)")
            else:
                print(f"--plan {plan} rank {r}: live {live} B, peak RSS {rss} B, sent {sent} B, ring {ring} B "
                      f"({100 * (sent - ring) / ring:+.2f} %)")
    if len(figures) == 2:
        for r in range(4):
            dp, fsdp = figures["dp"][r][0], figures["fsdp"][r][0]
            print(f"rank {r}: fsdp / dp live parameter+optimizer bytes = {fsdp} / {dp} = {fsdp / dp:.3f}")
            if not fsdp <= 0.3 * dp:
                problems.append(f"rank {r}: fsdp holds {fsdp} bytes of parameters and optimizer state, dp {dp}: "
                                f"{fsdp / dp:.3f}x, above 0.3x")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
