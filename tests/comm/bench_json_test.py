"""`tessera bench collectives` end to end on a tiny plan (2 devices, 2 sizes): runs the command and
checks its JSON records: every field and its type, every op on host devices, OpenMPI's three and a
memcpy line, and the bandwidths as nccl-tests defines them (algbw = bytes / time; busbw = algbw x
2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and all_to_all, x1 otherwise).
With --backend mpi, Tessera's MPI communicator instead of the host devices (--devices over ranks of
--devices-per-rank), and the line comparing its all_reduce with OpenMPI's MPI_Allreduce."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--tessera", required=True)
parser.add_argument("--openmpi", action="store_true", help="the MPI half is built: expect OpenMPI's records")
parser.add_argument("--backend", default="host", choices=["host", "mpi"])
parser.add_argument("--devices", type=int, default=2)
parser.add_argument("--devices-per-rank", type=int, default=1)
args = parser.parse_args()
n = args.devices
ranks = n // args.devices_per_rank

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "bench.json")
    cmd = [args.tessera, "bench", "collectives", "--devices", str(n), "--sizes", "64,16K", "--json", out,
           "--backend", args.backend, "--devices-per-rank", str(args.devices_per_rank)]
    if not args.openmpi:
        cmd.append("--no-openmpi")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    print(run.stdout)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}")
    with open(out) as f:
        records = json.load(f)

check(isinstance(records, list) and records, "the JSON is a non-empty list")
fields = {"op": str, "backend": str, "devices": int, "bytes": int, "median_us": (int, float),
          "algbw_gbs": (int, float), "busbw_gbs": (int, float)}
def factor_of(op, d):
    return {"all_reduce": 2 * (d - 1) / d, "all_gather": (d - 1) / d, "reduce_scatter": (d - 1) / d,
            "all_to_all": (d - 1) / d}.get(op, 1.0)
seen = set()
for r in records:
    check(set(r) == set(fields), f"fields of {r}")
    for k, t in fields.items():
        check(isinstance(r.get(k), t), f"{k} of {r} is a {t}")
    check(r["backend"] in ("host", "mpi", "openmpi", "memcpy"), f"backend of {r}")
    check(r["median_us"] > 0, f"a positive time in {r}")
    # The memcpy on every hardware thread (the memory bound) copies the largest size on each.
    threaded = r["backend"] == "memcpy" and r["devices"] > 1
    check(r["bytes"] in (64, 16384) or (threaded and r["bytes"] == r["devices"] * 16384),
          f"the sizes asked for in {r}")
    algbw = r["bytes"] / (r["median_us"] * 1e3)
    check(abs(r["algbw_gbs"] - algbw) <= 1e-9 + 1e-6 * algbw, f"algbw = bytes / time in {r}")
    factor = factor_of(r["op"], r["devices"]) if r["backend"] != "memcpy" else 1.0
    check(abs(r["busbw_gbs"] - r["algbw_gbs"] * factor) <= 1e-9 + 1e-6 * algbw, f"busbw of {r}")
    want = {"openmpi": ranks, "memcpy": None}.get(r["backend"], n)
    check(r["devices"] == want if want else r["devices"] >= 1, f"devices of {r}")
    seen.add((r["op"], r["backend"], r["bytes"]))

for op in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "collective_permute"):
    for size in (64, 16384):
        check((op, args.backend, size) in seen, f"{args.backend} {op} of {size} bytes")
for size in (64, 16384):
    check(("memcpy", "memcpy", size) in seen, f"memcpy of {size} bytes")
    if args.openmpi:
        for op in ("all_reduce", "reduce_scatter", "all_gather"):
            check((op, "openmpi", size) in seen, f"openmpi {op} of {size} bytes")

if args.backend == "mpi":
    check("OpenMPI's MPI_Allreduce" in run.stdout and f"({n} devices)" in run.stdout,
          "the line comparing the all_reduce with OpenMPI's")

if failures:
    print("\n".join("FAILED: " + f for f in failures))
    sys.exit(1)
print(f"{len(records)} records checked")
