// The reverse, forward and vmap rules of stablehlo.if and stablehlo.case.
//
// A branch takes no arguments: it reads values from around the op (its captures), so the
// transforms hand those captures to these rules as implicit operands after the predicate or index
// (implicit_operands). Each branch is differentiated as a program of its own: it is copied into a
// scratch function of the captures, reverse() or forward() differentiates that function (nested
// ifs, whiles and every other op on their own rules), and the result is copied back as the branch
// of a new if/case on the same predicate, which therefore runs the transpose (or the tangent) of
// exactly the branch the forward ran. vmap with a shared predicate batches each branch; with a
// batched one it runs every branch and selects per example (JAX's rule).
#include "autodiff/forward.h"
#include "autodiff/jvp_rules.h"
#include "autodiff/reverse.h"
#include "autodiff/rules.h"
#include "autodiff/scratch.h"
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

using ir::OpKind;
using ir::Value;

std::vector<const Value*> implicit_operands(const ir::Op& op) {
  if (op.kind() != OpKind::If && op.kind() != OpKind::Case) return {};
  return ir::captures_of(op);
}

namespace {

// Branch r of `op` as a function of `captures` (its parameters, in order).
ir::Function& branch_function(Scratch& s, const ir::Op& op, size_t r, const std::vector<const Value*>& captures) {
  ir::Function& fn = s.m.add_function(fresh_name(s.m, fmt::format("tessera.{}.branch{}", op.name(), r)));
  s.fns.push_back(&fn);
  ir::ValueMap map;
  for (const Value* v : captures) map[v] = fn.add_parameter(v->type());
  const ir::Block& from = op.region(r);
  for (const auto& inner : from.ops())
    if (inner.get() != from.terminator()) ir::clone_op(fn.body(), *inner, map);
  std::vector<Value*> results;
  for (Value* v : from.terminator()->operands()) results.push_back(map.count(v) ? map.at(v) : v);
  fn.set_results(results);
  return fn;
}

void finish(ir::Block& block, const std::vector<Tensor>& values) {
  std::vector<Value*> vs;
  for (const Tensor& t : values) vs.push_back(t.value());
  block.append(std::make_unique<ir::Op>(OpKind::Return, vs, std::vector<ir::Type>{}));
}

// The op again on the same predicate or index, branch r computed by `branch(r, builder)`.
std::vector<Tensor> branch_again(ir::Builder& b, const ir::Op& op, const Tensor& selector, const std::vector<ir::Type>& types,
                                 const std::function<std::vector<Tensor>(size_t, ir::Builder&)>& branch) {
  return b.emit_with_regions(op.kind(), {selector}, {}, types, [&](ir::Op& copy) {
    for (size_t r = 0; r < op.regions().size(); ++r) {
      ir::Block& block = copy.add_region();
      ir::Builder rb(b.module(), block);
      finish(block, branch(r, rb));
    }
  });
}

// x̄_captured = if(pred, vjp(true_branch)(ȳ), vjp(false_branch)(ȳ)); case alike
void vjp_branches(VjpContext& c) {
  std::vector<const Value*> captures = implicit_operands(c.op);
  std::vector<size_t> wrt;  // float captures, by position in `captures`
  for (size_t j = 0; j < captures.size(); ++j)
    if (is_differentiable(captures[j]->type())) wrt.push_back(j);
  if (wrt.empty()) return;
  const ir::Op& op = c.op;
  ir::Module& m = c.b.module();
  Scratch s{m, {}};
  std::vector<const ir::Function*> grads;
  for (size_t r = 0; r < op.regions().size(); ++r) {
    ir::Function& fn = branch_function(s, op, r, captures);
    ReverseOptions o;
    o.wrt = wrt;
    o.name = fresh_name(m, fn.name() + ".grad");
    grads.push_back(&reverse(m, fn, o));
    s.fns.push_back(grads.back());
  }
  // reverse() seeds a function returning one float scalar (a loss) with 1 and takes no cotangent.
  bool loss = op.num_results() == 1 && op.result(0)->type().rank() == 0 && is_differentiable(op.result(0)->type());
  std::vector<ir::Type> types;
  for (size_t j : wrt) types.push_back(captures[j]->type());
  std::vector<Tensor> cots = branch_again(c.b, op, c.x(0), types, [&](size_t r, ir::Builder& rb) {
    std::vector<Tensor> args;
    for (size_t j = 0; j < captures.size(); ++j) args.push_back(c.x(1 + j));
    if (!loss)
      for (size_t k = 0; k < op.num_results(); ++k) args.push_back(c.dy(k));
    std::vector<Tensor> g = inline_function(rb, *grads[r], args);
    if (loss)
      for (Tensor& t : g) t = t * ir::broadcast_to(c.dy(0), t.shape());
    return g;
  });
  for (size_t i = 0; i < wrt.size(); ++i) c.add(1 + wrt[i], cots[i]);
}

// ẏ = if(pred, jvp(true_branch)(ẋ_captured), jvp(false_branch)(ẋ_captured)); case alike
void jvp_branches(JvpContext& c) {
  std::vector<const Value*> captures = implicit_operands(c.op);
  const ir::Op& op = c.op;
  ir::Module& m = c.b.module();
  Scratch s{m, {}};
  std::vector<const ir::Function*> jvps;
  for (size_t r = 0; r < op.regions().size(); ++r) {
    ir::Function& fn = branch_function(s, op, r, captures);
    jvps.push_back(&forward(m, fn, ForwardOptions{fresh_name(m, fn.name() + ".jvp")}));
    s.fns.push_back(jvps.back());
  }
  std::vector<size_t> outs;  // the float results, which have tangents
  std::vector<ir::Type> types;
  for (size_t k = 0; k < op.num_results(); ++k)
    if (is_differentiable(op.result(k)->type())) {
      outs.push_back(k);
      types.push_back(op.result(k)->type());
    }
  if (outs.empty()) return;
  std::vector<Tensor> dys = branch_again(c.b, op, c.x(0), types, [&](size_t r, ir::Builder& rb) {
    std::vector<Tensor> args;
    for (size_t j = 0; j < captures.size(); ++j) args.push_back(c.x(1 + j));
    for (size_t j = 0; j < captures.size(); ++j)
      if (is_differentiable(captures[j]->type())) args.push_back(c.dx(1 + j));
    std::vector<Tensor> all = inline_function(rb, *jvps[r], args);
    return std::vector<Tensor>(all.begin() + static_cast<long>(op.num_results()), all.end());
  });
  for (size_t i = 0; i < outs.size(); ++i) c.set(outs[i], dys[i]);
}

// A shared predicate: if(pred, true_branch[b], false_branch[b]), results batched where either
// branch's is. A batched one: select(pred[b], true_branch[b], false_branch[b]), every branch run
// (case: branch index[b], the last when out of range).
void vmap_branches(VmapContext& c) {
  const ir::Op& op = c.op;
  size_t n = op.num_results(), branches = op.regions().size();
  if (c.batched(0)) {
    std::vector<std::vector<Tensor>> outs;
    for (size_t r = 0; r < branches; ++r) {
      outs.emplace_back();
      for (const BValue& v : vmap_block(c.b, op.region(r), c.env, {}))
        outs.back().push_back(v.batched ? v.value : batch_broadcast(v.value, c.batch()));
    }
    for (size_t k = 0; k < n; ++k) {
      std::vector<int64_t> shape = c.batched_type(c.result_type(k)).shape;
      auto taken = [&](const Tensor& mask) { return ir::broadcast_in_dim(mask, shape, {0}); };
      Tensor y = outs[branches - 1][k];
      if (op.kind() == OpKind::If) {
        y = ir::select(taken(c.x(0)), outs[0][k], y);
      } else {
        for (size_t r = branches - 1; r-- > 0;) {
          Tensor at = c.b.scalar(ir::ElementType::i32, static_cast<double>(r));
          Tensor is_r = ir::compare(c.x(0), ir::broadcast_to(at, c.x(0).shape()), ir::ComparisonDirection::EQ);
          y = ir::select(taken(is_r), outs[r][k], y);
        }
      }
      c.set(k, y);
    }
    return;
  }
  // Which results come out batched: a scratch pass over each branch.
  std::vector<bool> flags(n, false);
  for (size_t r = 0; r < branches; ++r) {
    ir::Block scratch;
    ir::Builder sb(c.b.module(), scratch);
    std::vector<BValue> outs = vmap_block(sb, op.region(r), c.env, {});
    for (size_t k = 0; k < n; ++k) flags[k] = flags[k] || outs[k].batched;
  }
  std::vector<ir::Type> types;
  for (size_t k = 0; k < n; ++k) types.push_back(flags[k] ? c.batched_type(c.result_type(k)) : c.result_type(k));
  std::vector<Tensor> ys = branch_again(c.b, op, c.x(0), types, [&](size_t r, ir::Builder& rb) {
    std::vector<Tensor> out;
    std::vector<BValue> outs = vmap_block(rb, op.region(r), c.env, {});
    for (size_t k = 0; k < n; ++k)
      out.push_back(flags[k] && !outs[k].batched ? batch_broadcast(outs[k].value, c.batch()) : outs[k].value);
    return out;
  });
  for (size_t k = 0; k < n; ++k) c.set(k, ys[k], flags[k]);
}

}  // namespace

void vjp_If(VjpContext& c) { vjp_branches(c); }
void vjp_Case(VjpContext& c) { vjp_branches(c); }
void jvp_If(JvpContext& c) { jvp_branches(c); }
void jvp_Case(JvpContext& c) { jvp_branches(c); }
void vmap_If(VmapContext& c) { vmap_branches(c); }
void vmap_Case(VmapContext& c) { vmap_branches(c); }

}  // namespace tessera::autodiff
