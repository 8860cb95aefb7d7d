// The vmap transform against a loop over the examples: for every row of the op table (op_table.h),
// vmap(f) on a batch of B = 3 inputs equals f evaluated on each example in turn, with some
// parameters batched at dimension 0, some at their last dimension and some shared, and results
// batched at 0 or last. Then what the table does not reach: batched start indices (dynamic_slice,
// dynamic_update_slice, gather), a while loop whose examples stop at different iterations, a
// call, the collectives (in the single-process interpreter and on 4 host devices with the real
// communicator), per-example gradients (vmap of reverse), shardings, and the user errors.
#include "autodiff/vmap.h"

#include <numeric>

#include "comm/parallel.h"
#include "ir/builder_numeric.h"
#include "ir/rng.h"
#include "op_table.h"

namespace tessera::autodiff::testing {
namespace {

using ir::ElementType;
using ir::FunctionBuilder;
using Axes = std::vector<std::optional<int64_t>>;

constexpr int64_t kBatch = 3;
// Batched and per-example programs compute the same f64 arithmetic, possibly reassociated
// (a batched contraction or reduction); they agree to this relative tolerance.
constexpr double kVmapTolerance = 1e-12;

int64_t positive(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// The multi-index of flat row-major index i in `shape`.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

// The examples stacked along `axis` of a new dimension.
Literal stack(const std::vector<Literal>& examples, int64_t axis) {
  std::vector<int64_t> shape = examples[0].shape();
  shape.insert(shape.begin() + axis, static_cast<int64_t>(examples.size()));
  Literal out(examples[0].type().with_shape(shape));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::vector<int64_t> idx = unravel(i, shape);
    int64_t b = idx[static_cast<size_t>(axis)];
    idx.erase(idx.begin() + axis);
    out.set_double(i, examples[static_cast<size_t>(b)].get_double(ravel(idx, examples[0].shape())));
  }
  return out;
}

// Example b of a batch whose batch dimension is `axis`.
Literal unstack(const Literal& batch, int64_t axis, int64_t b) {
  std::vector<int64_t> shape = batch.shape();
  shape.erase(shape.begin() + axis);
  Literal out(batch.type().with_shape(shape));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::vector<int64_t> idx = unravel(i, shape);
    idx.insert(idx.begin() + axis, b);
    out.set_double(i, batch.get_double(ravel(idx, batch.shape())));
  }
  return out;
}

void expect_near(const Literal& got, const Literal& want, const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  int failures = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double g = got.get_double(i), w = want.get_double(i);
    if (!(std::abs(g - w) <= kVmapTolerance * std::max(1.0, std::abs(w))) && ++failures <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g << " batched, " << w << " in the loop";
  }
}

using Run = std::function<std::vector<Literal>(const std::string& fn, const std::vector<Literal>& args)>;

// vmap(f) on examples[b][i] (a shared parameter i takes examples[0][i]) equals the loop of f.
void expect_vmap_equals_loop(ir::Module& m, const ir::Function& f,
                             const std::vector<std::vector<Literal>>& examples, const Axes& in_axes,
                             const Axes& out_axes, const std::string& what, const Run& run) {
  VmapOptions o;
  o.in_axes = in_axes;
  o.out_axes = out_axes;
  o.batch_size = kBatch;
  const ir::Function& g = vmap(m, f, o);
  ASSERT_NO_THROW(ir::verify(m)) << what;
  std::vector<Literal> batched;
  for (size_t i = 0; i < f.num_parameters(); ++i) {
    if (!in_axes[i]) {
      batched.push_back(examples[0][i]);
      continue;
    }
    std::vector<Literal> column;
    for (const auto& e : examples) column.push_back(e[i]);
    batched.push_back(stack(column, positive(*in_axes[i], column[0].type().rank() + 1)));
  }
  std::vector<Literal> got = run(g.name(), batched);
  ASSERT_EQ(got.size(), f.result_types.size()) << what;
  for (int64_t b = 0; b < kBatch; ++b) {
    std::vector<Literal> args = examples[0];
    for (size_t i = 0; i < args.size(); ++i)
      if (in_axes[i]) args[i] = examples[static_cast<size_t>(b)][i];
    std::vector<Literal> want = run(f.name(), args);
    for (size_t k = 0; k < want.size(); ++k) {
      std::string at = what + ", example " + std::to_string(b) + ", result " + std::to_string(k);
      if (out_axes[k]) {
        expect_near(unstack(got[k], positive(*out_axes[k], want[k].type().rank() + 1), b), want[k], at);
      } else {
        expect_near(got[k], want[k], at);
      }
    }
  }
}

Run interpreted(const ir::Module& m) {
  return
      [&m](const std::string& fn, const std::vector<Literal>& args) { return interp::evaluate(m, fn, args); };
}

// ---- The op table ----

// Parameter i of row r: batched at 0, batched at its last dimension, or shared, in turn.
Axes row_in_axes(size_t r, size_t n) {
  Axes axes;
  for (size_t i = 0; i < n; ++i) {
    switch ((r + 2 * i) % 3) {
      case 0:
        axes.push_back(0);
        break;
      case 1:
        axes.push_back(-1);
        break;
      default:
        axes.push_back(std::nullopt);
    }
  }
  if (std::none_of(axes.begin(), axes.end(), [](const auto& a) { return a.has_value(); })) axes[0] = 0;
  return axes;
}

struct Indexed {
  size_t index;
  Row row;
};
void PrintTo(const Indexed& r, std::ostream* os) { *os << r.row.name; }

std::vector<Indexed> indexed_rows() {
  std::vector<Indexed> out;
  for (const Row& row : all_rows()) out.push_back({out.size(), row});
  return out;
}

class Vmap : public ::testing::TestWithParam<Indexed> {};

TEST_P(Vmap, EqualsALoopOverThreeExamples) {
  const Row& row = GetParam().row;
  size_t r = GetParam().index;
  ir::Module m = row_module("vmap");
  std::vector<Literal> first = row_arguments(row);
  const ir::Function& f = build_row(m, "f", row, first, [](FunctionBuilder&, Tensor out) { return out; });
  std::vector<std::vector<Literal>> examples{first};
  for (uint64_t b = 1; b < kBatch; ++b) {
    std::vector<Literal> e;
    for (size_t i = 0; i < row.inputs.size(); ++i) {
      const In& in = row.inputs[i];
      e.push_back(
          random_f64(in.shape, std::hash<std::string>{}(row.name) + 100 * b + i, in.lo, in.hi, in.dyadic));
    }
    examples.push_back(e);
  }
  Axes out_axes{r % 2 == 0 ? std::optional<int64_t>(0) : std::optional<int64_t>(-1)};
  expect_vmap_equals_loop(m, f, examples, row_in_axes(r, row.inputs.size()), out_axes, row.name,
                          interpreted(m));
}

INSTANTIATE_TEST_SUITE_P(Ops, Vmap, ::testing::ValuesIn(indexed_rows()),
                         [](const ::testing::TestParamInfo<Indexed>& info) { return info.param.row.name; });

// Every in_axes kind occurs over the table (so the rotation above is not vacuous).
TEST(VmapTable, InAxesCoverBatchedAtZeroAtTheLastDimensionAndShared) {
  std::set<int> kinds;
  std::vector<Indexed> rows = indexed_rows();
  for (const Indexed& r : rows)
    for (const auto& a : row_in_axes(r.index, r.row.inputs.size())) kinds.insert(!a ? 2 : *a == 0 ? 0 : 1);
  EXPECT_EQ(kinds.size(), 3u);
}

// ---- Batched indices, loops, calls ----

Literal i32(int64_t v) { return ints(Type(ElementType::i32, {}), {v}); }

std::vector<std::vector<Literal>> with_indices(const std::vector<Literal>& data,
                                               const std::vector<std::vector<int64_t>>& idx) {
  std::vector<std::vector<Literal>> out;
  for (size_t b = 0; b < idx.size(); ++b) {
    std::vector<Literal> e{random_f64(data[0].shape(), 50 + b)};
    for (size_t k = 1; k < data.size(); ++k) e.push_back(random_f64(data[k].shape(), 60 + b + 10 * k));
    for (int64_t v : idx[b]) e.push_back(i32(v));
    out.push_back(e);
  }
  return out;
}

TEST(VmapIndices, DynamicSliceWithBatchedStartsIsAGatherClampedAlike) {
  ir::Module m("ds");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({5, 6}));
    Tensor i = b.param(ir::i32({}));
    Tensor j = b.param(ir::i32({}));
    return ir::dynamic_slice(x, {i, j}, {2, 3});
  });
  auto examples =
      with_indices({random_f64({5, 6}, 1)}, {{0, 1}, {4, 5}, {-2, 2}});  // clamped: (3, 3), (0, 2)
  expect_vmap_equals_loop(m, f, examples, {1, 0, 0}, {0}, "batched x and starts", interpreted(m));
  ir::Module m2("ds_shared_x");
  const ir::Function& f2 = ir::build_function(m2, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({5, 6}));
    return ir::dynamic_slice(x, {b.param(ir::i32({})), b.scalar(ElementType::i32, 2)}, {2, 3});
  });
  auto e2 = with_indices({random_f64({5, 6}, 1)}, {{0}, {4}, {2}});
  expect_vmap_equals_loop(m2, f2, e2, {std::nullopt, 0}, {-1}, "shared x, one batched start",
                          interpreted(m2));
  EXPECT_TRUE(contains_op(*m2.find_function("f_vmap"), OpKind::Gather));
}

TEST(VmapIndices, DynamicUpdateSliceWithBatchedStartsIsAScatterClampedAlike) {
  ir::Module m("dus");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({5, 6}));
    Tensor u = b.param(ir::f64({2, 3}));
    Tensor i = b.param(ir::i32({}));
    return ir::dynamic_update_slice(x, u, {i, b.param(ir::i32({}))});
  });
  auto examples = with_indices({random_f64({5, 6}, 1), random_f64({2, 3}, 2)}, {{0, 1}, {4, 5}, {-1, 3}});
  expect_vmap_equals_loop(m, f, examples, {std::nullopt, 1, 0, 0}, {0}, "shared x, batched update and starts",
                          interpreted(m));
  EXPECT_TRUE(contains_op(*m.find_function("f_vmap"), OpKind::Scatter));
}

TEST(VmapIndices, GatherWithBatchedIndicesAndSharedOperand) {
  ir::Module m("gather");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({5, 3}));
    Tensor idx = b.param(ir::i32({4}));
    ir::GatherDims d{.offset_dims = {1},
                     .collapsed_slice_dims = {0},
                     .operand_batching_dims = {},
                     .start_indices_batching_dims = {},
                     .start_index_map = {0},
                     .index_vector_dim = 1};
    return ir::gather(x, idx, d, {1, 3});
  });
  std::vector<std::vector<Literal>> examples;
  std::vector<std::vector<int64_t>> rows{{0, 4, 1, 1}, {3, 3, 9, 0}, {2, 1, 0, -1}};
  for (size_t b = 0; b < 3; ++b)
    examples.push_back({random_f64({5, 3}, 7 + b), ints(Type(ElementType::i32, {4}), rows[b])});
  expect_vmap_equals_loop(m, f, examples, {std::nullopt, 0}, {1}, "shared operand", interpreted(m));
  ir::Module m2("gather_both");
  const ir::Function& f2 = ir::build_function(m2, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({5, 3}));
    Tensor idx = b.param(ir::i32({4}));
    return ir::gather(x, idx, f.body().ops()[0]->attrs().get<ir::GatherDims>("dimension_numbers"), {1, 3});
  });
  expect_vmap_equals_loop(m2, f2, examples, {-1, 0}, {0}, "both batched", interpreted(m2));
}

// fft transforms trailing dimensions, so vmap puts the batch in front: a 2-D FFT of complex(x, 2x)
// and the IRFFT of the RFFT (real in and out), batched at 0 and at the last dimension.
TEST(VmapNumeric, Fft) {
  std::vector<std::vector<Literal>> examples;
  for (uint64_t b = 0; b < 3; ++b) examples.push_back({random_f64({4, 6}, 50 + b)});
  for (bool last : {false, true}) {
    ir::Module m(last ? "fft_last" : "fft_front");
    const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) -> std::vector<Tensor> {
      Tensor x = b.param(ir::f64({4, 6}));
      Tensor y = ir::fft(ir::complex(x, x * 2.0), ir::FftType::kFft, {4, 6});
      return {ir::real(y), ir::imag(y), ir::fft(ir::fft(x, ir::FftType::kRfft, {4, 6}), ir::FftType::kIrfft, {4, 6})};
    });
    if (last) expect_vmap_equals_loop(m, f, examples, {-1}, {-1, 0, -1}, "batched last", interpreted(m));
    else expect_vmap_equals_loop(m, f, examples, {0}, {0, -1, 0}, "batched at 0", interpreted(m));
  }
}

// rng_bit_generator and rng have no batched form: vmap loops over the examples (each example's
// state and bounds give its own numbers; rng's copies keep the op's position, its key), so the
// batch equals a loop of f.
TEST(VmapNumeric, RandomOpsLoopOverTheExamples) {
  std::vector<std::vector<Literal>> examples;
  for (int64_t b = 0; b < kBatch; ++b)
    examples.push_back({ints(Type(ElementType::ui64, {2}), {b + 1, 10 * b}), Literal::scalar(ElementType::f64, 2.0 * b)});
  for (bool shared_bounds : {false, true}) {
    ir::Module m(shared_bounds ? "random_shared" : "random");
    const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) -> std::vector<Tensor> {
      Tensor state = b.param(Type(ElementType::ui64, {2}));
      Tensor lo = b.param(ir::f64({}));
      std::vector<Tensor> g =
          ir::rng_bit_generator(state, ir::RngAlgorithm::kThreeFry, Type(ElementType::ui32, {2, 3}));
      Tensor shape = b.constant(ints(ir::i64({1}), {4}));
      Tensor u = ir::rng(lo, lo + 1.0, shape, ir::RngDistribution::kUniform, ir::f64({4}));
      return {g[0], g[1], u};
    });
    if (shared_bounds) expect_vmap_equals_loop(m, f, examples, {0, std::nullopt}, {0, 0, -1}, "state batched", interpreted(m));
    else expect_vmap_equals_loop(m, f, examples, {0, 0}, {0, 0, 0}, "state and bounds batched", interpreted(m));
  }
}

TEST(VmapLoops, WhileLoopWhoseExamplesStopAtDifferentIterations) {
  ir::Module m("loop");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) -> std::vector<Tensor> {
    Tensor x = b.param(ir::f64({2}));
    Tensor zero = b.scalar(ElementType::i32, 0);
    // Doubles x until its sum passes 10, counting the steps; the count depends on the example.
    std::vector<Tensor> r = ir::while_loop(
        {zero, x},
        [](ir::Builder& cb, const std::vector<Tensor>& v) {
          return ir::compare(ir::sum(v[1]), cb.scalar(ElementType::f64, 10), ir::ComparisonDirection::LT);
        },
        [](ir::Builder& bb, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + bb.scalar(ElementType::i32, 1), v[1] * 2.0};
        });
    return {ir::convert(r[0], ElementType::f64), r[1]};
  });
  std::vector<std::vector<Literal>> examples;
  for (double s : {0.3, 2.0, 7.0}) examples.push_back({Literal::from<double>(ir::f64({2}), {s, s / 2})});
  expect_vmap_equals_loop(m, f, examples, {0}, {0, -1}, "batched predicate", interpreted(m));
  ir::Module m2("shared_loop");  // a loop on a shared counter carrying a batched value
  const ir::Function& f2 = ir::build_function(m2, "f", [](FunctionBuilder& b) {
    return tanh_loop(b.param(ir::f64({2, 2})))[1];
  });
  std::vector<std::vector<Literal>> e2;
  for (uint64_t b = 0; b < 3; ++b) e2.push_back({random_f64({2, 2}, 30 + b)});
  expect_vmap_equals_loop(m2, f2, e2, {1}, {0}, "shared predicate", interpreted(m2));
}

TEST(VmapCalls, ACallBatchesItsCallee) {
  ir::Module m("call");
  const ir::Function& g = ir::build_function(m, "g", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({3}));
    return ir::tanh(x) * b.param(ir::f64({3}));
  });
  const ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({3}));
    Tensor w = b.param(ir::f64({3}));
    return ir::call(b, g, {x, w})[0] + w;
  });
  std::vector<std::vector<Literal>> examples;
  for (uint64_t b = 0; b < 3; ++b) examples.push_back({random_f64({3}, 40 + b), random_f64({3}, 45 + b)});
  expect_vmap_equals_loop(m, f, examples, {0, std::nullopt}, {0}, "call", interpreted(m));
  EXPECT_NE(m.find_function("g_vmap"), nullptr);
}

// ---- Collectives ----

struct CollectiveRow {
  std::string name;
  std::vector<int64_t> shape;
  std::function<Tensor(const Tensor&)> op;
};

std::vector<CollectiveRow> collective_rows() {
  const ir::Groups all{{0, 1, 2, 3}};
  return {
      {"all_reduce", {4, 2}, [=](const Tensor& x) { return ir::all_reduce(x, all); }},
      {"all_gather", {2, 3}, [=](const Tensor& x) { return ir::all_gather(x, 1, all); }},
      {"all_gather_pairs",
       {2, 3},
       [](const Tensor& x) {
         return ir::all_gather(x, 0, {{0, 2}, {1, 3}});
       }},
      {"reduce_scatter", {8, 3}, [=](const Tensor& x) { return ir::reduce_scatter(x, 0, all); }},
      {"all_to_all", {4, 8}, [=](const Tensor& x) { return ir::all_to_all(x, 1, 0, all); }},
      {"collective_permute",
       {3, 2},
       [](const Tensor& x) {
         return ir::collective_permute(x, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
       }},
      {"collective_broadcast",
       {3, 2},
       [](const Tensor& x) {
         return ir::collective_broadcast(x, {{1, 0, 3, 2}});
       }},
      {"collective_reduce", {3, 2},
       [](const Tensor& x) { return ir::collective_reduce(x, {{1, 0}, {3, 2}}); }},
  };
}

// f(x, w) = op(tanh(x) * w): x batched at its last dimension, w shared; a result at 0.
const ir::Function& collective_function(ir::Module& m, const CollectiveRow& row) {
  return ir::build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32(row.shape));
    Tensor w = b.param(ir::f32(row.shape));
    return row.op(ir::tanh(x) * w);
  });
}

Literal f32_random(const std::vector<int64_t>& shape, uint64_t seed) {
  Literal d = random_f64(shape, seed, -2, 2, true);  // exact in f32
  Literal out(ir::f32(shape));
  for (int64_t i = 0; i < d.num_elements(); ++i) out.set_double(i, d.get_double(i));
  return out;
}

TEST(VmapCollectives, SingleProcessInterpreterEqualsALoop) {
  for (const CollectiveRow& row : collective_rows()) {
    ir::Module m("collective");
    const ir::Function& f = collective_function(m, row);
    std::vector<std::vector<Literal>> examples;
    for (uint64_t b = 0; b < 3; ++b)
      examples.push_back({f32_random(row.shape, 70 + b), f32_random(row.shape, 80 + b)});
    expect_vmap_equals_loop(m, f, examples, {-1, std::nullopt}, {0}, row.name, interpreted(m));
  }
}

TEST(VmapCollectives, FourHostDevicesEqualALoop) {
  for (const CollectiveRow& row : collective_rows()) {
    // collective_reduce's channel form groups replicas and partitions together: it needs a grid of
    // more than one replica, so it is checked in the single-process interpreter only.
    if (row.name == "collective_reduce") continue;
    ir::Module m("collective");
    const ir::Function& f = collective_function(m, row);
    // Each device its own examples: run the 4 devices once per example and once batched.
    std::vector<std::vector<std::vector<Literal>>> per_device(4);  // [device][example][param]
    for (uint64_t d = 0; d < 4; ++d)
      for (uint64_t b = 0; b < 3; ++b)
        per_device[d].push_back({f32_random(row.shape, 100 + 10 * d + b), f32_random(row.shape, 200 + d)});
    VmapOptions o;
    o.in_axes = {-1, std::nullopt};
    o.batch_size = kBatch;
    const ir::Function& g = vmap(m, f, o);
    ASSERT_NO_THROW(ir::verify(m));
    auto on_4 = [&](const std::string& fn, std::vector<Literal> inputs) {
      return comm::run_parallel(m, {{fn, fn, fn, fn}}, std::move(inputs));
    };
    std::vector<Literal> batched_inputs;
    for (const auto& dev : per_device) {
      std::vector<Literal> column;
      for (const auto& e : dev) column.push_back(e[0]);
      batched_inputs.push_back(stack(column, static_cast<int64_t>(row.shape.size())));
      batched_inputs.push_back(dev[0][1]);
    }
    std::vector<Literal> got = on_4(g.name(), batched_inputs);
    for (int64_t b = 0; b < kBatch; ++b) {
      std::vector<Literal> inputs;
      for (const auto& dev : per_device) inputs.insert(inputs.end(), dev[b].begin(), dev[b].end());
      std::vector<Literal> want = on_4(f.name(), inputs);
      for (size_t d = 0; d < 4; ++d)
        expect_near(unstack(got[d], 0, b), want[d],
                    row.name + ", device " + std::to_string(d) + ", example " + std::to_string(b));
    }
  }
}

// ---- Per-example gradients: vmap of reverse ----

TEST(VmapOfReverse, PerExampleGradientsOfAnMlpEqualALoopOfGradients) {
  ir::Module m("per_example");
  const ir::Function& loss = ir::build_function(m, "loss", [](FunctionBuilder& b) {
    Tensor w1 = b.param(ir::f64({4, 5}));
    Tensor w2 = b.param(ir::f64({5, 2}));
    Tensor x = b.param(ir::f64({1, 4}));
    Tensor y = b.param(ir::f64({1, 2}));
    Tensor out = ir::matmul(ir::tanh(ir::matmul(x, w1)), w2) - y;
    return ir::sum(out * out) * 0.5;
  });
  ReverseOptions o;
  o.wrt = {0, 1};
  const ir::Function& grad = reverse(m, loss, o);  // (w1, w2, x, y) -> (dw1, dw2)
  std::vector<std::vector<Literal>> examples;
  Literal w1 = random_f64({4, 5}, 1, -1, 1), w2 = random_f64({5, 2}, 2, -1, 1);
  for (uint64_t b = 0; b < 3; ++b)
    examples.push_back({w1, w2, random_f64({1, 4}, 10 + b), random_f64({1, 2}, 20 + b)});
  expect_vmap_equals_loop(m, grad, examples, {std::nullopt, std::nullopt, 0, 0}, {0, 0},
                          "per-example gradients", interpreted(m));
  // The per-example gradients differ (so the check above is not one gradient compared thrice).
  std::vector<Literal> a = interp::evaluate(m, "loss_grad", examples[0]),
                       c = interp::evaluate(m, "loss_grad", examples[1]);
  EXPECT_NE(a[0], c[0]);
}

// ---- Signature, shardings, errors ----

TEST(VmapSignature, ShardingsGainAReplicatedBatchDimensionAtTheirAxis) {
  ir::Module m = row_module("sharded");
  ir::Sharding rows{"m", {{"x"}, {}}, {}, {}};
  ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({4, 2}), rows);
    Tensor w = b.param(ir::f32({2, 3}));
    return ir::constrain(ir::matmul(x, w), rows);
  });
  f.set_result_sharding(0, rows);
  VmapOptions o;
  o.in_axes = {1, std::nullopt};
  o.out_axes = {-1};
  o.batch_size = 5;
  const ir::Function& g = vmap(m, f, o);
  ASSERT_NO_THROW(ir::verify(m));
  EXPECT_EQ(g.name(), "f_vmap");
  EXPECT_EQ(g.parameter(0)->type(), ir::f32({4, 5, 2}));
  EXPECT_EQ(g.parameter(1)->type(), ir::f32({2, 3}));
  EXPECT_EQ(g.arg_sharding(0), (ir::Sharding{"m", {{"x"}, {}, {}}, {}, {}}));
  EXPECT_EQ(g.arg_sharding(1), std::nullopt);
  EXPECT_EQ(g.result_types[0], ir::f32({4, 3, 5}));
  EXPECT_EQ(g.result_sharding(0), (ir::Sharding{"m", {{"x"}, {}, {}}, {}, {}}));
}

// The batched forms of Shardy's explicit collectives: per-dimension axes and out_sharding gain an
// empty (replicated) dimension 0, all_reduce's axes stay, all_to_all's dimensions shift by one.
// (Their numbers cannot tell: each is the identity on the global value.)
TEST(VmapSignature, ShardyExplicitCollectivesGainABatchDimensionInFront) {
  ir::Module m = row_module("sdy");
  auto on_m = [](std::vector<ir::DimSharding> dims) { return ir::Sharding{"m", std::move(dims), {}, {}}; };
  ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = ir::constrain(b.param(ir::f32({4, 2})), on_m({{"x"}, {"y"}}));
    Tensor g = ir::sdy_all_gather(x, {{"x"}, {}}, on_m({{}, {"y"}}));
    Tensor t = ir::sdy_all_to_all(g, {{{"y"}, 1, 0}}, on_m({{"y"}, {}}));
    return ir::sdy_all_reduce(t, {"x"}, on_m({{"y"}, {}}));
  });
  VmapOptions o;
  o.batch_size = 3;
  const ir::Function& v = vmap(m, f, o);
  ASSERT_NO_THROW(ir::verify(m));
  std::map<OpKind, const ir::Op*> ops;
  for (const auto& op : v.body().ops()) ops[op->kind()] = op.get();
  ASSERT_TRUE(ops.count(OpKind::SdyAllGather) && ops.count(OpKind::SdyAllToAll) && ops.count(OpKind::SdyAllReduce));
  const ir::AttrMap& g = ops[OpKind::SdyAllGather]->attrs();
  EXPECT_EQ(g.get<ir::Sharding>("gathering_axes"), on_m({{}, {"x"}, {}}));
  EXPECT_EQ(g.get<ir::Sharding>("out_sharding"), on_m({{}, {}, {"y"}}));
  const ir::AttrMap& t = ops[OpKind::SdyAllToAll]->attrs();
  EXPECT_EQ(t.get<ir::Sharding>("params"), on_m({{"y"}}));
  EXPECT_EQ(t.get<ir::IntMatrix>("param_dims"), ir::IntMatrix::from_rows({{2, 1}}));
  EXPECT_EQ(t.get<ir::Sharding>("out_sharding"), on_m({{}, {"y"}, {}}));
  const ir::AttrMap& r = ops[OpKind::SdyAllReduce]->attrs();
  EXPECT_EQ(r.get<ir::Sharding>("reduction_axes"), on_m({{"x"}}));
  EXPECT_EQ(r.get<ir::Sharding>("out_sharding"), on_m({{}, {"y"}, {}}));
}

TEST(VmapErrors, UnsupportedOpsAreNamed) {
  ir::Module m("errors");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({3}));
    ir::AttrMap a;
    a.set("call_target_name", std::string("my_kernel"));
    return b.emit1(OpKind::CustomCall, {x}, a, {ir::f32({3})});
  });
  VmapOptions o;
  o.batch_size = 2;
  std::string msg = message_of([&] { vmap(m, f, o); });
  EXPECT_NE(msg.find("cannot vmap stablehlo.custom_call"), std::string::npos) << msg;
  EXPECT_NE(msg.find("my_kernel"), std::string::npos) << msg;
  EXPECT_EQ(m.find_function("f_vmap"), nullptr);  // nothing half-built stays behind
  // With x shared, the custom call sees no batched value and is copied as it is.
  o.in_axes = {std::nullopt};
  EXPECT_EQ(message_of([&] { vmap(m, f, o); }),
            "vmap of @f: no parameter is batched (every in_axes entry is nullopt)");
}

TEST(VmapErrors, MismatchedBatchSizesAreRefused) {
  ir::Module m("sizes");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({2}));
    return x + b.param(ir::f32({2}));
  });
  VmapOptions o;
  o.in_axes = {0, 1};
  o.in_types = {ir::f32({3, 2}), ir::f32({2, 4})};
  std::string msg = message_of([&] { vmap(m, f, o); });
  EXPECT_EQ(msg,
            "vmap of @f: batch sizes disagree: parameter 1 has 4 examples (dimension 1 of tensor<2x4xf32>), "
            "but parameter 0 has 3")
      << msg;
  o.in_types = {ir::f32({3, 2}), ir::f32({2, 3})};
  const ir::Function& g = vmap(m, f, o);  // agreeing sizes: the batch size is read from them
  EXPECT_EQ(g.result_types[0], ir::f32({3, 2}));
  o.in_types = {};
  o.name = "unknown";
  EXPECT_NE(message_of([&] { vmap(m, f, o); }).find("the batch size is unknown"), std::string::npos);
  o.out_axes = {std::nullopt};
  o.batch_size = 3;
  o.name = "shared_result";
  EXPECT_NE(message_of([&] { vmap(m, f, o); }).find("result 0 depends on the batched parameters"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::autodiff::testing
