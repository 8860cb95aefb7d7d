// Reading and writing the window attributes of convolution, reduce_window and select_and_scatter,
// and the spec's num_windows (see window.h).
#include "ir/window.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "support/error.h"

namespace tessera::ir {

int64_t Window::num_windows(size_t d, int64_t input) const {
  // In 128 bits: paddings and dilations near 2^63 (hostile, but well-formed) would wrap in 64.
  using Wide = __int128;
  Wide dilated_input = input == 0 ? 0 : Wide{input - 1} * base_dilation[d] + 1;
  Wide padded = Wide{pad_lo[d]} + dilated_input + pad_hi[d];
  Wide dilated_window = size[d] == 0 ? 0 : Wide{size[d] - 1} * window_dilation[d] + 1;
  if (padded <= 0 || dilated_window > padded) return 0;
  Wide n = (padded - dilated_window) / stride[d] + 1;
  if (n > std::numeric_limits<int64_t>::max())
    support::fail("window dimension {} has more windows than a 64-bit size holds (its padding or dilation is too large)", d);
  return static_cast<int64_t>(n);
}

bool Window::trivial(size_t d) const {
  return size[d] == 1 && stride[d] == 1 && base_dilation[d] == 1 && window_dilation[d] == 1 &&
         pad_lo[d] == 0 && pad_hi[d] == 0 && !reversal[d];
}

namespace {

std::vector<int64_t> ints_or(const AttrMap& attrs, const char* name, size_t rank, int64_t fallback) {
  if (name != nullptr)
    if (const auto* v = attrs.find<std::vector<int64_t>>(name)) return *v;
  return std::vector<int64_t>(rank, fallback);
}

}  // namespace

std::vector<int64_t> padding_shape(const AttrMap& attrs, const char* name) {
  if (const auto* m = attrs.find<IntMatrix>(name)) return {m->rows, m->cols};
  if (const auto* l = attrs.find<Literal>(name))
    if (l->shape().size() == 2 && is_integer(l->element())) return l->shape();
  return {};
}

std::vector<bool> bool_array(const AttrMap& attrs, const char* name, bool& ok) {
  ok = true;
  std::vector<bool> out;
  const auto* o = attrs.find<Opaque>(name);
  if (o == nullptr) {
    ok = !attrs.has(name);
    return out;
  }
  std::string_view t = o->text;
  constexpr std::string_view kEmpty = "array<i1>", kHead = "array<i1:";
  if (t == kEmpty) return out;
  if (t.substr(0, kHead.size()) != kHead || t.back() != '>') {
    ok = false;
    return out;
  }
  t = t.substr(kHead.size(), t.size() - kHead.size() - 1);
  while (!t.empty()) {
    t.remove_prefix(std::min(t.find_first_not_of(" ,"), t.size()));
    if (t.empty()) break;
    if (t.substr(0, 4) == "true") {
      out.push_back(true);
      t.remove_prefix(4);
    } else if (t.substr(0, 5) == "false") {
      out.push_back(false);
      t.remove_prefix(5);
    } else {
      ok = false;
      return {};
    }
  }
  return out;
}

Window read_window(const AttrMap& attrs, const WindowNames& names, size_t rank,
                   std::vector<int64_t> sizes) {
  Window w;
  w.size = names.size ? ints_or(attrs, names.size, rank, 1) : std::move(sizes);
  w.stride = ints_or(attrs, names.stride, rank, 1);
  w.base_dilation = ints_or(attrs, names.base_dilation, rank, 1);
  w.window_dilation = ints_or(attrs, names.window_dilation, rank, 1);
  w.pad_lo.assign(rank, 0);
  w.pad_hi.assign(rank, 0);
  std::vector<int64_t> values;
  if (const auto* m = attrs.find<IntMatrix>(names.padding); m && m->cols == 2) {
    values = m->values;
  } else if (const auto* l = attrs.find<Literal>(names.padding);
             l && l->shape().size() == 2 && l->shape()[1] == 2 && is_integer(l->element())) {
    for (int64_t i = 0; i < l->num_elements(); ++i) values.push_back(l->get_int(i));
  }
  if (values.size() == 2 * rank)
    for (size_t d = 0; d < rank; ++d) {
      w.pad_lo[d] = values[2 * d];
      w.pad_hi[d] = values[2 * d + 1];
    }
  bool ok = true;
  if (names.reversal) w.reversal = bool_array(attrs, names.reversal, ok);
  if (w.reversal.size() != rank) w.reversal.assign(rank, false);
  return w;
}

void write_window(AttrMap& attrs, const WindowNames& names, const Window& w) {
  size_t rank = w.rank();
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  if (names.size) attrs.set(names.size, w.size);
  if (!all(w.stride, 1)) attrs.set(names.stride, w.stride);
  if (names.base_dilation && !all(w.base_dilation, 1)) attrs.set(names.base_dilation, w.base_dilation);
  if (names.window_dilation && !all(w.window_dilation, 1))
    attrs.set(names.window_dilation, w.window_dilation);
  if (!all(w.pad_lo, 0) || !all(w.pad_hi, 0)) {
    std::vector<int64_t> values;
    for (size_t d = 0; d < rank; ++d) {
      values.push_back(w.pad_lo[d]);
      values.push_back(w.pad_hi[d]);
    }
    attrs.set(names.padding,
              Literal::from_ints(Type(ElementType::i64, {static_cast<int64_t>(rank), 2}), values));
  }
  if (names.reversal && std::find(w.reversal.begin(), w.reversal.end(), true) != w.reversal.end()) {
    std::string text = "array<i1: ";
    for (size_t d = 0; d < rank; ++d) text += std::string(d ? ", " : "") + (w.reversal[d] ? "true" : "false");
    attrs.set(names.reversal, Opaque{text + ">"});
  }
}

}  // namespace tessera::ir
