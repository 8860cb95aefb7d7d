#!/usr/bin/env python3
"""Checkpoints written and read by their owners over MPI (issue 15, item 3):
- `mpirun -np 4 tessera train --backend mpi --plan fsdp --save D` (each rank writing its own device
  file, rank 0 the index), then `mpirun -np 2 ... --plan tp --resume D`: each rank reports the bytes
  of array data it read, which equal the bytes of its pieces (their boxes, as the layout gives
  them) and are well under the checkpoint's total (at most 0.7x under tp, 0.3x under fsdp); its losses are bitwise those of the same resume on 2 host devices,
  and its first loss is the uninterrupted fsdp run's within 1e-4 (another plan sums in another
  order); resumed under fsdp on 4 ranks the losses are bitwise the uninterrupted run's;
- a write failing on one rank (ENOSPC): the save fails on every rank, rank 0 naming that rank and
  its file, and the previous checkpoint stays current;
- one rank SIGKILLed in the middle of a save (TESSERA_CHECKPOINT_FILE_DELAY_MS slows each file
  write): every rank ends within 30 s, `latest` still names the previous checkpoint, and it resumes
  with the uninterrupted run's loss, bit for bit."""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from mpi_cli import mpirun, read_losses, run

parser = argparse.ArgumentParser()
parser.add_argument("--mpirun", required=True)
parser.add_argument("--tessera", required=True)
args = parser.parse_args()

MODEL = ["--d-model", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "8",
         "--seq", "16", "--lr", "1e-2", "--no-progress-bar", "--sample", "0"]
READ = re.compile(r"^  rank ([0-9]+) read ([0-9]+) B of array data for ([0-9]+) B of its pieces", re.M)

problems = []


def train(tmp, backend, np, plan, steps, *extra, env_args=()):
    losses = os.path.join(tmp, f"losses_{uuid.uuid4().hex}.txt")
    common = ["train", *MODEL, "--corpus", os.path.join(tmp, "corpus.txt"), "--plan", plan, "--steps", str(steps),
              "--losses", losses, *extra]
    if backend == "mpi":
        cmd = [*mpirun(args.mpirun, np), *env_args, args.tessera, *common, "--backend", "mpi", "--devices", "1"]
    else:
        cmd = [args.tessera, *common, "--backend", "host", "--devices", str(np)]
    p, _ = run(cmd)
    if p.returncode != 0:
        problems.append(f"{' '.join(cmd)}: exit status {p.returncode}")
        return p, {}
    return p, read_losses(losses, problems, f"{backend} {plan} on {np}")


def checkpoint_bytes(step_dir):
    """The bytes of the parameters and moments in a checkpoint (index.json's arrays but the step)."""
    with open(os.path.join(step_dir, "index.json")) as f:
        index = json.load(f)
    total = 0
    for a in index["arrays"]:
        if a["name"] != "step":
            n = 4
            for d in a["shape"]:
                n *= d
            total += n
    return total


def expect_reads(out, ranks, what, most):
    rows = {int(r): (int(x), int(y)) for r, x, y in READ.findall(out)}
    if sorted(rows) != list(range(ranks)):
        problems.append(f"{what}: read lines for ranks {sorted(rows)}, expected 0-{ranks - 1}")
        return
    for r, (read, live) in rows.items():
        print(f"{what}: rank {r} read {read} B for {live} B of pieces (at most {most} B)")
        if read != live:
            problems.append(f"{what}: rank {r} read {read} B of array data for {live} B of its pieces")
        if not 0 < read <= most:
            problems.append(f"{what}: rank {r} read {read} B, expected 1..{most}")


def rank_pid(tag, rank):
    """The pid of the job's rank `rank`: the process whose environment holds our tag and its rank."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"TESSERA_TEST_TAG={tag}".encode() in env and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "corpus.txt"), "w") as f:
        f.write("the quick brown fox jumps over the lazy dog. " * 400)
    ckpt = os.path.join(tmp, "ckpt")
    _, ref = train(tmp, "host", 4, "fsdp", 4)
    saved, first = train(tmp, "mpi", 4, "fsdp", 2, "--save", ckpt)
    if first and any(first[s] != ref.get(s) for s in (1, 2)):
        problems.append(f"fsdp on 4 ranks: losses {first}, on 4 host devices {ref}")
    step_dir = os.path.join(ckpt, "step-2")
    if not os.path.isfile(os.path.join(step_dir, "index.json")):
        problems.append("no step-2/index.json after the save")
    else:
        total = checkpoint_bytes(step_dir)
        # tp on 2 ranks: each rank's pieces are two thirds of the state (the embedding and the
        # norms replicated, the rest split in halves); fsdp on 4 ranks: a quarter.
        tp, tp_losses = train(tmp, "mpi", 2, "tp", 2, "--resume", ckpt)
        expect_reads(tp.stdout, 2, "tp on 2 ranks", int(0.7 * total))
        _, host_tp = train(tmp, "host", 2, "tp", 2, "--resume", ckpt)
        if tp_losses != host_tp or sorted(tp_losses) != [3, 4]:
            problems.append(f"resumed under tp: over MPI {tp_losses}, on 2 host devices {host_tp}")
        elif abs(tp_losses[3] - ref[3]) > 1e-4 * ref[3]:
            problems.append(f"step 3 under tp {tp_losses[3]}, uninterrupted fsdp {ref[3]}: beyond 1e-4")
        fsdp, fsdp_losses = train(tmp, "mpi", 4, "fsdp", 2, "--resume", ckpt)
        expect_reads(fsdp.stdout, 4, "fsdp on 4 ranks", int(0.3 * total))
        if fsdp_losses != {s: ref[s] for s in (3, 4)}:
            problems.append(f"resumed under fsdp on 4 ranks: {fsdp_losses}, uninterrupted {ref}")

        # One rank killed in the middle of a save of step 3 over the checkpoint of step 2.
        killed = os.path.join(tmp, "killed")
        shutil.copytree(ckpt, killed)
        tag = uuid.uuid4().hex
        cmd = [*mpirun(args.mpirun, 2), "-x", "TESSERA_CHECKPOINT_FILE_DELAY_MS=1500", "-x", f"TESSERA_TEST_TAG={tag}",
               args.tessera, "train", *MODEL, "--corpus", os.path.join(tmp, "corpus.txt"), "--plan", "fsdp",
               "--steps", "1", "--resume", killed, "--save", killed, "--backend", "mpi", "--devices", "1"]
        print("$", " ".join(cmd))
        job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 40
        while not os.path.isdir(os.path.join(killed, "step-3")) and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.5)  # inside the save: each rank sleeps before writing its file
        pid = rank_pid(tag, 1)
        if pid is None:
            problems.append("rank 1 of the saving job not found")
            job.kill()
        else:
            os.kill(pid, signal.SIGKILL)
            killed_at = time.monotonic()
        out, _ = job.communicate()
        print(out)
        if pid is not None:
            took = time.monotonic() - killed_at
            print(f"the job ended {took:.1f} s after rank 1 was killed, exit status {job.returncode}")
            if took > 30:
                problems.append(f"the job took {took:.1f} s to end after rank 1 was killed")
            if job.returncode == 0:
                problems.append("the job exited 0 although rank 1 was killed in its save")
        with open(os.path.join(killed, "latest")) as f:
            latest = f.read()
        if latest != "step-2\n":
            problems.append(f"after the killed save `latest` is {latest!r}, not the previous step-2")
        _, again = train(tmp, "host", 4, "fsdp", 1, "--resume", killed)
        if again != {3: ref[3]}:
            problems.append(f"resumed after the killed save: {again}, uninterrupted step 3: {ref.get(3)}")

        # Rank 1's write fails (ENOSPC by the fault hook on its second checkpoint operation, a
        # write of its device file): the save fails on both ranks, rank 0 naming rank 1 and the
        # file, at once; step-3 is removed and step-2 stays current.
        failed = os.path.join(tmp, "failed")
        shutil.copytree(ckpt, failed)
        app = [args.tessera, "train", *MODEL, "--corpus", os.path.join(tmp, "corpus.txt"), "--plan", "fsdp",
               "--steps", "1", "--resume", failed, "--save", failed, "--backend", "mpi", "--devices", "1"]
        job, took = run([*mpirun(args.mpirun, 1), *app, ":", "-np", "1", "-x", "TESSERA_CHECKPOINT_FAULT=enospc:2", *app])
        message = (f"error: --save {failed}: save_sharded {failed}: rank 1 failed: {failed}/step-3/device-1.safetensors.tmp: "
                   "write failed: No space left on device")
        if job.returncode == 0 or took > 30:
            problems.append(f"a failed write on rank 1: exit status {job.returncode} after {took:.1f} s")
        if message not in job.stdout:
            problems.append(f"rank 0 did not report rank 1's failed write: {message}")
        if os.path.exists(os.path.join(failed, "step-3")):
            problems.append("the failed save left step-3 behind")
        with open(os.path.join(failed, "latest")) as f:
            if f.read() != "step-2\n":
                problems.append("after the failed save `latest` no longer names step-2")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
