#!/usr/bin/env python3
"""PyTorch oracle for Tessera's MoE layer (src/nn/moe.h): routing, capacity, load-balancing loss.

Usage: torch_moe_oracle.py CASE_DIR

CASE_DIR holds what torch_oracle_test.cpp wrote: config.json (cases: top_k, capacity, tolerance),
per case the inputs <case>.{x,router,gate,up,down,r}.npy and Tessera's results <case>.y.npy,
<case>.aux.npy and the gradients <case>.grad.<input>.npy of sum(y * r) + aux.

The layer is written here the way PyTorch MoE code is usually written, not as Tessera builds it:
torch.topk for the choices, F.one_hot and torch.cumsum for the slots (Switch / GShard: first
choices in token order, second choices after all of the group's first choices), every expert run
densely on every token and the kept choices picked by mask, autograd for the gradients, in float64.
Prints one line per array and exits 1 if any exceeds the tolerance (max|diff| / max|torch|).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from torch_oracle import comparer, report


def moe(x, router, gate, up, down, k, capacity):
    experts = router.shape[1]
    probs = torch.softmax(x @ router, dim=-1)  # [G, S, E]
    top_p, top_i = probs.topk(k, dim=-1)  # [G, S, k]
    gates = top_p / top_p.sum(-1, keepdim=True) if k == 2 else top_p
    masks = [F.one_hot(top_i[..., j], experts).to(x.dtype) for j in range(k)]
    h = torch.einsum("gsm,emf->gsef", x, gate)
    u = torch.einsum("gsm,emf->gsef", x, up)
    out = torch.einsum("gsef,efm->gsem", F.silu(h) * u, down)  # every expert on every token
    y = torch.zeros_like(x)
    queued = torch.zeros_like(masks[0][:, :1, :])  # [G, 1, E]: slots taken by earlier passes
    dropped = 0
    for j in range(k):
        slots = torch.cumsum(masks[j], dim=1) - masks[j] + queued  # [G, S, E]
        slot = (slots * masks[j]).sum(-1)  # [G, S]
        keep = (slot < capacity).to(x.dtype)
        dropped += int((1 - keep).sum())
        y = y + (gates[..., j] * keep)[..., None] * (out * masks[j][..., None]).sum(2)
        queued = queued + masks[j].sum(1, keepdim=True)
    aux = experts * (masks[0].mean((0, 1)) * probs.mean((0, 1))).sum()
    return y, aux, dropped


def main():
    case_dir = sys.argv[1]
    with open(os.path.join(case_dir, "config.json")) as f:
        cfg = json.load(f)
    tol = cfg["tolerance"]
    failures = []

    def load(name):
        return np.load(os.path.join(case_dir, name + ".npy"))

    compare = comparer(tol, failures)

    names = ["x", "router", "gate", "up", "down"]
    for case in cfg["cases"]:
        name = case["name"]
        inputs = [torch.tensor(load(f"{name}.{n}"), dtype=torch.float64, requires_grad=True) for n in names]
        r = torch.tensor(load(f"{name}.r"), dtype=torch.float64)
        y, aux, dropped = moe(*inputs, case["top_k"], case["capacity"])
        print(f"{name}: top-{case['top_k']}, capacity {case['capacity']}, {dropped} choices dropped")
        if dropped == 0:
            failures.append(f"{name}: no choice dropped; the case must exercise the capacity")
        compare(f"{name}.y", load(f"{name}.y"), y)
        compare(f"{name}.aux", load(f"{name}.aux"), aux)
        ((y * r).sum() + aux).backward()
        for n, t in zip(names, inputs):
            compare(f"{name}.grad.{n}", load(f"{name}.grad.{n}"), t.grad)

    return report(failures, tol)


if __name__ == "__main__":
    sys.exit(main())
