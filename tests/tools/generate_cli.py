"""`tessera generate` on a checkpoint that `tessera train --save` just wrote.

A tiny model trains for 3 steps on 1 host device and saves; then two prompts of different lengths
are generated greedily together on 1 device (paged cache in blocks of 16 and of 3, and contiguous),
under tp on 2 and 4 devices (heads and KV cache split), under dp on 2 (the prompts split, a
contiguous cache) and under ctx on 4 (a contiguous cache split by position): every run prints the same tokens, each sequence its prompt's bytes followed by
--tokens new ones, and the decode tokens/s. Sampling with a seed repeats itself.
An MoE checkpoint (`train --moe 4,2 --plan ep`) generates 4 prompts greedily on 1 device and under
ep on 4 (the experts and the prompts split) with the same tokens; ep on a dense checkpoint is refused.
Bad command lines are named errors with exit 1.

Usage: generate_cli.py TESSERA_CLI
"""
import os
import re
import subprocess
import sys
import tempfile

CLI = sys.argv[1]
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed += 1


def run(args):
    p = subprocess.run([CLI] + args, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def tokens_of(output):
    return [list(map(int, line.split()[1:])) for line in output.splitlines() if line.startswith("tokens:")]


PROMPTS = ["The quick ", "A "]
NEW = 8

with tempfile.TemporaryDirectory() as tmp:
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("The quick brown fox jumps over the lazy dog. A stitch in time saves nine.\n" * 40)
    ckpt = os.path.join(tmp, "ckpt")
    code, out = run(["train", "--corpus", corpus, "--d-model", "32", "--layers", "2", "--heads", "4", "--kv-heads",
                     "4", "--ffn", "64", "--batch", "4", "--seq", "16", "--steps", "3", "--devices", "1", "--lr",
                     "1e-2", "--sample", "0", "--no-progress-bar", "--save", ckpt])
    check(code == 0, "train --save exits 0: " + out[-300:])

    base = ["generate", "--resume", ckpt, "--tokens", str(NEW), "--print-tokens"]
    for p in PROMPTS:
        base += ["--prompt", p]
    want = None
    for extra in [["--devices", "1"], ["--devices", "1", "--block-size", "0"], ["--devices", "1", "--block-size", "3"],
                  ["--plan", "tp", "--devices", "2"], ["--plan", "tp", "--devices", "4", "--block-size", "4"],
                  ["--plan", "dp", "--devices", "2"], ["--plan", "ctx", "--devices", "4"]]:
        code, out = run(base + extra)
        name = " ".join(extra)
        check(code == 0, f"generate {name} exits 0: " + out[-400:])
        got = tokens_of(out)
        check(len(got) == len(PROMPTS), f"{name}: a token line per prompt")
        for p, t in zip(PROMPTS, got):
            check(t[:len(p)] == [ord(ch) for ch in p] and len(t) == len(p) + NEW,
                  f"{name}: prompt '{p}' followed by {NEW} tokens")
        check(re.search(r"decode \d+ steps in [0-9.]+ s: [0-9.]+ tokens/s", out) is not None,
              f"{name}: reports decode tokens/s")
        paged = "--block-size 0" not in name and "dp" not in name and "ctx" not in name
        check(("paged KV cache" if paged else "contiguous KV cache") in out, f"{name}: the cache it says")
        if want is None:
            want = got
        check(got == want, f"{name}: the same greedy tokens as on 1 device")

    sampled = base + ["--temperature", "0.8", "--top-k", "5", "--seed", "3"]
    a, b = run(sampled), run(sampled)
    check(a[0] == 0 and tokens_of(a[1]) == tokens_of(b[1]), "sampling with a seed repeats itself")

    code, out = run(["generate", "--resume", os.path.join(tmp, "missing"), "--prompt", "x"])
    check(code == 1 and "error: --resume" in out, "a missing checkpoint is a named error: " + out.strip()[-200:])
    code, out = run(base + ["--plan", "tp", "--devices", "3"])
    check(code == 1 and "does not divide" in out, "tp on 3 devices with 4 heads is refused: " + out.strip()[-200:])
    code, out = run(base + ["--blocks", "3"])
    check(code == 1 and "all 2 blocks of the pool are in use" in out, "a pool too small is a named error: " + out.strip()[-200:])
    code, out = run(base + ["--plan", "dp", "--devices", "2", "--block-size", "16"])
    check(code == 1 and "shared by the sequences" in out, "a paged cache under dp is refused: " + out.strip()[-200:])
    code, out = run(base + ["--plan", "ctx", "--devices", "4", "--block-size", "4"])
    check(code == 1 and "pool is shared" in out, "a paged cache under ctx is refused: " + out.strip()[-200:])
    code, out = run(["generate", "--resume", ckpt, "--prompt", ""])
    check(code == 1 and "empty" in out, "an empty prompt is refused: " + out.strip()[-200:])

    # Mixture of experts: trained under ep on 4 devices, generated on 1 and under ep on 4.
    moe = os.path.join(tmp, "moe")
    code, out = run(["train", "--corpus", corpus, "--d-model", "32", "--layers", "2", "--heads", "4", "--kv-heads",
                     "4", "--ffn", "32", "--moe", "4,2", "--batch", "4", "--seq", "16", "--steps", "3", "--plan", "ep",
                     "--lr", "1e-2", "--sample", "0", "--no-progress-bar", "--save", moe])
    check(code == 0 and "plan ep" in out, "train --moe 4,2 --plan ep --save exits 0: " + out[-300:])
    four = ["generate", "--resume", moe, "--tokens", str(NEW), "--print-tokens"]
    for p in PROMPTS + ["Why ", "If"]:
        four += ["--prompt", p]
    code, one = run(four + ["--devices", "1"])
    check(code == 0 and len(tokens_of(one)) == 4, "MoE generate on 1 device exits 0: " + one[-300:])
    code, ep = run(four + ["--plan", "ep", "--devices", "4"])
    check(code == 0 and tokens_of(ep) == tokens_of(one), "MoE generate under ep on 4: the same greedy tokens: " + ep[-300:])
    code, out = run(base + ["--plan", "ep", "--devices", "2"])
    check(code == 1 and "needs an MoE checkpoint" in out, "ep on a dense checkpoint is refused: " + out.strip()[-200:])

print(f"\n{failed} failed")
sys.exit(1 if failed else 0)
