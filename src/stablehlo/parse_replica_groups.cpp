// The spec's second form of replica_groups (its "Replica groups" section): a mesh and some of its
// axes,
//   #stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [#stablehlo.mesh_axis<name =
//       "x", size = 2>, ...]> (or @mesh), axes = [#stablehlo.axis_ref<name = "y", sub_axis_info =
//       (1)2>, ...]>
// read as the dense groups it stands for: the devices that differ only along the listed axes (or
// sub-axes) form a group, ordered by their coordinates along them (the first listed most
// significant), each device named by the mesh's device_ids. The collectives then take the groups
// as any dense replica_groups.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ir/module.h"
#include "stablehlo/parse_attrs.h"

namespace tessera::stablehlo {

namespace {

struct AxisRefText {
  std::string name;
  int64_t pre_size = 1, size = 0;  // size 0: the whole axis
};

ir::Mesh parse_stablehlo_mesh(Lexer& lx) {
  ir::Mesh m;
  parse_fields(lx, [&](const std::string& key) {
    if (key == "axes") {
      lx.expect("[");
      lx.list_until("]", [&] {
        lx.expect("#stablehlo.mesh_axis");
        ir::MeshAxis a;
        parse_fields(lx, [&](const std::string& k) {
          if (k == "name") a.name = lx.string_literal();
          else if (k == "size") a.size = lx.integer();
          else return false;
          return true;
        });
        m.axes.push_back(a);
      });
    } else if (key == "device_ids") {
      if (lx.try_consume("array")) {  // array<i64: 0, 1, ...>
        lx.expect("<");
        lx.identifier();
        if (lx.try_consume(":")) {
          do m.device_ids.push_back(lx.integer());
          while (lx.try_consume(","));
        }
        lx.expect(">");
      } else {
        m.device_ids = parse_int_list(lx);
      }
    } else {
      return false;
    }
    return true;
  });
  return m;
}

}  // namespace

ir::IntMatrix parse_replica_group_mesh_axes(Lexer& lx) {
  lx.skip_space();
  Location at = lx.location();
  ir::Mesh mesh;
  std::vector<AxisRefText> refs;
  bool has_mesh = false;
  parse_fields(lx, [&](const std::string& key) {
    if (key == "mesh") {
      lx.skip_space();
      Location m_at = lx.location();
      if (lx.try_consume("@")) {
        std::string name = lx.suffix_id();
        const ir::Mesh* found = lx.module ? lx.module->find_mesh(name) : nullptr;
        if (found == nullptr) lx.error_at(m_at, fmt::format("replica_groups: no mesh @{}", name));
        mesh = *found;
      } else {
        lx.expect("#stablehlo.mesh");
        mesh = parse_stablehlo_mesh(lx);
      }
      has_mesh = true;
    } else if (key == "axes") {
      lx.expect("[");
      lx.list_until("]", [&] {
        lx.expect("#stablehlo.axis_ref");
        AxisRefText r;
        parse_fields(lx, [&](const std::string& k) {
          if (k == "name") {
            r.name = lx.string_literal();
          } else if (k == "sub_axis_info") {  // (pre_size)size
            lx.expect("(");
            r.pre_size = lx.integer();
            lx.expect(")");
            r.size = lx.integer();
          } else {
            return false;
          }
          return true;
        });
        refs.push_back(r);
      });
    } else {
      return false;
    }
    return true;
  });
  auto bad = [&](const std::string& why) { lx.error_at(at, fmt::format("#stablehlo.replica_group_mesh_axes: {}", why)); };
  if (!has_mesh) bad("has no mesh");
  try {
    ir::validate(mesh);
  } catch (const support::UserError& e) {
    bad(e.what());
  }
  // Per listed reference: its axis, the stride of its part of the axis's coordinate, its size.
  struct Part {
    size_t axis;
    int64_t stride, size;
  };
  std::vector<Part> parts;
  for (const AxisRefText& r : refs) {
    size_t k = 0;
    while (k < mesh.axes.size() && mesh.axes[k].name != r.name) ++k;
    if (k == mesh.axes.size()) bad(fmt::format("the mesh has no axis \"{}\"", r.name));
    const int64_t whole = mesh.axes[k].size;
    const int64_t size = r.size == 0 ? whole : r.size;
    if (r.pre_size < 1 || size < 1 || whole % (r.pre_size * size) != 0)
      bad(fmt::format("sub-axis ({}){} does not divide axis \"{}\" of size {}", r.pre_size, size, r.name, whole));
    const Part p{k, whole / (r.pre_size * size), size};
    for (const Part& q : parts)  // the parts of one axis may not overlap
      if (q.axis == k && q.stride < p.stride * p.size && p.stride < q.stride * q.size)
        bad(fmt::format("axis \"{}\" is listed twice (or its sub-axes overlap)", r.name));
    parts.push_back(p);
  }
  // Row-major device coordinates; a device's group is its coordinates less the listed parts.
  const int64_t n = mesh.num_devices();
  std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>> groups;  // rest -> (index, device)
  std::vector<std::vector<int64_t>> order;
  for (int64_t d = 0; d < n; ++d) {
    std::vector<int64_t> coord(mesh.axes.size());
    for (size_t k = mesh.axes.size(), rest = static_cast<size_t>(d); k-- > 0;) {
      coord[k] = static_cast<int64_t>(rest % static_cast<size_t>(mesh.axes[k].size));
      rest /= static_cast<size_t>(mesh.axes[k].size);
    }
    int64_t index = 0;
    std::vector<int64_t> rest = coord;
    for (const Part& p : parts) {
      const int64_t c = (coord[p.axis] / p.stride) % p.size;
      index = index * p.size + c;
      rest[p.axis] -= c * p.stride;
    }
    auto [it, fresh] = groups.try_emplace(rest);
    if (fresh) order.push_back(rest);
    const int64_t id = mesh.device_ids.empty() ? d : mesh.device_ids[static_cast<size_t>(d)];
    it->second.emplace_back(index, id);
  }
  ir::IntMatrix m;
  m.rows = static_cast<int64_t>(order.size());
  m.cols = n / std::max<int64_t>(m.rows, 1);
  for (const auto& key : order) {
    auto members = groups.at(key);
    std::sort(members.begin(), members.end());
    for (const auto& [index, id] : members) m.values.push_back(id);
  }
  return m;
}

}  // namespace tessera::stablehlo
