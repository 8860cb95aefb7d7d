// The mixture-of-experts MLP (GShard / Switch Transformer), built from primitives like layers.h.
//
// Tokens come as x [G, S, M]: G groups (the CausalLM's batch rows) of S tokens. Per group:
//   probs = softmax(x @ router)                       [G, S, E], in reduction_type(x)
//   first choice e1 = argmax probs (the lowest index among ties); k = 2 adds the argmax e2 of the
//   rest. Gates: k = 1, g1 = probs[e1] (Switch); k = 2, g1 and g2 = probs[e1], probs[e2] divided
//   by their sum (GShard).
//   Each expert has C = capacity(S, E, k, factor) = min(S, max(1, ceil(factor * k * S / E))) slots
//   per group. A token's slot in expert e1 is the number of earlier tokens of its group whose
//   first choice is e1; second choices queue after every first choice of the group (GShard), so a
//   slot in e2 = (first choices of e2 in the group) + (earlier second choices of e2). A choice
//   whose slot is >= C is dropped: it adds nothing (a token with every choice dropped gives 0,
//   and the residual stream carries it on).
//   dispatch [G, S, E, C] = one-hot of the kept choices' (expert, slot); combine = dispatch times
//   the choice's gate.
//   expert_in  [G, E, C, M] = einsum(GSEC, GSM)       (dot_general, batch G, contracting S)
//   expert_out [E, G, C, M] = SwiGLU with per-expert weights gate, up [E, M, F] and down [E, F, M]
//   y [G, S, M]             = einsum(GSEC, EGCM)      (batch G, contracting E and C)
//   aux = E * sum_e f_e * P_e, f_e = fraction of tokens whose first choice is e, P_e = mean of
//   probs[., ., e] over all tokens: the load-balancing loss of Switch (eq. 4), 1 when balanced.
// The slot numbers are a prefix sum: a dot with a strictly lower-triangular constant, exact in
// floating point (counts below 2^24). The choices and slots come from compares, so gradients flow
// through the gates and the expert weights only, as in both papers.
//
// Expert parallelism: with `layout` given, expert_in and expert_out are constrained to the
// experts split over layout.expert_axis (and G over the token layout's other batch axes), and the
// expert outputs back to the tokens' layout before the combine, so that the partitioner moves
// tokens with one all_to_all each way (and their adjoints in the backward: two more).
#pragma once

#include <optional>
#include <string>

#include "nn/layers.h"

namespace tessera::nn {

struct MoeWeights {
  Tensor router;          // [M, E]
  Tensor gate, up, down;  // [E, M, F], [E, M, F], [E, F, M]
};

struct MoeLayout {
  ir::Sharding tokens;      // of x [G, S, M]: G split over the batch axes, S and M whole
  std::string expert_axis;  // the mesh axis that splits E (one of tokens' batch axes)
};

struct MoeOutput {
  Tensor y;                   // [G, S, M], x's type
  std::optional<Tensor> aux;  // scalar, the load-balancing loss (unscaled), in reduction_type(x)
};

// The expert capacity per group (see above); UserError on a nonsensical factor or k.
int64_t moe_capacity(int64_t tokens_per_group, int64_t experts, int64_t top_k, double capacity_factor);

// `with_aux`: build the load-balancing loss too (generation does not: its sums over every token
// would be dead code that still communicates under expert parallelism).
MoeOutput moe(const Tensor& x, const MoeWeights& w, int64_t top_k, double capacity_factor,
              const std::optional<MoeLayout>& layout = std::nullopt, bool with_aux = true);

}  // namespace tessera::nn
