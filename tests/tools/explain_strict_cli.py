"""`tessera partition --explain --strict` on the programs Tessera itself trains (#18 item 3).

The CausalLM training step of each SPMD plan (dp, fsdp, zero1, tp, dp,tp on 4 devices, the default model,
and ep, dp,ep with 4 experts, top-2, written by `tessera train --emit-program`) and the CNN of examples/06_cnn.cpp (batch and channel
splits, written by `06_cnn --emit`) are partitioned with --explain --strict: --explain lists every
collective with what forced it, and --strict exits 0 where there is no avoidable gather, which
every one of them must do. (fsdp's token lookup gathers the vocabulary-split table: the cost model
prices the local lookup and its reduce_scatter at 199,680 bytes per device against the table's
49,152, so the gather is its choice, not a warning; tp's RoPE slices of a head_dim split in two
are costed against a halo exchange, which moves as much, and share one gather.) A slice of split
rows, an edge pad of them and a 3x3 convolution of an NHWC input split along H exchange halos
(collective_permutes) and pass, and so does an interior pad of split rows (one row from the
neighbour) and a 3x3 stride-2 max-pool gradient with SAME padding (a select_and_scatter padded
along its split rows: the rows and source rows of the windows touching each piece); a module whose two-result reduce reads a split dimension whole (a GE-select argmax on floats:
no combiner per result, and not associative once a NaN comes, so not reduced by pieces either)
must fail under --strict (exit 1), naming the op and its place.

Usage: explain_strict_cli.py TESSERA_CLI CNN_EXAMPLE
"""
import os
import subprocess
import sys
import tempfile

SLICE_MODULE = """module @sliced attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> tensor<8x4xf32> {
    %0 = stablehlo.slice %arg0 [2:10, 0:4] : (tensor<16x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
"""

PAD_MODULE = """module @padded attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> (tensor<32x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [2, 0], high = [-1, 0], interior = [1, 0] : (tensor<16x4xf32>, tensor<f32>) -> tensor<32x4xf32>
    return %0 : tensor<32x4xf32>
  }
}
"""

REDUCE_MODULE = """module @reduced attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<16x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> (tensor<4xf32>, tensor<4xi32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = "stablehlo.reduce"(%arg0, %arg1, %cst, %c0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
      %ge = stablehlo.compare GE, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %m = stablehlo.select %ge, %a, %c : tensor<i1>, tensor<f32>
      %n = stablehlo.select %ge, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %m, %n : tensor<f32>, tensor<i32>
    }) {dimensions = array<i64: 0>} : (tensor<16x4xf32>, tensor<16x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
    return %0#0, %0#1 : tensor<4xf32>, tensor<4xi32>
  }
}
"""

EDGE_PAD_MODULE = """module @edge_padded attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> (tensor<20x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [2, 0], high = [2, 0], interior = [0, 0] : (tensor<16x4xf32>, tensor<f32>) -> tensor<20x4xf32>
    return %0 : tensor<20x4xf32>
  }
}
"""

CONV_MODULE = """module @conv attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<2x16x8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}, {}]>}, %arg1: tensor<3x3x3x4xf32>) -> (tensor<2x16x8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}, {}]>}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x16x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x16x8x4xf32>
    return %0 : tensor<2x16x8x4xf32>
  }
}
"""

POOL_GRAD_MODULE = """module @pool_grad attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<2x16x8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}, {}]>}, %arg1: tensor<2x8x4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}, {}]>}) -> (tensor<2x16x8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}, {}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.select_and_scatter"(%arg0, %arg1, %cst) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>} : (tensor<2x16x8x3xf32>, tensor<2x8x4x3xf32>, tensor<f32>) -> tensor<2x16x8x3xf32>
    return %0 : tensor<2x16x8x3xf32>
  }
}
"""

failures = 0


def check(ok, what):
    global failures
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def strict(cli, path, function, what):
    r = run([cli, "partition", path, "--function", function, "--explain", "--strict"])
    explained = "// explain: " in r.stdout and "// total bytes moved per device" in r.stdout
    check(r.returncode == 0 and explained,
          f"{what}: --explain --strict exits 0 (rc {r.returncode}) {r.stderr.strip()[:2000]}")
    return r.stdout


def main():
    cli, cnn = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        for plan in ["dp", "fsdp", "zero1", "tp", "dp,tp", "ep", "dp,ep"]:
            path = os.path.join(d, f"causal_lm_{plan.replace(',', '_')}.mlir")
            moe = ["--moe", "4,2"] if "ep" in plan else []  # expert parallelism: an MoE model
            r = run([cli, "train", "--plan", plan, "--devices", "4", "--emit-program", path] + moe)
            check(r.returncode == 0 and os.path.exists(path),
                  f"train --plan {plan} --emit-program writes the step (rc {r.returncode}) {r.stderr.strip()[:300]}")
            if r.returncode == 0:
                out = strict(cli, path, "train_step", f"CausalLM --plan {plan}")
                check("// warning:" not in out, f"CausalLM --plan {plan}: --explain warns of nothing")
        r = run([cnn, "--emit", d])
        check(r.returncode == 0, f"06_cnn --emit (rc {r.returncode}) {r.stderr.strip()[:300]}")
        for name in ["cnn_batch.mlir", "cnn_channels.mlir"]:
            for function in ["loss", "loss_grad"]:
                strict(cli, os.path.join(d, name), function, f"CNN {name} @{function}")

        path = os.path.join(d, "sliced.mlir")
        with open(path, "w") as f:
            f.write(SLICE_MODULE)
        out = strict(cli, path, "main", "a slice of split rows")
        check("collective_permute" in out and "operand 0 dimension 0 halo\n" in out and
              "// total bytes moved per device: 128\n" in out,
              f"the slice exchanges a halo (32 bytes) and gathers its 8 rows (96), not the 16: {out[-800:]}")

        # (module, what, where the halo is, total bytes or None, what the check says)
        for name, text, what, halo, total, says in [
                ("edge_padded", EDGE_PAD_MODULE, "an edge pad of split rows", 0, None,
                 "the edge pad exchanges halos and gathers nothing"),
                ("conv", CONV_MODULE, "a 3x3 convolution of rows split over 4", 1, 384,
                 "the convolution exchanges one input row (192 bytes) with each neighbour and gathers nothing"),
                ("padded", PAD_MODULE, "an interior pad of split rows", 0, 16,
                 "the interior pad brings one row from the neighbour (16 bytes) and gathers nothing"),
                ("pool_grad", POOL_GRAD_MODULE, "a 3x3 stride-2 SAME max-pool gradient of rows split over 4", 1, 672,
                 "the padded select_and_scatter brings two input rows from the left and one from the right "
                 "(3 x 192 bytes) and one source row from the left (96) and gathers nothing")]:
            path = os.path.join(d, name + ".mlir")
            with open(path, "w") as f:
                f.write(text)
            out = strict(cli, path, "main", what)
            check(f"operand 0 dimension {halo} halo" in out and "all_gather" not in out and
                  (total is None or f"// total bytes moved per device: {total}\n" in out), f"{says}: {out[-800:]}")

        path = os.path.join(d, "reduced.mlir")
        with open(path, "w") as f:
            f.write(REDUCE_MODULE)
        r = run([cli, "partition", path, "--explain"])
        check(r.returncode == 0 and "// warning: all_gather for stablehlo.reduce at 6:" in r.stdout,
              f"--explain warns of the two-result reduce's full gather: {r.stdout[-600:]}")
        r = run([cli, "partition", path, "--explain", "--strict"])
        check(r.returncode == 1 and f"{path}: --strict: @main has 2 avoidable gathers" in r.stderr and
              "stablehlo.reduce at 6:" in r.stderr and "operand 0 dimension 0" in r.stderr,
              f"--strict refuses it, naming the op and place (rc {r.returncode}): {r.stderr.strip()[:600]}")

    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
