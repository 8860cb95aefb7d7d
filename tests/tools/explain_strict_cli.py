"""`tessera partition --explain --strict` on the programs Tessera itself trains (#18 item 3).

The CausalLM training step of each SPMD plan (dp, fsdp, tp, dp,tp on 4 devices, the default model,
written by `tessera train --emit-program`) and the CNN of examples/06_cnn.cpp (batch and channel
splits, written by `06_cnn --emit`) are partitioned with --explain --strict: --explain lists every
collective with what forced it, and --strict exits 0 where there is no avoidable gather. Two plans
have known ones (docs/CONFORMANCE.md, "Avoidable gathers"), pinned here so that a fix or a new one
shows: fsdp gathers the embedding table whole for the token lookup (gather's indexed dimension;
a local gather and a reduce_scatter of the result would move less), and tp, with 2 key/value
heads on 4 devices, splits head_dim and gathers it whole for RoPE's two slices in each attention
(slicing first would move less). A module whose slice reads a split dimension whole must fail
under --strict (exit 1), naming the op and its place.

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

failures = 0


def check(ok, what):
    global failures
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


# plan -> (the number of avoidable gathers, what each names): the known ones, see the docstring.
KNOWN = {
    "fsdp": (1, "all_gather for stablehlo.gather at 222:5, operand 0 dimension 0 (49152 bytes per device): silent full "
                "gather"),
    "tp": (4, "all_gather for stablehlo.slice at {}:5, operand 0 dimension 3 (32768 bytes per device): silent full "
              "gather"),
}


def strict(cli, path, function, what, known=None):
    r = run([cli, "partition", path, "--function", function, "--explain", "--strict"])
    if known is None:
        explained = "// explain: " in r.stdout and "// total bytes moved per device" in r.stdout
        check(r.returncode == 0 and explained,
              f"{what}: --explain --strict exits 0 (rc {r.returncode}) {r.stderr.strip()[:2000]}")
        return
    count, text = known
    plural = "" if count == 1 else "s"
    warnings = r.stderr.split(": --strict: ", 1)[-1].split("; ")
    ok = r.returncode == 1 and f"@{function} has {count} avoidable gather{plural}: " in r.stderr and \
        all(text.split("{}")[0] in w and text.split("{}")[-1] in w for w in warnings)
    check(ok, f"{what}: --strict refuses exactly its {count} known avoidable gather{plural} (rc {r.returncode}) "
              f"{r.stderr.strip()[:2000]}")


def main():
    cli, cnn = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        for plan in ["dp", "fsdp", "tp", "dp,tp"]:
            path = os.path.join(d, f"causal_lm_{plan.replace(',', '_')}.mlir")
            r = run([cli, "train", "--plan", plan, "--devices", "4", "--emit-program", path])
            check(r.returncode == 0 and os.path.exists(path),
                  f"train --plan {plan} --emit-program writes the step (rc {r.returncode}) {r.stderr.strip()[:300]}")
            if r.returncode == 0:
                strict(cli, path, "train_step", f"CausalLM --plan {plan}", KNOWN.get(plan))
        r = run([cnn, "--emit", d])
        check(r.returncode == 0, f"06_cnn --emit (rc {r.returncode}) {r.stderr.strip()[:300]}")
        for name in ["cnn_batch.mlir", "cnn_channels.mlir"]:
            for function in ["loss", "loss_grad"]:
                strict(cli, os.path.join(d, name), function, f"CNN {name} @{function}")

        path = os.path.join(d, "sliced.mlir")
        with open(path, "w") as f:
            f.write(SLICE_MODULE)
        r = run([cli, "partition", path, "--explain"])
        check(r.returncode == 0 and "// warning: all_gather for stablehlo.slice at 4:" in r.stdout,
              f"--explain warns of the slice's full gather: {r.stdout[-600:]}")
        r = run([cli, "partition", path, "--explain", "--strict"])
        check(r.returncode == 1 and f"{path}: --strict: @main has 1 avoidable gather" in r.stderr and
              "stablehlo.slice at 4:" in r.stderr and "operand 0 dimension 0" in r.stderr,
              f"--strict refuses it, naming the op and place (rc {r.returncode}): {r.stderr.strip()[:600]}")

    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
