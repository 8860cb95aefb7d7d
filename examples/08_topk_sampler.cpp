// Lesson 8: a top-k sampler, the last step of text generation, sharded over 4 devices.
//
// Given next-token logits [batch, vocab], the sampler keeps each row's k largest logits
// (chlo.top_k), turns them into probabilities at a temperature (a softmax over the k), and picks
// one by inverse transform sampling: with u uniform in [0, 1), the token is the first of the k
// whose cumulative probability exceeds u. The cumulative sum is a matmul with a triangle of ones;
// the pick is a one-hot mask over the k indices. The program also ranks the whole vocabulary with
// stablehlo.sort (logits and their positions sorted together, descending) and returns its first k
// positions, which must be top_k's.
//
// It runs three ways: on one device (the reference interpreter), with the batch split over 4 host
// devices (each device samples its rows; nothing moves), and with the vocabulary split over the 4
// (top_k and sort read whole rows, so the partitioner gathers them: `--explain` reports it). All
// three must give the same tokens, and those must be the ones a plain C++ sampler picks (an oracle
// that shares no code with Tessera: std::partial_sort and a running sum in double).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/builder_window.h"
#include "runtime/session.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

constexpr int64_t kBatch = 8, kVocab = 64, kTop = 5;
constexpr double kTemperature = 0.7;

// The sampler; `logits_sharding` lays out the logits over mesh m (data=4).
Module sampler(std::optional<Sharding> logits_sharding) {
  Module m("sampler");
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "sample", [&](FunctionBuilder& f) {
    Tensor logits = f.param(f32({kBatch, kVocab}), logits_sharding);
    Tensor u = f.param(f32({kBatch}));
    std::vector<Tensor> top = top_k(logits, kTop);  // values [B, k] descending, indices [B, k] i32
    Tensor scaled = top[0] * (1.0 / kTemperature);
    // Softmax over the k: the largest value is the first (top_k sorts descending).
    Tensor shifted = scaled - broadcast_in_dim(slice(scaled, {0, 0}, {kBatch, 1}, {1, 1}), {kBatch, kTop}, {0, 1});
    Tensor e = exp(shifted);
    Tensor p = e / broadcast_in_dim(reduce_sum(e, {1}), {kBatch, kTop}, {0});
    // cdf[b, j] = sum over i <= j of p[b, i]: p times the upper triangle of ones.
    Literal tri(f32({kTop, kTop}));
    for (int64_t i = 0; i < kTop; ++i)
      for (int64_t j = 0; j < kTop; ++j) tri.set_double(i * kTop + j, i <= j ? 1.0 : 0.0);
    Tensor cdf = matmul(p, f.constant(tri));
    // The pick: how many cumulative probabilities lie at or below u (at most k - 1).
    Tensor below = convert(compare(cdf, broadcast_in_dim(u, {kBatch, kTop}, {0}), ComparisonDirection::LE),
                           ElementType::i32);
    Tensor choice = minimum(reduce_sum(below, {1}), f.scalar(ElementType::i32, kTop - 1));
    Tensor onehot = compare(f.iota(i32({kBatch, kTop}), 1), broadcast_in_dim(choice, {kBatch, kTop}, {0}),
                            ComparisonDirection::EQ);
    Tensor token = reduce_sum(select(onehot, top[1], broadcast_to(f.scalar(ElementType::i32, 0), {kBatch, kTop})), {1});
    // The same k by sorting the whole row with its positions.
    std::vector<Tensor> ranked = sort({logits, f.iota(i32({kBatch, kVocab}), 1)}, 1, ComparisonDirection::GT);
    Tensor sorted_top = slice(ranked[1], {0, 0}, {kBatch, kTop}, {1, 1});
    return std::vector<Tensor>{token, top[1], sorted_top};
  });
  return m;
}

// Logits with no ties: a fixed permutation of distinct values, scaled.
Literal logits_input() {
  Literal l(f32({kBatch, kVocab}));
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t v = 0; v < kVocab; ++v) l.set_double(b * kVocab + v, 0.05 * double((v * 37 + b * 11) % kVocab) - 1.5);
  return l;
}

Literal uniforms() {
  Literal u(f32({kBatch}));
  for (int64_t b = 0; b < kBatch; ++b) u.set_double(b, std::fmod(0.13 + 0.377 * double(b), 1.0));
  return u;
}

// The oracle: each row's k largest logits, their softmax at the temperature, and the first whose
// running sum exceeds u.
std::vector<int64_t> plain_sampler(const Literal& logits, const Literal& u, std::vector<int64_t>& top) {
  std::vector<int64_t> tokens;
  for (int64_t b = 0; b < kBatch; ++b) {
    std::vector<int64_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    auto at = [&](int64_t v) { return logits.get_double(b * kVocab + v); };
    std::partial_sort(order.begin(), order.begin() + kTop, order.end(), [&](int64_t x, int64_t y) { return at(x) > at(y); });
    top.insert(top.end(), order.begin(), order.begin() + kTop);
    std::vector<double> p(kTop);
    for (int64_t j = 0; j < kTop; ++j) p[j] = std::exp((at(order[j]) - at(order[0])) / kTemperature);
    double total = std::accumulate(p.begin(), p.end(), 0.0), running = 0;
    int64_t pick = kTop - 1;
    for (int64_t j = 0; j < kTop; ++j) {
      running += p[j] / total;
      if (running > u.get_double(b)) {
        pick = j;
        break;
      }
    }
    tokens.push_back(order[pick]);
  }
  return tokens;
}

std::vector<int64_t> ints_of(const Literal& l) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < l.num_elements(); ++i) v.push_back(l.get_int(i));
  return v;
}

std::vector<Literal> on_devices(const char* what, const Module& m, const std::vector<Literal>& in) {
  runtime::Session session = runtime::Session::host(4);
  runtime::CompiledProgram p = session.compile(m, "sample");
  fmt::print("{}: {} collectives, {} bytes per device\n", what, p.report().collectives.size(),
             p.report().bytes_per_device());
  return session.run_sharded(p, in);
}

}  // namespace

int main() {
  std::vector<Literal> in = {logits_input(), uniforms()};
  std::vector<int64_t> want_top;
  std::vector<int64_t> want = plain_sampler(in[0], in[1], want_top);

  std::vector<Literal> one = interp::evaluate(sampler(std::nullopt), "sample", in);
  std::vector<Literal> batch = on_devices("batch split over 4 devices", sampler(Sharding{"m", {{"data"}, {}}, {}, {}}), in);
  std::vector<Literal> vocab = on_devices("vocabulary split over 4 devices", sampler(Sharding{"m", {{}, {"data"}}, {}, {}}), in);

  fmt::print("{:<27}{}\n", "tokens (oracle):", fmt::join(want, " "));
  bool ok = true;
  for (auto [name, got] : {std::pair{"one device", &one}, {"batch split", &batch}, {"vocabulary split", &vocab}}) {
    bool same = ints_of((*got)[0]) == want && ints_of((*got)[1]) == want_top && ints_of((*got)[2]) == want_top;
    fmt::print("{:<27}{}  top-k and sort agree with the oracle: {}\n", fmt::format("tokens ({}):", name),
               fmt::join(ints_of((*got)[0]), " "), same ? "yes" : "NO");
    ok = ok && same;
  }
  fmt::print("{}: topk_sampler\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
