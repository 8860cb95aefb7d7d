#include "support/strings.h"

#include <charconv>

namespace tessera::support {

std::string shape_string(std::span<const int64_t> shape) { return join(shape, "x"); }

int64_t product(std::span<const int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values) p *= v;
  return p;
}

std::optional<int64_t> parse_int(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace tessera::support
