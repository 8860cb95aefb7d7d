#!/usr/bin/env python3
"""Hostile inputs to the tessera command line: each must end in a named error and exit 1.

Each case writes its small input files, runs one command line under a time limit, and checks the
exit status (1: no signal, no abort's 134, no internal error's 2), that it finished within the
limit, and that the message names the thing. Usage: hostile_cli.py TESSERA [LIMIT_SECONDS].
Prints one line per case and "N passed, M failed"; exits non-zero if any case failed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TESSERA = sys.argv[1]
LIMIT = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0


def constant_program(shape, then=""):
    t = f"tensor<{shape}xf32>"
    body = f"  %0 = stablehlo.constant dense<1.0> : {t}\n"
    result = "%0"
    if then == "tanh":
        body += f"  %1 = stablehlo.tanh %0 : {t}\n"
        result = "%1"
    elif then == "slice":
        body += f"  %1 = stablehlo.slice %0 [0:1, 0:1] : ({t}) -> tensor<1x1xf32>\n"
        return f"func.func @main() -> tensor<1x1xf32> {{\n{body}  return %1 : tensor<1x1xf32>\n}}\n"
    return f"func.func @main() -> {t} {{\n{body}  return {result} : {t}\n}}\n"


def nested_whiles(depth):
    # Each level: a while whose body holds the next level; hostile only in its depth.
    text = "func.func @main(%arg0: tensor<i32>) -> tensor<i32> {\n"
    for i in range(depth):
        outer = "%arg0" if i == 0 else f"%x{i - 1}"
        text += (f"%r{i} = stablehlo.while(%x{i} = {outer}) : tensor<i32>\n cond {{\n"
                 f"  %c{i} = stablehlo.compare LT, %x{i}, %x{i} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
                 f"  stablehlo.return %c{i} : tensor<i1>\n }} do {{\n")
    for i in reversed(range(depth)):
        text += f"  stablehlo.return %x{i} : tensor<i32>\n }}\n"
    return text + "  return %arg0 : tensor<i32>\n}\n"


SMALL = ("func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
         "  %0 = stablehlo.tanh %arg0 : tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n")
TINY_TRAIN = ["--steps", "1", "--d-model", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64",
              "--batch", "4", "--seq", "16", "--sample", "0"]


def gspmd_program(sharding):
    # A GSPMD export's argument sharding (mhlo.sharding), hostile only in its text.
    return ('func.func @main(%arg0: tensor<8xf32> {mhlo.sharding = "' + sharding + '"}) -> tensor<8xf32> {\n'
            "  return %arg0 : tensor<8xf32>\n}\n")


def npy(header_shape, data_bytes):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % header_shape
    header += " " * (117 - len(header)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + data_bytes


EIGHT_FLOATS = b"".join(int(0x3F800000).to_bytes(4, "little") for _ in range(8))

# name: (files, argv, expected message regex)
CASES = {
    "count_wraps_to_zero_tanh": ({"big.mlir": constant_program("4294967296x4294967296", "tanh")},
                                 ["run", "big.mlir"], r"big\.mlir:\d+:\d+: tensor<4294967296x4294967296xf32> is too large"),
    "count_wraps_to_zero_slice": ({"big.mlir": constant_program("4294967296x4294967296", "slice")},
                                  ["run", "big.mlir"], r"tensor<4294967296x4294967296xf32> is too large"),
    "partition_bytes_overflow": ({"big.mlir": constant_program("4294967296x4294967296")},
                                 ["partition", "big.mlir", "--mesh", "data=2"], r"is too large: its size in bytes"),
    "oversized_constant": ({"big.mlir": constant_program("99999999999x99999999999")},
                           ["run", "big.mlir"], r"tensor<99999999999x99999999999xf32> is too large"),
    "constant_beyond_memory": ({"big.mlir": constant_program("100000x100000x100")},
                               ["run", "big.mlir"], r"tensor<100000x100000x100xf32>: cannot allocate 3\.64 TiB"),
    "npy_shape_overflow": ({"p.mlir": SMALL, "x.npy": npy("(99999999999, 99999999999)", b"")},
                           ["run", "p.mlir", "--input", "arg0=x.npy"], r"x\.npy: \.npy shape .* is too large"),
    "npy_shape_without_data": ({"p.mlir": SMALL, "x.npy": npy("(100000, 100000, 100)", b"")},
                               ["run", "p.mlir", "--input", "arg0=x.npy"],
                               r"x\.npy: \.npy data has 0 bytes, tensor<100000x100000x100xf32> needs 4000000000000"),
    "npy_truncated": ({"p.mlir": SMALL, "x.npy": npy("(8,)", EIGHT_FLOATS[:-4])},
                      ["run", "p.mlir", "--input", "arg0=x.npy"], r"data has 28 bytes, tensor<8xf32> needs 32"),
    "nested_regions": ({"deep.mlir": nested_whiles(10000)}, ["run", "deep.mlir"],
                       r"deep\.mlir:\d+:\d+: regions nested more than 200 levels deep"),
    "nested_dense_lists": ({"deep.mlir": "func.func @main() -> tensor<1xf32> {\n  %0 = stablehlo.constant dense<"
                            + "[" * 50000 + "1.0" + "]" * 50000 + "> : tensor<1xf32>\n  return %0 : tensor<1xf32>\n}\n"},
                           ["run", "deep.mlir"], r"dense<\.\.\.> lists nested more than 200 levels deep"),
    "train_seq_too_long": ({}, ["train", "--seq", "100000"], r"--seq 100000 .*more than the limit"),
    "train_d_model_too_wide": ({}, ["train", "--d-model", "4000000"], r"--d-model 4000000 .*more than the limit"),
    "train_too_many_layers": ({}, ["train", "--layers", "100000"], r"--layers 100000 .*more than the limit"),
    "train_max_bytes": ({}, ["train", "--max-bytes", "1K"] + TINY_TRAIN, r"more than the limit of 1\.00 KiB"),
    "mesh_too_many_devices": ({"p.mlir": SMALL}, ["partition", "p.mlir", "--mesh", "data=99999999999"],
                              r'axis "data" of size 99999999999 makes more than 1048576 devices'),
    "train_too_many_devices": ({}, ["train", "--devices", "1000"], r"--devices 1000: more than 64 host devices"),
    "mesh_size_not_a_number": ({"p.mlir": SMALL}, ["partition", "p.mlir", "--mesh", "data=4x"],
                               r"--mesh: size of axis \"data\" is not a positive whole number: '4x'"),
    "negative_learning_rate": ({}, ["train", "--lr", "-1"], r"--lr -1: the learning rate must be a positive number"),
    "input_negative_index": ({"p.mlir": SMALL, "x.npy": npy("(8,)", EIGHT_FLOATS)},
                             ["run", "p.mlir", "--input", "arg-1=x.npy"], r"--input: 'arg-1' names no parameter"),
    "input_index_too_large": ({"p.mlir": SMALL, "x.npy": npy("(8,)", EIGHT_FLOATS)},
                              ["run", "p.mlir", "--input", "arg3=x.npy"], r"@main has 1 parameter, no parameter 3"),
    "check_empty_file": ({"empty.mlir": ""}, ["check", "empty.mlir"], r"empty\.mlir: no test cases"),
    "output_dir_under_a_file": ({"p.mlir": SMALL, "x.npy": npy("(8,)", EIGHT_FLOATS), "plain": "x"},
                                ["run", "p.mlir", "--input", "arg0=x.npy", "--output-dir", "plain/out"],
                                r"--output-dir plain/out: cannot create the folder: Not a directory"),
    "bad_option_value": ({}, ["train", "--steps", "many"], r"--steps: expected a positive number, got 'many'"),
    "zero_where_positive": ({}, ["train", "--keep", "0"], r"--keep: expected a positive number, got '0'"),
    "negative_where_nonnegative": ({}, ["train", "--clip-norm", "-1"], r"--clip-norm: expected a number >= 0, got '-1'"),
    "run_zero_devices": ({"p.mlir": SMALL}, ["run", "p.mlir", "--devices", "0"],
                         r"--devices: expected a positive number, got '0'"),
    "infinite_timeout": ({"p.mlir": SMALL, "x.npy": npy("(8,)", EIGHT_FLOATS)},
                         ["run", "p.mlir", "--input", "arg0=x.npy", "--timeout", "inf"],
                         r"--timeout inf: expected a number of seconds above 0 and at most 10000000"),
    "pipeline_option_without_pipeline": ({}, ["train", "--plan", "dp", "--schedule", "gpipe"],
                                         r"--schedule gpipe: needs a pipeline plan"),
    "pipeline_past_the_limit": ({}, ["train", "--plan", "pp=2", "--devices", "2", "--max-bytes", "10M", "--steps", "1"],
                                r"--plan pp=2 on 2 host devices \(2 stages x 1\) needs about .* more than the limit "
                                r"of 10\.00 MiB"),
    "zero_threads": ({}, ["train", "--threads", "0"], r"--threads 0: Tessera needs at least 1 thread"),
    "gspmd_sharding_huge_tiles": ({"g.mlir": gspmd_program("{devices=[1048576,1048576]<=[1099511627776]}")},
                                  ["partition", "g.mlir"], r"g\.mlir:1:11: argument 0 of @main: mhlo\.sharding .*more than "
                                  r"1048576 devices"),
    "gspmd_sharding_unterminated": ({"g.mlir": gspmd_program("{devices=[2]<=[2" + "," * 5000)},
                                    ["run", "g.mlir"], r"g\.mlir:1:11: .*,,,\.\.\.\": expected a number at character 18"),
    "gspmd_sharding_maximal": ({"g.mlir": gspmd_program("{maximal device=7}")}, ["run", "g.mlir"],
                               r"a maximal sharding \(the whole value on device 7\) has no Shardy mesh form"),
}


def run_case(name, files, argv, pattern, folder):
    for path, text in files.items():
        with open(os.path.join(folder, path), "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode())
    start = time.monotonic()
    try:
        p = subprocess.run([TESSERA] + argv, cwd=folder, capture_output=True, text=True, timeout=max(LIMIT, 30))
    except subprocess.TimeoutExpired:
        return f"still running after {max(LIMIT, 30)} s"
    elapsed = time.monotonic() - start
    out = p.stdout + p.stderr
    if p.returncode != 1:
        return f"exit {p.returncode} (expected 1): {out.strip()[-400:]}"
    if elapsed > LIMIT:
        return f"took {elapsed:.1f} s (limit {LIMIT} s)"
    if not re.search(pattern, out):
        return f"message does not match /{pattern}/: {out.strip()[-400:]}"
    return None


def full_disk_case(folder):
    """A result that does not fit: the write fails with the errno text, and no file is left."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "skip", "needs root to mount a tmpfs"
    disk = os.path.join(folder, "disk")
    os.mkdir(disk)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk], capture_output=True).returncode != 0:
        return "skip", "mount -t tmpfs failed"
    try:
        program = ("func.func @main() -> tensor<65536xf32> {\n  %0 = stablehlo.iota dim = 0 : tensor<65536xf32>\n"
                   "  return %0 : tensor<65536xf32>\n}\n")
        with open(os.path.join(folder, "iota.mlir"), "w") as f:
            f.write(program)
        p = subprocess.run([TESSERA, "run", "iota.mlir", "--output-dir", "disk"], cwd=folder, capture_output=True,
                           text=True, timeout=30)
        out = p.stdout + p.stderr
        if p.returncode != 1 or not re.search(r"result0\.npy(\.tmp)?: write failed: No space left on device", out):
            return "fail", f"exit {p.returncode}: {out.strip()[-400:]}"
        if os.listdir(disk):
            return "fail", f"left files behind: {os.listdir(disk)}"
        return "pass", ""
    finally:
        subprocess.run(["umount", disk])


def main():
    passed = failed = 0
    for name, (files, argv, pattern) in CASES.items():
        with tempfile.TemporaryDirectory(prefix="tessera_hostile_") as folder:
            problem = run_case(name, files, argv, pattern, folder)
        print(f"{'FAIL' if problem else 'PASS'} {name}" + (f": {problem}" if problem else ""))
        passed, failed = (passed, failed + 1) if problem else (passed + 1, failed)
    with tempfile.TemporaryDirectory(prefix="tessera_hostile_") as folder:
        verdict, why = full_disk_case(folder)
    print(f"{verdict.upper()} output_dir_full_disk" + (f": {why}" if why else ""))
    if verdict == "fail":
        failed += 1
    elif verdict == "pass":
        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
