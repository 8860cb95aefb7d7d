// Reads GSPMD's HloSharding text (gspmd_sharding.h). The grammar, from what XLA's
// HloSharding::ToString writes: `{` then `replicated` | `manual` | `unknown` |
// `maximal device=N` |
// `devices=[d,...]` followed by a device list (`n,n,...`) or an iota (`<=[d,...]` with an optional
// `T(p,...)`), then optional `last_tile_dim_replicate` or `last_tile_dims={replicated|manual,...}`,
// and an optional `metadata={...}` (skipped), then `}`.
#include "stablehlo/gspmd_sharding.h"

#include <algorithm>
#include <numeric>

#include "support/error.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace {

// Sizes and counts beyond this are refused (the mesh limit is 2^20 devices).
constexpr int64_t kMaxCount = int64_t{1} << 20;

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  [[noreturn]] void fail(std::string_view what) const {
    support::fail("{}: {} at character {}", quote_hlo_sharding(text_), what, pos_ + 1);
  }
  void space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n')) ++pos_;
  }
  bool consume(std::string_view word) {
    space();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void expect(std::string_view word) {
    if (!consume(word)) fail(fmt::format("expected '{}'", word));
  }
  bool peek_digit() {
    space();
    return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9';
  }
  int64_t number() {
    if (!peek_digit()) fail("expected a number");
    int64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + (text_[pos_++] - '0');
      if (v > kMaxCount) fail(fmt::format("a number over {}", kMaxCount));
    }
    return v;
  }
  std::vector<int64_t> bracketed(char open, char close) {
    expect(std::string(1, open));
    std::vector<int64_t> out;
    if (consume(std::string(1, close))) return out;
    do out.push_back(number());
    while (consume(","));
    expect(std::string(1, close));
    return out;
  }
  // metadata={...} and similar: balanced braces, quoted strings honoured.
  void skip_braced() {
    expect("{");
    int depth = 1;
    bool quoted = false;
    while (pos_ < text_.size() && depth > 0) {
      char c = text_[pos_++];
      if (quoted) {
        if (c == '\\') ++pos_;
        else if (c == '"') quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        --depth;
      }
    }
    if (depth > 0) fail("unbalanced '{'");
  }
  bool at_end() {
    space();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

void read_tiled(Reader& r, HloSharding& s) {
  s.kind = HloSharding::Kind::kTiled;
  s.tiles = r.bracketed('[', ']');
  if (s.tiles.empty()) r.fail("expected at least one tile count");
  int64_t n = 1;
  for (int64_t t : s.tiles) {
    if (t < 1) r.fail("a tile count of 0");
    n *= t;
    if (n > kMaxCount) r.fail(fmt::format("more than {} devices", kMaxCount));
  }
  if (r.consume("<=")) {
    s.iota_dims = r.bracketed('[', ']');
    if (s.iota_dims.empty()) r.fail("expected at least one iota dimension");
    for (int64_t d : s.iota_dims)
      if (d < 1) r.fail("an iota dimension of 0");
    if (r.consume("T")) {
      s.iota_perm = r.bracketed('(', ')');
      std::vector<int64_t> sorted = s.iota_perm;
      std::sort(sorted.begin(), sorted.end());
      std::vector<int64_t> iota(s.iota_dims.size());
      std::iota(iota.begin(), iota.end(), 0);
      if (sorted != iota)
        r.fail(fmt::format("the transpose ({}) is not a permutation of the {} iota dimensions",
                           support::join(s.iota_perm, ","), s.iota_dims.size()));
    } else {
      s.iota_perm.resize(s.iota_dims.size());
      std::iota(s.iota_perm.begin(), s.iota_perm.end(), 0);
    }
    if (product(s.iota_dims) != n)
      r.fail(fmt::format("the iota has {} devices but the tiles [{}] need {}", product(s.iota_dims),
                         support::join(s.tiles, ","), n));
  } else {
    do s.devices.push_back(r.number());
    while (r.consume(","));
    if (static_cast<int64_t>(s.devices.size()) != n)
      r.fail(fmt::format("{} devices listed for the {} tiles of [{}]", s.devices.size(), n,
                         support::join(s.tiles, ",")));
    std::vector<int64_t> sorted = s.devices;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i)
      if (sorted[i] != i) r.fail(fmt::format("the devices listed are not each of 0..{} once", n - 1));
  }
  if (r.consume("last_tile_dim_replicate")) {
    s.last_replicated = true;
  } else if (r.consume("last_tile_dims=")) {
    r.expect("{");
    size_t count = 0;
    do {
      if (r.consume("replicated")) s.last_replicated = true;
      else if (r.consume("manual")) s.manual_subgroup = true;
      else r.fail("expected 'replicated' or 'manual'");
      ++count;
    } while (r.consume(","));
    r.expect("}");
    if (count > 1) r.fail("more than one last tile dimension kind is not read");
  }
  size_t needed = (s.last_replicated || s.manual_subgroup) ? 2 : 1;
  if (s.tiles.size() < needed) r.fail("expected a tile count for the tensor besides the last");
}

}  // namespace

std::string quote_hlo_sharding(std::string_view text) {
  constexpr size_t kShown = 80;
  if (text.size() <= kShown) return fmt::format("mhlo.sharding \"{}\"", text);
  return fmt::format("mhlo.sharding \"{}...\"", text.substr(0, kShown));
}

int64_t HloSharding::num_devices() const { return kind == Kind::kTiled ? product(tiles) : 1; }

std::vector<int64_t> HloSharding::device_list() const {
  if (!devices.empty() || kind != Kind::kTiled) return devices;
  // device at transposed position (j_0, ...) is sum_k j_k * stride(iota_perm[k]).
  size_t k = iota_dims.size();
  std::vector<int64_t> stride(k, 1);
  for (size_t i = k; i-- > 1;) stride[i - 1] = stride[i] * iota_dims[i];
  std::vector<int64_t> out;
  std::vector<int64_t> j(k, 0);
  int64_t n = product(iota_dims);
  for (int64_t t = 0; t < n; ++t) {
    int64_t d = 0;
    for (size_t a = 0; a < k; ++a) d += j[a] * stride[iota_perm[a]];
    out.push_back(d);
    for (size_t a = k; a-- > 0;) {
      if (++j[a] < iota_dims[iota_perm[a]]) break;
      j[a] = 0;
    }
  }
  return out;
}

HloSharding parse_hlo_sharding(std::string_view text) {
  Reader r(text);
  HloSharding s;
  r.expect("{");
  if (r.consume("{")) r.fail("a tuple sharding (one per tuple element) is not read; only tensors are");
  if (r.consume("replicated")) s.kind = HloSharding::Kind::kReplicated;
  else if (r.consume("manual")) s.kind = HloSharding::Kind::kManual;
  else if (r.consume("unknown")) s.kind = HloSharding::Kind::kUnknown;
  else if (r.consume("maximal")) {
    s.kind = HloSharding::Kind::kMaximal;
    r.expect("device=");
    s.maximal_device = r.number();
  } else if (r.consume("devices=")) read_tiled(r, s);
  else r.fail("expected 'replicated', 'manual', 'unknown', 'maximal' or 'devices='");
  if (r.consume("metadata=")) r.skip_braced();
  r.expect("}");
  if (!r.at_end()) r.fail("text after the closing '}'");
  return s;
}

}  // namespace tessera::stablehlo
