"""What the `tessera ... --backend mpi` command-line tests share: the mpirun prefix (as root, more
ranks than cores, and `timeout` so that a hung job never outlives its test), running a command
with its output shown, and reading losses from `--losses` files and from the printed step lines."""
import math
import os
import re
import struct
import subprocess
import time


def job_limit(seconds=50):
    """`seconds`, scaled as ctest scales the tests' limits in sanitized builds."""
    return str(seconds * int(os.environ.get("TESSERA_TEST_TIME_SCALE", "1")))


def mpirun(mpirun_path, np):
    return ["timeout", "-k", "5", job_limit(), mpirun_path, "--allow-run-as-root", "--oversubscribe", "-np", str(np)]


def run(cmd, env=None):
    """Runs `cmd` (in `env`, else this process's environment), prints it and its output; returns
    (CompletedProcess, seconds)."""
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    print("$", " ".join(cmd))
    print(p.stdout)
    return p, time.monotonic() - start


def as_f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def read_losses(path, problems, who):
    """{step: loss} from a --losses file, checking each line's decimal and hex forms agree."""
    losses = {}
    with open(path) as f:
        for line in f:
            step, dec, hexf = line.split()
            if as_f32(float(dec)) != float.fromhex(hexf):  # %.9g names an f32 exactly
                problems.append(f"{who}: step {step}: {dec} and {hexf} differ")
            losses[int(step)] = float.fromhex(hexf)
    return losses


def printed_losses(out):
    return re.findall(r"^step ([0-9]+)/[0-9]+  loss ([0-9.]+)", out, re.M)


def expect_same_losses(host_file, host_out, mpi_file, mpi_out, steps, problems):
    """The MPI run's losses (its --losses file and its printed step lines) are the host run's, bit
    for bit, and the host run trains: equal losses must mean equal training, not equal constants."""
    want = read_losses(host_file, problems, "host")
    got = read_losses(mpi_file, problems, "mpi")
    if sorted(want) != list(range(1, steps + 1)) or not all(math.isfinite(l) for l in want.values()):
        problems.append(f"host losses are not {steps} finite steps: {want}")
    elif not want[steps] < want[1] - 0.2:
        problems.append(f"the host run's loss does not fall: {want[1]} -> {want[steps]}")
    for step in sorted(set(want) | set(got)):
        if want.get(step) != got.get(step):
            problems.append(f"step {step}: loss {got.get(step)!r} over MPI, {want.get(step)!r} on host devices")
    if printed_losses(mpi_out) != printed_losses(host_out) or not printed_losses(host_out):
        problems.append("the printed losses differ from the host run's")


def expect_printed_once(out, lines, problems):
    """Each of `lines` appears exactly once in the job's output: only rank 0 prints."""
    for line in lines:
        if out.count(line) != 1:
            problems.append(f"'{line}' printed {out.count(line)} times; only rank 0 prints")
