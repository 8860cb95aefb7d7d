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
    # Continuous batching: three prompts through one and two slots, a stop string and a stop byte
    # taken from the greedy run (so that they fire), each prompt's tokens those of its run alone cut
    # after its first stop.
    three = PROMPTS + ["the "]
    alone = []
    for p in three:
        code, out = run(["generate", "--resume", ckpt, "--tokens", str(NEW), "--print-tokens", "--prompt", p])
        alone += tokens_of(out)
    stop_string = bytes(alone[0][len(PROMPTS[0]) + 2:len(PROMPTS[0]) + 4]).decode("latin-1")
    stop_byte = alone[2][len(three[2]) + 1]

    def cut(tokens, prompt):  # (the tokens up to the first stop, whether one fired)
        new = tokens[len(prompt):]
        for i in range(1, len(new) + 1):
            if new[i - 1] == stop_byte or bytes(new[:i]).decode("latin-1").endswith(stop_string):
                return tokens[:len(prompt) + i], True
        return tokens, False

    for extra in [["--max-batch", "1"], ["--max-batch", "2"], ["--max-batch", "2", "--prefill-rows", "2"],
                  ["--max-batch", "2", "--plan", "tp", "--devices", "2"]]:
        stops = ["--stop", stop_string, "--stop-byte", str(stop_byte)]
        name = " ".join(extra)
        args = ["generate", "--resume", ckpt, "--tokens", str(NEW), "--print-tokens"] + extra
        for p in three:
            args += ["--prompt", p]
        code, out = run(args)
        check(code == 0 and tokens_of(out) == alone, f"{name}: each prompt's tokens alone: " + out[-300:])
        code, out = run(args + stops)
        want_cut = [cut(t, p) for t, p in zip(alone, three)]
        check(code == 0 and tokens_of(out) == [w for w, _ in want_cut],
              f"{name} with stops: cut after the first stop: " + out[-300:])
        check(out.count("(stopped after") == sum(stopped for _, stopped in want_cut) >= 2,
              f"{name}: says which sequences stopped")
    code, out = run(base + ["--blocks", "2"])
    check(code == 1 and "needs 2 blocks of 16 positions" in out and "the pool holds 1" in out,
          "a request the pool cannot hold is a named error: " + out.strip()[-200:])
    code, out = run(base + ["--block-size", "0", "--max-batch", "1"])
    check(code == 1 and "need a paged cache" in out, "fewer slots than prompts on a contiguous cache is refused: "
          + out.strip()[-200:])
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
