#!/usr/bin/env python3
"""PyTorch's side of bench/generate_decode.sh: greedy decode tokens/s of the CausalLM with a KV
cache, in eager float32, the way PyTorch users write it (Hugging Face's rotate_half RoPE at each
position, repeat_interleave for grouped-query attention, a preallocated [batch, kv_heads, max_len,
head_dim] cache per layer written in place). The layers are tests/nn/torch_oracle.py's (one PyTorch
model); the weights are random (only the time is compared). A prefill of the prompts, then TOKENS - 1
decode steps, timed, on 1 and on 2 threads. Prints one line per case:
torch <config> <prompts> prompt(s), <threads> thread(s): <tokens/s> decode tokens/s

Usage: generate_vs_torch.py CONFIG_NAME VOCAB D_MODEL LAYERS HEADS KV_HEADS FFN PROMPTS PROMPT_LEN TOKENS
"""
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "nn"))
from torch_oracle import rms_norm  # noqa: E402  (one PyTorch model, shared with the oracle)
sys.path.insert(0, os.path.dirname(__file__))
from torch_threads import set_threads  # noqa: E402
from train_vs_torch import shapes  # noqa: E402


def rope_at(x, positions, theta):
    """x [b, s, heads, hd] at absolute positions [s]: feature i pairs with i + hd/2 (rotate_half)."""
    hd = x.shape[-1]
    inv_freq = theta ** (-torch.arange(0, hd // 2, dtype=x.dtype) * 2 / hd)
    angle = positions.to(x.dtype)[:, None] * inv_freq[None, :]
    angle = torch.cat([angle, angle], dim=-1)[None, :, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return x * angle.cos() + torch.cat([-x2, x1], dim=-1) * angle.sin()


@torch.no_grad()
def forward(w, c, tokens, start, cache):
    """Logits of `tokens` [b, s] at positions start.., reading and extending the cache."""
    b, s = tokens.shape
    heads, kv_heads, eps = c["heads"], c["kv_heads"], c["norm_eps"]
    hd = c["d_model"] // heads
    positions = torch.arange(start, start + s)
    x = F.embedding(tokens, w["embed"])
    for i in range(c["layers"]):
        p = f"layers.{i}."
        h = rms_norm(x, w[p + "attn_norm"], eps)
        q = rope_at((h @ w[p + "attn.q"]).view(b, s, heads, hd), positions, c["rope_theta"]).transpose(1, 2)
        k = rope_at((h @ w[p + "attn.k"]).view(b, s, kv_heads, hd), positions, c["rope_theta"]).transpose(1, 2)
        v = (h @ w[p + "attn.v"]).view(b, s, kv_heads, hd).transpose(1, 2)
        kc, vc = cache[i]
        kc[:, :, start:start + s] = k
        vc[:, :, start:start + s] = v
        keys = kc[:, :, : start + s].repeat_interleave(heads // kv_heads, dim=1)
        values = vc[:, :, : start + s].repeat_interleave(heads // kv_heads, dim=1)
        scores = q @ keys.transpose(-1, -2) / math.sqrt(hd)
        causal = torch.ones(s, start + s, dtype=torch.bool).tril(diagonal=start)
        probs = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        x = x + (probs @ values).transpose(1, 2).reshape(b, s, heads * hd) @ w[p + "attn.o"]
        h = rms_norm(x, w[p + "mlp_norm"], eps)
        x = x + (F.silu(h @ w[p + "mlp.gate"]) * (h @ w[p + "mlp.up"])) @ w[p + "mlp.down"]
    return rms_norm(x, w["norm"], eps) @ w["head"]


def main():
    name = sys.argv[1]
    vocab, d, layers, heads, kv, ffn, prompts, prompt_len, tokens = map(int, sys.argv[2:11])
    c = dict(vocab=vocab, d_model=d, layers=layers, heads=heads, kv_heads=kv, ffn=ffn, norm_eps=1e-5, rope_theta=10000.0)
    hd = d // heads
    for threads in (1, 2):
        set_threads(threads)
        torch.manual_seed(0)
        w = {k: (torch.ones(s) if len(s) == 1 else torch.randn(*s) * 0.02) for k, s in shapes(c).items()}
        max_len = prompt_len + tokens
        cache = [(torch.zeros(prompts, kv, max_len, hd), torch.zeros(prompts, kv, max_len, hd)) for _ in range(layers)]
        prompt = torch.randint(vocab, (prompts, prompt_len))
        nxt = forward(w, c, prompt, 0, cache)[:, -1].argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for step in range(tokens - 1):
            nxt = forward(w, c, nxt, prompt_len + step, cache)[:, -1].argmax(-1, keepdim=True)
        elapsed = time.perf_counter() - t0
        print(f"torch {name} {prompts} prompt(s), {threads} thread(s): {prompts * (tokens - 1) / elapsed:.0f} decode tokens/s",
              flush=True)


if __name__ == "__main__":
    main()
