#!/usr/bin/env python3
"""PyTorch oracle for Tessera's CausalLM training step (issue #6).

Usage: torch_oracle.py CASE_DIR

CASE_DIR holds what the C++ driver (torch_oracle_test.cpp) wrote: config.json (the model's shape,
AdamW's hyperparameters, the parameter names in program order, the tolerance), the initial
parameters param.<name>.npy, the batch tokens.npy/targets.npy, and Tessera's results: loss.npy and
grad.<name>.npy of one step, losses.npy of the AdamW steps and the state after them
(after.<name>.npy, m.<name>.npy, v.<name>.npy).

The model is written here independently, the way PyTorch users write Llama (Hugging Face's
rotate_half RoPE, repeat_interleave for grouped-query attention, masked_fill with -inf,
F.cross_entropy), in float64, and trained with torch.optim.AdamW. Every array is compared by
max|tessera - torch| / max|torch|; the script prints one line per array and exits 1 if any exceeds
the tolerance.
"""
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F


def rms_norm(x, gain, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * gain


def rope(x, theta):
    """x [b, s, heads, hd]: feature i pairs with i + hd/2 (rotate_half)."""
    s, hd = x.shape[1], x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, hd // 2, dtype=x.dtype) * 2 / hd)
    angle = torch.arange(s, dtype=x.dtype)[:, None] * inv_freq[None, :]
    angle = torch.cat([angle, angle], dim=-1)[None, :, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return x * angle.cos() + torch.cat([-x2, x1], dim=-1) * angle.sin()


def attention(x, w, prefix, cfg):
    b, s, _ = x.shape
    heads, kv_heads = cfg["heads"], cfg["kv_heads"]
    hd = cfg["d_model"] // heads
    q = rope((x @ w[prefix + "q"]).view(b, s, heads, hd), cfg["rope_theta"]).transpose(1, 2)
    k = rope((x @ w[prefix + "k"]).view(b, s, kv_heads, hd), cfg["rope_theta"]).transpose(1, 2)
    v = (x @ w[prefix + "v"]).view(b, s, kv_heads, hd).transpose(1, 2)
    k = k.repeat_interleave(heads // kv_heads, dim=1)
    v = v.repeat_interleave(heads // kv_heads, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    probs = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
    out = (probs @ v).transpose(1, 2).reshape(b, s, heads * hd)
    return out @ w[prefix + "o"]


def loss_of(w, tokens, targets, cfg):
    eps = cfg["norm_eps"]
    x = F.embedding(tokens, w["embed"])
    for i in range(cfg["layers"]):
        p = f"layers.{i}."
        x = x + attention(rms_norm(x, w[p + "attn_norm"], eps), w, p + "attn.", cfg)
        h = rms_norm(x, w[p + "mlp_norm"], eps)
        x = x + (F.silu(h @ w[p + "mlp.gate"]) * (h @ w[p + "mlp.up"])) @ w[p + "mlp.down"]
    logits = rms_norm(x, w["norm"], eps) @ w["head"]
    return F.cross_entropy(logits.reshape(-1, cfg["vocab"]), targets.reshape(-1))


def main(case):
    with open(f"{case}/config.json") as f:
        cfg = json.load(f)
    names, tol = cfg["names"], cfg["tolerance"]
    load = lambda stem: torch.from_numpy(np.load(f"{case}/{stem}.npy").astype(np.float64))
    tokens = torch.from_numpy(np.load(f"{case}/tokens.npy")).long()
    targets = torch.from_numpy(np.load(f"{case}/targets.npy")).long()
    w = {n: load(f"param.{n}").requires_grad_(True) for n in names}

    failures = []

    def compare(what, tessera, torch_value):
        tessera = np.asarray(tessera, dtype=np.float64)
        want = torch_value.detach().numpy().astype(np.float64)
        if tessera.shape != want.shape:
            failures.append(f"{what}: shape {tessera.shape}, torch {want.shape}")
            return
        scale = np.abs(want).max()
        diff = np.abs(tessera - want).max()
        err = 0.0 if diff == 0 else diff / scale
        ok = err <= tol
        print(f"  {what:28} {err:.3e} {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{what}: relative error {err:.3e} > {tol:g}")

    # One step: the loss and every gradient.
    loss = loss_of(w, tokens, targets, cfg)
    loss.backward()
    compare("loss", np.load(f"{case}/loss.npy"), loss)
    for n in names:
        compare(f"grad {n}", np.load(f"{case}/grad.{n}.npy"), w[n].grad)

    # AdamW steps on the same batch, from the initial parameters again.
    a = cfg["adamw"]
    w = {n: load(f"param.{n}").requires_grad_(True) for n in names}
    opt = torch.optim.AdamW([w[n] for n in names], lr=a["lr"], betas=(a["beta1"], a["beta2"]),
                            eps=a["eps"], weight_decay=a["weight_decay"], foreach=False)
    losses = []
    for _ in range(cfg["steps"]):
        opt.zero_grad()
        loss = loss_of(w, tokens, targets, cfg)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    compare("AdamW losses", np.load(f"{case}/losses.npy"), torch.tensor(losses, dtype=torch.float64))
    for n in names:
        state = opt.state[w[n]]
        compare(f"AdamW {n}", np.load(f"{case}/after.{n}.npy"), w[n])
        compare(f"AdamW m of {n}", np.load(f"{case}/m.{n}.npy"), state["exp_avg"])
        compare(f"AdamW v of {n}", np.load(f"{case}/v.{n}.npy"), state["exp_avg_sq"])

    if failures:
        print("PyTorch disagrees with Tessera:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print(f"PyTorch {torch.__version__} agrees with Tessera within {tol:g} on every array")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
