// The prefill and decode programs of generate.h, and the sampler. The layers are model.cpp's
// (rms_norm, swiglu, the head), with attention rewritten around positions held as data: RoPE reads
// its cos/sin rows by position (the same table values as layers.cpp's rope, so queries and keys
// are the full forward's), and the causal mask compares the key's position with the query's.
#include "nn/generate.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/builder.h"
#include "support/error.h"

namespace tessera::nn {

using ir::ComparisonDirection;
using ir::Literal;
using ir::Tensor;
using ir::Type;

namespace {

// RoPE of x [B, S, ..., hd] where element (b, s) sits at position pos[b, s] (i32 [B, S]): layers.h's
// rope with the table rows gathered by position.
Tensor rope_at(const Tensor& x, const Tensor& pos, int64_t max_len, double theta) {
  int64_t hd = x.shape().back();
  if (hd % 2 != 0) support::fail("nn::generate: head dimension {} of {} is odd", hd, to_string(x.type()));
  auto [cos_table, sin_table] = rope_tables(x.element(), {}, max_len, hd, theta);
  ir::Builder& b = x.builder();
  // Rows gathered by position from the tables seen as [max_len, hd].
  auto rows = [&](const Literal& table) {
    Tensor rows = embedding(ir::reshape(b.constant(table), {max_len, hd}), pos);
    return ir::reshape(rows, {rows.shape()[0], rows.shape()[1], 2, hd / 2});
  };
  return rope_rotate(x, rows(cos_table), rows(sin_table), {0, 1});  // batch, position
}

// Attention of queries q [B, S, kv, g, hd] at positions pos [B, S] to keys and values [B, T, kv, hd]
// at positions 0..T-1: key t is visible to the query at p when t <= p. layers.cpp's attention from
// its scores on; returns [B, S, heads * hd] before the output projection.
Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos) {
  int64_t b = q.shape()[0], s = q.shape()[1], kv = q.shape()[2], g = q.shape()[3], hd = q.shape()[4];
  int64_t t = k.shape()[1];
  ir::DotDims qk{{0, 2}, {0, 2}, {4}, {3}};  // scores [B, kv, S, g, T]
  Tensor scores = ir::dot_general(q, k, qk) / std::sqrt(double(hd));
  ir::Builder& bld = q.builder();
  Tensor key_pos = bld.iota(ir::i32({b, s, t}), 2);
  Tensor visible = ir::compare(key_pos, ir::broadcast_in_dim(pos, {b, s, t}, {0, 1}), ComparisonDirection::LE);
  Tensor mask = ir::broadcast_in_dim(visible, scores.shape(), {0, 2, 4});
  // As layers.cpp: a large finite negative, whose exp is exactly 0.
  Tensor hidden = ir::broadcast_to(bld.scalar(scores.element(), -1e30), scores.shape());
  Tensor masked = ir::select(mask, scores, hidden);
  Tensor probs = cast(softmax_last(cast(masked, reduction_type(masked.element()))), masked.element());
  ir::DotDims pv{{0, 1}, {0, 2}, {4}, {1}};  // [B, kv, S, g, hd]
  Tensor out = ir::transpose(ir::dot_general(probs, v, pv), {0, 2, 1, 3, 4});
  return ir::reshape(out, {b, s, kv * g * hd});
}

// The keys and values a layer attends to, given its fresh ones [B, S, kv, hd]; also writes them
// into that layer's cache outputs.
using CacheStep = std::function<std::pair<Tensor, Tensor>(int64_t layer, const Tensor& k, const Tensor& v)>;

// The model over tokens i32 [B, S] at positions pos i32 [B, S]: logits [B, S, vocab]. Mirrors
// CausalLM::block (mixed precision included) with attention through `cache`; `residual` is the
// layout of [B, S, d] the MoE layers dispatch from under expert parallelism. With `split`, the keys
// and values are the cache split by position over split->axis, attended to slice by slice
// (split_cache_attention).
Tensor cached_forward(const CausalLM& model, const Weights& w, const Tensor& tokens, const Tensor& pos,
                      int64_t max_len, const CacheStep& cache, const std::optional<ir::Sharding>& residual,
                      const std::optional<ContextParallel>& split = std::nullopt) {
  const Config& c = model.config();
  const ir::ElementType ct = c.compute_type();
  int64_t b = tokens.shape()[0], s = tokens.shape()[1], hd = c.head_dim(), groups = c.heads / c.kv_heads;
  auto weight = [&](const std::string& name) { return cast(w[name], ct); };
  Tensor x = embedding(w["embed"], tokens);
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    std::string p = "layers." + std::to_string(layer) + ".";
    Tensor h = cast(rms_norm(x, w[p + "attn_norm"], c.norm_eps), ct);
    Tensor q = rope_at(ir::reshape(ir::matmul(h, weight(p + "attn.q")), {b, s, c.kv_heads, groups, hd}), pos,
                       max_len, c.rope_theta);
    Tensor k = rope_at(ir::reshape(ir::matmul(h, weight(p + "attn.k")), {b, s, c.kv_heads, hd}), pos, max_len,
                       c.rope_theta);
    Tensor v = ir::reshape(ir::matmul(h, weight(p + "attn.v")), {b, s, c.kv_heads, hd});
    auto [keys, values] = cache(layer, k, v);
    Tensor heads = split ? split_cache_attention(q, keys, values, pos, *split) : attend(q, keys, values, pos);
    Tensor a = ir::matmul(heads, weight(p + "attn.o"));
    x = x + cast(a, x.element());
    Tensor f = model.mlp(w, layer, cast(rms_norm(x, w[p + "mlp_norm"], c.norm_eps), ct), residual, nullptr);
    x = x + cast(f, x.element());
  }
  return model.head(w, x);
}

const ir::DimSharding& dim_of(const ir::Sharding& s, size_t d) { return s.dims.at(d); }

// A paged store viewed as slots [N * block_size, kv, hd] with rows [B, S, kv, hd] written at
// slots i32 [B, S, 1]: a scatter that replaces (two rows aimed at one slot happen only in the null
// block, which is never read unmasked).
Tensor write_slots(const Tensor& flat, const Tensor& slots, const Tensor& rows) {
  ir::ScatterDims d;
  d.update_window_dims = {2, 3};
  d.inserted_window_dims = {0};
  d.scatter_dims_to_operand_dims = {0};
  d.index_vector_dim = 2;
  return ir::scatter(flat, slots, rows, d, ir::OpKind::Return);
}

// The blocks of each sequence, in its table's order: pool [N, bs, kv, hd] and table i32 [B, M] ->
// [B, M * bs, kv, hd], position t of a sequence at row t.
Tensor read_blocks(const Tensor& pool, const Tensor& table) {
  int64_t bs = pool.shape()[1], kv = pool.shape()[2], hd = pool.shape()[3];
  int64_t b = table.shape()[0], m = table.shape()[1];
  ir::GatherDims d;
  d.offset_dims = {2, 3, 4};
  d.collapsed_slice_dims = {0};
  d.start_index_map = {0};
  d.index_vector_dim = 2;
  return ir::reshape(ir::gather(pool, table, d, {1, bs, kv, hd}), {b, m * bs, kv, hd});
}

}  // namespace

GenerationPrograms capture_generation(ir::Module& module, const CausalLM& trained, GenerationShape shape,
                                      const std::optional<ShardingPlan>& plan) {
  // MoE layers route every choice (generate.h): capacity = the tokens of a group.
  Config serving = trained.config();
  serving.capacity_factor = double(std::max<int64_t>(serving.experts, 1));
  const CausalLM model = CausalLM(serving).with_expert_axis(plan ? plan->expert_axis : "");
  const Config& c = model.config();
  if (shape.batch < 1 || shape.prompt < 1 || shape.max_len < shape.prompt)
    support::fail("nn::capture_generation: batch {} and prompt length {} must be positive and the cache length {} at "
                  "least the prompt's", shape.batch, shape.prompt, shape.max_len);
  for (const std::string& name : {std::string("prefill"), std::string("decode")})
    if (module.find_function(name) != nullptr)
      support::fail("nn::capture_generation: module '{}' already has a function @{}", module.name, name);
  GenerationPrograms out;
  out.parameters = model.parameters();
  out.shape = shape;
  out.layers = c.layers;
  const auto& specs = out.parameters;
  const int64_t B = shape.batch, L = shape.max_len, P = shape.prompt, hd = c.head_dim();
  const ir::ElementType ct = c.compute_type();
  const Type cache_type(ct, {B, L, c.kv_heads, hd});
  const bool paged = shape.block_size > 0;
  const int64_t bs = shape.block_size, N = shape.num_blocks, M = out.blocks_per_sequence();
  if (shape.block_size < 0 || (paged && N < 2))
    support::fail("nn::capture_generation: a paged cache needs a positive block size (not {}) and at least 2 blocks, "
                  "the null block and one (not {})", shape.block_size, N);
  const Type pool_type(ct, {N, bs, c.kv_heads, hd});
  const int64_t R = out.prefill_rows();  // the prefill's rows
  if (shape.prefill_batch < 0 || (!paged && (shape.prefill_into_pools || R != B)))
    support::fail("nn::capture_generation: a prefill of its own batch ({} rows) or into the pools needs a paged cache",
                  shape.prefill_batch);
  const Type& store_type = paged ? pool_type : cache_type;  // each layer's K (or V) store

  std::optional<ir::Sharding> tokens_sharding, pos_sharding, step_tokens_sharding, prefill_tokens_sharding, residual;
  if (plan) {
    const ir::Mesh* existing = module.find_mesh(plan->mesh.name);
    if (existing == nullptr) module.add_mesh(plan->mesh);
    else if (!(*existing == plan->mesh))
      support::fail("nn::capture_generation: module '{}' has another mesh named '{}'", module.name, plan->mesh.name);
    tokens_sharding = plan->input(DataInput{"tokens", ir::i32({B, P})});
    prefill_tokens_sharding = plan->input(DataInput{"tokens", ir::i32({R, P})});
    // The caches: batch like the tokens, key/value heads like attn.k's columns.
    ir::Sharding k = plan->parameter(specs[parameter_index(specs, "layers.0.attn.k")]);
    ir::Sharding cs{plan->mesh.name, {dim_of(*tokens_sharding, 0), {}, dim_of(k, 1), {}}, {}, {}};
    ir::validate(cs, plan->mesh, cache_type, "the KV cache");
    for (size_t d : {size_t(0), size_t(2)}) {
      int64_t n = ir::dim_shards(cs, int64_t(d), plan->mesh);
      if (cache_type.shape[d] % n != 0)
        support::fail("nn::capture_generation: plan '{}' splits the cache's {} ({}) into {} pieces, which does not divide",
                      plan->name, d == 0 ? "batch" : "key/value heads", cache_type.shape[d], n);
    }
    if (plan->context) {  // positions split over the ctx axis (tokens and heads are whole)
      if (paged)
        support::fail("nn::capture_generation: plan '{}' splits the cache by position; a paged cache's pool is shared "
                      "by the sequences (use a contiguous one)", plan->name);
      int64_t n = plan->context->devices();
      if (L % n != 0)
        support::fail("nn::capture_generation: plan '{}' splits the cache's {} positions into {} pieces, which does "
                      "not divide", plan->name, L, n);
      cs.dims[1] = ir::DimSharding{ir::AxisRef(plan->context->axis)};
    }
    if (paged) {
      if (ir::dim_shards(cs, 0, plan->mesh) != 1)
        support::fail("nn::capture_generation: plan '{}' splits the batch, but a paged cache's blocks are shared by "
                      "the sequences", plan->name);
      cs.dims[1] = {};  // [blocks, block_size, kv, hd]: the heads split as before
    }
    out.cache_sharding = cs;
    residual = ir::Sharding{plan->mesh.name, {dim_of(*tokens_sharding, 0), {}, {}}, {}, {}};
    pos_sharding = ir::Sharding{plan->mesh.name, {dim_of(*tokens_sharding, 0)}, {}, {}};
    step_tokens_sharding = pos_sharding;
  }
  auto params_of = [&](ir::FunctionBuilder& f) {
    std::vector<Tensor> ps;
    for (const ParamSpec& p : specs)
      ps.push_back(f.param(Type(c.dtype, p.shape), plan ? std::optional(plan->parameter(p)) : std::nullopt));
    return ps;
  };

  // @prefill: positions 0..P-1 of every sequence, attending to the prompt's own keys and values;
  // the caches are those padded with zeros to max_len (paged: scattered at the given slots into an
  // empty pool, or into the given pools).
  ir::Function& prefill = ir::build_function(module, out.prefill, [&](ir::FunctionBuilder& f) {
    std::vector<Tensor> ps = params_of(f);
    std::vector<Tensor> pools;
    if (shape.prefill_into_pools)
      for (size_t i = 0; i < out.num_caches(); ++i) pools.push_back(f.param(store_type, out.cache_sharding));
    Tensor tokens = f.param(ir::i32({R, P}), prefill_tokens_sharding);
    std::optional<Tensor> slots;
    if (paged) slots = f.param(ir::i32({R, P}), prefill_tokens_sharding);
    Tensor pos = f.iota(ir::i32({R, P}), 1);
    std::vector<Tensor> caches;
    Tensor zero = f.scalar(ct, 0);
    Tensor logits = cached_forward(model, Weights(specs, ps), tokens, pos, L, [&](int64_t, const Tensor& k, const Tensor& v) {
      for (const Tensor& x : {k, v}) {
        if (!paged) {
          caches.push_back(ir::pad(x, zero, {0, 0, 0, 0}, {0, L - P, 0, 0}));
          continue;
        }
        Tensor into = shape.prefill_into_pools ? ir::reshape(pools[caches.size()], {N * bs, c.kv_heads, hd})
                                               : ir::broadcast_to(zero, {N * bs, c.kv_heads, hd});
        caches.push_back(ir::reshape(write_slots(into, ir::reshape(*slots, {R, P, 1}), x), pool_type.shape));
      }
      return std::pair{k, v};
    }, residual);
    std::vector<Tensor> results = {logits};
    results.insert(results.end(), caches.begin(), caches.end());
    return results;
  });

  // @decode: one token per sequence at its own position.
  ir::Function& decode = ir::build_function(module, out.decode, [&](ir::FunctionBuilder& f) {
    std::vector<Tensor> ps = params_of(f);
    std::vector<Tensor> caches;
    for (size_t i = 0; i < out.num_caches(); ++i) caches.push_back(f.param(store_type, out.cache_sharding));
    Tensor tokens = f.param(ir::i32({B}), step_tokens_sharding);
    Tensor pos = f.param(ir::i32({B}), pos_sharding);
    std::optional<Tensor> slot, table;
    if (paged) {
      slot = f.param(ir::i32({B}), pos_sharding);
      table = f.param(ir::i32({B, M}), tokens_sharding);
    }
    std::optional<Tensor> at;  // contiguous: where each sequence's new row goes
    if (!paged)
      at = ir::compare(f.iota(ir::i32(cache_type.shape), 1), ir::broadcast_in_dim(pos, cache_type.shape, {0}),
                       ComparisonDirection::EQ);
    // One layer's store with the new rows [B, 1, kv, hd] written, and what attention reads of it.
    auto write_and_read = [&](const Tensor& store, const Tensor& fresh) -> std::pair<Tensor, Tensor> {
      if (!paged) {
        Tensor row = ir::broadcast_in_dim(ir::reshape(fresh, {B, c.kv_heads, hd}), cache_type.shape, {0, 2, 3});
        Tensor updated = ir::select(*at, row, store);
        return {updated, updated};
      }
      Tensor flat = ir::reshape(store, {N * bs, c.kv_heads, hd});
      Tensor updated = ir::reshape(write_slots(flat, ir::reshape(*slot, {B, 1, 1}), fresh), pool_type.shape);
      return {updated, read_blocks(updated, *table)};
    };
    std::vector<Tensor> updated;
    Tensor logits = cached_forward(model, Weights(specs, ps), ir::reshape(tokens, {B, 1}), ir::reshape(pos, {B, 1}), L,
                                   [&](int64_t layer, const Tensor& k, const Tensor& v) {
                                     auto [k_store, keys] = write_and_read(caches[size_t(2 * layer)], k);
                                     auto [v_store, values] = write_and_read(caches[size_t(2 * layer + 1)], v);
                                     updated.push_back(k_store);
                                     updated.push_back(v_store);
                                     return std::pair{keys, values};
                                   },
                                   residual, plan ? plan->context : std::nullopt);
    std::vector<Tensor> results = {ir::reshape(logits, {B, c.vocab})};
    results.insert(results.end(), updated.begin(), updated.end());
    return results;
  });

  for (size_t i = 0; i < out.num_caches(); ++i) {
    out.decode_aliases.emplace_back(out.num_parameters() + i, 1 + i);
    if (shape.prefill_into_pools) out.prefill_aliases.emplace_back(out.num_parameters() + i, 1 + i);
    if (out.cache_sharding) {
      prefill.set_result_sharding(1 + i, *out.cache_sharding);
      decode.set_result_sharding(1 + i, *out.cache_sharding);
    }
  }
  return out;
}

BlockTable::BlockTable(const GenerationPrograms& g)
    : block_size_(g.shape.block_size), num_blocks_(g.shape.num_blocks), per_sequence_(g.blocks_per_sequence()),
      blocks_(static_cast<size_t>(g.shape.batch)) {
  if (!g.paged()) support::fail("nn::BlockTable: the programs were captured with a contiguous cache");
  for (int64_t k = num_blocks_ - 1; k >= 1; --k) free_.push_back(k);
}

void BlockTable::release(int64_t b) {
  std::vector<int64_t>& mine = blocks_.at(size_t(b));
  free_.insert(free_.end(), mine.begin(), mine.end());
  std::sort(free_.begin(), free_.end(), std::greater<>());
  mine.clear();
}

void BlockTable::reserve(int64_t b, int64_t p) {
  if (b < 0 || b >= int64_t(blocks_.size()) || p < 0 || p / block_size_ >= per_sequence_)
    support::fail("nn::BlockTable: position {} of sequence {} is outside the cache ({} sequences of {} blocks of {})", p,
                  b, blocks_.size(), per_sequence_, block_size_);
  std::vector<int64_t>& mine = blocks_[size_t(b)];
  while (int64_t(mine.size()) <= p / block_size_) {
    if (free_.empty())
      support::fail("nn::BlockTable: all {} blocks of the pool are in use (sequence {} reached position {})",
                    num_blocks_ - 1, b, p);
    mine.push_back(free_.back());
    free_.pop_back();
  }
}

int64_t BlockTable::slot(int64_t b, int64_t p) const {
  const std::vector<int64_t>& mine = blocks_.at(size_t(b));
  size_t k = size_t(p / block_size_);
  return (k < mine.size() ? mine[k] : 0) * block_size_ + p % block_size_;
}

Literal BlockTable::table() const {
  std::vector<int64_t> t(blocks_.size() * size_t(per_sequence_), 0);
  for (size_t b = 0; b < blocks_.size(); ++b)
    for (size_t k = 0; k < blocks_[b].size(); ++k) t[b * size_t(per_sequence_) + k] = blocks_[b][k];
  return Literal::from_ints(ir::i32({int64_t(blocks_.size()), per_sequence_}), t);
}

int64_t sample_token(std::span<const double> logits, const Sampling& s, std::mt19937_64& rng) {
  if (logits.empty()) support::fail("nn::sample_token: no logits to sample from");
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature))
    support::fail("nn::sample_token: temperature {} is not a non-negative number", s.temperature);
  if (s.top_k < 0) support::fail("nn::sample_token: top-k {} is negative", s.top_k);
  if (s.temperature == 0) return std::max_element(logits.begin(), logits.end()) - logits.begin();
  double top = *std::max_element(logits.begin(), logits.end());
  double floor = -INFINITY;  // logits below it are left out (top-k)
  if (s.top_k > 0 && size_t(s.top_k) < logits.size()) {
    std::vector<double> sorted(logits.begin(), logits.end());
    std::nth_element(sorted.begin(), sorted.begin() + (s.top_k - 1), sorted.end(), std::greater<>());
    floor = sorted[size_t(s.top_k - 1)];
  }
  std::vector<double> p(logits.size());
  for (size_t v = 0; v < logits.size(); ++v)
    p[v] = logits[v] >= floor ? std::exp((logits[v] - top) / s.temperature) : 0.0;
  std::discrete_distribution<int64_t> pick(p.begin(), p.end());
  return pick(rng);
}

}  // namespace tessera::nn
