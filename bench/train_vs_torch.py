#!/usr/bin/env python3
"""PyTorch's side of bench/train_vs_torch.sh: tokens/s of one AdamW training step of the CausalLM
(the model of tests/nn/torch_oracle.py, the way PyTorch users write Llama), float32, eager mode,
on 1 and 2 threads (bench/torch_threads.py: OpenBLAS's pool too). Prints one line per case: torch <config> <threads> <tokens/s>.

Usage: train_vs_torch.py CONFIG_NAME VOCAB D_MODEL LAYERS HEADS KV_HEADS FFN BATCH SEQ STEPS
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "nn"))
from torch_oracle import loss_of  # noqa: E402  (one PyTorch model, shared with the oracle)
from torch_threads import cpu_per_wall, set_threads  # noqa: E402


def shapes(c):
    d, hd = c["d_model"], c["d_model"] // c["heads"]
    out = {"embed": (c["vocab"], d)}
    for i in range(c["layers"]):
        p = f"layers.{i}."
        out.update({p + "attn_norm": (d,), p + "attn.q": (d, c["heads"] * hd), p + "attn.k": (d, c["kv_heads"] * hd),
                    p + "attn.v": (d, c["kv_heads"] * hd), p + "attn.o": (c["heads"] * hd, d), p + "mlp_norm": (d,),
                    p + "mlp.gate": (d, c["ffn"]), p + "mlp.up": (d, c["ffn"]), p + "mlp.down": (c["ffn"], d)})
    out.update({"norm": (d,), "head": (d, c["vocab"])})
    return out


def main():
    name = sys.argv[1]
    vocab, d, layers, heads, kv, ffn, batch, seq, steps = map(int, sys.argv[2:11])
    c = dict(vocab=vocab, d_model=d, layers=layers, heads=heads, kv_heads=kv, ffn=ffn, norm_eps=1e-5, rope_theta=10000.0)
    for threads in (1, 2):
        set_threads(threads)
        torch.manual_seed(0)
        w = {k: (torch.ones(s) if len(s) == 1 else torch.randn(*s) * 0.02).requires_grad_() for k, s in shapes(c).items()}
        opt = torch.optim.AdamW(w.values(), lr=1e-3)
        tokens = torch.randint(vocab, (batch, seq))
        targets = torch.randint(vocab, (batch, seq))

        def step():
            opt.zero_grad()
            loss = loss_of(w, tokens, targets, c)
            loss.backward()
            opt.step()

        for _ in range(3):
            step()
        busy = cpu_per_wall(step)
        print(f"# torch {name} {threads} thread(s): CPU time / wall time {busy:.2f} while stepping", file=sys.stderr)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        times.sort()
        print(f"torch {name} {threads} {batch * seq / times[len(times) // 2]:.0f}", flush=True)


if __name__ == "__main__":
    main()
