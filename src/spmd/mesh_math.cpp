// Mesh coordinates, shard indices and device groups (see mesh_math.h).
#include "spmd/mesh_math.h"

#include <algorithm>
#include <map>

#include "support/error.h"

namespace tessera::spmd {

using ir::AxisRef;
using ir::Mesh;

int64_t device_at(const Mesh& mesh, int64_t position) {
  return mesh.device_ids.empty() ? position : mesh.device_ids.at(static_cast<size_t>(position));
}

namespace {

// The coordinate of `position` along whole axis `name`, and the axis size.
std::pair<int64_t, int64_t> whole_coordinate(const Mesh& mesh, int64_t position, const std::string& name) {
  int64_t stride = 1;
  for (size_t i = mesh.axes.size(); i-- > 0;) {
    const ir::MeshAxis& a = mesh.axes[i];
    if (a.name == name) return {(position / stride) % a.size, a.size};
    stride *= a.size;
  }
  TESSERA_CHECK(false, "axis {} not in mesh @{}", name, mesh.name);
  return {0, 1};
}

}  // namespace

int64_t axis_coordinate(const Mesh& mesh, int64_t position, const AxisRef& ref) {
  auto [c, n] = whole_coordinate(mesh, position, ref.name);
  if (!ref.sub) return c;
  int64_t post = n / (ref.sub->pre_size * ref.sub->size);
  return (c / post) % ref.sub->size;
}

int64_t shard_index(const Mesh& mesh, int64_t position, const std::vector<AxisRef>& axes) {
  int64_t index = 0;
  for (const AxisRef& r : axes) index = index * ir::axis_ref_size(r, mesh) + axis_coordinate(mesh, position, r);
  return index;
}

int64_t shard_count(const Mesh& mesh, const std::vector<AxisRef>& axes) {
  int64_t n = 1;
  for (const AxisRef& r : axes) n *= ir::axis_ref_size(r, mesh);
  return n;
}

int64_t piece_size(int64_t size, int64_t shards) { return (size + shards - 1) / shards; }

std::vector<int64_t> local_shape(const std::vector<int64_t>& shape, const ir::Sharding& s, const Mesh& mesh) {
  std::vector<int64_t> out = shape;
  for (size_t d = 0; d < shape.size() && d < s.dims.size(); ++d)
    out[d] = piece_size(shape[d], shard_count(mesh, s.dims[d].axes));
  return out;
}

bool is_uneven(const std::vector<int64_t>& shape, const ir::Sharding& s, const Mesh& mesh) {
  for (size_t d = 0; d < shape.size() && d < s.dims.size(); ++d)
    if (shape[d] % shard_count(mesh, s.dims[d].axes) != 0) return true;
  return false;
}

Groups groups_over(const Mesh& mesh, const std::vector<AxisRef>& axes) {
  // Two positions share a group when their coordinates agree once the digits of `axes` are
  // removed; the key is the position with those digits zeroed.
  std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>> by_key;
  int64_t n = mesh.num_devices();
  for (int64_t p = 0; p < n; ++p) {
    std::vector<int64_t> key;
    for (const ir::MeshAxis& a : mesh.axes) {
      int64_t c = whole_coordinate(mesh, p, a.name).first;
      for (const AxisRef& r : axes) {
        if (r.name != a.name) continue;
        if (!r.sub) {
          c = 0;
          continue;
        }
        int64_t post = a.size / (r.sub->pre_size * r.sub->size);
        c -= ((c / post) % r.sub->size) * post;
      }
      key.push_back(c);
    }
    by_key[key].push_back({shard_index(mesh, p, axes), device_at(mesh, p)});
  }
  Groups groups;
  for (auto& [key, members] : by_key) {
    std::sort(members.begin(), members.end());
    std::vector<int64_t> g;
    for (auto& m : members) g.push_back(m.second);
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

namespace {
std::pair<int64_t, int64_t> span(const AxisRef& r, const Mesh& mesh) {
  if (!r.sub) return {1, mesh.find_axis(r.name)->size};
  return {r.sub->pre_size, r.sub->pre_size * r.sub->size};
}
}  // namespace

bool overlaps(const AxisRef& a, const AxisRef& b, const Mesh& mesh) {
  if (a.name != b.name) return false;
  auto [alo, ahi] = span(a, mesh);
  auto [blo, bhi] = span(b, mesh);
  if (alo < bhi && blo < ahi) return true;
  // Disjoint digits are independent only where one cut of the axis makes both: "x":(1)2 and
  // "x":(3)2 of x=6 are c / 3 and c % 2 of its coordinate c, which take the same pair of values
  // on devices 0 and 2 (2 does not divide 3: no radix of x has both as digits).
  return ahi <= blo ? blo % ahi != 0 : alo % bhi != 0;
}

std::optional<AxisRef> free_part(const AxisRef& ref, const std::vector<AxisRef>& taken, const Mesh& mesh) {
  auto [lo, hi] = span(ref, mesh);
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const AxisRef& t : taken)
    if (overlaps(t, ref, mesh)) spans.push_back(span(t, mesh));
  if (spans.empty()) return ref;
  std::sort(spans.begin(), spans.end());
  int64_t start = lo, end = hi;
  for (auto [b0, b1] : spans) {
    if (b1 <= start) continue;
    if (b0 <= start) {
      start = b1;
    } else {
      end = b0;
      break;
    }
  }
  int64_t n = mesh.find_axis(ref.name)->size;
  if (start >= end || end % start != 0 || n % end != 0) return std::nullopt;
  return start == 1 && end == n ? AxisRef(ref.name) : AxisRef(ref.name, {start, end / start});
}

std::vector<AxisRef> merge_sub_axes(const std::vector<AxisRef>& axes, const Mesh& mesh) {
  std::vector<AxisRef> out;
  for (const AxisRef& r : axes) {
    if (!out.empty() && out.back().name == r.name) {
      auto [plo, phi] = span(out.back(), mesh);
      auto [lo, hi] = span(r, mesh);
      if (phi == lo) {
        int64_t n = mesh.find_axis(r.name)->size;
        out.back() = (plo == 1 && hi == n) ? AxisRef(r.name) : AxisRef(r.name, {plo, hi / plo});
        continue;
      }
    }
    out.push_back(r);
  }
  return out;
}

std::pair<AxisRef, AxisRef> split_axis(const AxisRef& ref, int64_t major, const Mesh& mesh) {
  auto [lo, hi] = span(ref, mesh);
  int64_t size = hi / lo;
  TESSERA_CHECK(size % major == 0, "axis {} of size {} split by {}", ref.name, size, major);
  return {AxisRef(ref.name, {lo, major}), AxisRef(ref.name, {lo * major, size / major})};
}

ir::Sharding replicated(const std::string& mesh, size_t rank) {
  ir::Sharding s;
  s.mesh = mesh;
  s.dims.resize(rank);
  return s;
}

bool is_maximal(const Mesh& mesh) { return mesh.axes.empty() && mesh.device_ids.size() == 1; }

const Mesh* largest_mesh(const ir::Module& module) {
  const Mesh* out = nullptr;
  for (const Mesh& m : module.meshes)
    if (!is_maximal(m) && (out == nullptr || m.num_devices() > out->num_devices())) out = &m;
  return out;
}

}  // namespace tessera::spmd
