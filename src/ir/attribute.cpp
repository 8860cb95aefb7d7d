#include "ir/attribute.h"

#include <array>

namespace tessera::ir {
namespace {
constexpr std::array<std::string_view, 6> kDirections = {"EQ", "NE", "GE", "GT", "LE", "LT"};
constexpr std::array<std::string_view, 5> kCompareTypes = {"FLOAT", "TOTALORDER", "SIGNED",
                                                           "UNSIGNED", "NOTYPE"};
}  // namespace

IntMatrix IntMatrix::from_rows(const std::vector<std::vector<int64_t>>& rows) {
  IntMatrix m;
  m.rows = static_cast<int64_t>(rows.size());
  m.cols = rows.empty() ? 0 : static_cast<int64_t>(rows[0].size());
  for (const auto& r : rows) {
    if (static_cast<int64_t>(r.size()) != m.cols)
      support::fail("ragged integer matrix: rows of {} and {} elements", m.cols, r.size());
    m.values.insert(m.values.end(), r.begin(), r.end());
  }
  return m;
}

std::vector<std::vector<int64_t>> IntMatrix::to_rows() const {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < rows; ++r)
    out.emplace_back(values.begin() + r * cols, values.begin() + (r + 1) * cols);
  return out;
}

std::string_view to_string(ComparisonDirection d) { return kDirections[static_cast<size_t>(d)]; }
std::string_view to_string(CompareType t) { return kCompareTypes[static_cast<size_t>(t)]; }

std::optional<ComparisonDirection> parse_comparison_direction(std::string_view s) {
  for (size_t i = 0; i < kDirections.size(); ++i)
    if (kDirections[i] == s) return static_cast<ComparisonDirection>(i);
  return std::nullopt;
}

std::optional<CompareType> parse_compare_type(std::string_view s) {
  for (size_t i = 0; i < kCompareTypes.size(); ++i)
    if (kCompareTypes[i] == s) return static_cast<CompareType>(i);
  return std::nullopt;
}

}  // namespace tessera::ir
