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
import fnmatch
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F


# The entry-wise check of compare(): entries at least ELEMENT_FLOOR of the array's largest, each
# within ELEMENT_SLACK times the case's tolerance of its own magnitude.
ELEMENT_FLOOR = 1e-2
ELEMENT_SLACK = 100


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


def matmul_bf16(x, y):
    """x @ y on bf16 operands, accumulated in f32 and rounded to bf16 once; autograd's backward
    through the casts has the same form (bf16 cotangent times bf16 operand, f32 inside). PyTorch
    1.13's own bf16 matmul means this on AVX-512 CPUs (oneDNN), but on AVX2 ones (Zen 3) its
    fallback GEMM accumulates in bf16 (a 1024-term product 7 % off in relative error, against
    0.2 %): spelled out, the oracle means one thing on every CPU."""
    return (x.float() @ y.float()).to(torch.bfloat16)


def loss_of_mixed(w, tokens, targets, cfg):
    """bf16 mixed precision as Tessera's --precision bf16 and autocast define it: every matmul reads
    both operands in bf16 and gives bf16 (f32 accumulation inside); the activations between
    matmuls are bf16; the embedding, the residual stream, the norms, the softmax and the loss are
    f32. The parameters stay f32: the casts' gradients bring bf16 gradients back to f32."""
    bf, eps = torch.bfloat16, cfg["norm_eps"]
    heads, kv_heads = cfg["heads"], cfg["kv_heads"]
    hd = cfg["d_model"] // heads

    def rope_bf16(x):  # the cos/sin tables computed in f64 and rounded to bf16, the products in bf16
        s = x.shape[1]
        inv_freq = cfg["rope_theta"] ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2 / hd)
        angle = torch.arange(s, dtype=torch.float64)[:, None] * inv_freq[None, :]
        angle = torch.cat([angle, angle], dim=-1)[None, :, None, :]
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return x * angle.cos().to(bf) + torch.cat([-x2, x1], dim=-1) * angle.sin().to(bf)

    def mm(x, name):
        return matmul_bf16(x.to(bf), w[name].to(bf))

    x = F.embedding(tokens, w["embed"])
    b, s, _ = x.shape
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    for i in range(cfg["layers"]):
        p = f"layers.{i}."
        h = rms_norm(x, w[p + "attn_norm"], eps).to(bf)
        q = rope_bf16(mm(h, p + "attn.q").view(b, s, heads, hd)).transpose(1, 2)
        k = rope_bf16(mm(h, p + "attn.k").view(b, s, kv_heads, hd)).transpose(1, 2)
        v = mm(h, p + "attn.v").view(b, s, kv_heads, hd).transpose(1, 2)
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
        scores = matmul_bf16(q, k.transpose(-1, -2)) / torch.tensor(math.sqrt(hd), dtype=bf)
        probs = scores.float().masked_fill(~causal, float("-inf")).softmax(dim=-1).to(bf)
        out = matmul_bf16(probs, v).transpose(1, 2).reshape(b, s, heads * hd)
        x = x + mm(out, p + "attn.o").float()
        h = rms_norm(x, w[p + "mlp_norm"], eps).to(bf)
        g = mm(h, p + "mlp.gate")
        x = x + mm(g * torch.sigmoid(g) * mm(h, p + "mlp.up"), p + "mlp.down").float()
    logits = mm(rms_norm(x, w["norm"], eps), "head").float()
    return F.cross_entropy(logits.reshape(-1, cfg["vocab"]), targets.reshape(-1))


def mixed_case(case, cfg):
    """Issue #21 item 4: Tessera's bf16 losses under each plan against the same steps in PyTorch."""
    names, steps, tol = cfg["names"], cfg["steps"], cfg["tolerance"]
    tokens = torch.from_numpy(np.load(f"{case}/tokens.npy")).long()
    targets = torch.from_numpy(np.load(f"{case}/targets.npy")).long()
    a = cfg["adamw"]

    def train(loss_fn):
        w = {n: torch.from_numpy(np.load(f"{case}/param.{n}.npy").astype(np.float32)).requires_grad_(True)
             for n in names}
        opt = torch.optim.AdamW([w[n] for n in names], lr=a["lr"], betas=(a["beta1"], a["beta2"]),
                                eps=a["eps"], weight_decay=a["weight_decay"], foreach=False)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = loss_fn(w, tokens, targets, cfg)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return np.array(losses)

    mixed, full = train(loss_of_mixed), train(loss_of)
    early, early_tol = cfg["early_steps"], cfg["early_tolerance"]
    rel = lambda got, want: np.abs(got - want).max() / np.abs(want).max()
    gap = rel(full[:early], mixed[:early])
    print(f"  torch bf16 losses {' '.join(f'{x:.4f}' for x in mixed)}")
    print(f"  torch f32 losses  {' '.join(f'{x:.4f}' for x in full)}")
    print(f"  torch bf16 against f32 over the first {early} steps: {gap:.3e} (the tolerance {early_tol:g} must be "
          f"below it, or the comparison could not tell bf16 from f32)")
    failures = []
    if not gap > early_tol:
        failures.append(f"torch's bf16 and f32 runs differ by {gap:.3e}, within the tolerance {early_tol:g}")
    for plan in cfg["plans"]:
        got = np.load(f"{case}/{plan}.losses.npy").astype(np.float64)
        for what, n, t in ((f"first {early} steps", early, early_tol), (f"all {steps} steps", steps, tol)):
            err = rel(got[:n], mixed[:n])
            ok = bool(err <= t)  # False for NaN
            print(f"  {plan + ' losses, ' + what:28} {err:.3e} {'ok' if ok else 'FAIL'}")
            if not ok:
                failures.append(f"{plan} bf16 losses, {what}: relative error {err:.3e} > {t:g}")
        print(f"  {plan} losses: {' '.join(f'{x:.4f}' for x in got)}")
    return report(failures, tol)


def lr_lambda(sched, k):
    """The warmup + cosine lambda of docs/TRAINING.md (LambdaLR multiplies the base lr by it)."""
    warmup, total = sched["warmup"], sched["total"]
    if k < warmup:
        return (k + 1) / warmup
    p = min(1.0, (k - warmup) / max(1, total - warmup))
    r = sched["min_lr"] / sched["lr"]
    return r + (1 - r) * (1 + math.cos(math.pi * p)) / 2


def make_optimizer(w, names, cfg):
    """torch.optim.AdamW with two groups (no decay for names matching cfg["no_decay"]) + LambdaLR."""
    a = cfg["adamw"]
    no_decay = lambda n: any(fnmatch.fnmatchcase(n, p) for p in cfg["no_decay"])
    groups = [{"params": [w[n] for n in names if not no_decay(n)], "weight_decay": a["weight_decay"]},
              {"params": [w[n] for n in names if no_decay(n)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=a["lr"], betas=(a["beta1"], a["beta2"]), eps=a["eps"], foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: lr_lambda(cfg["schedule"], k))
    return opt, sched


def trainer_case(case, cfg, compare, failures):
    """Issue #21: weight decay groups, warmup + cosine, clipping; five steps under every plan."""
    names, steps, tol = cfg["names"], cfg["steps"], cfg["tolerance"]
    load = lambda stem, dtype=np.float64: torch.from_numpy(np.load(f"{case}/{stem}.npy").astype(dtype))
    tokens = torch.from_numpy(np.load(f"{case}/tokens.npy")).long()
    targets = torch.from_numpy(np.load(f"{case}/targets.npy")).long()

    # The exact answer: the model, its gradients and the optimizer in float64.
    w = {n: load(f"param.{n}").requires_grad_(True) for n in names}
    opt, sched = make_optimizer(w, names, cfg)
    losses, norms = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(w, tokens, targets, cfg)
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_([w[n] for n in names], cfg["clip_norm"]).item())
        opt.step()
        sched.step()
        losses.append(loss.item())
    print(f"  torch f64: losses {' '.join(f'{x:.6f}' for x in losses)}, pre-clip norms "
          f"{' '.join(f'{x:.4f}' for x in norms)} (clip {cfg['clip_norm']})")
    for plan in cfg["plans"]:
        compare(f"{plan} losses", np.load(f"{case}/{plan}.losses.npy"), torch.tensor(losses, dtype=torch.float64))
        compare(f"{plan} pre-clip norms", np.load(f"{case}/{plan}.norms.npy"), torch.tensor(norms, dtype=torch.float64))
        for n in names:
            compare(f"{plan} {n}", np.load(f"{case}/{plan}.step{steps}.{n}.npy"), w[n])

    # Update by update: torch.optim.AdamW (float64, so its update is exact) stepping on Tessera's
    # own f32 gradients from Tessera's f32 parameters. Tessera's parameters after the step are f32:
    # they may differ from the exact ones by the rounding of p' itself (up to 2 ulp of p': the
    # decay's product and the update's sum each round once); what is left over is the error of
    # the update, which must be within tol of the largest update. Before #21 the f32 bias
    # corrections made every update 6.8e-6 relatively too small: visible on the small weights,
    # whose ulp is below it.
    w = {n: load(f"param.{n}").requires_grad_(True) for n in names}
    opt, sched = make_optimizer(w, names, cfg)
    for step in range(1, steps + 1):
        before = {n: w[n].detach().clone() for n in names}
        for n in names:
            w[n].grad = load(f"grad.step{step}.{n}")
        torch.nn.utils.clip_grad_norm_([w[n] for n in names], cfg["clip_norm"])
        opt.step()
        sched.step()
        for n in names:
            got = np.load(f"{case}/none.step{step}.{n}.npy")
            want = w[n].detach().numpy()
            update = np.abs(want - before[n].numpy()).max()
            ulp = np.spacing(np.abs(got)).astype(np.float64)
            excess = np.maximum(np.abs(got.astype(np.float64) - want) - 2 * ulp, 0).max()
            err = excess / update
            ok = err <= tol
            print(f"  {'update ' + str(step) + ' of ' + n:28} {err:.3e} {'ok' if ok else 'FAIL'}")
            if not ok:
                failures.append(f"update {step} of {n}: relative error {err:.3e} > {tol:g}")
            with torch.no_grad():  # continue from Tessera's parameters, so each update is compared alone
                w[n].copy_(torch.from_numpy(got.astype(np.float64)))


def comparer(tol, failures):
    """compare(what, tessera, torch_value): Tessera's array against PyTorch's, relative to the largest
    entry and entry-wise, within `tol`; a disagreement is appended to `failures`."""

    def compare(what, tessera, torch_value):
        tessera = np.asarray(tessera, dtype=np.float64)
        want = torch_value.detach().numpy().astype(np.float64)
        if tessera.shape != want.shape:
            failures.append(f"{what}: shape {tessera.shape}, torch {want.shape}")
            return
        scale = np.abs(want).max()
        diff = np.abs(tessera - want).max()
        err = 0.0 if diff == 0 else diff / scale
        # Normalizing by the largest entry hides errors in small ones: every entry of at least
        # ELEMENT_FLOOR of the largest must also agree relative to itself, within ELEMENT_SLACK x tol.
        big = np.abs(want) >= ELEMENT_FLOOR * scale
        elem = float((np.abs(tessera - want)[big] / np.abs(want)[big]).max()) if big.any() else 0.0
        ok = err <= tol and elem <= ELEMENT_SLACK * tol  # NaN fails both comparisons
        print(f"  {what:28} {err:.3e} (entry-wise {elem:.3e}) {'ok' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"{what}: relative error {err:.3e} (tolerance {tol:g}), entry-wise {elem:.3e} "
                            f"(tolerance {ELEMENT_SLACK * tol:g} on entries >= {ELEMENT_FLOOR:g} of the largest)")

    return compare


def main(case):
    with open(f"{case}/config.json") as f:
        cfg = json.load(f)
    names, tol = cfg["names"], cfg["tolerance"]
    load = lambda stem: torch.from_numpy(np.load(f"{case}/{stem}.npy").astype(np.float64))
    tokens = torch.from_numpy(np.load(f"{case}/tokens.npy")).long()
    targets = torch.from_numpy(np.load(f"{case}/targets.npy")).long()
    w = {n: load(f"param.{n}").requires_grad_(True) for n in names}

    failures = []

    compare = comparer(tol, failures)

    if cfg.get("precision") == "bf16":
        return mixed_case(case, cfg)
    if "plans" in cfg:
        trainer_case(case, cfg, compare, failures)
        return report(failures, tol)

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

    return report(failures, tol)


def report(failures, tol):
    if failures:
        print("PyTorch disagrees with Tessera:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print(f"PyTorch {torch.__version__} agrees with Tessera within {tol:g} on every array")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
