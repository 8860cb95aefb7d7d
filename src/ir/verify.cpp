// Module verification: shape rules, SSA dominance, terminators and shardings, with messages that
// name the function and the op.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "ir/effects.h"
#include "ir/manual_mesh.h"
#include "ir/module.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"
#include "support/error.h"

namespace tessera::ir {
namespace {

// Declared types may be less precise than inferred ones before shape refinement: a '?' declared
// where the rule knows the size (or the reverse), as MLIR's compatible types.
bool refines(const std::vector<Type>& inferred, const std::vector<Type>& declared) {
  if (inferred == declared) return true;
  if (inferred.size() != declared.size()) return false;
  for (size_t i = 0; i < inferred.size(); ++i) {
    const Type &a = inferred[i], &b = declared[i];
    if (a == b) continue;
    if (a.is_static() && b.is_static()) return false;
    if (!a.is_tensor() || !b.is_tensor() || a.element != b.element || a.rank() != b.rank()) return false;
    for (int64_t d = 0; d < a.rank(); ++d)
      if (a.dim(d) != kDynamic && b.dim(d) != kDynamic && a.dim(d) != b.dim(d)) return false;
  }
  return true;
}

using support::fail;

struct Verifier {
  const Module& module;
  const Function& fn;
  std::set<const Value*> visible;
  std::vector<std::string> manual_;  // the manual axes of the enclosing manual_computations
  std::map<int64_t, const Value*> groups_;  // each sdy.sharding_group's first member

  // The values of a sharding group are laid out alike, so they must have one shape.
  void check_sharding_group(const Op& o, int index) {
    int64_t id = o.attrs().get<int64_t>("group_id");
    auto [it, first] = groups_.emplace(id, o.operand(0));
    if (!first && it->second->type().shape != o.operand(0)->type().shape)
      fail("@{}: op {} ({}) puts a {} into sharding group {}, whose values are {}", fn.name(), index, o.name(),
           to_string(o.operand(0)->type()), id, to_string(it->second->type()));
  }

  void check_sharding(const Sharding& s, const Type& t, const std::string& what) {
    validate(s, module.mesh(s.mesh), t, what);
  }

  // Shardy's explicit collectives: out_sharding fits the result, and the axes they move are axes
  // of its mesh (per dimension, where they are given per dimension).
  void check_explicit_collective(const Op& o, const Sharding& out, const std::string& what) {
    const Type& t = o.result(0)->type();
    check_sharding(out, t, what + ": out_sharding");
    const Mesh& mesh = module.mesh(out.mesh);
    for (const char* name : {"gathering_axes", "slicing_axes", "reduction_axes", "params"}) {
      const Sharding* axes = o.attrs().find<Sharding>(name);
      if (axes == nullptr) continue;
      for (const DimSharding& d : axes->dims)
        for (const AxisRef& a : d.axes)
          if (mesh.find_axis(a.name) == nullptr)
            fail("{}: {} names axis '{}', which mesh @{} does not have", what, name, a.name, mesh.name);
      bool per_dim = o.kind() == OpKind::SdyAllGather || o.kind() == OpKind::SdyAllSlice ||
                     o.kind() == OpKind::SdyReduceScatter;
      if (per_dim && axes->dims.size() == t.shape.size())
        check_sharding(*axes, t, what + ": " + name);
    }
  }

  void block(const Block& b, bool is_body) {
    for (const auto& a : b.arguments()) visible.insert(a.get());
    for (size_t i = 0; i < b.ops().size(); ++i) {
      const Op& op = *b.ops()[i];
      bool last = i + 1 == b.ops().size();
      if ((op.kind() == OpKind::Return) != last)
        fail("@{}: {} must end its block with a return", fn.name(), is_body ? "function" : "region");
      this->op(op, static_cast<int>(i));
    }
    if (b.ops().empty()) fail("@{}: empty block has no return", fn.name());
  }

  const Function& callee(const Op& o, int index, const std::string& name) {
    const Function* f = module.find_function(name);
    if (f == nullptr)
      fail("@{}: op {} ({}) calls @{}, which is not defined", fn.name(), index, o.name(), name);
    return *f;
  }

  void check_signature(const Op& o, int index, const std::string& what,
                       const std::vector<Type>& params, const std::vector<Type>& results) {
    if (o.operand_types() != params)
      fail("@{}: op {} ({}) passes ({}) to {}, which takes ({})", fn.name(), index, o.name(),
           shape_rules::types_string(o.operand_types()), what, shape_rules::types_string(params));
    if (o.result_types() != results)
      fail("@{}: op {} ({}) expects ({}) from {}, which returns ({})", fn.name(), index, o.name(),
           shape_rules::types_string(o.result_types()), what, shape_rules::types_string(results));
  }

  static std::vector<Type> param_types(const Function& f) {
    std::vector<Type> out;
    for (size_t i = 0; i < f.num_parameters(); ++i) out.push_back(f.parameter(i)->type());
    return out;
  }

  void check_call(const Op& o, int index) {
    const std::string& name = o.attrs().get<std::string>("callee");
    const Function& f = callee(o, index, name);
    check_signature(o, index, "@" + name, param_types(f), f.result_types);
  }

  // The operands are handed out to the programs in order, and their results come back so.
  void check_run_parallel(const Op& o, int index) {
    std::vector<Type> params, results;
    for (const auto& row : o.attrs().get<SymbolGrid>("programs").rows)
      for (const std::string& name : row) {
        const Function& f = callee(o, index, name);
        for (const Type& t : param_types(f)) params.push_back(t);
        for (const Type& t : f.result_types) results.push_back(t);
      }
    check_signature(o, index, "its programs", params, results);
    // `infeed = [@f, ...]`: each function makes the next value of the processes' infeed queue.
    for (const auto& [key, value] : o.attrs()) {
      if (key != "infeed") continue;
      std::optional<std::vector<std::string>> names = symbol_list_of(value);
      if (!names)
        fail("@{}: op {} ({}) has an infeed that is not a list of functions [@f, ...]", fn.name(), index, o.name());
      for (const std::string& name : *names) {
        const Function& f = callee(o, index, name);
        if (f.num_parameters() != 0 || f.result_types.size() != 1 || !f.result_types[0].is_tensor())
          fail("@{}: op {} ({}) fills its infeed from @{}, which takes ({}) and returns ({}); an infeed function "
               "takes nothing and returns one tensor", fn.name(), index, o.name(), name,
               shape_rules::types_string(param_types(f)), shape_rules::types_string(f.result_types));
      }
    }
  }

  // composite calls its decomposition, which must exist (C2) and take and return the op's types
  // (C3, C4).
  void check_composite(const Op& o, int index) {
    std::string name = *decomposition_of(o.attrs());  // the shape rule required it
    const Function* f = module.find_function(name);
    if (f == nullptr)
      fail("@{}: op {} ({}) has decomposition @{}, which is not defined (C2)", fn.name(), index, o.name(), name);
    if (o.operand_types() != param_types(*f))
      fail("@{}: op {} ({}) passes ({}) to its decomposition @{}, which takes ({}) (C3)", fn.name(), index,
           o.name(), shape_rules::types_string(o.operand_types()), name, shape_rules::types_string(param_types(*f)));
    if (o.result_types() != f->result_types)
      fail("@{}: op {} ({}) returns ({}) but its decomposition @{} returns ({}) (C4)", fn.name(), index, o.name(),
           shape_rules::types_string(o.result_types()), name, shape_rules::types_string(f->result_types));
  }
  static std::vector<Type> arg_types(const Block& b) {
    std::vector<Type> out;
    for (const auto& a : b.arguments()) out.push_back(a->type());
    return out;
  }
  // The types a region's return gives back; nullopt when it ends in no return (block() refuses that).
  static std::optional<std::vector<Type>> returned(const Block& b) {
    const Op* ret = b.terminator();
    if (ret == nullptr || ret->kind() != OpKind::Return) return std::nullopt;
    return ret->operand_types();
  }

  // A region of scalars: `o`'s one region (its `what`) takes `args` and returns `out`, which the
  // inputs and the result (`out_name`) need, by spec constraint `rule`.
  void check_scalar_region(const Op& o, int index, std::string_view what, const std::vector<Type>& want,
                           const std::vector<Type>& out, std::string_view out_name, std::string_view rule) {
    if (o.regions().size() != 1) fail("@{}: op {} ({}) needs one {} region", fn.name(), index, o.name(), what);
    const Block& b = o.region(0);
    const std::vector<Type> args = arg_types(b);
    if (args != want)
      fail("@{}: op {} ({}): its {} takes ({}) but the inputs need ({}) ({})", fn.name(), index, o.name(), what,
           shape_rules::types_string(args), shape_rules::types_string(want), rule);
    if (auto r = returned(b); r && *r != out)
      fail("@{}: op {} ({}): its {} returns ({}) but the {} needs ({}) ({})", fn.name(), index, o.name(), what,
           shape_rules::types_string(*r), out_name, shape_rules::types_string(out), rule);
  }
  // map's computation takes one scalar of each input's element type and returns one scalar of the
  // result's (C4).
  void check_map(const Op& o, int index) {
    std::vector<Type> want;
    for (const Value* v : o.operands()) want.push_back(v->type().with_shape({}));
    check_scalar_region(o, index, "computation", want, {o.result(0)->type().with_shape({})}, "result", "C4");
  }
  // sort's comparator takes two scalars of each input's element type and returns one i1 (C5): the
  // kernel hands it the inputs' elements.
  void check_sort(const Op& o, int index) {
    std::vector<Type> want;
    for (const Value* v : o.operands())
      for (int k = 0; k < 2; ++k) want.push_back(v->type().with_shape({}));
    check_scalar_region(o, index, "comparator", want, {Type(ElementType::i1, {})}, "comparison", "C5");
  }
  // chlo.scan's body takes each input's slice (the scanned dimension removed) and the carries, and
  // returns each output's slice and the next carries, of the carries' types.
  void check_scan(const Op& o, int index) {
    if (o.regions().size() != 1) fail("@{}: op {} ({}) needs one body region", fn.name(), index, o.name());
    std::vector<Type> operands = o.operand_types();
    auto layout = scan_layout(o.attrs(), operands, o.num_results());
    if (!std::holds_alternative<ScanLayout>(layout)) return;  // the shape rule has said why
    const ScanLayout& l = std::get<ScanLayout>(layout);
    std::vector<Type> want, out;
    for (size_t i = 0; i < l.inputs; ++i) want.push_back(erase_dim(operands[i], l.dimension));
    for (size_t k = 0; k < l.outputs; ++k) out.push_back(erase_dim(o.result(k)->type(), l.dimension));
    for (size_t c = 0; c < l.inits; ++c) {
      want.push_back(operands[l.inputs + c]);
      out.push_back(operands[l.inputs + c]);
    }
    const Block& b = o.region(0);
    const std::vector<Type> args = arg_types(b);
    if (args != want)
      fail("@{}: op {} ({}): its body takes ({}) but the input slices and carries are ({})", fn.name(), index,
           o.name(), shape_rules::types_string(args), shape_rules::types_string(want));
    if (auto r = returned(b); r && *r != out)
      fail("@{}: op {} ({}): its body returns ({}) but the output slices and carries are ({})", fn.name(), index,
           o.name(), shape_rules::types_string(*r), shape_rules::types_string(out));
  }
  // async_start: its body is one op and a return (C1), a collective or a slice (C2), applied to
  // async_start's operands in order (C3; read directly, or through the body's arguments), and the
  // future holds that op's results (C4).
  void check_async(const Op& o, int index) {
    auto where = [&] { return fmt::format("@{}: op {} ({})", fn.name(), index, o.name()); };
    if (o.regions().size() != 1) fail("{} needs one body region", where());
    const Block& b = o.region(0);
    const Op* ret = b.terminator();
    if (b.ops().size() != 2 || ret == nullptr || ret->kind() != OpKind::Return)
      fail("{}: its body must hold a single operation and a return, not {} operations (C1)", where(), b.ops().size());
    const Op& inner = *b.ops().front();
    static constexpr OpKind kAllowed[] = {OpKind::AllReduce, OpKind::AllGather, OpKind::AllToAll,
                                          OpKind::CollectivePermute, OpKind::ReduceScatter,
                                          OpKind::CollectiveBroadcast, OpKind::Slice, OpKind::DynamicSlice,
                                          OpKind::DynamicUpdateSlice};
    if (std::find(std::begin(kAllowed), std::end(kAllowed), inner.kind()) == std::end(kAllowed))
      fail("{}: its body's operation is {}, not a collective or a slice (C2)", where(), inner.name());
    bool through_args = !b.arguments().empty();
    if (inner.operands().size() != o.operands().size())
      fail("{}: its body's {} takes {} operands, async_start has {} (C3)", where(), inner.name(),
           inner.operands().size(), o.operands().size());
    for (size_t i = 0; i < o.operands().size(); ++i) {
      const Value* want = through_args ? (i < b.arguments().size() ? b.argument(i) : nullptr) : o.operand(i);
      if (inner.operand(i) != want)
        fail("{}: operand {} of its body's {} is not async_start's operand {} (C3)", where(), i, inner.name(), i);
    }
    if (ret->operand_types() != inner.result_types() || ret->operands().size() != inner.num_results())
      fail("{}: its body must return its operation's results (C1)", where());
    if (o.result(0)->type().elements != inner.result_types())
      fail("{}: returns {} but its body's {} gives ({}) (C4)", where(), to_string(o.result(0)->type()), inner.name(),
           shape_rules::types_string(inner.result_types()));
  }
  // if and case: branches take no arguments and each returns the op's result types (the spec's
  // if C1-C3, case C1-C4).
  void check_branches(const Op& o, int index) {
    size_t want = o.kind() == OpKind::If ? 2 : 0;
    if (want != 0 && o.regions().size() != want)
      fail("@{}: op {} ({}) has {} branches, not 2", fn.name(), index, o.name(), o.regions().size());
    if (o.regions().empty()) fail("@{}: op {} ({}) has no branches (C1)", fn.name(), index, o.name());
    for (size_t r = 0; r < o.regions().size(); ++r) {
      const Block& b = o.region(r);
      if (!b.arguments().empty())
        fail("@{}: op {} ({}): branch {} takes {} arguments, branches take none (C{})", fn.name(), index,
             o.name(), r, b.arguments().size(), o.kind() == OpKind::If ? 1 : 2);
      if (auto ret = returned(b); ret && *ret != o.result_types())
        fail("@{}: op {} ({}): branch {} returns ({}) but the op's results are ({}) (C{})", fn.name(), index,
             o.name(), r, shape_rules::types_string(*ret),
             shape_rules::types_string(o.result_types()), o.kind() == OpKind::If ? 3 : 4);
    }
  }

  // while: cond takes the operands' types and returns tensor<i1>, body takes and returns them
  // (C1, C2): a body returning another type would hand the next iteration values of the wrong size.
  void check_while(const Op& o, int index) {
    auto where = [&] { return fmt::format("@{}: op {} ({})", fn.name(), index, o.name()); };
    if (o.regions().size() != 2) fail("{} needs a cond and a body region", where());
    const std::vector<Type> carried = o.operand_types();
    const char* names[] = {"cond", "body"};
    for (size_t r = 0; r < 2; ++r) {
      const Block& b = o.region(r);
      if (arg_types(b) != carried)
        fail("{}: its {} takes ({}) but the loop carries ({}) (C{})", where(), names[r],
             shape_rules::types_string(arg_types(b)), shape_rules::types_string(carried), r + 1);
    }
    if (auto cond = returned(o.region(0)); cond && *cond != std::vector<Type>{Type(ElementType::i1, {})})
      fail("{}: its cond returns ({}), not tensor<i1> (C1)", where(), shape_rules::types_string(*cond));
    if (auto body = returned(o.region(1)); body && *body != carried)
      fail("{}: its body returns ({}) but the loop carries ({}) (C2)", where(), shape_rules::types_string(*body),
           shape_rules::types_string(carried));
  }

  // A reducer region (reduce's and reduce_window's body, scatter's update_computation, the
  // computation of all_reduce and reduce_scatter, select_and_scatter's scatter): for N values it
  // takes (tensor<E0>, ..., tensor<EN-1>, tensor<E0>, ..., tensor<EN-1>) and returns (tensor<E0>,
  // ..., tensor<EN-1>), each Ei the element type of result i, to which that of input i promotes
  // (same kind, no narrower): the kernels fold the inputs' elements into results of those types.
  // (Quantized values are left to their lowering.)
  void check_reducer(const Op& o, int index, size_t region, std::string_view what, const std::vector<Type>& inputs,
                     const std::vector<Type>& results, std::string_view rule) {
    auto where = [&] { return fmt::format("@{}: op {} ({}): its {}", fn.name(), index, o.name(), what); };
    if (o.regions().size() <= region) fail("{} region is missing", where());
    for (const Type& t : inputs)
      if (t.is_quantized() || !t.is_tensor()) return;
    for (const Type& t : results)
      if (t.is_quantized() || !t.is_tensor()) return;
    const Block& b = o.region(region);
    std::vector<Type> want;
    for (const Type& r : results) want.push_back(Type(r.element, {}));
    std::vector<Type> twice = want;
    twice.insert(twice.end(), want.begin(), want.end());
    const std::optional<std::vector<Type>> gives = returned(b);
    if (arg_types(b) != twice || (gives && *gives != want))
      fail("{} has type ({}) -> ({}), but its results need ({}) -> ({}) ({})", where(),
           shape_rules::types_string(arg_types(b)), shape_rules::types_string(gives.value_or(std::vector<Type>{})),
           shape_rules::types_string(twice), shape_rules::types_string(want), rule);
    for (size_t i = 0; i < inputs.size() && i < results.size(); ++i) {
      const ElementInfo &x = info(inputs[i].element), &y = info(results[i].element);
      bool same_kind = x.kind == y.kind || (is_integer(inputs[i].element) && is_integer(results[i].element));
      if (!same_kind || x.bits > y.bits)
        fail("{} works on {}, to which input {} of {} does not promote ({})", where(), spelling(results[i].element),
             i, to_string(inputs[i]), rule);
    }
  }
  // select_and_scatter's select compares two of the operand's elements (C9).
  void check_select(const Op& o, int index) {
    if (o.regions().size() != 2) fail("@{}: op {} ({}) needs a select and a scatter region", fn.name(), index, o.name());
    const Type& x = o.operand(0)->type();
    if (!x.is_tensor() || x.is_quantized()) return;
    const std::vector<Type> want = {x.with_shape({}), x.with_shape({})}, out = {Type(ElementType::i1, {})};
    const Block& b = o.region(0);
    const std::optional<std::vector<Type>> gives = returned(b);
    if (arg_types(b) != want || (gives && *gives != out))
      fail("@{}: op {} ({}): its select has type ({}) -> ({}), but the operand needs ({}) -> ({}) (C9)", fn.name(),
           index, o.name(), shape_rules::types_string(arg_types(b)),
           shape_rules::types_string(gives.value_or(std::vector<Type>{})), shape_rules::types_string(want),
           shape_rules::types_string(out));
  }
  void check_reducers(const Op& o, int index) {
    const std::vector<Type> operands = o.operand_types();
    const std::vector<Type> results = o.result_types();
    const size_t n = results.size();
    auto first = [&](size_t k) { return std::vector<Type>(operands.begin(), operands.begin() + static_cast<ptrdiff_t>(std::min(k, operands.size()))); };
    switch (o.kind()) {
      case OpKind::Reduce: check_reducer(o, index, 0, "body", first(n), results, "C6"); break;
      case OpKind::ReduceWindow: check_reducer(o, index, 0, "body", first(n), results, "C13"); break;
      case OpKind::Scatter: check_reducer(o, index, 0, "update_computation", first(n), results, "C23"); break;
      case OpKind::AllReduce:
      case OpKind::ReduceScatter:
        // one computation for every operand: (tensor<E>, tensor<E>) -> tensor<E>
        for (size_t i = 0; i < n && i < operands.size(); ++i)
          check_reducer(o, index, 0, "computation", {operands[i]}, {results[i]}, "C5");
        break;
      case OpKind::SelectAndScatter:
        check_select(o, index);
        if (!results.empty()) check_reducer(o, index, 1, "scatter", first(1), results, "C10");
        break;
      default: break;
    }
  }

  // manual_computation's body works on the pieces the manual axes cut: each argument is its
  // operand divided along every dimension by the manual axes of in_shardings (which must divide
  // it), and each returned value is its result divided by those of out_shardings.
  void check_manual(const Op& o, int index) {
    auto where = [&] { return fmt::format("@{}: op {} ({})", fn.name(), index, o.name()); };
    const auto& in = o.attrs().get<ShardingList>("in_shardings");
    const auto& out = o.attrs().get<ShardingList>("out_shardings");
    const auto& manual = o.attrs().get<AxisNames>("manual_axes");
    if (o.regions().size() != 1) fail("{} needs one body region", where());
    // The body is isolated from above: it runs on each device's pieces, and a value of the
    // enclosing program is whole there (a body reading one crashed the partitioner).
    if (auto outside = captures_of(o); !outside.empty())
      fail("{}: its body reads a {} defined outside it; the body of a manual computation sees only its "
           "arguments (pass the value as an operand)", where(), to_string(outside[0]->type()));
    const Mesh* own = manual_mesh(module, o);
    if (own == nullptr) {
      if (!manual.empty()) fail("{} names manual axes but has no operands or results, whose layouts say the mesh", where());
      return;
    }
    const Mesh& mesh = *own;
    // (a mesh without axes, which splits nothing, goes with any: Shardy's rule)
    for (const ShardingList* list : {&in, &out})
      for (const Sharding& s : *list) {
        const Mesh& other = module.mesh(s.mesh);
        if (!other.axes.empty() && (other.axes != mesh.axes || other.device_ids != mesh.device_ids))
          fail("{}: its in and out shardings name meshes @{} and @{}; they must all be on one mesh", where(), mesh.name,
               other.name);
      }
    for (const std::string& a : manual)
      if (mesh.find_axis(a) == nullptr) fail("{} names manual axis '{}', which mesh @{} does not have", where(), a, mesh.name);
    auto piece = [&](const Type& t, const Sharding& s, std::string_view what, size_t i) {
      if (!t.is_tensor()) return t;
      std::vector<int64_t> shape = t.shape;
      for (size_t d = 0; d < shape.size() && d < s.dims.size(); ++d) {
        int64_t n = 1;
        for (const AxisRef& a : s.dims[d].axes)
          if (std::find(manual.begin(), manual.end(), a.name) != manual.end()) n *= axis_ref_size(a, mesh);
        if (shape[d] == kDynamic || n == 1) continue;
        if (shape[d] % n != 0)
          fail("{}: {} {} ({}) has dimension {} of size {}, which its manual axes ({} devices) do not divide",
               where(), what, i, to_string(t), d, shape[d], n);
        shape[d] /= n;
      }
      return t.with_shape(shape);
    };
    const Block& b = o.region(0);
    std::vector<Type> want, give;
    for (size_t i = 0; i < o.operands().size() && i < in.size(); ++i) want.push_back(piece(o.operand(i)->type(), in[i], "operand", i));
    for (size_t k = 0; k < o.num_results() && k < out.size(); ++k) give.push_back(piece(o.result(k)->type(), out[k], "result", k));
    if (arg_types(b) != want)
      fail("{}: its body takes ({}) but the operands' pieces along the manual axes are ({})", where(),
           shape_rules::types_string(arg_types(b)), shape_rules::types_string(want));
    if (auto r = returned(b); r && *r != give)
      fail("{}: its body returns ({}) but the results' pieces along the manual axes are ({})", where(),
           shape_rules::types_string(*r), shape_rules::types_string(give));
  }

  // An op's failure carries its place in the text (the innermost op's, for an op in a region).
  void op(const Op& o, int index) {
    try {
      checks(o, index);
    } catch (const VerifyError&) {
      throw;
    } catch (const support::UserError& e) {
      throw VerifyError(e.what(), o.loc);
    }
  }
  // The ops whose quantized operands the spec takes per-tensor only ("or per-tensor quantized
  // tensor" in their inputs' types): a per-axis operand would be dequantized and run anyway.
  // convolution's, dynamic_conv's and dot_general's rhs may be per-axis (the weights).
  static bool per_tensor_only(OpKind k) {
    static const std::set<OpKind> kinds = [] {
      std::set<OpKind> out;
      for (const char* name :
           {"abs", "all_gather", "all_reduce", "all_to_all", "batch_norm_grad", "batch_norm_inference",
            "batch_norm_training", "cbrt", "ceil", "cholesky", "clamp", "collective_broadcast", "collective_permute",
            "compare", "concatenate", "convolution", "cosine", "divide", "dot_general", "dynamic_conv", "dynamic_gather",
            "dynamic_pad", "dynamic_slice", "dynamic_update_slice", "exponential", "exponential_minus_one", "floor",
            "gather", "is_finite", "log", "log_plus_one", "logistic", "map", "maximum", "minimum", "multiply", "negate",
            "pad", "power", "reduce", "reduce_precision", "reduce_scatter", "reduce_window", "remainder", "reverse",
            "round_nearest_afz", "round_nearest_even", "rsqrt", "scatter", "select", "select_and_scatter", "sign", "sine",
            "slice", "sort", "sqrt", "subtract", "tan", "tanh", "triangular_solve"})
        if (auto k = parse_op_kind(std::string("stablehlo.") + name)) out.insert(*k);
      return out;
    }();
    return kinds.count(k) != 0;
  }

  void check_per_tensor(const Op& o, int index) {
    if (!per_tensor_only(o.kind())) return;
    const bool rhs_may = o.kind() == OpKind::Convolution || o.kind() == OpKind::DynamicConv || o.kind() == OpKind::DotGeneral;
    for (size_t i = 0; i < o.operands().size(); ++i) {
      const Type& t = o.operand(i)->type();
      if (t.is_quantized() && t.quant->axis && !(rhs_may && i == 1))
        fail("@{}: op {} ({}) takes per-tensor quantized operands, but operand {} is quantized per axis ({})", fn.name(),
             index, o.name(), i, to_string(t));
    }
  }

  void checks(const Op& o, int index) {
    for (size_t i = 0; i < o.operands().size(); ++i)
      if (!visible.count(o.operand(i)))
        fail("@{}: op {} ({}) uses operand {} before it is defined", fn.name(), index, o.name(), i);
    check_per_tensor(o, index);
    std::vector<Type> operands = o.operand_types();
    std::vector<Type> declared = o.result_types();
    if (o.kind() != OpKind::Return) {
      std::vector<Type> inferred =
          infer_result_types(ShapeQuery{o.kind(), operands, o.attrs(), declared});
      if (!refines(inferred, declared))
        fail("@{}: op {} ({}) declares results ({}) but its operands give ({})", fn.name(), index,
             o.name(), shape_rules::types_string(declared), shape_rules::types_string(inferred));
    }
    if (o.kind() == OpKind::Call) check_call(o, index);
    if (o.kind() == OpKind::RunParallel) check_run_parallel(o, index);
    if (o.kind() == OpKind::If || o.kind() == OpKind::Case) check_branches(o, index);
    if (o.kind() == OpKind::Composite) check_composite(o, index);
    if (o.kind() == OpKind::Map) check_map(o, index);
    if (o.kind() == OpKind::Sort) check_sort(o, index);
    if (o.kind() == OpKind::Scan) check_scan(o, index);
    if (o.kind() == OpKind::AsyncStart) check_async(o, index);
    if (o.kind() == OpKind::While) check_while(o, index);
    if (o.kind() == OpKind::ManualComputation) check_manual(o, index);
    if (o.kind() == OpKind::ShardingGroup) check_sharding_group(o, index);
    check_reducers(o, index);
    // #sdy.sharding_per_value: one layout per result, each fitting its result (an op without
    // results may name one device of a maximal mesh, where a side-effecting call runs, or a layout
    // of no dimensions, `<@mesh, []>`: it runs on every device).
    const auto* per_value = o.attrs().find<ShardingList>("sdy.sharding");
    if (per_value != nullptr && o.num_results() == 0 && per_value->size() == 1 &&
        (module.mesh((*per_value)[0].mesh).axes.empty() || (*per_value)[0].dims.empty()))
      per_value = nullptr;
    if (per_value != nullptr) {
      if (per_value->size() != o.num_results())
        fail("@{}: op {} ({}) has {} result shardings (sdy.sharding_per_value) for {} results", fn.name(), index,
             o.name(), per_value->size(), o.num_results());
      for (size_t r = 0; r < per_value->size(); ++r)
        check_sharding((*per_value)[r], o.result(r)->type(), fmt::format("result {} of op {} ({}) in @{}", r, index, o.name(), fn.name()));
    }
    if (const Sharding* s = o.attrs().find<Sharding>("sharding"))
      check_sharding(*s, operands.at(0), fmt::format("op {} ({}) in @{}", index, o.name(), fn.name()));
    if (const Sharding* s = o.attrs().find<Sharding>("out_sharding");
        s && has_trait(o.kind(), kShardy) && o.num_results() == 1)
      check_explicit_collective(o, *s, fmt::format("op {} ({}) in @{}", index, o.name(), fn.name()));
    // A manual_computation nested in another works on the pieces of the outer one's axes: it
    // cannot cut them again (Shardy's verifier: an axis is manual at most once).
    size_t enclosing = manual_.size();
    if (o.kind() == OpKind::ManualComputation)
      for (const std::string& a : o.attrs().get<AxisNames>("manual_axes")) {
        if (std::find(manual_.begin(), manual_.end(), a) != manual_.end())
          fail("@{}: op {} ({}) makes axis '{}' manual inside a manual_computation that already does", fn.name(),
               index, o.name(), a);
        manual_.push_back(a);
      }
    for (const auto& r : o.regions()) block(*r, false);
    manual_.resize(enclosing);
    for (Value* r : o.results()) visible.insert(r);
  }
};

}  // namespace

void verify(const Module& module) {
  for (const auto& f : module.functions) {
    Verifier v{module, *f, {}, {}, {}};
    for (size_t i = 0; i < f->num_parameters(); ++i)
      if (auto s = f->arg_sharding(i))
        v.check_sharding(*s, f->parameter(i)->type(), fmt::format("argument {} of @{}", i, f->name()));
    v.block(f->body(), true);
    const Op* ret = f->body().terminator();
    if (ret->operand_types() != f->result_types)
      fail("@{}: returns ({}) but is declared to return ({})", f->name(),
           shape_rules::types_string(ret->operand_types()), shape_rules::types_string(f->result_types));
    for (size_t i = 0; i < f->result_types.size(); ++i)
      if (auto s = f->result_sharding(i))
        v.check_sharding(*s, f->result_types[i], fmt::format("result {} of @{}", i, f->name()));
  }
}

}  // namespace tessera::ir
