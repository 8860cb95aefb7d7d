"""The `tessera` Python package (label `python`): NumPy in, NumPy out, checked by NumPy itself.

Run by ctest with PYTHONPATH=build/python and Debian's /usr/bin/python3.
"""
import threading
import unittest

import numpy as np

import tessera

# The kind of module jax.jit(f).lower(x, w).as_text() writes with Shardy: a mesh, argument and
# result shardings, a public @main.
JAX_MODULE = """module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<4x3xf32>) -> (tensor<8x3xf32> {jax.result_info = "[0]", sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, tensor<f32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.tanh %0 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>
    return %1, %2 : tensor<8x3xf32>, tensor<f32>
  }
}
"""

# One f32 rounding per element and a sum of 24 terms in another order: relative 1e-5 holds.
RTOL = 1e-5


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)


def numpy_f(x, w):
    y = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
    return y, y.sum()


class ModuleTest(unittest.TestCase):
    def test_parse_and_print_round_trip(self):
        m = tessera.parse(JAX_MODULE)
        self.assertEqual(m.functions, ["main"])
        text = m.text()
        self.assertEqual(tessera.parse(text).text(), text)

    def test_a_parse_error_names_the_place(self):
        with self.assertRaises(tessera.Error) as e:
            tessera.parse("module @m {\n  func.func @f() {\n    %0 = stablehlo.bogus\n  }\n}\n", "bad.mlir")
        self.assertRegex(str(e.exception), r"^bad\.mlir:3:\d+: ")

    def test_partition_gives_the_local_program_and_its_collectives(self):
        m = tessera.parse(JAX_MODULE)
        p = tessera.partition(m, mesh={"data": 4})
        self.assertEqual(p["num_devices"], 4)
        self.assertIn("tensor<2x4xf32>", p["text"])
        self.assertEqual([c["kind"] for c in p["collectives"]], ["all_reduce"])
        self.assertEqual(p["parameters"][0]["local_shape"], (2, 4))
        # Another mesh size from the same parsed module: the module itself is unchanged.
        p2 = tessera.partition(m, mesh={"data": 2})
        self.assertEqual(p2["parameters"][0]["local_shape"], (4, 4))
        self.assertIn('sdy.mesh @mesh = <["data"=4]>', m.text())


class SessionTest(unittest.TestCase):
    def test_run_sharded_equals_numpy(self):
        s = tessera.Session.host(4)
        p = s.compile(tessera.parse(JAX_MODULE))
        x, w = inputs()
        y, total = s.run_sharded(p, [x, w])
        want_y, want_total = numpy_f(x, w)
        self.assertEqual(y.dtype, np.float32)
        self.assertEqual(y.shape, (8, 3))
        np.testing.assert_allclose(y, want_y, rtol=RTOL)
        np.testing.assert_allclose(total, want_total, rtol=RTOL)
        # Results own their bytes without a copy: the array's base holds the runtime's buffer.
        self.assertFalse(y.flags.owndata)
        self.assertIsNotNone(y.base)

    def test_inputs_convert_like_numpy_and_errors_name_the_parameter(self):
        s = tessera.Session.host(4)
        p = s.compile(tessera.parse(JAX_MODULE))
        x, w = inputs(1)
        # Lists and float64 arrays become f32, as the parameters are.
        y, _ = s.run_sharded(p, [x.astype(np.float64), w.tolist()])
        np.testing.assert_allclose(y, numpy_f(x, w)[0], rtol=RTOL)
        with self.assertRaises(tessera.Error) as e:
            s.run_sharded(p, [x[:4], w])
        self.assertIn("parameter 0", str(e.exception))
        self.assertIn("4x4", str(e.exception))
        with self.assertRaises(tessera.Error):
            s.run_sharded(p, [x])

    def test_a_timeout_must_be_a_finite_number_of_seconds(self):
        # An infinite or negative timeout would overflow the milliseconds it becomes.
        for bad in (float("inf"), float("nan"), -1.0, 0.0):
            with self.assertRaises(tessera.Error) as e:
                tessera.Session.host(2, timeout=bad)
            self.assertIn("timeout", str(e.exception))
            self.assertIn("expected a number of seconds above 0", str(e.exception))
        self.assertEqual(tessera.Session.host(2, timeout=1e-9).num_devices, 2)  # rounded up to 1 ms

    def test_run_per_device_takes_each_devices_piece(self):
        s = tessera.Session.host(4)
        p = s.compile(tessera.parse(JAX_MODULE))
        x, w = inputs(2)
        results = s.run_per_device(p, [[x[2 * d:2 * d + 2], w] for d in range(4)])
        want_y, want_total = numpy_f(x, w)
        for d in range(4):
            np.testing.assert_allclose(results[d][0], want_y[2 * d:2 * d + 2], rtol=RTOL)
            np.testing.assert_allclose(results[d][1], want_total, rtol=RTOL)  # all-reduced on every device

    def test_sharded_program_keeps_buffers_and_donation_spends_them(self):
        text = """module @step {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}]>}, %arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}]>}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""
        s = tessera.Session.host(4)
        p = s.compile(tessera.parse(text))
        sp = s.sharded_program(p, donate={0: 0})
        acc = sp.stage(0, np.zeros(8, np.float32))
        step = sp.stage(1, np.arange(8, dtype=np.float32))
        self.assertEqual(acc.shape, (8,))
        self.assertEqual(acc.local_bytes, 32)
        for _ in range(3):
            old = acc
            acc, = sp.execute([acc, step])
            self.assertTrue(old.donated)
        np.testing.assert_array_equal(sp.fetch(acc), 3 * np.arange(8, dtype=np.float32))
        with self.assertRaises(tessera.Error) as e:
            sp.execute([old, step])
        self.assertIn("donated", str(e.exception))

    def test_other_threads_run_while_devices_compute(self):
        s = tessera.Session.host(4)
        p = s.compile(tessera.parse(JAX_MODULE))
        x, w = inputs(3)
        out = []
        threads = [threading.Thread(target=lambda: out.append(s.run_sharded(p, [x, w])[1])) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(out), 3)
        for total in out:
            np.testing.assert_allclose(total, numpy_f(x, w)[1], rtol=RTOL)


class TrainTest(unittest.TestCase):
    def test_train_calls_back_each_step_and_returns_the_losses(self):
        seen = []
        result = tessera.train(callback=lambda step, loss: seen.append((step, loss)), plan="fsdp", devices=2,
                               steps=4, d_model=32, layers=1, heads=4, kv_heads=2, ffn=64, batch=4, seq=16)
        self.assertEqual([s for s, _ in seen], [1, 2, 3, 4])
        self.assertEqual(result["losses"], [l for _, l in seen])
        self.assertTrue(all(np.isfinite(result["losses"])))
        self.assertIn("plan fsdp", result["report"])

    def test_unknown_options_and_user_errors(self):
        with self.assertRaises(TypeError) as e:
            tessera.train(stepz=3)
        self.assertIn("'stepz'", str(e.exception))
        with self.assertRaises(tessera.Error) as e:
            tessera.train(plan="nope", steps=1)
        self.assertIn("nope", str(e.exception))

    def test_an_exception_in_the_callback_stops_training(self):
        def stop(step, loss):
            if step == 2:
                raise KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            tessera.train(callback=stop, devices=1, steps=5, d_model=32, layers=1, heads=4, kv_heads=2, ffn=64,
                          batch=4, seq=16)


if __name__ == "__main__":
    unittest.main()
