"""`tessera run` with bf16 and f8 arrays in and out, checked by NumPy (which has neither type).

The inputs are written the ways a JAX user's files come: `np.save` of an ml_dtypes array (void
elements, '|V2'), an .npy with the ml_dtypes name as descr ('bfloat16'), and .safetensors (which
names BF16 and F8_E4M3 itself). The program multiplies and adds in bf16 on 2 host devices; each
result is one rounding of the exact f32 value, so NumPy's f32 computation rounded to bf16 (round to
nearest even, done here on the bits) must equal it bit for bit, read back from both output formats.

Usage: dtypes_cli.py TESSERA_CLI
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

MODULE = """module @dtypes attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["data"=2]>
  func.func public @main(%arg0: tensor<8xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}]>},
                         %arg1: tensor<8xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}]>},
                         %arg2: tensor<4xf8E4M3FN>) -> (tensor<8xbf16>, tensor<8xbf16>, tensor<4xf32>) {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<8xbf16>
    %1 = stablehlo.add %arg0, %arg1 : tensor<8xbf16>
    %2 = stablehlo.convert %arg2 : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
    return %0, %1, %2 : tensor<8xbf16>, tensor<8xbf16>, tensor<4xf32>
  }
}
"""


def to_bf16_bits(x):
    """f32 -> bf16 bit patterns, round to nearest even (finite inputs)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bf16_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, name, dtype, shape, data):
    header = {name: {"dtype": dtype, "shape": list(shape), "data_offsets": [0, len(data)]}}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = (entry["dtype"], entry["shape"], body[begin:end])
    return out


def read_npy_raw(path):
    """The descr, shape and data bytes of an .npy file, without asking NumPy for the dtype."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY", path
    n = struct.unpack("<H", raw[8:10])[0]
    header = eval(raw[10:10 + n].decode("latin1"))  # a Python dict literal by the format's definition
    return header["descr"], header["shape"], raw[10 + n:]


def main():
    cli = sys.argv[1]
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok   " if ok else "FAIL ") + what)
        failures += 0 if ok else 1

    rng = np.random.default_rng(7)
    x_bits = to_bf16_bits(rng.standard_normal(8).astype(np.float32) * 3)
    y_bits = to_bf16_bits(rng.standard_normal(8).astype(np.float32))
    x, y = from_bf16_bits(x_bits), from_bf16_bits(y_bits)
    # f8E4M3FN bit patterns: 1.0, -2.5, 448 (the largest finite), 0.015625 (2^-6, the smallest normal).
    f8_bits = np.array([0x38, 0xC2, 0x7E, 0x08], dtype=np.uint8)
    f8_values = np.array([1.0, -2.5, 448.0, 0.015625], dtype=np.float32)

    with tempfile.TemporaryDirectory() as d:
        module = os.path.join(d, "m.mlir")
        with open(module, "w") as f:
            f.write(MODULE)
        # x as np.save writes an ml_dtypes array: untyped 2-byte elements.
        np.save(os.path.join(d, "x.npy"), x_bits.view("V2"))
        # y in safetensors; the f8 input as a .npy in the ml_dtypes naming convention.
        write_safetensors(os.path.join(d, "y.safetensors"), "y", "BF16", [8], y_bits.tobytes())
        with open(os.path.join(d, "f8.npy"), "wb") as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "float8_e4m3fn", "fortran_order": False, "shape": (4,)})
            f.write(f8_bits.tobytes())
        args = [cli, "run", module, "--devices", "2", "--input", "arg0=" + os.path.join(d, "x.npy"),
                "--input", "arg1=" + os.path.join(d, "y.safetensors"), "--input", "arg2=" + os.path.join(d, "f8.npy")]
        want_product = to_bf16_bits(x * y)  # exact in f32 (8-bit significands), then one rounding
        want_sum = to_bf16_bits(x + y)      # likewise: the sum of two bf16 is exact in f32 here
        for fmt in ("npy", "safetensors"):
            out_dir = os.path.join(d, "out-" + fmt)
            run = subprocess.run(args + ["--output-dir", out_dir, "--output-format", fmt], capture_output=True, text=True,
                                 timeout=60)
            check(run.returncode == 0, f"{fmt}: tessera run exits 0 ({run.stderr.strip()[:300]})")
            if run.returncode != 0:
                continue
            if fmt == "npy":
                results = [read_npy_raw(os.path.join(out_dir, f"result{i}.npy")) for i in range(3)]
                check(results[0][0] == "bfloat16" and results[0][1] == (8,), f"npy: result0 descr {results[0][0]}")
                got = [r[2] for r in results]
            else:
                st = read_safetensors(os.path.join(out_dir, "results.safetensors"))
                check(st["result0"][0] == "BF16" and st["result0"][1] == [8], f"safetensors: result0 {st['result0'][:2]}")
                got = [st[f"result{i}"][2] for i in range(3)]
            product = np.frombuffer(got[0], dtype=np.uint16)
            total = np.frombuffer(got[1], dtype=np.uint16)
            check(np.array_equal(product, want_product), f"{fmt}: x*y equals NumPy's f32 product rounded to bf16")
            check(np.array_equal(total, want_sum), f"{fmt}: x+y equals NumPy's f32 sum rounded to bf16")
            check(np.array_equal(np.frombuffer(got[2], dtype=np.float32), f8_values),
                  f"{fmt}: f8E4M3FN 1, -2.5, 448, 2^-6 convert to those f32 values")
        # An untyped file for a parameter of another width is refused, naming both.
        np.save(os.path.join(d, "bad.npy"), f8_bits.view("V1"))
        bad = subprocess.run([cli, "run", module, "--devices", "2", "--input", "arg0=" + os.path.join(d, "bad.npy"),
                              "--input", "arg1=" + os.path.join(d, "y.safetensors"),
                              "--input", "arg2=" + os.path.join(d, "f8.npy")], capture_output=True, text=True, timeout=60)
        check(bad.returncode == 1 and "untyped ('|V1', 1 byte), which cannot be read as bf16" in bad.stderr,
              f"a 1-byte untyped file for a bf16 parameter is refused: {bad.stderr.strip()[:200]}")

    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
