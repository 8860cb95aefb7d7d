// Config validation, the parameter list of the Llama layout, and the counter-based initializer.
#include "nn/config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "support/error.h"
#include "support/strings.h"

namespace tessera::nn {

void Config::validate() const {
  auto positive = [](int64_t v, const char* field) {
    if (v <= 0) support::fail("nn::Config: {} must be positive, got {}", field, v);
  };
  positive(vocab, "vocab");
  positive(d_model, "d_model");
  positive(layers, "layers");
  positive(heads, "heads");
  positive(kv_heads, "kv_heads");
  positive(ffn, "ffn");
  positive(seq, "seq");
  positive(batch, "batch");
  if (d_model % heads != 0)
    support::fail("nn::Config: heads ({}) must divide d_model ({})", heads, d_model);
  if (heads % kv_heads != 0)
    support::fail("nn::Config: kv_heads ({}) must divide heads ({})", kv_heads, heads);
  if (head_dim() % 2 != 0)
    support::fail("nn::Config: RoPE needs an even head dimension, d_model / heads = {}", head_dim());
  if (!ir::is_float(dtype)) support::fail("nn::Config: dtype must be a float type");
  if (compute && !ir::is_float(*compute)) support::fail("nn::Config: the compute type must be a float type");
  if (experts < 0) support::fail("nn::Config: experts must be 0 (a dense MLP) or positive, got {}", experts);
  if (experts > 0) {
    if (top_k != 1 && top_k != 2) support::fail("nn::Config: top_k must be 1 or 2, got {}", top_k);
    if (top_k > experts) support::fail("nn::Config: top_k ({}) exceeds experts ({})", top_k, experts);
    if (!(capacity_factor > 0) || !std::isfinite(capacity_factor))
      support::fail("nn::Config: capacity_factor must be a positive number, got {}", capacity_factor);
    if (!(aux_loss_coef >= 0) || !std::isfinite(aux_loss_coef))
      support::fail("nn::Config: aux_loss_coef must be a number >= 0, got {}", aux_loss_coef);
  }
  if (training_bytes_lower_bound() == INT64_MAX)
    support::fail("nn::Config: d_model {}, layers {}, ffn {}, seq {}, batch {}: the model's sizes overflow 64-bit counts",
                  d_model, layers, ffn, seq, batch);
}

int64_t Config::training_bytes_lower_bound() const {
  // Every product and sum saturates: hostile sizes give INT64_MAX, never a wrapped small number.
  auto mul = [](std::initializer_list<int64_t> xs) {
    int64_t p = 1;
    for (int64_t x : xs)
      if (__builtin_mul_overflow(p, x, &p)) return INT64_MAX;
    return p;
  };
  auto add = [](int64_t a, int64_t b) {
    int64_t s = 0;
    return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
  };
  int64_t kv = mul({d_model / heads, kv_heads});
  int64_t per_layer = add(add(mul({2, d_model}), add(mul({2, d_model, d_model}), mul({2, d_model, kv}))),
                          add(mul({3, d_model, ffn, std::max<int64_t>(experts, 1)}), mul({d_model, experts})));
  int64_t params = add(add(mul({layers, per_layer}), mul({2, vocab, d_model})), d_model);
  int64_t element = ir::info(dtype).bytes;
  int64_t state = mul({4, params, element});  // parameters, gradients, m and v
  int64_t scores = mul({batch, heads, seq, seq, element});
  int64_t logits = mul({batch, seq, vocab, element});
  return add(state, add(scores, logits));
}

int64_t ParamSpec::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<ParamSpec> parameter_specs(const Config& c) {
  c.validate();
  using Init = ParamSpec::Init;
  int64_t d = c.d_model, hd = c.head_dim();
  std::vector<ParamSpec> specs = {{"embed", {c.vocab, d}, Init::Normal}};
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    specs.push_back({p + "attn_norm", {d}, Init::Ones});
    specs.push_back({p + "attn.q", {d, c.heads * hd}, Init::Normal});
    specs.push_back({p + "attn.k", {d, c.kv_heads * hd}, Init::Normal});
    specs.push_back({p + "attn.v", {d, c.kv_heads * hd}, Init::Normal});
    specs.push_back({p + "attn.o", {c.heads * hd, d}, Init::Normal});
    specs.push_back({p + "mlp_norm", {d}, Init::Ones});
    if (c.experts > 0) {
      int64_t e = c.experts;
      specs.push_back({p + "moe.router", {d, e}, Init::Normal});
      specs.push_back({p + "moe.gate", {e, d, c.ffn}, Init::Normal});
      specs.push_back({p + "moe.up", {e, d, c.ffn}, Init::Normal});
      specs.push_back({p + "moe.down", {e, c.ffn, d}, Init::Normal});
      continue;
    }
    specs.push_back({p + "mlp.gate", {d, c.ffn}, Init::Normal});
    specs.push_back({p + "mlp.up", {d, c.ffn}, Init::Normal});
    specs.push_back({p + "mlp.down", {c.ffn, d}, Init::Normal});
  }
  specs.push_back({"norm", {d}, Init::Ones});
  specs.push_back({"head", {d, c.vocab}, Init::Normal});
  return specs;
}

int64_t parameter_count(const Config& config) {
  int64_t n = 0;
  for (const ParamSpec& s : parameter_specs(config)) n += s.num_elements();
  return n;
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

// A uniform in (0, 1]: the top 53 bits, shifted off zero so that log() below is finite.
double uniform(uint64_t bits) { return (static_cast<double>(bits >> 11) + 1) * 0x1.0p-53; }

}  // namespace

ir::Literal init_parameter_piece(const ParamSpec& spec, const Config& config, uint64_t seed,
                                 const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
  if (start.size() != spec.shape.size() || extent.size() != spec.shape.size())
    support::fail("nn: a piece of {} of rank {} for parameter '{}' of rank {}", support::shape_string(extent),
                  extent.size(), spec.name, spec.shape.size());
  for (size_t d = 0; d < spec.shape.size(); ++d)
    if (start[d] < 0 || extent[d] < 0 || start[d] + extent[d] > spec.shape[d])
      support::fail("nn: the piece at {} of extent {} is outside parameter '{}' of shape {} (dimension {})",
                    support::shape_string(start), support::shape_string(extent), spec.name,
                    support::shape_string(spec.shape), d);
  ir::Literal out(ir::Type(config.dtype, extent));
  uint64_t key = splitmix64(seed ^ fnv1a(spec.name));
  // The row-major index of each element in the whole array: the counter its value is drawn from.
  std::vector<int64_t> stride(spec.shape.size(), 1), idx(spec.shape.size(), 0);
  for (size_t d = spec.shape.size(); d-- > 1;) stride[d - 1] = stride[d] * spec.shape[d];
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    double v = 1;
    if (spec.init == ParamSpec::Init::Normal) {
      int64_t whole = 0;
      for (size_t d = 0; d < idx.size(); ++d) whole += (start[d] + idx[d]) * stride[d];
      auto n = static_cast<uint64_t>(whole);
      double u1 = uniform(splitmix64(key + 2 * n)), u2 = uniform(splitmix64(key + 2 * n + 1));
      v = config.init_std * std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    }
    out.set_double(i, v);
    for (size_t d = idx.size(); d-- > 0;) {  // the next element of the box, row-major
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

ir::Literal init_parameter(const ParamSpec& spec, const Config& config, uint64_t seed) {
  return init_parameter_piece(spec, config, seed, std::vector<int64_t>(spec.shape.size(), 0), spec.shape);
}

std::vector<ir::Literal> init_parameters(const Config& config, uint64_t seed) {
  std::vector<ir::Literal> out;
  for (const ParamSpec& s : parameter_specs(config)) out.push_back(init_parameter(s, config, seed));
  return out;
}

size_t parameter_index(const std::vector<ParamSpec>& specs, const std::string& name) {
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name) return i;
  support::fail("nn: no parameter named '{}'", name);
}

}  // namespace tessera::nn
