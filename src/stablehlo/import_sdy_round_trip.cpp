// Shardy's round-trip form (import_gspmd.h): how JAX serializes a Shardy module, with the sdy
// attributes as strings in `mhlo.frontend_attributes` so that a StableHLO-only reader keeps them.
//   module attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22a\22=2]>}"}}
//   %arg0 {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22a\22}, {}]>"}}
//   custom_call @xla.sdy.FuncResultSharding(%r) {... xla.sdy.sharding = "#sdy.sharding_per_value<[...]>"}
//   custom_call @Sharding(%x) {... xla.sdy.sharding = ...}                  (a sharding constraint)
//   %l = custom_call @xla.sdy.GlobalToLocalShape(%g...)                    (shard_map's fence,
//   %b = call @xla.sdy.manual_computation_body(%l...)                       in_shardings, out_shardings
//   %o = custom_call @xla.sdy.LocalToGlobalShape(%b...)                     and manual_axes on one of them;
//   %o = custom_call @xla.sdy.ManualComputation(%g...) {called_computations = [@body]}  newer exports)
//   custom_call @xla.sdy.ShardingGroup(%x) {... xla.sdy.sharding_group_id = "0 : i64"}
// become sdy.mesh declarations, sdy.sharding attributes, result shardings, sdy.sharding_constraint
// sdy.manual_computation (its body the call) and sdy.sharding_group. The GSPMD import that follows then sees a Shardy
// module and drops the `mhlo.sharding` strings the export also wrote.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/clone.h"
#include "ir/effects.h"
#include "stablehlo/import_gspmd.h"
#include "stablehlo/parse_attrs.h"

namespace tessera::stablehlo {
namespace {

constexpr std::string_view kFrontend = "mhlo.frontend_attributes";

// The target without the "local_" prefix some pipelines add.
std::string target_of(const ir::Op& op) {
  if (op.kind() != ir::OpKind::CustomCall) return "";
  std::string t = op.attrs().get_or<std::string>("call_target_name", "");
  return t.rfind("local_", 0) == 0 ? t.substr(6) : t;
}

// Some exports escaped the strings twice (`\\\22` in the text, `\"` once read), as XLA's reader,
// which C-unescapes them before parsing, allows: `\"` and `\\` are read as `"` and `\`.
std::string unescaped(const std::string& s) {
  if (s.find('\\') == std::string::npos) return s;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '"' || s[i + 1] == '\\')) ++i;
    out += s[i];
  }
  return out;
}

class RoundTrip {
 public:
  RoundTrip(ir::Module& m, std::string file) : m_(m), file_(std::move(file)) {}

  void run() {
    if (auto fe = frontend(m_.attrs, {}, "the module"); fe && fe->has("xla.sdy.meshes")) {
      const std::string* text = fe->find<std::string>("xla.sdy.meshes");
      if (text == nullptr) fail({}, "the module", "xla.sdy.meshes is not a string");
      meshes(*text);
      drop_sdy_keys(m_.attrs, *fe);
      // The module is Shardy's: the GSPMD strings the export also wrote say the same or less, and
      // may name a maximal device the import would refuse.
      for (auto& fn : m_.functions) {
        for (auto& attrs : fn->arg_attrs) attrs.erase("mhlo.sharding");
        for (auto& attrs : fn->result_attrs) attrs.erase("mhlo.sharding");
      }
    }
    for (auto& fn : m_.functions) {
      for (size_t i = 0; i < fn->arg_attrs.size(); ++i) argument_or_result(fn->arg_attrs[i], fn->loc);
      for (auto& attrs : fn->result_attrs) argument_or_result(attrs, fn->loc);
      block(*fn, fn->body());
    }
    if (replaced_.empty() && dead_.empty()) return;
    for (auto& fn : m_.functions) ir::replace_uses(fn->body(), replaced_);
    for (auto& fn : m_.functions) ir::erase_ops(fn->body(), [&](const ir::Op& op) { return dead_.count(&op) > 0; });
  }

 private:
  [[noreturn]] void fail(ir::SourceLoc loc, const std::string& what, const std::string& why) const {
    throw ParseError(file_, loc.line, loc.column, fmt::format("{}: {}", what, why));
  }

  // The entries of an `mhlo.frontend_attributes` dictionary (kept as its text by the parser).
  std::optional<ir::AttrMap> frontend(const ir::AttrMap& attrs, ir::SourceLoc loc, const std::string& what) const {
    const ir::Opaque* text = attrs.find<ir::Opaque>(std::string(kFrontend));
    if (text == nullptr) return std::nullopt;
    try {
      Lexer lx(text->text, file_);
      return parse_attr_dict(lx);
    } catch (const support::UserError& e) {
      fail(loc, what, fmt::format("{} cannot be read: {}", kFrontend, e.what()));
    }
  }

  // A string entry read as Shardy's attribute text by `read`.
  template <class T, class Read>
  T decode(const ir::AttrMap& fe, const std::string& key, ir::SourceLoc loc, const std::string& what, Read read) const {
    const std::string* s = fe.find<std::string>(key);
    if (s == nullptr) fail(loc, what, fmt::format("{} has no string {}", kFrontend, key));
    try {
      const std::string text = unescaped(*s);  // the lexer reads it in place
      Lexer lx(text, file_);
      lx.module = &m_;  // a mesh written inline in a sharding is declared in the module
      T value = read(lx);
      if (!lx.at_end()) lx.error("text after the attribute");
      return value;
    } catch (const support::UserError& e) {
      fail(loc, what, fmt::format("{} \"{}\": {}", key, *s, e.what()));
    }
  }
  ir::ShardingList per_value(const ir::AttrMap& fe, const std::string& key, ir::SourceLoc loc,
                             const std::string& what) const {
    return decode<ir::ShardingList>(fe, key, loc, what, [](Lexer& lx) {
      lx.expect("#sdy.sharding_per_value");
      lx.expect("<");
      ir::ShardingList l = parse_sharding_list(lx);
      lx.expect(">");
      return l;
    });
  }

  static void drop_sdy_keys(ir::AttrMap& attrs, const ir::AttrMap& fe) {
    bool only_sdy = true;
    for (const auto& [k, v] : fe) only_sdy = only_sdy && k.rfind("xla.sdy.", 0) == 0;
    if (only_sdy) attrs.erase(std::string(kFrontend));
  }

  void meshes(const std::string& text) {
    try {
      const std::string plain = unescaped(text);  // the lexer reads it in place
      Lexer lx(plain, file_);
      lx.expect("{");
      lx.list_until("}", [&] {
        std::string name = lx.peek() == '"' ? lx.string_literal() : lx.identifier();
        lx.expect("=");
        lx.expect("#sdy.mesh");
        ir::Mesh mesh = parse_mesh_body(lx, name);
        // A maximal mesh (no axes: the whole value on one device) splits nothing; the shardings
        // that name it are dropped, which leaves the values as they are.
        if (mesh.axes.empty()) maximal_.insert(name);
        else m_.add_mesh(std::move(mesh));
      });
    } catch (const support::UserError& e) {
      fail({}, "the module", fmt::format("xla.sdy.meshes \"{}\": {}", text, e.what()));
    }
  }

  void argument_or_result(ir::AttrMap& attrs, ir::SourceLoc loc) {
    auto fe = frontend(attrs, loc, "a function argument or result");
    if (!fe) return;
    if (fe->has("xla.sdy.sharding")) {
      ir::Sharding s = decode<ir::Sharding>(*fe, "xla.sdy.sharding", loc, "a function argument or result", [](Lexer& lx) {
        lx.expect("#sdy.sharding");
        lx.expect("<");
        return parse_sharding_body(lx);
      });
      if (!maximal_.count(s.mesh)) attrs.set("sdy.sharding", std::move(s));
    }
    drop_sdy_keys(attrs, *fe);
  }

  void block(ir::Function& fn, ir::Block& b) {
    std::vector<ir::Op*> ops;  // constraints and manual computations are inserted as we go
    for (const auto& up : b.ops()) ops.push_back(up.get());
    for (ir::Op* each : ops) {
      ir::Op& op = *each;
      if (dead_.count(&op)) continue;  // a body's call or fence, already taken in
      for (const auto& r : op.regions()) block(fn, *r);
      std::string t = target_of(op);
      auto fe = frontend(op.attrs(), op.loc, std::string(op.name()));
      if (t == "xla.sdy.FuncResultSharding") {
        result_sharding(fn, b, op, fe);
      } else if (t == "xla.sdy.ShardingGroup") {
        sharding_group(fn, b, op, fe);
      } else if (t == "xla.sdy.PropagationBarrier") {  // only guides propagation: the identity
        if (op.num_results() != op.operands().size())
          fail(op.loc, "custom_call @xla.sdy.PropagationBarrier", "has not as many results as operands");
        for (size_t i = 0; i < op.num_results(); ++i) replaced_[op.result(i)] = op.operand(i);
        dead_.insert(&op);
      } else if (t == "xla.sdy.GlobalToLocalShape") {
        manual(b, op, fe);
      } else if (t == "xla.sdy.LocalToGlobalShape") {  // a shard_map without inputs: no GlobalToLocalShape
        manual_without_inputs(b, op);
      } else if (t == "xla.sdy.ManualComputation") {
        manual_call(b, op, fe);
      } else if (ir::is_sharding_call(op) && fe && fe->has("xla.sdy.sharding")) {
        constraint(b, op, *fe);
      } else if (fe) {
        drop_sdy_keys(op.attrs(), *fe);  // an op's own sharding (a propagation hint) or rule: dropped
      }
    }
  }

  // `custom_call @xla.sdy.ShardingGroup(%x...) {xla.sdy.sharding_group_id = "21 : i64"}`: an
  // sdy.sharding_group of each operand. Its result (none, or an empty tuple) has no value, and
  // nothing may read it, as XLA's import requires.
  void sharding_group(ir::Function& fn, ir::Block& b, ir::Op& op, const std::optional<ir::AttrMap>& fe) {
    const std::string what = "custom_call @xla.sdy.ShardingGroup";
    for (ir::Value* r : op.results())
      if (read_by_other_than(fn.body(), r, nullptr)) fail(op.loc, what, "its result is read, but a sharding group gives no value");
    if (!fe || !fe->has("xla.sdy.sharding_group_id")) fail(op.loc, what, "has no xla.sdy.sharding_group_id");
    int64_t id = decode<int64_t>(*fe, "xla.sdy.sharding_group_id", op.loc, what, [](Lexer& lx) {
      int64_t v = lx.integer();
      if (lx.try_consume(":")) lx.identifier();  // its type, i64
      return v;
    });
    for (ir::Value* v : op.operands()) {
      ir::AttrMap attrs;
      attrs.set("group_id", id);
      auto g = std::make_unique<ir::Op>(ir::OpKind::ShardingGroup, std::vector<ir::Value*>{v}, std::vector<ir::Type>{},
                                        std::move(attrs));
      g->loc = op.loc;
      b.insert_before(&op, std::move(g));
    }
    dead_.insert(&op);
  }

  // Whether any op of `b` (regions included) but `skip` reads `v`.
  static bool read_by_other_than(const ir::Block& b, const ir::Value* v, const ir::Op* skip) {
    for (const auto& op : b.ops()) {
      if (op.get() != skip && std::find(op->operands().begin(), op->operands().end(), v) != op->operands().end())
        return true;
      for (const auto& r : op->regions())
        if (read_by_other_than(*r, v, skip)) return true;
    }
    return false;
  }

  // The sharding a function result takes where this call's value is returned. A value other ops
  // read too (a function inlined into another left its result's sharding inside) keeps the layout
  // as a sharding constraint, as XLA's import does; otherwise the call is the identity.
  void result_sharding(ir::Function& fn, ir::Block& b, ir::Op& op, const std::optional<ir::AttrMap>& fe) {
    const std::string what = "custom_call @xla.sdy.FuncResultSharding";
    if (op.operands().size() != op.num_results()) fail(op.loc, what, "takes as many operands as it has results");
    ir::ShardingList s;
    if (fe && fe->has("xla.sdy.sharding")) s = per_value(*fe, "xla.sdy.sharding", op.loc, what);
    if (!s.empty() && s.size() != op.num_results())
      fail(op.loc, what, fmt::format("gives {} shardings for {} values", s.size(), op.num_results()));
    const ir::Op* ret = fn.body().terminator();
    for (size_t i = 0; i < op.num_results(); ++i) {
      bool returned = false;
      if (ret != nullptr && op.parent == &fn.body())
        for (size_t k = 0; k < ret->operands().size(); ++k)
          if (ret->operand(k) == op.result(i) && k < fn.result_attrs.size() && !s.empty() && !maximal_.count(s[i].mesh)) {
            fn.set_result_sharding(k, s[i]);
            returned = true;
          }
      bool other_readers = read_by_other_than(fn.body(), op.result(i), ret);
      if (!s.empty() && !maximal_.count(s[i].mesh) && op.result(i)->type().is_tensor() && (other_readers || !returned))
        replaced_[op.result(i)] = constrain(b, op, op.operand(i), s[i]);
      else
        replaced_[op.result(i)] = op.operand(i);
    }
    dead_.insert(&op);
  }

  // A sharding_constraint of `v` to `s`, placed before `at`.
  static ir::Value* constrain(ir::Block& b, const ir::Op& at, ir::Value* v, const ir::Sharding& s) {
    ir::AttrMap attrs;
    attrs.set("sharding", s);
    auto c = std::make_unique<ir::Op>(ir::OpKind::ShardingConstraint, std::vector<ir::Value*>{v},
                                      std::vector<ir::Type>{v->type()}, std::move(attrs));
    c->loc = at.loc;
    return b.insert_before(&at, std::move(c))->result(0);
  }

  void constraint(ir::Block& b, ir::Op& op, const ir::AttrMap& fe) {
    const std::string what = "custom_call @Sharding";
    ir::ShardingList s = per_value(fe, "xla.sdy.sharding", op.loc, what);
    if (op.operands().size() != 1 || op.num_results() != 1 || s.size() != 1 || !op.operand(0)->type().is_tensor())
      fail(op.loc, what, "takes 1 tensor operand and 1 result with 1 sharding");
    replaced_[op.result(0)] = maximal_.count(s[0].mesh) ? op.operand(0) : constrain(b, op, op.operand(0), s[0]);
    dead_.insert(&op);
  }

  // The op in `b` that reads every value of `values`, in order, and nothing else.
  ir::Op* sole_reader(ir::Block& b, const std::vector<ir::Value*>& values) const {
    for (const auto& op : b.ops())
      if (op->operands() == values) return op.get();
    return nullptr;
  }

  // shard_map's fences: GlobalToLocalShape, then each call of the body reading exactly its results
  // (a body may be called more than once on them), each followed by its LocalToGlobalShape.
  void manual(ir::Block& b, ir::Op& g2l, const std::optional<ir::AttrMap>& g2l_fe) {
    const std::string what = "custom_call @xla.sdy.GlobalToLocalShape";
    std::vector<ir::Op*> calls;
    for (const auto& op : b.ops())
      if (op->kind() == ir::OpKind::Call && op->operands() == g2l.results() && !dead_.count(op.get())) calls.push_back(op.get());
    if (calls.empty()) fail(g2l.loc, what, "is not followed by a call of the body reading exactly its results");
    for (ir::Op* call : calls) fenced(b, &g2l, g2l_fe, *call);
    dead_.insert(&g2l);
  }

  // A LocalToGlobalShape no GlobalToLocalShape came before: the body's call takes no operands.
  void manual_without_inputs(ir::Block& b, ir::Op& l2g) {
    const ir::Op* def = l2g.operands().empty() ? nullptr : l2g.operand(0)->defining_op();
    if (def == nullptr || def->kind() != ir::OpKind::Call || !def->operands().empty() || def->results() != l2g.operands())
      fail(l2g.loc, "custom_call @xla.sdy.LocalToGlobalShape",
           "does not take, all and in order, the results of a shard_map body's call");
    fenced(b, nullptr, std::nullopt, *const_cast<ir::Op*>(def));
  }

  void fenced(ir::Block& b, ir::Op* g2l, const std::optional<ir::AttrMap>& g2l_fe, ir::Op& call) {
    const std::string what = "custom_call @xla.sdy.GlobalToLocalShape";
    const ir::SourceLoc at = g2l ? g2l->loc : call.loc;
    // A body without results has no LocalToGlobalShape.
    ir::Op* l2g = call.num_results() == 0 ? nullptr : sole_reader(b, call.results());
    if (call.num_results() > 0 &&
        (l2g == nullptr || target_of(*l2g) != "xla.sdy.LocalToGlobalShape" || l2g->num_results() != call.num_results()))
      fail(call.loc, "func.call", "the shard_map body's results do not go, all and in order, to xla.sdy.LocalToGlobalShape");
    // The attributes sit on the fences (older exports) or on the call (newer ones).
    auto call_fe = frontend(call.attrs(), call.loc, "func.call");
    std::optional<ir::AttrMap> l2g_fe;
    if (l2g) l2g_fe = frontend(l2g->attrs(), l2g->loc, "custom_call @xla.sdy.LocalToGlobalShape");
    const std::pair<const std::optional<ir::AttrMap>*, ir::SourceLoc> holders[] = {
        {&g2l_fe, at}, {&call_fe, call.loc}, {&l2g_fe, l2g ? l2g->loc : call.loc}};
    Manual m = manual_attrs(holders, at, what, g2l != nullptr, l2g != nullptr);
    std::vector<ir::Value*> operands = g2l ? g2l->operands() : std::vector<ir::Value*>{};
    std::vector<ir::Type> locals;
    if (g2l)
      for (ir::Value* v : g2l->results()) locals.push_back(v->type());
    const ir::Op& place = l2g ? *l2g : call;
    ir::Op* made = manual_computation(b, place, operands, locals, l2g ? l2g->result_types() : std::vector<ir::Type>{}, std::move(m), [&](ir::Block& region) {
      ir::ValueMap map;
      if (g2l)
        for (size_t i = 0; i < g2l->num_results(); ++i) map[g2l->result(i)] = region.argument(i);
      ir::Op* body_call = ir::clone_op(region, call, map);
      if (call_fe) drop_sdy_keys(body_call->attrs(), *call_fe);
      return body_call->results();
    });
    made->loc = at;
    if (l2g) {
      for (size_t i = 0; i < l2g->num_results(); ++i) replaced_[l2g->result(i)] = made->result(i);
      dead_.insert(l2g);
    }
    dead_.insert(&call);
  }

  // Newer exports: `custom_call @xla.sdy.ManualComputation(%x...) {called_computations = [@body],
  // mhlo.frontend_attributes = {xla.sdy.in_shardings, out_shardings, manual_axes}}`, the body a
  // function of the local pieces.
  void manual_call(ir::Block& b, ir::Op& op, const std::optional<ir::AttrMap>& fe) {
    const std::string what = "custom_call @xla.sdy.ManualComputation";
    std::optional<std::vector<std::string>> callees;
    for (const auto& [k, v] : op.attrs())
      if (k == "called_computations") callees = ir::symbol_list_of(v);
    if (!callees || callees->size() != 1) fail(op.loc, what, "needs called_computations = [@body], one function");
    const ir::Function* body = m_.find_function((*callees)[0]);
    if (body == nullptr) fail(op.loc, what, fmt::format("calls @{}, which the module does not define", (*callees)[0]));
    const std::pair<const std::optional<ir::AttrMap>*, ir::SourceLoc> holders[] = {{&fe, op.loc}};
    Manual m = manual_attrs(holders, op.loc, what, !op.operands().empty(), op.num_results() > 0);
    std::vector<ir::Type> locals;
    for (size_t i = 0; i < body->num_parameters(); ++i) locals.push_back(body->parameter(i)->type());
    if (locals.size() != op.operands().size())
      fail(op.loc, what, fmt::format("passes {} values to @{}, which takes {}", op.operands().size(), body->name(), locals.size()));
    ir::Op* made = manual_computation(b, op, op.operands(), locals, op.result_types(), std::move(m), [&](ir::Block& region) {
      ir::AttrMap attrs;
      attrs.set("callee", body->name());
      std::vector<ir::Value*> args;
      for (const auto& a : region.arguments()) args.push_back(a.get());
      auto call = std::make_unique<ir::Op>(ir::OpKind::Call, args, body->result_types, std::move(attrs));
      call->loc = op.loc;
      return region.append(std::move(call))->results();
    });
    made->loc = op.loc;
    for (size_t i = 0; i < op.num_results(); ++i) replaced_[op.result(i)] = made->result(i);
    dead_.insert(&op);
  }

  struct Manual {
    ir::ShardingList in, out;
    ir::AxisNames axes;
  };

  template <size_t N>
  Manual manual_attrs(const std::pair<const std::optional<ir::AttrMap>*, ir::SourceLoc> (&holders)[N], ir::SourceLoc at,
                      const std::string& what, bool inputs = true, bool outputs = true) const {
    auto find = [&](const std::string& key) -> std::pair<const ir::AttrMap*, ir::SourceLoc> {
      for (const auto& [fe, loc] : holders)
        if (*fe && (*fe)->has(key)) return {&**fe, loc};
      return {nullptr, at};
    };
    auto pick = [&](const std::string& key) {
      auto found = find(key);
      if (found.first == nullptr) fail(at, what, fmt::format("no {} on the fences or the body's call", key));
      return found;
    };
    Manual m;
    // Without inputs (or outputs) the export may leave their empty list out.
    auto [in_fe, in_loc] = inputs ? pick("xla.sdy.in_shardings") : find("xla.sdy.in_shardings");
    auto [out_fe, out_loc] = outputs ? pick("xla.sdy.out_shardings") : find("xla.sdy.out_shardings");
    auto [axes_fe, axes_loc] = pick("xla.sdy.manual_axes");
    if (in_fe) m.in = per_value(*in_fe, "xla.sdy.in_shardings", in_loc, what);
    if (out_fe) m.out = per_value(*out_fe, "xla.sdy.out_shardings", out_loc, what);
    m.axes = decode<ir::AxisNames>(*axes_fe, "xla.sdy.manual_axes", axes_loc, what, [](Lexer& lx) {
      lx.expect("#sdy");
      lx.expect("<");
      lx.expect("manual_axes");
      ir::AxisNames a = parse_axis_names(lx);
      lx.expect(">");
      return a;
    });
    return m;
  }

  // An sdy.manual_computation of `operands` before `at`, its region taking `locals` and returning
  // what `fill` puts in it.
  template <class Fill>
  ir::Op* manual_computation(ir::Block& b, const ir::Op& at, const std::vector<ir::Value*>& operands,
                             const std::vector<ir::Type>& locals, const std::vector<ir::Type>& results, Manual m, Fill fill) {
    auto region = std::make_unique<ir::Block>();
    for (const ir::Type& t : locals) region->add_argument(t);
    std::vector<ir::Value*> returned = fill(*region);
    auto ret = std::make_unique<ir::Op>(ir::OpKind::Return, returned, std::vector<ir::Type>{});
    ret->loc = at.loc;
    region->append(std::move(ret));
    ir::AttrMap attrs;
    attrs.set("in_shardings", std::move(m.in));
    attrs.set("out_shardings", std::move(m.out));
    attrs.set("manual_axes", std::move(m.axes));
    auto op = std::make_unique<ir::Op>(ir::OpKind::ManualComputation, operands, results, std::move(attrs));
    op->adopt_region(std::move(region));
    return b.insert_before(&at, std::move(op));
  }

  ir::Module& m_;
  std::string file_;
  ir::ValueMap replaced_;
  std::unordered_set<const ir::Op*> dead_;
  std::unordered_set<std::string> maximal_;  // meshes without axes
};

}  // namespace

void import_sdy_round_trip(ir::Module& module, const std::string& file) { RoundTrip(module, file).run(); }

}  // namespace tessera::stablehlo
