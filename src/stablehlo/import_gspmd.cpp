// The GSPMD import (import_gspmd.h). Each tiled sharding is read as iota(N) reshaped to R and
// transposed by P (an explicit device list L is R = [N] over the numbering L), then its tile counts
// cut that transposed sequence: where a tile boundary falls inside a dimension of R, the dimension
// is split (its major part to the earlier tile). The cut points, as products of R's dimensions from
// the major side, of every sharding together make the mesh: sorted, each must divide the next, and
// the mesh axes are their ratios, so every dimension of every sharding's R is a run of mesh axes.
// A tensor dimension's sharding is then the mesh axes of its tile's run, major to minor; the last
// tile of last_tile_dim_replicate takes the axes left over, which Shardy leaves replicated.
#include "stablehlo/import_gspmd.h"
#include "ir/clone.h"
#include "ir/effects.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "stablehlo/gspmd_sharding.h"
#include "stablehlo/lexer.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace {

using ir::Sharding;

// One mhlo.sharding found: where it is, what it says, and the type it annotates.
struct Site {
  ir::SourceLoc loc;
  std::string what;  // "argument 0 of @main", "custom_call @Sharding"
  std::string text;
  ir::Type type;
  HloSharding s;
  ir::AttrMap* attrs = nullptr;  // an argument's or result's attributes
  ir::Op* op = nullptr;          // a custom_call @Sharding
  // Tiled: each tile's runs of R's factors, as [lo, hi) cut points (products from the major side).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> tile_runs;
};

class Importer {
 public:
  Importer(ir::Module& m, std::string file) : m_(m), file_(std::move(file)) {}

  [[noreturn]] void fail(const Site& site, const std::string& why) const {
    throw ParseError(file_, site.loc.line, site.loc.column,
                     fmt::format("{}: {}: {}", site.what, quote_hlo_sharding(site.text), why));
  }

  void collect() {
    for (auto& fn : m_.functions) {
      for (size_t i = 0; i < fn->arg_attrs.size(); ++i)
        add(fn->arg_attrs[i], fn->body().argument(i)->type(), fmt::format("argument {} of @{}", i, fn->name()),
            fn->loc, fn->is_public);
      for (size_t i = 0; i < fn->result_attrs.size() && i < fn->result_types.size(); ++i)
        add(fn->result_attrs[i], fn->result_types[i], fmt::format("result {} of @{}", i, fn->name()), fn->loc,
            fn->is_public);
      walk(fn->body());
    }
  }

  void run() {
    if (sites_.empty()) return;
    if (!m_.meshes.empty()) {  // Shardy's module: its sdy shardings are the ones that count
      for (Site& s : sites_)
        if (s.attrs) s.attrs->erase("mhlo.sharding");
      manual_marks_.clear();
      return;
    }
    gspmd_ = true;
    for (Site& s : sites_) read(s);
    cut_all();
    build_mesh();
    for (Site& s : sites_) apply(s);
  }

 private:
  static bool is_manual(const std::string& text) {
    try {
      return parse_hlo_sharding(text).kind == HloSharding::Kind::kManual;
    } catch (const support::UserError&) {
      return false;  // read() reports it where it stands
    }
  }

  void add(ir::AttrMap& attrs, const ir::Type& type, std::string what, ir::SourceLoc loc, bool is_public) {
    const std::string* text = attrs.find<std::string>("mhlo.sharding");
    // An empty text (some exports write `mhlo.sharding = ""`) says nothing: left as it is.
    if (text == nullptr || text->empty()) return;
    // A private function's `{manual}` values are per-device pieces: a shard_map body called from
    // inside the fence (import_shard_map.cpp), which needs no layout of its own.
    if (!is_public && is_manual(*text)) return attrs.erase("mhlo.sharding");
    // A token's or tuple's sharding (`{maximal device=0}` on an effects token, a tuple sharding)
    // places nothing Tessera splits: dropped unread.
    if (!type.is_tensor()) return attrs.erase("mhlo.sharding");
    sites_.push_back(Site{loc, std::move(what), *text, type, {}, &attrs, nullptr, {}});
  }
  void walk(ir::Block& b) {
    for (const auto& op : b.ops()) {
      for (const auto& r : op->regions()) walk(*r);
      const std::string* text = op->attrs().find<std::string>("mhlo.sharding");
      // A shard_map fence's full side: its layout becomes the manual computation's
      // (import_shard_map.cpp), read here with the others so they share one mesh.
      if (ir::is_call_to(*op, kShardToFullTarget)) {
        Site s{op->loc, "custom_call @SPMDShardToFullShape", "", {}, {}, nullptr, op.get(), {}};
        if (op->num_results() != 1) fail(s, fmt::format("has {} results, not 1", op->num_results()));
        if (text == nullptr) fail(s, "has no mhlo.sharding string attribute");
        s.text = *text;
        s.type = op->result(0)->type();
        sites_.push_back(std::move(s));
        continue;
      }
      if (!ir::is_sharding_call(*op)) continue;
      Site s{op->loc, "custom_call @Sharding", "", {}, {}, nullptr, op.get(), {}};
      // `{manual}` marks a value inside a shard_map fence: the identity.
      if (text != nullptr && op->operands().size() == 1 && op->num_results() == 1 && is_manual(*text)) {
        manual_marks_.push_back(op.get());
        continue;
      }
      if (op->operands().size() == 1 && !op->operand(0)->type().is_tensor()) continue;  // stays the identity
      if (op->operands().size() != 1 || op->num_results() != 1)
        fail(s, fmt::format("takes 1 operand and 1 result, has {} and {}", op->operands().size(), op->num_results()));
      if (text == nullptr) fail(s, "has no mhlo.sharding string attribute");
      s.text = *text;
      s.type = op->operand(0)->type();
      sites_.push_back(std::move(s));
    }
  }

  void read(Site& site) {
    try {
      site.s = parse_hlo_sharding(site.text);
    } catch (const ParseError&) {
      throw;
    } catch (const support::UserError& e) {
      throw ParseError(file_, site.loc.line, site.loc.column, fmt::format("{}: {}", site.what, e.what()));
    }
    const HloSharding& s = site.s;
    using K = HloSharding::Kind;
    // On the one device of a module of mhlo.num_partitions = 1, device 0 holding the whole value is
    // the replicated layout.
    const int64_t* partitions = m_.attrs.find<int64_t>("mhlo.num_partitions");
    if (s.kind == K::kMaximal && s.maximal_device == 0 && partitions != nullptr && *partitions == 1) {
      site.s.kind = K::kReplicated;
      return;
    }
    if (s.kind == K::kMaximal)
      fail(site, fmt::format("a maximal sharding (the whole value on device {}) has no Shardy mesh form; "
                             "not imported", s.maximal_device));
    if (s.kind == K::kManual) fail(site, "a manual sharding (shard_map's) is not imported");
    if (s.kind != K::kTiled) return;
    if (s.manual_subgroup) fail(site, "a manual last tile dimension (shard_map's) is not imported");
    size_t rank = s.tiles.size() - (s.last_replicated ? 1 : 0);
    if (static_cast<int64_t>(rank) != site.type.rank())
      fail(site, fmt::format("has {} tile counts for {} of rank {}", rank, to_string(site.type), site.type.rank()));
    if (n_ == 0) n_ = s.num_devices();
    else if (n_ != s.num_devices())
      fail(site, fmt::format("spans {} devices where another sharding of the module spans {}", s.num_devices(), n_));
    if (!s.devices.empty()) as_iota(site.s);
    if (!site.s.devices.empty() && !order_) order_ = site.s.devices;
  }

  // An explicit list that is an iota, or an iota of two dimensions transposed (what older exports
  // wrote for `<=[a,b]T(1,0)`), is read as that iota, so it shares a mesh with iota shardings.
  static void as_iota(HloSharding& s) {
    int64_t n = s.num_devices();
    auto try_iota = [&](std::vector<int64_t> dims, std::vector<int64_t> perm) {
      HloSharding t = s;
      t.devices.clear();
      t.iota_dims = std::move(dims);
      t.iota_perm = std::move(perm);
      if (t.device_list() != s.devices) return false;
      s = std::move(t);
      return true;
    };
    if (try_iota({n}, {0})) return;
    for (int64_t a = 2; a * 2 <= n; ++a)
      if (n % a == 0 && s.devices[1] == n / a && try_iota({a, n / a}, {1, 0})) return;
  }

  // The iota with dimensions of size 1 dropped and neighbours that stay neighbours, in order, after
  // the transpose merged: [2,3] untransposed is [6], so tile counts [3,2] cut it as XLA means.
  static void canonical(std::vector<int64_t>& dims, std::vector<int64_t>& perm) {
    auto drop = [&](size_t d, bool merge_into_previous) {
      if (merge_into_previous) dims[d - 1] *= dims[d];
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(d));
      perm.erase(std::find(perm.begin(), perm.end(), static_cast<int64_t>(d)));
      for (int64_t& p : perm)
        if (p > static_cast<int64_t>(d)) --p;
    };
    for (size_t d = dims.size(); d-- > 0;)
      if (dims[d] == 1 && dims.size() > 1) drop(d, false);
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t a = 0; a + 1 < perm.size() && !merged; ++a)
        if (perm[a + 1] == perm[a] + 1) drop(static_cast<size_t>(perm[a + 1]), merged = true);
    }
  }

  // With an explicit device order, the mesh lists it as device ids and every sharding must give its
  // tiles that same order (then each is cut as R = [N]); without one, each is cut by its own iota.
  void cut_all() {
    for (Site& site : sites_) {
      if (site.s.kind != HloSharding::Kind::kTiled) continue;
      if (order_ && site.s.device_list() != *order_)
        fail(site, fmt::format("gives its tiles another device order than [{}], an earlier sharding's; one module "
                               "mesh cannot hold both", support::join(*order_, ",")));
      cut(site, site.s);
    }
  }

  // The runs of each tile over R's factors (R = the iota's dims, or [N] for a device list).
  void cut(Site& site, const HloSharding& s) {
    bool iota = s.devices.empty() && !order_;
    std::vector<int64_t> dims = iota ? s.iota_dims : std::vector<int64_t>{s.num_devices()};
    std::vector<int64_t> perm = iota ? s.iota_perm : std::vector<int64_t>{0};
    canonical(dims, perm);
    // The start (product of the dims before it, from the major side) of each dim of R.
    std::vector<int64_t> start(dims.size(), 1);
    for (size_t i = 1; i < dims.size(); ++i) start[i] = start[i - 1] * dims[i - 1];
    // Walking the transposed sequence: element a is dim perm[a]; `used` of it is consumed so far.
    size_t a = 0;
    int64_t used = 1;
    for (int64_t t : s.tiles) {
      std::vector<std::pair<int64_t, int64_t>> runs;
      while (t > 1) {
        if (a >= perm.size()) fail(site, "its tile counts exceed its devices");
        int64_t d = perm[a], left = dims[d] / used;
        int64_t lo = start[d] * used;
        if (t % left == 0) {
          runs.push_back({lo, lo * left});
          cuts_.insert(lo), cuts_.insert(lo * left);
          t /= left, ++a, used = 1;
        } else if (left % t == 0) {
          runs.push_back({lo, lo * t});
          cuts_.insert(lo), cuts_.insert(lo * t);
          used *= t, t = 1;
        } else {
          fail(site, fmt::format("a tile count of {} does not divide, nor is divided by, the iota's dimension "
                                 "of {}; not imported", t, left));
        }
      }
      site.tile_runs.push_back(std::move(runs));
    }
  }

  void build_mesh() {
    if (n_ == 0) return;  // only replicated shardings: no mesh needed
    if (const int64_t* p = m_.attrs.find<int64_t>("mhlo.num_partitions"); p && *p != n_)
      fail(sites_.front(), fmt::format("the module's shardings span {} devices but mhlo.num_partitions is {}", n_, *p));
    cuts_.insert(1), cuts_.insert(n_);
    ir::Mesh mesh;
    mesh.name = "mesh";  // Shardy's import names it so too
    int64_t prev = 1;
    for (int64_t c : cuts_) {
      if (c == 1) continue;
      if (c % prev != 0) {
        const Site* bad = &sites_.front();
        for (const Site& s : sites_)
          for (const auto& runs : s.tile_runs)
            for (auto [lo, hi] : runs)
              if (lo == c || hi == c) bad = &s;
        fail(*bad, fmt::format("its device groups do not nest with the other shardings' (a cut at {} devices "
                               "after one at {}); one module mesh cannot hold them all", c, prev));
      }
      axis_at_[prev] = mesh.axes.size();
      mesh.axes.push_back({fmt::format("_axis_{}", mesh.axes.size()), c / prev});
      prev = c;
    }
    axis_at_[n_] = mesh.axes.size();
    if (order_) mesh.device_ids = *order_;
    mesh_ = mesh.name;
    m_.add_mesh(std::move(mesh));
  }

  void apply(Site& site) {
    std::optional<Sharding> out;
    // `{unknown}` leaves the layout to propagation: no sharding, and a @Sharding call stays the identity.
    bool unknown = site.s.kind == HloSharding::Kind::kUnknown;
    if (!mesh_.empty() && site.type.is_tensor() && !unknown) {
      Sharding sh{mesh_, std::vector<ir::DimSharding>(site.type.rank()), {}, {}};
      for (size_t d = 0; d < site.tile_runs.size() && d < sh.dims.size(); ++d)
        for (auto [lo, hi] : site.tile_runs[d])
          for (size_t x = axis_at_.at(lo); x < axis_at_.at(hi); ++x)
            sh.dims[d].axes.push_back(fmt::format("_axis_{}", x));
      out = std::move(sh);
    }
    if (site.attrs) {
      site.attrs->erase("mhlo.sharding");
      if (out) site.attrs->set("sdy.sharding", *out);
      return;
    }
    if (!ir::is_sharding_call(*site.op)) {  // SPMDShardToFullShape: its layout, for the outlining
      site.op->attrs().erase("mhlo.sharding");
      if (out) site.op->attrs().set("sdy.sharding", *out);
      return;
    }
    // custom_call @Sharding -> sdy.sharding_constraint, its uses moved to the new op's result. With
    // no mesh (every sharding replicated) the annotation says nothing: the call stays the identity.
    if (!out) return;
    ir::Op* old = site.op;
    ir::AttrMap attrs;
    attrs.set("sharding", *out);
    auto op = std::make_unique<ir::Op>(ir::OpKind::ShardingConstraint, std::vector<ir::Value*>{old->operand(0)},
                                       std::vector<ir::Type>{old->result(0)->type()}, std::move(attrs));
    op->loc = old->loc;
    ir::Op* made = old->parent->insert_before(old, std::move(op));
    replaced_[old->result(0)] = made->result(0);
    dead_.insert(old);
  }

 public:
  void finish() {
    for (ir::Op* mark : manual_marks_) {
      replaced_[mark->result(0)] = mark->operand(0);  // chains are followed by replace_uses
      dead_.insert(mark);
    }
    if (!replaced_.empty())
      for (auto& fn : m_.functions) {
        ir::replace_uses(fn->body(), replaced_);
        ir::erase_ops(fn->body(), [&](const ir::Op& op) { return dead_.count(&op) > 0; });
      }
    if (gspmd_) outline_shard_maps(m_, file_);
  }

 private:
  ir::Module& m_;
  std::string file_;
  std::vector<Site> sites_;
  int64_t n_ = 0;
  std::optional<std::vector<int64_t>> order_;
  std::set<int64_t> cuts_;
  std::map<int64_t, size_t> axis_at_;  // cut point -> index of the mesh axis starting there
  std::string mesh_;
  ir::ValueMap replaced_;
  std::set<const ir::Op*> dead_;
  std::vector<ir::Op*> manual_marks_;  // @Sharding {manual}: dropped
  bool gspmd_ = false;                 // the module's shardings are GSPMD's (no sdy.mesh of its own)
};

}  // namespace

void import_gspmd_shardings(ir::Module& module, const std::string& file) {
  Importer im(module, file);
  im.collect();
  im.run();
  im.finish();
}

}  // namespace tessera::stablehlo
