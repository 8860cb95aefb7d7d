// The layout of chlo.ragged_dot (see ragged_dot.h): its constraints, checked in the order CHLO's
// verifier checks them, and the result shape.
#include "ir/ragged_dot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace tessera::ir {

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The checks a dot_general's dimension numbers pass (ranges, distinct, equal sizes in pairs).
std::string dot_constraints(const Type& lhs, const Type& rhs, const DotDims& d) {
  if (d.lhs_batch.size() != d.rhs_batch.size())
    return fmt::format("lhs and rhs have {} and {} batching dimensions", d.lhs_batch.size(), d.rhs_batch.size());
  if (d.lhs_contracting.size() != d.rhs_contracting.size())
    return fmt::format("lhs and rhs have {} and {} contracting dimensions", d.lhs_contracting.size(),
                       d.rhs_contracting.size());
  for (auto [side, t, batch, contracting] : {std::tuple{"lhs", &lhs, &d.lhs_batch, &d.lhs_contracting},
                                             {"rhs", &rhs, &d.rhs_batch, &d.rhs_contracting}}) {
    std::vector<int64_t> seen;
    for (const auto* list : {batch, contracting})
      for (int64_t x : *list) {
        if (x < 0 || x >= t->rank())
          return fmt::format("{} dimension {} is out of range for {} of rank {}", side, x, side, t->rank());
        if (contains(seen, x)) return fmt::format("{} dimension {} is listed twice among batching and contracting", side, x);
        seen.push_back(x);
      }
  }
  for (auto [what, l, r] : {std::tuple{"batching", &d.lhs_batch, &d.rhs_batch},
                            {"contracting", &d.lhs_contracting, &d.rhs_contracting}})
    for (size_t i = 0; i < l->size(); ++i) {
      int64_t a = lhs.shape[static_cast<size_t>((*l)[i])], b = rhs.shape[static_cast<size_t>((*r)[i])];
      if (a != b)
        return fmt::format("{} dimension {} of lhs has size {}, but dimension {} of rhs has size {}", what, (*l)[i], a,
                           (*r)[i], b);
    }
  return "";
}

}  // namespace

std::variant<RaggedDotLayout, std::string> ragged_dot_layout(const Type& lhs, const Type& rhs, const Type& group_sizes,
                                                             const RaggedDotDims& dims) {
  const DotDims& d = dims.dot;
  if (lhs.element != rhs.element)
    return fmt::format("lhs and rhs have element types {} and {}", spelling(lhs.element), spelling(rhs.element));
  if (!is_integer(group_sizes.element) || group_sizes.rank() < 1)
    return fmt::format("group_sizes must be an integer tensor of rank >= 1, not {}", to_string(group_sizes));
  if (std::string why = dot_constraints(lhs, rhs, d); !why.empty()) return why;
  if (dims.lhs_ragged.size() != 1)
    return fmt::format("there must be exactly one ragged dimension in the lhs, not {}", dims.lhs_ragged.size());
  RaggedDotLayout l;
  l.ragged = dims.lhs_ragged[0];
  if (l.ragged < 0 || l.ragged >= lhs.rank())
    return fmt::format("lhs_ragged_dimensions [{}] is out of range for lhs of rank {}", l.ragged, lhs.rank());
  l.mode = contains(d.lhs_batch, l.ragged)         ? RaggedDotLayout::Mode::kBatch
           : contains(d.lhs_contracting, l.ragged) ? RaggedDotLayout::Mode::kContracting
                                                   : RaggedDotLayout::Mode::kNonContracting;
  // group_sizes: [g], or [prefix..., g].
  std::vector<int64_t> prefix = d.lhs_batch;
  switch (l.mode) {
    case RaggedDotLayout::Mode::kBatch:
      prefix.resize(static_cast<size_t>(std::find(d.lhs_batch.begin(), d.lhs_batch.end(), l.ragged) - d.lhs_batch.begin()));
      break;
    case RaggedDotLayout::Mode::kContracting:
      prefix.insert(prefix.end(), d.lhs_contracting.begin(),
                    std::find(d.lhs_contracting.begin(), d.lhs_contracting.end(), l.ragged));
      break;
    case RaggedDotLayout::Mode::kNonContracting:
      for (int64_t i = 0; i < l.ragged; ++i)
        if (!contains(d.lhs_batch, i) && !contains(d.lhs_contracting, i)) prefix.push_back(i);
      break;
  }
  if (group_sizes.rank() != 1) {
    std::vector<int64_t> want;
    for (int64_t p : prefix) want.push_back(lhs.shape[static_cast<size_t>(p)]);
    if (group_sizes.rank() != static_cast<int64_t>(prefix.size()) + 1)
      return fmt::format("expected group_sizes to have rank {}, got {}", prefix.size() + 1, group_sizes.rank());
    if (!std::equal(want.begin(), want.end(), group_sizes.shape.begin())) {
      want.push_back(group_sizes.shape.back());
      return fmt::format("group_sizes is expected to have shape [{}], got [{}]", fmt::join(want, ", "),
                         fmt::join(group_sizes.shape, ", "));
    }
  }
  l.prefix = prefix;
  l.broadcast = group_sizes.rank() == 1;
  l.groups = group_sizes.shape.back();
  for (int64_t g : dims.rhs_group) {
    if (g < 0 || g >= rhs.rank()) return fmt::format("rhs_group_dimensions [{}] is out of range for rhs of rank {}", g, rhs.rank());
    if (contains(d.rhs_batch, g) || contains(d.rhs_contracting, g))
      return fmt::format("rhs group dimension {} is also a batching or contracting dimension", g);
  }
  if (l.mode != RaggedDotLayout::Mode::kNonContracting && !dims.rhs_group.empty())
    return "there must be zero group dimensions in the rhs when the ragged dimension is batch or contracting";
  if (l.mode == RaggedDotLayout::Mode::kNonContracting) {
    if (dims.rhs_group.size() != 1)
      return "there must be exactly one group dimension in the rhs when the lhs ragged dimension is non-contracting";
    int64_t size = rhs.shape[static_cast<size_t>(dims.rhs_group[0])];
    if (size != l.groups) return fmt::format("rhs group dimension is expected to have size={}, got {}", l.groups, size);
  }
  if (l.mode == RaggedDotLayout::Mode::kContracting) l.shape.push_back(l.groups);
  for (int64_t b : d.lhs_batch) l.shape.push_back(lhs.shape[static_cast<size_t>(b)]);
  for (int64_t i = 0; i < lhs.rank(); ++i)
    if (!contains(d.lhs_batch, i) && !contains(d.lhs_contracting, i)) {
      l.lhs_free.push_back(i);
      l.shape.push_back(lhs.shape[static_cast<size_t>(i)]);
    }
  for (int64_t i = 0; i < rhs.rank(); ++i)
    if (!contains(d.rhs_batch, i) && !contains(d.rhs_contracting, i) && !contains(dims.rhs_group, i)) {
      l.rhs_free.push_back(i);
      l.shape.push_back(rhs.shape[static_cast<size_t>(i)]);
    }
  return l;
}

Tensor ragged_dot(const Tensor& lhs, const Tensor& rhs, const Tensor& group_sizes, const RaggedDotDims& dims) {
  AttrMap a;
  a.set("ragged_dot_dimension_numbers", dims);
  return lhs.builder().emit1(OpKind::RaggedDot, {lhs, rhs, group_sizes}, std::move(a));
}

}  // namespace tessera::ir
