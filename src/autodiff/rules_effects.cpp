// The VJP, JVP and vmap rules of tokens, tuples, composite, map and the streaming ops.
//
// Tokens carry no data, so nothing flows through after_all and create_token, and they are never
// batched. Tuples are the HLO ABI's legacy grouping, which JAX never differentiates through: a
// cotangent or tangent that would have to flow through one is refused by name (values that do not
// reach the loss pass). composite is differentiated and batched through its decomposition, as JAX
// does: the function is transformed on its own rules and inlined. map(f, x...) is vmap(f) over the
// flattened inputs, so its VJP and JVP are those of that batched function, reshaped back; a
// batched map is a map over one more dimension. infeed's values come from outside the program, like
// its inputs or constants: they have no gradient and no tangent, and the op is kept as written (the
// transformed program reads the infeed once, where the original did). outfeed writes primal values
// and gives a token: nothing flows through it. Neither has a batching rule (JAX has none either): a
// batched outfeed would write one value per example, in an order nobody defined, so it is refused
// by name. infeed's only operand is a token, which is never batched, so vmap copies it as it is
// (the rule is not asked): the batched program reads the infeed once and every example shares the
// values, as JAX binds a primitive without batched inputs once.
#include "autodiff/forward.h"
#include "autodiff/jvp_rules.h"
#include "autodiff/reverse.h"
#include "autodiff/rules.h"
#include "autodiff/scratch.h"
#include "autodiff/vmap.h"
#include "autodiff/vmap_rules.h"
#include "ir/builder_effects.h"
#include "ir/clone.h"
#include "ir/effects.h"

namespace tessera::autodiff {

using ir::OpKind;
using ir::Value;

namespace {

constexpr std::string_view kTupleWhy =
    "tuples are the HLO ABI's grouping of values and carry no cotangent or tangent; pass the "
    "members as separate values";

const ir::Function& decomposition(ir::Module& m, const ir::Op& op) {
  std::optional<std::string> name = ir::decomposition_of(op.attrs());
  const ir::Function* f = name ? m.find_function(*name) : nullptr;
  if (f == nullptr) refuse(op, fmt::format("its decomposition @{} is not in the module", name.value_or("?")));
  return *f;
}

// map's computation as a function of one scalar per input (refused when it reads values from
// around the op: map applies a closed function per element).
ir::Function& computation_function(Scratch& s, const ir::Op& op) {
  if (!ir::captures_of(op).empty())
    refuse(op, "its computation reads values defined outside it; map applies a closed function per element");
  ir::Function& fn = s.m.add_function(fresh_name(s.m, "tessera.map.computation"));
  s.fns.push_back(&fn);
  ir::ValueMap map;
  const ir::Block& from = op.region(0);
  for (const auto& a : from.arguments()) map[a.get()] = fn.add_parameter(a->type());
  for (const auto& inner : from.ops())
    if (inner.get() != from.terminator()) ir::clone_op(fn.body(), *inner, map);
  std::vector<Value*> results;
  for (Value* v : from.terminator()->operands()) results.push_back(map.count(v) ? map.at(v) : v);
  fn.set_results(results);
  return fn;
}

// The computation batched over the flattened inputs: [n] x N -> [n].
ir::Function& flat_map_function(Scratch& s, const ir::Op& op) {
  ir::Function& g = computation_function(s, op);
  VmapOptions o;
  o.batch_size = op.result(0)->type().num_elements();
  o.name = fresh_name(s.m, g.name() + ".vmap");
  ir::Function& gv = vmap(s.m, g, o);
  s.fns.push_back(&gv);
  return gv;
}

Tensor flat(const Tensor& x) { return ir::reshape(x, {x.type().num_elements()}); }

}  // namespace

// Tokens: no data, no cotangent, no tangent.
void vjp_AfterAll(VjpContext&) {}
void vjp_CreateToken(VjpContext&) {}
void jvp_AfterAll(JvpContext&) {}
void jvp_CreateToken(JvpContext&) {}
// Tokens are never batched (only tensors are): the op again, shared by every example.
void vmap_AfterAll(VmapContext& c) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_operands(); ++i) xs.push_back(c.x(i));
  c.set(0, ir::after_all(c.b, xs), false);
}
void vmap_CreateToken(VmapContext& c) { c.set(0, ir::create_token(c.b), false); }

// Nothing flows back unless the tuple (or its member) reaches the loss; then it is refused.
void vjp_Tuple(VjpContext& c) {
  if (c.has_cotangent(0)) c.fail("{}", kTupleWhy);
}
void vjp_GetTupleElement(VjpContext& c) {
  if (c.has_cotangent(0) && is_differentiable(c.y(0).type())) c.fail("{}", kTupleWhy);
}
void jvp_Tuple(JvpContext& c) {
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (c.has_tangent(i)) c.fail("{}", kTupleWhy);
}
void jvp_GetTupleElement(JvpContext& c) {
  if (c.has_tangent(0)) c.fail("{}", kTupleWhy);
}
void vmap_Tuple(VmapContext& c) { c.fail("{}", "tuples are the HLO ABI's grouping of values; batch their members"); }
void vmap_GetTupleElement(VmapContext& c) {
  c.fail("{}", "tuples are the HLO ABI's grouping of values; batch their members");
}

// x̄ = vjp(decomposition)(x, ȳ), the decomposition inlined
void vjp_Composite(VjpContext& c) { vjp_through(c, decomposition(c.b.module(), c.op)); }

void vjp_through(VjpContext& c, const ir::Function& d) {
  ir::Module& m = c.b.module();
  std::vector<size_t> wrt;
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (is_differentiable(c.x(i).type())) wrt.push_back(i);
  bool any = false;
  for (size_t k = 0; k < c.num_results(); ++k) any = any || c.has_cotangent(k);
  if (wrt.empty() || !any) return;
  for (size_t k = 0; k < c.num_results(); ++k)
    if (!c.y(k).type().is_tensor()) c.fail("result {} is {}, which carries no cotangent", k, to_string(c.y(k).type()));
  Scratch s{m, {}};
  ReverseOptions o;
  o.wrt = wrt;
  o.name = fresh_name(m, "tessera.composite." + d.name() + ".grad");
  const ir::Function& grad = reverse(m, d, o);
  s.fns.push_back(&grad);
  // reverse() seeds a function returning one float scalar (a loss) with 1 and takes no cotangent.
  bool loss = c.num_results() == 1 && c.y(0).type().rank() == 0 && is_differentiable(c.y(0).type());
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_operands(); ++i) args.push_back(c.x(i));
  if (!loss)
    for (size_t k = 0; k < c.num_results(); ++k) args.push_back(c.dy(k));
  std::vector<Tensor> g = inline_function(c.b, grad, args);
  for (size_t i = 0; i < wrt.size(); ++i) c.add(wrt[i], loss ? g[i] * ir::broadcast_to(c.dy(0), g[i].shape()) : g[i]);
}

// ẏ = jvp(decomposition)(x, ẋ), inlined
void jvp_Composite(JvpContext& c) { jvp_through(c, decomposition(c.b.module(), c.op)); }

void jvp_through(JvpContext& c, const ir::Function& d) {
  ir::Module& m = c.b.module();
  Scratch s{m, {}};
  const ir::Function& jvp = forward(m, d, ForwardOptions{fresh_name(m, "tessera.composite." + d.name() + ".jvp")});
  s.fns.push_back(&jvp);
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_operands(); ++i) args.push_back(c.x(i));
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (is_differentiable(c.x(i).type())) args.push_back(c.dx(i));
  std::vector<Tensor> all = inline_function(c.b, jvp, args);
  size_t t = c.num_results();
  for (size_t k = 0; k < c.num_results(); ++k)
    if (is_differentiable(c.y(k).type())) c.set(k, all.at(t++));
}

// composite(x)[b] = call @decomposition_vmap(x[b])
void vmap_Composite(VmapContext& c) { vmap_through(c, decomposition(c.b.module(), c.op), false); }

void vmap_through(VmapContext& c, const ir::Function& d, bool inline_it) {
  ir::Module& m = c.b.module();
  VmapOptions o;
  o.batch_size = c.batch();
  for (size_t i = 0; i < c.num_operands(); ++i)
    o.in_axes.push_back(c.batched(i) ? std::optional<int64_t>(0) : std::nullopt);
  o.name = fresh_name(m, d.name() + "_vmap");
  const ir::Function& g = vmap(m, d, o);
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_operands(); ++i) args.push_back(c.x(i));
  if (inline_it) {
    Scratch s{m, {&g}};
    std::vector<Tensor> ys = inline_function(c.b, g, args);
    for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
    return;
  }
  std::vector<Tensor> ys = ir::call(c.b, g, args);
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}

// x̄ = reshape(vjp(vmap(computation))(flat(x), flat(ȳ)))
void vjp_Map(VjpContext& c) {
  std::vector<size_t> wrt;
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (is_differentiable(c.x(i).type())) wrt.push_back(i);
  if (wrt.empty() || !c.has_cotangent(0) || !is_differentiable(c.y(0).type())) return;
  ir::Module& m = c.b.module();
  Scratch s{m, {}};
  ir::Function& gv = flat_map_function(s, c.op);
  ReverseOptions o;
  o.wrt = wrt;
  o.name = fresh_name(m, gv.name() + ".grad");
  const ir::Function& grad = reverse(m, gv, o);
  s.fns.push_back(&grad);
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_operands(); ++i) args.push_back(flat(c.x(i)));
  args.push_back(flat(c.dy(0)));
  std::vector<Tensor> g = inline_function(c.b, grad, args);
  for (size_t i = 0; i < wrt.size(); ++i) c.add(wrt[i], ir::reshape(g[i], c.x(wrt[i]).shape()));
}

// ẏ = reshape(jvp(vmap(computation))(flat(x), flat(ẋ)))
void jvp_Map(JvpContext& c) {
  if (!is_differentiable(c.y(0).type())) return;
  ir::Module& m = c.b.module();
  Scratch s{m, {}};
  ir::Function& gv = flat_map_function(s, c.op);
  const ir::Function& jvp = forward(m, gv, ForwardOptions{fresh_name(m, gv.name() + ".jvp")});
  s.fns.push_back(&jvp);
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_operands(); ++i) args.push_back(flat(c.x(i)));
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (is_differentiable(c.x(i).type())) args.push_back(flat(c.dx(i)));
  std::vector<Tensor> all = inline_function(c.b, jvp, args);
  c.set(0, ir::reshape(all.at(1), c.y(0).shape()));
}

// map(f, x)[b] = map(f, x[b]) over one more dimension (shared inputs broadcast)
void vmap_Map(VmapContext& c) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_operands(); ++i) xs.push_back(c.bx(i));
  ir::AttrMap attrs = c.op.attrs();
  std::vector<int64_t> dims(static_cast<size_t>(xs[0].rank()));
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
  attrs.set("dimensions", dims);
  c.set(0, c.again(xs, attrs)[0]);
}

// chlo.scan is a loop: like while, reversing it needs every step's carries saved. JAX never emits
// it (it lowers lax.scan to while), so it stays undifferentiated, with that said.
void vjp_Scan(VjpContext& c) {
  refuse(c.op, "scans are not differentiated yet (the reverse pass would need every step's carries); "
               "unroll the scan, or keep its results out of the loss");
}
void jvp_Scan(JvpContext& c) {
  refuse(c.op, "scans are not differentiated yet (the tangent scan would carry a tangent per carry); "
               "unroll the scan, or keep its results out of the loss");
}

// send and recv move values between processes (or to and from the host) on a channel: JAX has no
// derivative for them, and a batched program would send one message per example in no defined
// order.
void vjp_Send(VjpContext& c) { refuse(c.op, "messages between processes are not differentiated"); }
void jvp_Send(JvpContext& c) { refuse(c.op, "messages between processes are not differentiated"); }
void vjp_Recv(VjpContext& c) { refuse(c.op, "messages between processes are not differentiated"); }
void jvp_Recv(JvpContext& c) { refuse(c.op, "messages between processes are not differentiated"); }
void vmap_Send(VmapContext& c) {
  c.fail("{}", "it sends its values as one message on its channel; send the batch as one value instead");
}
void vmap_Recv(VmapContext& c) {
  c.fail("{}", "it receives one message on its channel; receive the batch as one value instead");
}

// Values read from the infeed are leaves: no cotangent flows back, no tangent out.
void vjp_Infeed(VjpContext&) {}
void jvp_Infeed(JvpContext&) {}
// outfeed's token carries no data and its inputs are written, not used: nothing flows.
void vjp_Outfeed(VjpContext&) {}
void jvp_Outfeed(JvpContext&) {}
void vmap_Infeed(VmapContext& c) {
  c.fail("{}", "it reads the next value of the infeed; a batched program would read one per example, in no "
               "defined order (read the batch as one value instead)");
}
void vmap_Outfeed(VmapContext& c) {
  c.fail("{}", "it writes its values to the outfeed; a batched program would write one per example, in no "
               "defined order (write the batch as one value instead)");
}

// async_start/async_done carry a collective or a slice as a future; JAX never emits them (XLA makes
// collectives asynchronous after differentiation), so a cotangent or tangent through one is refused.
constexpr const char* kAsyncWhy =
    "it runs its collective or slice asynchronously, which programs get after differentiation; differentiate "
    "the program with the operation written synchronously";
void vjp_AsyncStart(VjpContext& c) {
  if (c.has_cotangent(0)) c.fail("{}", kAsyncWhy);
}
void vjp_AsyncDone(VjpContext& c) {
  for (size_t i = 0; i < c.op.num_results(); ++i)
    if (c.has_cotangent(i)) c.fail("{}", kAsyncWhy);
}
void jvp_AsyncStart(JvpContext& c) {
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (c.has_tangent(i)) c.fail("{}", kAsyncWhy);
}
void jvp_AsyncDone(JvpContext& c) {
  if (c.has_tangent(0)) c.fail("{}", kAsyncWhy);
}
void vmap_AsyncStart(VmapContext& c) { c.fail("{}", "a future's body is not batched; batch the synchronous operation"); }
void vmap_AsyncDone(VmapContext& c) { c.fail("{}", "a future's body is not batched; batch the synchronous operation"); }

// interpreter.probe is the identity (it writes its operand to a file on the side).
void vjp_Probe(VjpContext& c) {
  if (c.has_cotangent(0)) c.add(0, c.dy(0));
}
void jvp_Probe(JvpContext& c) { c.set(0, c.tangent(0)); }
void vmap_Probe(VmapContext& c) { c.set(0, c.again({c.x(0)})[0]); }
// check.expect_serialized_eq has no results: nothing flows through it.
void vjp_ExpectSerializedEq(VjpContext&) {}
void jvp_ExpectSerializedEq(JvpContext&) {}
void vmap_ExpectSerializedEq(VmapContext& c) { c.fail("a check of a batched value is not batched; check each example"); }

}  // namespace tessera::autodiff
