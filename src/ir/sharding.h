// Meshes and shardings, in Shardy's model.
//
// A Mesh names its axes and their sizes (and optionally lists device ids). A Sharding says, for
// each dimension of a tensor, which mesh axes split it (major to minor), whether propagation may
// add more (open, printed `?`), and an optional priority (`p0` is strongest). An AxisRef is a whole
// axis or a sub-axis `"x":(pre)size`: the size-`size` slice of axis x that has `pre` devices before
// it. Axes not named anywhere are replicated; `replicated` lists ones that must stay so, and
// `unreduced` ones along which the value is partial: the pieces along them combine into it by a
// sum (`unreduced={"x"}`) or, where the layout says so, a max or min (`unreduced=max{"x"}`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/type.h"

namespace tessera::ir {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
  bool operator==(const MeshAxis&) const = default;
};

struct Mesh {
  std::string name;
  std::vector<MeshAxis> axes;
  std::vector<int64_t> device_ids;  // empty: iota order 0..n-1

  int64_t num_devices() const;
  const MeshAxis* find_axis(std::string_view axis) const;
  bool operator==(const Mesh&) const = default;
};

// Validates axis sizes (at most kMaxMeshDevices devices in all), unique axis names, and device ids
// (a permutation of 0..n-1).
inline constexpr int64_t kMaxMeshDevices = int64_t{1} << 20;
void validate(const Mesh& mesh);

struct SubAxis {
  int64_t pre_size = 1;
  int64_t size = 1;
  bool operator==(const SubAxis&) const = default;
};

struct AxisRef {
  std::string name;
  std::optional<SubAxis> sub;  // nullopt: the whole axis

  AxisRef(std::string n) : name(std::move(n)) {}  // NOLINT: "data" reads as the whole axis
  AxisRef(const char* n) : name(n) {}               // NOLINT
  AxisRef(std::string n, SubAxis s) : name(std::move(n)), sub(s) {}
  bool operator==(const AxisRef&) const = default;
};

struct DimSharding {
  std::vector<AxisRef> axes;
  bool open = false;
  std::optional<int64_t> priority;

  DimSharding() = default;
  DimSharding(std::initializer_list<AxisRef> a) : axes(a) {}  // NOLINT: {"data"}
  bool operator==(const DimSharding&) const = default;
};

// How the pieces along a layout's unreduced axes combine into the value.
enum class ReductionKind : uint8_t { kSum, kMax, kMin };
std::string_view to_string(ReductionKind kind);  // "sum", "max", "min"
std::optional<ReductionKind> reduction_kind(std::string_view word);

struct Sharding {
  std::string mesh;
  std::vector<DimSharding> dims;
  std::vector<AxisRef> replicated;
  std::vector<AxisRef> unreduced;
  ReductionKind unreduced_kind = ReductionKind::kSum;  // kSum whenever `unreduced` is empty

  bool operator==(const Sharding&) const = default;
  bool is_fully_replicated() const;
};

// The number of devices an axis reference spans (its size, or the whole axis's size).
int64_t axis_ref_size(const AxisRef& ref, const Mesh& mesh);
// The number of pieces dimension d is split into.
int64_t dim_shards(const Sharding& s, int64_t d, const Mesh& mesh);

// Checks `sharding` against its mesh and the tensor type it annotates: the mesh is the one named,
// the rank matches, every axis exists, sub-axes fit their axis, and no axis (or overlapping part of
// one) is used twice. `what` names the annotated thing in the message, e.g. "argument 0 of @f".
void validate(const Sharding& sharding, const Mesh& mesh, const Type& type, std::string_view what);

std::string to_string(const AxisRef& ref);  // "data" or "x":(1)2, quoted as in Shardy text

}  // namespace tessera::ir
