"""Lesson (Python): a program JAX exported, run on 4 devices from NumPy.

With JAX one would write

    @jax.jit
    def f(x, w):
        y = jnp.tanh(x @ w)
        return y, jnp.sum(y * y)
    text = f.lower(x, w).as_text()      # with x sharded over a 4-device mesh's "data" axis

and get StableHLO text like MODULE below (a Shardy mesh, argument and result shardings, @main).
Tessera parses it, shows how it is split, partitions it for 4 host devices and runs it on NumPy
arrays; the numbers are those of NumPy on one device.

Run: PYTHONPATH=build/python /usr/bin/python3 examples/python/jax_export.py
"""
import numpy as np

import tessera

MODULE = """module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<8x4xf32>) -> (tensor<16x4xf32> {jax.result_info = "[0]", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, tensor<f32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
    %1 = stablehlo.tanh %0 : tensor<16x4xf32>
    %2 = stablehlo.multiply %1, %1 : tensor<16x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x4xf32>, tensor<f32>) -> tensor<f32>
    return %1, %3 : tensor<16x4xf32>, tensor<f32>
  }
}
"""


def main():
    module = tessera.parse(MODULE, "jit_f.mlir")

    # What each device runs, and what it communicates: one all-reduce of the partial sums.
    plan = tessera.partition(module)
    print(f"{plan['num_devices']} devices; x's piece {plan['parameters'][0]['local_shape']}; collectives:",
          ", ".join(f"{c['kind']} ({c['bytes_per_device']} bytes per device)" for c in plan["collectives"]))

    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4)).astype(np.float32)

    session = tessera.Session.host(4)
    program = session.compile(module)
    y, loss = session.run_sharded(program, [x, w])

    want_y = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
    want_loss = np.sum(want_y * want_y)
    diff = max(float(np.max(np.abs(y - want_y))), abs(float(loss) - want_loss) / abs(want_loss))
    print(f"loss on 4 devices = {float(loss):.6f}, NumPy = {want_loss:.6f}; largest difference {diff:.2e}")
    assert diff < 1e-5, diff
    print("PASS: jax_export")


if __name__ == "__main__":
    main()
