// Typed op attributes.
//
// An op's attributes are a name -> Attribute map whose names are StableHLO's own
// (`comparison_direction`, `dot_dimension_numbers`, `replica_groups`, ...), so the generic printed
// form needs no renaming. Attributes the IR does not understand (jax.*, mhlo.layout_mode) are kept
// as Opaque text and printed back unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/literal.h"
#include "ir/sharding.h"
#include "support/error.h"

namespace tessera::ir {

enum class ComparisonDirection : uint8_t { EQ, NE, GE, GT, LE, LT };
enum class CompareType : uint8_t { FLOAT, TOTALORDER, SIGNED, UNSIGNED, NOTYPE };

struct ChannelHandle {
  int64_t handle = 0;
  int64_t type = 0;
  bool operator==(const ChannelHandle&) const = default;
};

// A rows x cols matrix of integers: replica_groups, source_target_pairs.
struct IntMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> values;  // row-major

  static IntMatrix from_rows(const std::vector<std::vector<int64_t>>& rows);
  std::vector<std::vector<int64_t>> to_rows() const;
  bool operator==(const IntMatrix&) const = default;
};

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  bool operator==(const DotDims&) const = default;
};

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, operand_batching_dims,
      start_indices_batching_dims, start_index_map;
  int64_t index_vector_dim = 0;
  bool operator==(const GatherDims&) const = default;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, input_batching_dims,
      scatter_indices_batching_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  bool operator==(const ScatterDims&) const = default;
};

// chlo.ragged_dot's dimension numbers: a dot_general's, plus the lhs dimension split into groups
// (exactly one) and the rhs dimension that indexes the groups (one in the ragged non-contracting
// mode, none otherwise).
struct RaggedDotDims {
  DotDims dot;
  std::vector<int64_t> lhs_ragged, rhs_group;
  bool operator==(const RaggedDotDims&) const = default;
};

// stablehlo.convolution's dimension numbers: which operand dimension is batch, feature, spatial.
struct ConvDims {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
  bool operator==(const ConvDims&) const = default;
};

// Attribute text kept verbatim (unknown discardable attributes).
struct Opaque {
  std::string text;
  bool operator==(const Opaque&) const = default;
};

// A grid of function names: interpreter.run_parallel's programs, one row per replica.
struct SymbolGrid {
  std::vector<std::vector<std::string>> rows;
  bool operator==(const SymbolGrid&) const = default;
};

using AxisNames = std::vector<std::string>;  // sdy manual_axes
using ShardingList = std::vector<Sharding>;  // sdy in_shardings / out_shardings / per-value

using Attribute = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, IntMatrix,
                               Literal, ComparisonDirection, CompareType, ChannelHandle, DotDims,
                               RaggedDotDims, GatherDims, ScatterDims, ConvDims, Sharding, ShardingList, AxisNames, SymbolGrid,
                               Opaque>;

// The op attribute that makes an op's results constants to differentiation (ir::stop_gradient):
// autodiff sends no cotangent back through it and gives it no tangent; identity rewrites do not
// look through it (its value would lose the mark).
inline constexpr const char* kStopGradient = "tessera.stop_gradient";

// Ordered by name so printing is deterministic.
class AttrMap {
 public:
  // Looked up by string_view (the map's comparator is transparent): kernels name attributes with
  // literals, and a std::string made per lookup would allocate for names over 15 characters.
  bool has(std::string_view name) const { return map_.find(name) != map_.end(); }
  void set(const std::string& name, Attribute value) { map_[name] = std::move(value); }
  void erase(const std::string& name) { map_.erase(name); }

  template <typename T>
  const T& get(std::string_view name) const {
    auto it = map_.find(name);
    TESSERA_CHECK(it != map_.end(), "missing attribute '{}'", name);
    const T* v = std::get_if<T>(&it->second);
    TESSERA_CHECK(v != nullptr, "attribute '{}' has another type", name);
    return *v;
  }
  template <typename T>
  const T* find(std::string_view name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : std::get_if<T>(&it->second);
  }
  template <typename T>
  T get_or(std::string_view name, T fallback) const {
    const T* v = find<T>(name);
    return v ? *v : fallback;
  }

  auto begin() const { return map_.begin(); }
  auto end() const { return map_.end(); }
  bool empty() const { return map_.empty(); }
  size_t size() const { return map_.size(); }
  bool operator==(const AttrMap&) const = default;

 private:
  std::map<std::string, Attribute, std::less<>> map_;
};

std::string_view to_string(ComparisonDirection d);
std::string_view to_string(CompareType t);
std::optional<ComparisonDirection> parse_comparison_direction(std::string_view s);
std::optional<CompareType> parse_compare_type(std::string_view s);

}  // namespace tessera::ir
