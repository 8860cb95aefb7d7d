#!/usr/bin/env python3
"""`tessera run --backend mpi` under mpirun: the results written equal `tessera run` on as many
host devices, byte for byte, and only rank 0 prints."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

from mpi_cli import mpirun

MODULE = """module @jit_loss attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, tensor<f32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.tanh %0 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>
    return %1, %2 : tensor<8x3xf32>, tensor<f32>
  }
}
"""

parser = argparse.ArgumentParser()
parser.add_argument("--mpirun", required=True)
parser.add_argument("--tessera", required=True)
parser.add_argument("--np", type=int, required=True)
parser.add_argument("--devices-per-rank", type=int, required=True)
args = parser.parse_args()

problems = []
with tempfile.TemporaryDirectory() as tmp:
    module = os.path.join(tmp, "loss.mlir")
    with open(module, "w") as f:
        f.write(MODULE)
    rng = np.random.default_rng(5)
    np.save(os.path.join(tmp, "x.npy"), rng.uniform(-1, 1, (8, 4)).astype(np.float32))
    np.save(os.path.join(tmp, "w.npy"), rng.uniform(-1, 1, (4, 3)).astype(np.float32))
    common = [module, "--input", "arg0=" + os.path.join(tmp, "x.npy"), "--input", "arg1=" + os.path.join(tmp, "w.npy")]
    host = subprocess.run([args.tessera, "run", *common, "--devices", "4", "--output-dir", os.path.join(tmp, "host")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(host.stdout)
    mpi = subprocess.run([*mpirun(args.mpirun, args.np), args.tessera, "run", *common, "--backend", "mpi",
                          "--devices", str(args.devices_per_rank), "--output-dir", os.path.join(tmp, "mpi")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(mpi.stdout)
    if host.returncode != 0 or mpi.returncode != 0:
        problems.append(f"exit status: host {host.returncode}, mpi {mpi.returncode}")
    else:
        for i in range(2):
            with open(os.path.join(tmp, "host", f"result{i}.npy"), "rb") as f:
                want = f.read()
            with open(os.path.join(tmp, "mpi", f"result{i}.npy"), "rb") as f:
                got = f.read()
            if got != want:
                problems.append(f"result{i}.npy differs from the host run")
        # The host run's own numbers are checked against NumPy too, so equality means something.
        x = np.load(os.path.join(tmp, "x.npy"))
        w = np.load(os.path.join(tmp, "w.npy"))
        if not np.allclose(np.load(os.path.join(tmp, "mpi", "result0.npy")), np.tanh(x @ w), rtol=1e-5, atol=1e-6):
            problems.append("result0 is not tanh(x @ w)")
        if mpi.stdout.count("result 0:") != 1:
            problems.append(f"'result 0:' printed {mpi.stdout.count('result 0:')} times; only rank 0 prints")
        ranks = "1 MPI rank" if args.np == 1 else f"{args.np} MPI ranks"
        want_line = f"ran @main on 4 devices ({ranks} of {args.devices_per_rank}); 1 collectives"
        if want_line not in mpi.stdout:
            problems.append(f"no line '{want_line}'")

for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
