// Small string helpers used by printers and error messages.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::support {

// "[1, 2, 3]"-style joins: join(v, ", ") gives "1, 2, 3".
template <typename Range>
std::string join(const Range& range, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& item : range) {
    if (!first) out += sep;
    first = false;
    out += fmt::format("{}", item);
  }
  return out;
}

// "8x4" for a shape, "" for a scalar.
std::string shape_string(std::span<const int64_t> shape);

int64_t product(std::span<const int64_t> values);

// The whole of `text` as a decimal integer ("4", "-1"): nullopt for "", "4x", " 4", "0x10" or a
// value outside int64. Command-line sizes are read with it, so "data=4x" is an error, not 4.
std::optional<int64_t> parse_int(std::string_view text);

// The environment variable `name` read as parse_int reads it, within [lo, hi]; nullopt when it is
// unset or empty. Any other value is a UserError "NAME=value: expected <expected>".
std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi, std::string_view expected);

// `text` without the spaces, tabs and carriage returns at either end.
std::string_view trim(std::string_view text);
// The fields of `text` between each `sep`, each trimmed: "a, b,," gives "a", "b", "", "" (one field
// for a text without `sep`). The hand-written formats' reader (schedule CSVs, --costs).
std::vector<std::string_view> split(std::string_view text, char sep);

// Escapes &, <, >, " and ' for XML text and attribute values (the SVG pictures).
std::string xml_escape(std::string_view text);

}  // namespace tessera::support
