// Mesh and sharding validation. Messages name the annotated value, the dimension and the axis.
#include "ir/sharding.h"

#include <algorithm>

#include "support/error.h"
#include "support/strings.h"

namespace tessera::ir {

using support::fail;

int64_t Mesh::num_devices() const {
  int64_t n = 1;
  for (const auto& a : axes) n *= a.size;
  return n;
}

const MeshAxis* Mesh::find_axis(std::string_view axis) const {
  for (const auto& a : axes)
    if (a.name == axis) return &a;
  return nullptr;
}

void validate(const Mesh& mesh) {
  int64_t devices = 1;
  for (size_t i = 0; i < mesh.axes.size(); ++i) {
    const MeshAxis& a = mesh.axes[i];
    if (a.size < 1) fail("mesh @{}: axis \"{}\" has size {}, must be at least 1", mesh.name, a.name, a.size);
    for (size_t j = 0; j < i; ++j)
      if (mesh.axes[j].name == a.name) fail("mesh @{}: axis \"{}\" is declared twice", mesh.name, a.name);
    // Device tables are built per mesh: a size past any real machine is refused before they are.
    if (__builtin_mul_overflow(devices, a.size, &devices) || devices > kMaxMeshDevices)
      fail("mesh @{}: axis \"{}\" of size {} makes more than {} devices", mesh.name, a.name, a.size,
           kMaxMeshDevices);
  }
  if (mesh.device_ids.empty()) return;
  // A maximal mesh (no axes) names the one device that holds the whole value.
  if (mesh.axes.empty() && mesh.device_ids.size() == 1 && mesh.device_ids[0] >= 0) return;
  int64_t n = mesh.num_devices();
  if (static_cast<int64_t>(mesh.device_ids.size()) != n)
    fail("mesh @{}: {} device ids for {} devices", mesh.name, mesh.device_ids.size(), n);
  std::vector<int64_t> sorted = mesh.device_ids;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i)
    if (sorted[static_cast<size_t>(i)] != i)
      fail("mesh @{}: device ids [{}] are not a permutation of 0..{}", mesh.name,
           support::join(mesh.device_ids, ", "), n - 1);
}

bool Sharding::is_fully_replicated() const {
  return std::all_of(dims.begin(), dims.end(), [](const DimSharding& d) { return d.axes.empty(); });
}

std::string_view to_string(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::kSum: return "sum";
    case ReductionKind::kMax: return "max";
    case ReductionKind::kMin: return "min";
  }
  return "sum";
}

std::optional<ReductionKind> reduction_kind(std::string_view word) {
  for (ReductionKind k : {ReductionKind::kSum, ReductionKind::kMax, ReductionKind::kMin})
    if (to_string(k) == word) return k;
  return std::nullopt;
}

std::string to_string(const AxisRef& ref) {
  if (!ref.sub) return fmt::format("\"{}\"", ref.name);
  return fmt::format("\"{}\":({}){}", ref.name, ref.sub->pre_size, ref.sub->size);
}

int64_t axis_ref_size(const AxisRef& ref, const Mesh& mesh) {
  if (ref.sub) return ref.sub->size;
  const MeshAxis* a = mesh.find_axis(ref.name);
  TESSERA_CHECK(a != nullptr, "axis {} not in mesh @{}", ref.name, mesh.name);
  return a->size;
}

int64_t dim_shards(const Sharding& s, int64_t d, const Mesh& mesh) {
  int64_t n = 1;
  for (const AxisRef& r : s.dims.at(static_cast<size_t>(d)).axes) n *= axis_ref_size(r, mesh);
  return n;
}

namespace {

// The part of its axis a reference covers, as the half-open range [pre, pre * size) of device
// strides; two references to one axis overlap when their ranges intersect.
struct Span {
  int64_t lo, hi;
};

Span span_of(const AxisRef& ref, int64_t axis_size) {
  if (!ref.sub) return {1, axis_size};
  return {ref.sub->pre_size, ref.sub->pre_size * ref.sub->size};
}

void check_ref(const AxisRef& ref, const Mesh& mesh, std::string_view what, std::string_view where) {
  const MeshAxis* axis = mesh.find_axis(ref.name);
  if (axis == nullptr) {
    std::vector<std::string> names;
    for (const auto& a : mesh.axes) names.push_back(a.name);
    fail("sharding of {}: {} names axis \"{}\", which is not in mesh @{} (axes: {})", what, where,
         ref.name, mesh.name, support::join(names, ", "));
  }
  if (!ref.sub) return;
  int64_t pre = ref.sub->pre_size, size = ref.sub->size;
  if (pre < 1 || size <= 1 || axis->size % (pre * size) != 0 || pre * size > axis->size ||
      size == axis->size)
    fail("sharding of {}: {} names sub-axis {}, which does not fit axis \"{}\" of size {} "
         "(need pre-size >= 1, size > 1, pre-size * size dividing {}, and size < {})",
         what, where, to_string(ref), ref.name, axis->size, axis->size, axis->size);
}

}  // namespace

void validate(const Sharding& s, const Mesh& mesh, const Type& type, std::string_view what) {
  if (s.mesh != mesh.name)
    fail("sharding of {}: refers to mesh @{}, expected @{}", what, s.mesh, mesh.name);
  // On a maximal mesh the sharding lists no dimensions: the value lives whole on its device.
  if (mesh.axes.empty() && s.dims.empty()) return;
  if (static_cast<int64_t>(s.dims.size()) != type.rank())
    fail("sharding of {}: has {} dimension shardings for {} of rank {}", what, s.dims.size(),
         to_string(type), type.rank());

  struct Use {
    AxisRef ref;
    std::string where;
  };
  std::vector<Use> uses;
  auto add = [&](const AxisRef& ref, const std::string& where) {
    check_ref(ref, mesh, what, where);
    int64_t axis_size = mesh.find_axis(ref.name)->size;
    Span a = span_of(ref, axis_size);
    for (const Use& u : uses) {
      if (u.ref.name != ref.name) continue;
      Span b = span_of(u.ref, axis_size);
      if (std::max(a.lo, b.lo) < std::min(a.hi, b.hi))
        fail("sharding of {}: axis {} is used twice ({} and {})", what, to_string(ref), u.where,
             where);
    }
    uses.push_back({ref, where});
  };
  for (size_t d = 0; d < s.dims.size(); ++d) {
    for (const AxisRef& r : s.dims[d].axes) add(r, fmt::format("dimension {}", d));
    if (s.dims[d].priority && *s.dims[d].priority < 0)
      fail("sharding of {}: dimension {} has negative priority p{}", what, d, *s.dims[d].priority);
  }
  for (const AxisRef& r : s.replicated) add(r, "replicated");
  for (const AxisRef& r : s.unreduced) add(r, "unreduced");
}

}  // namespace tessera::ir
