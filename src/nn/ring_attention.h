// Context parallelism: the sequence split over a mesh axis, attention computed as ring attention.
//
// Each of the N devices of the axis holds a slice of the sequence of every activation. Attention
// is the one layer that mixes positions; ring_attention writes it as a manual computation over the
// axis (per-device code with explicit collectives, as JAX's shard_map): each device's queries meet
// the key/value block it holds, the blocks pass round the ring by collective_permute, N steps
// unrolled (static, so autodiff reverses them without a loop; the reverse of collective_permute is
// the permutation back), and the partial results merge by the online-softmax rule (running row
// maximum, sum and weighted values, as FlashAttention and Liu et al.'s Ring Attention do). No
// device ever holds more than a [local, local] block of scores per head.
//
// Causal attention over contiguous slices would leave device 0 one block of work and device N-1
// N blocks, so the sequence is held in the load-balanced order of Llama 3 and Megatron's context
// parallelism: cut into 2N chunks, device i holds chunks i and 2N-1-i. Every position-wise layer
// is indifferent to the order; attention's mask and RoPE read each slot's true position, and the
// logits are put back in order at the end (the loss instead reorders its targets).
#pragma once

#include <string>
#include <vector>

#include "ir/sharding.h"
#include "nn/layers.h"

namespace tessera::nn {

struct ContextParallel {
  ir::Mesh mesh;     // whose only axis is `axis`: collective_permute names devices by number
  std::string axis;  // the sequence is split over it
  int64_t devices() const;
};

// The position held in each slot of the load-balanced layout of a sequence of length `seq` over
// `devices` devices (slot = device * seq/devices + offset). A UserError when 2 * devices does not
// divide seq.
std::vector<int64_t> balanced_positions(int64_t seq, int64_t devices);

// x with dimension `dim` (the sequence) taken from natural order into the load-balanced layout,
// and back: chunk slices and a concatenate.
Tensor to_balanced(const Tensor& x, int64_t dim, int64_t devices);
Tensor from_balanced(const Tensor& x, int64_t dim, int64_t devices);

// Causal grouped-query attention of x [b, s, d] held in the load-balanced layout, computed as ring
// attention over cp.axis; equal to to_balanced(attention(from_balanced(x))) (nn::attention's
// weights, heads and RoPE). The projections are ordinary ops, partitioned like the activations.
Tensor ring_attention(const Tensor& x, const AttentionWeights& w, int64_t heads, int64_t kv_heads, double rope_theta,
                      const ContextParallel& cp);

// Decoding under context parallelism: attention of queries q [B, S, kv, g, hd] at positions
// pos i32 [B, S] (whole on every device) to a cache of keys and values [B, T, kv, hd] split by
// position over cp.axis (device i holds positions [i*T/N, (i+1)*T/N)); key t is visible to the
// query at p when t <= p. Each device attends to its slice and returns its normalized output and
// log-sum-exp per row; the partials merge by their log-sum-exp (an all-reduce of the maximum, then
// of the weighted outputs and weights). Returns [B, S, heads * hd], whole on every device.
Tensor split_cache_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                             const ContextParallel& cp);

}  // namespace tessera::nn
