// Internal to the interpreter: what a kernel sees (EvalContext), the kernel table expanded from
// ops.def, and the helpers the kernel files share (index iteration, element copies, conversion of
// single elements, scalar bodies of reduce/scatter/collectives, slicing and concatenation).
//
// One kernel per row of ops.def, declared here through the table, so an op without a kernel fails
// to link. Kernels take their operands from the context and return the op's results.
#pragma once

#include <complex>
#include <cstring>
#include <span>
#include <unordered_map>
#include <vector>

#include "interp/interpreter.h"
#include "support/error.h"

namespace tessera::interp {

// The values visible in a block: its own and, through `parent`, those of enclosing blocks (a while
// body may use values defined above it).
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_map<const ir::Value*, ir::Literal> values;
  const ir::Literal& lookup(const ir::Value* v) const;
};

// Options with the collectives resolved (never null).
struct RunState {
  ProcessInfo process;
  Collectives* collectives;
  const ir::Module* module;  // may be null
  const Options* options;    // the caller's, for nested calls and the harness hooks
};

// Runs `block` on `args` (one per block argument) and returns the operands of its return.
std::vector<ir::Literal> run_block(const ir::Block& block, std::vector<ir::Literal> args,
                                   const Scope* parent, const RunState& state);

class EvalContext {
 public:
  // The op's operands looked up in `scope`.
  EvalContext(const ir::Op& op, const Scope& scope, const RunState& state);
  // The op's operands given (one per operand, alive while the kernel runs); its regions see the
  // values of `scope` around them (exec::Executable passes the values its regions capture).
  EvalContext(const ir::Op& op, std::span<const ir::Literal* const> operands, const Scope& scope,
              const RunState& state);

  const ir::Op& op;
  const RunState& state;

  size_t num_operands() const { return operands_.size(); }
  const ir::Literal& operand(size_t i) const {
    TESSERA_CHECK(i < operands_.size(), "{}: operand {} of {}", op.name(), i, operands_.size());
    return *operands_[i];
  }
  std::span<const ir::Literal* const> operands() const { return operands_; }
  const ir::Type& result_type(size_t i = 0) const { return op.result(i)->type(); }
  // Runs region `i` of the op on `args`; the region sees the values around the op.
  std::vector<ir::Literal> run_region(size_t i, std::vector<ir::Literal> args) const;

  // A UserError that starts with the op's name.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    support::fail("{}: {}", op.name(), fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const Scope& scope_;
  std::vector<const ir::Literal*> looked_up_;  // the first constructor's operands
  std::span<const ir::Literal* const> operands_;
};

using Results = std::vector<ir::Literal>;

// The reference kernel of each op kind (the table expanded from ops.def): what run_block calls, and
// what exec::Executable resolves its steps to when no fast kernel applies.
using Kernel = Results (*)(const EvalContext&);
Kernel kernel(ir::OpKind kind);
// Whether op `kind`'s reference kernel is still pending (it refuses by name; kernels_pending.cpp).
bool kernel_pending(ir::OpKind kind);
// Checks a kernel's results against the op's declared types (an InternalError: a kernel bug).
void check_results(const ir::Op& op, const Results& results);

inline Results one(ir::Literal x) {
  Results r;
  r.push_back(std::move(x));
  return r;
}

#define OP(e, spelling, arity, traits) Results eval_##e(const EvalContext& ctx);
#include "ir/ops.def"
#undef OP

// Runs function @name of the interpreter's module on the op's operands (func.call, and
// stablehlo.composite's decomposition); `what` says how the op names it in messages ("calls",
// "has decomposition").
Results call_function(const EvalContext& ctx, const std::string& name, std::string_view what);

// ---- Indices and elements ----

// Calls fn(index) for every index of `shape` in row-major order (none when a dimension is 0).
template <typename F>
void for_each_index(std::span<const int64_t> shape, F&& fn) {
  for (int64_t d : shape)
    if (d == 0) return;
  std::vector<int64_t> index(shape.size(), 0);
  while (true) {
    fn(static_cast<const std::vector<int64_t>&>(index));
    size_t d = shape.size();
    while (d > 0 && ++index[d - 1] == shape[d - 1]) index[--d] = 0;
    if (d == 0) return;
  }
}

inline int64_t flat_index(std::span<const int64_t> index, std::span<const int64_t> strides) {
  int64_t f = 0;
  for (size_t d = 0; d < index.size(); ++d) f += index[d] * strides[d];
  return f;
}

// Copies element i of src to element j of dst; both have one element type.
inline void copy_element(const ir::Literal& src, int64_t i, ir::Literal& dst, int64_t j) {
  size_t n = static_cast<size_t>(ir::info(src.element()).bytes);
  std::memcpy(dst.bytes().data() + static_cast<size_t>(j) * n,
              src.bytes().data() + static_cast<size_t>(i) * n, n);
}

// An integer element as an index, saturated to int64 (a huge ui64 stays huge, then clamps).
int64_t index_value(const ir::Literal& x, int64_t i);

// ---- Single elements of any type (kernels_convert.cpp) ----

// An element value in a form that holds every element type exactly.
struct Scalar {
  ir::ElementKind kind = ir::ElementKind::Signed;
  int64_t i = 0;                // Bool (0/1) and Signed
  uint64_t u = 0;               // Unsigned
  std::complex<double> c = 0;   // Float (real part) and Complex
};
Scalar read_scalar(const ir::Literal& x, int64_t i);
// Stores v into element i with stablehlo.convert's rules (wrapping, saturating, rounding once).
void write_scalar(ir::Literal& x, int64_t i, const Scalar& v);
// Element i of src into element j of dst, converting when their element types differ.
void convert_element(const ir::Literal& src, int64_t i, ir::Literal& dst, int64_t j);

// ---- Bodies applied to scalars (interpreter.cpp) ----

// A binary elementwise op on two elements stored at lhs and rhs, result stored at out (which may
// alias lhs). Null when `kind` is not such an op for `e` (kernels_elementwise.cpp).
using ScalarFn = void (*)(const std::byte* lhs, const std::byte* rhs, std::byte* out);
ScalarFn scalar_binary(ir::OpKind kind, ir::ElementType e);

// A region of scalars: (acc_0..acc_n-1, x_0..x_n-1) -> (acc_0..acc_n-1), the body of reduce,
// scatter and the reducing collectives. apply() folds elements into accumulators in place. A body
// that is a single binary elementwise op on its two arguments runs that op's scalar kernel
// directly; any other body is interpreted once per element.
class ScalarBody {
 public:
  ScalarBody(const EvalContext& ctx, size_t region, size_t n);
  // acc[k][ia] = body(acc..[ia], xs..[ix])[k] for k < n.
  void apply(std::span<ir::Literal> acc, int64_t ia, std::span<const ir::Literal* const> xs,
             int64_t ix) const;
  // The body applied elementwise to two arrays of one type (a Combiner).
  ir::Literal combine(const ir::Literal& lhs, const ir::Literal& rhs) const;

 private:
  const EvalContext& ctx_;
  size_t region_, n_;
  ScalarFn fast_ = nullptr;
  bool swapped_ = false;  // the single op reads (rhs, lhs)
};

// ---- Accumulation domains of dot_general and convolution (kernels_reduce.cpp, kernels_window.cpp) ----

// An operand with its elements read once in the accumulation domain Acc: uint64_t for integers
// (wrapping), double for floats, complex<double> for complex numbers.
template <typename Acc>
std::vector<Acc> elements_as(const ir::Literal& x) {
  std::vector<Acc> out(static_cast<size_t>(x.num_elements()));
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    Scalar s = read_scalar(x, i);
    if constexpr (std::is_same_v<Acc, uint64_t>)
      out[static_cast<size_t>(i)] = s.kind == ir::ElementKind::Unsigned ? s.u
                                    : s.kind == ir::ElementKind::Float || s.kind == ir::ElementKind::Complex
                                        ? static_cast<uint64_t>(ir::float_to_int<ir::Elem<ir::ElementType::i64>>(s.c.real()))
                                        : static_cast<uint64_t>(s.i);
    else if constexpr (std::is_same_v<Acc, double>)
      out[static_cast<size_t>(i)] = s.kind == ir::ElementKind::Unsigned ? static_cast<double>(s.u)
                                    : s.kind == ir::ElementKind::Float    ? s.c.real()
                                                                          : static_cast<double>(s.i);
    else
      out[static_cast<size_t>(i)] = s.kind == ir::ElementKind::Unsigned ? Acc(static_cast<double>(s.u))
                                    : s.kind == ir::ElementKind::Signed || s.kind == ir::ElementKind::Bool
                                        ? Acc(static_cast<double>(s.i))
                                        : s.c;
  }
  return out;
}

// A result element from an accumulator.
inline Scalar scalar_of(uint64_t v, ir::ElementType e) {
  Scalar s;
  s.kind = ir::is_unsigned_integer(e) ? ir::ElementKind::Unsigned : ir::ElementKind::Signed;
  s.u = v;
  s.i = static_cast<int64_t>(v);
  return s;
}
inline Scalar scalar_of(double v, ir::ElementType) {
  Scalar s;
  s.kind = ir::ElementKind::Float;
  s.c = v;
  return s;
}
inline Scalar scalar_of(std::complex<double> v, ir::ElementType) {
  Scalar s;
  s.kind = ir::ElementKind::Complex;
  s.c = v;
  return s;
}

// ---- Array helpers shared with the collectives (kernels_movement.cpp) ----

// x[start:limit] with unit strides.
ir::Literal slice_literal(const ir::Literal& x, std::span<const int64_t> start,
                          std::span<const int64_t> limit);
// The block `index` of `count` equal blocks of x along `dim`.
ir::Literal block_of(const ir::Literal& x, int64_t dim, int64_t index, int64_t count);
// xs concatenated along dim.
ir::Literal concatenate_literals(std::span<const ir::Literal* const> xs, int64_t dim);
// `n` copies of x concatenated along dim.
ir::Literal repeat_literal(const ir::Literal& x, int64_t dim, int64_t n);
// x written into `into` at offset `start` (the update of dynamic_update_slice, not clamped).
void write_block(const ir::Literal& x, ir::Literal& into, std::span<const int64_t> start);

}  // namespace tessera::interp
