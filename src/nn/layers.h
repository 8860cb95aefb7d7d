// The layers of a Llama-style transformer, each a few lines of builder calls that append IR.
//
// Activations are [batch, seq, features]; weights are [in, out] and applied as x @ w. Every layer
// is made of primitives only (DESIGN.md §1 "Few primitives"), so autodiff differentiates it through
// their rules and the SPMD partitioner splits it through their factor rules: the embedding is a
// gather (its gradient a scatter-add), softmaxes subtract their row maximum before exp (a
// constant to differentiation, ir::stop_gradient, as in JAX: the softmax does not depend on it, so
// no gradient goes through the maximum's ties), and the causal mask is a select against a
// constant. With 16-bit activations, the softmaxes, norms and the loss run in f32
// (reduction_type), as mixed-precision training does.
#pragma once

#include <utility>
#include <vector>

#include "ir/builder.h"

namespace tessera::nn {

using ir::Tensor;

// Mixed precision's two helpers: x in type t (x itself when it has it), and the type a reduction of
// values of type t runs in (f32 for the 16-bit floats, whose 8 or 11 bits of mantissa would lose a
// long sum; t itself otherwise).
Tensor cast(const Tensor& x, ir::ElementType t);
ir::ElementType reduction_type(ir::ElementType t);

// y [leading...] broadcast over a new last dimension of size n (a row statistic back over its row).
Tensor expand_last(const Tensor& y, int64_t n);

// table [vocab, d], tokens i32 [b, s] -> [b, s, d]: row tokens[b, s] of the table.
Tensor embedding(const Tensor& table, const Tensor& tokens);

// x [..., d] * rsqrt(mean(x², last dim) + eps) * gain [d], computed in reduction_type(x), returned
// in x's type.
Tensor rms_norm(const Tensor& x, const Tensor& gain, double eps);

// Rotary position embedding of x [b, s, ..., head_dim] (position = index along dim 1), in the
// "rotate half" form of GPT-NeoX and Hugging Face's Llama: feature i pairs with i + head_dim/2, and
// the pair at position p turns by p * theta^(-2j/head_dim), j = i mod head_dim/2. `positions`, when
// given, is the position of each index along dim 1 (a sequence held in another order, as context
// parallelism's load-balanced layout holds it).
Tensor rope(const Tensor& x, double theta, const std::vector<int64_t>& positions = {});

// RoPE's tables for `positions` (0 .. n-1 when empty) and head_dim hd, in type t: cos and sin of
// each angle, [positions, 2, hd/2] (the features' two halves), the sin's first half negated
// (rope_rotate's form of rotate_half).
std::pair<ir::Literal, ir::Literal> rope_tables(ir::ElementType t, const std::vector<int64_t>& positions, int64_t n,
                                                int64_t hd, double theta);
// x * cos + rotate_half(x) * sin, given x [..., hd] and rows of rope_tables' `cos` and `signed_sin`
// [..., 2, hd/2], whose leading dimensions are x's dimensions `table_dims` (broadcast along the others).
Tensor rope_rotate(const Tensor& x, const Tensor& cos, const Tensor& signed_sin, std::vector<int64_t> table_dims);

// Softmax along the last dimension, stable (the row maximum subtracted first).
Tensor softmax_last(const Tensor& x);
// log(softmax) along the last dimension, stable: x - max - log(sum(exp(x - max))).
Tensor log_softmax_last(const Tensor& x);

struct AttentionWeights {
  Tensor q, k, v, o;  // [d, heads*hd], [d, kv_heads*hd] twice, [heads*hd, d]
};

// The queries [b, s, kv_heads, groups, hd] and keys and values [b, s, kv_heads, hd] of x [b, s, d],
// RoPE applied to queries and keys (at `positions`, as rope takes them).
struct Projections {
  Tensor q, k, v;
};
Projections project_qkv(const Tensor& x, const AttentionWeights& w, int64_t heads, int64_t kv_heads, double rope_theta,
                        const std::vector<int64_t>& positions = {});

// Causal grouped-query self-attention of x [b, s, d] with RoPE on queries and keys. Query head h
// reads key/value head h / (heads / kv_heads), as Llama's repeat_kv does; the groups are a
// dimension of their own, so no key or value is copied.
Tensor attention(const Tensor& x, const AttentionWeights& w, int64_t heads, int64_t kv_heads, double rope_theta);

// SwiGLU feed-forward: (silu(x @ gate) * (x @ up)) @ down, silu(h) = h * logistic(h).
Tensor swiglu(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down);

// Mean over tokens of -log softmax(logits)[target]: logits [b, s, vocab], targets i32 [b, s]; in
// reduction_type(logits).
// The target's log-probability is picked with a one-hot mask (iota == target), which stays a
// product and a sum when the vocabulary is split over devices.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

}  // namespace tessera::nn
