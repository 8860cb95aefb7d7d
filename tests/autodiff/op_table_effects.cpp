// Rows of the op table (op_table.h) for the ops differentiated through a function or region:
// stablehlo.composite (through its decomposition) and stablehlo.map (its computation batched over
// the elements), with two inputs and with one.
#include "ir/builder_effects.h"
#include "op_table.h"

namespace tessera::autodiff::testing {

using ir::FunctionBuilder;

namespace {

using P = const std::vector<Tensor>&;

// @decomp(x, y) = sin(x)·y + x·x, made once per module.
const ir::Function& decomposition(ir::Module& m, const ir::Type& t) {
  std::string name = "decomp." + ir::to_string(t);
  if (const ir::Function* f = m.find_function(name)) return *f;
  return ir::build_function(m, name, [&](FunctionBuilder& g) {
    Tensor x = g.param(t), y = g.param(t);
    return ir::sin(x) * y + x * x;
  });
}

}  // namespace

std::vector<Row> effects_rows() {
  return {
      {"composite", {OpKind::Composite}, {{{2, 3}}, {{2, 3}}},
       [](FunctionBuilder& f, P p) {
         return ir::composite(f, "test.sin_mul", decomposition(f.module(), p[0].type()), {p[0], p[1]})[0];
       }},
      {"map_two_inputs", {OpKind::Map}, {{{2, 3}}, {{2, 3}}},
       [](FunctionBuilder&, P p) {
         return ir::map({p[0], p[1]}, p[0].element(), [](ir::Builder&, const std::vector<Tensor>& a) {
           return ir::exp(a[0]) * a[1] - a[1] * a[1];
         });
       }},
      {"map_scalar", {OpKind::Map}, {{{}}},
       [](FunctionBuilder&, P p) {
         return ir::map({p[0]}, p[0].element(), [](ir::Builder&, const std::vector<Tensor>& a) { return ir::tanh(a[0]); });
       }},
  };
}

}  // namespace tessera::autodiff::testing
