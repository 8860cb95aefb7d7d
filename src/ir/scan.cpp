// chlo.scan's layout and builder (scan.h).
#include "ir/scan.h"

#include <cstdlib>

#include "ir/module.h"

namespace tessera::ir {

std::optional<std::vector<int64_t>> segment_sizes(const AttrMap& attrs, const std::string& name) {
  const auto* o = attrs.find<Opaque>(name);
  if (o == nullptr) return std::nullopt;
  std::string_view t = o->text;
  constexpr std::string_view head = "array<i32";
  if (!t.starts_with(head) || !t.ends_with(">")) return std::nullopt;
  t = t.substr(head.size(), t.size() - head.size() - 1);
  std::vector<int64_t> sizes;
  if (t.empty()) return sizes;
  if (t[0] != ':') return std::nullopt;
  std::string rest(t.substr(1));
  const char* p = rest.c_str();
  while (true) {
    while (*p == ' ') ++p;
    char* end = nullptr;
    long long v = std::strtoll(p, &end, 10);
    if (end == p || v < 0) return std::nullopt;
    sizes.push_back(v);
    p = end;
    while (*p == ' ') ++p;
    if (*p == '\0') return sizes;
    if (*p != ',') return std::nullopt;
    ++p;
  }
}

Opaque segment_sizes_attr(const std::vector<int64_t>& sizes) {
  std::string t = "array<i32";
  for (size_t i = 0; i < sizes.size(); ++i) t += fmt::format("{}{}", i == 0 ? ": " : ", ", sizes[i]);
  return Opaque{t + ">"};
}

Type erase_dim(const Type& t, int64_t d) {
  std::vector<int64_t> shape = t.shape;
  shape.erase(shape.begin() + d);
  return t.with_shape(shape);
}

Type insert_dim(const Type& t, int64_t d, int64_t size) {
  std::vector<int64_t> shape = t.shape;
  shape.insert(shape.begin() + d, size);
  return t.with_shape(shape);
}

std::variant<ScanLayout, std::string> scan_layout(const AttrMap& attrs, const std::vector<Type>& operands,
                                                  size_t results) {
  ScanLayout l;
  const auto* dim = attrs.find<int64_t>("dimension");
  if (dim == nullptr) return std::string("has no dimension");
  if (*dim < 0) return fmt::format("dimension {} is negative", *dim);
  l.dimension = *dim;
  l.reverse = attrs.get_or<bool>("is_reverse", false);
  auto ins = segment_sizes(attrs, "operandSegmentSizes");
  if (!ins || ins->size() != 2)
    return std::string("needs operandSegmentSizes = array<i32: inputs, inits>");
  if (static_cast<size_t>((*ins)[0] + (*ins)[1]) != operands.size())
    return fmt::format("operandSegmentSizes say {} inputs and {} inits, but it has {} operands", (*ins)[0], (*ins)[1],
                       operands.size());
  l.inputs = static_cast<size_t>((*ins)[0]);
  l.inits = static_cast<size_t>((*ins)[1]);
  auto outs = segment_sizes(attrs, "resultSegmentSizes");
  if (!outs || outs->size() != 2)
    return std::string("needs resultSegmentSizes = array<i32: outputs, carries>");
  if (static_cast<size_t>((*outs)[0] + (*outs)[1]) != results)
    return fmt::format("resultSegmentSizes say {} outputs and {} carries, but it has {} results", (*outs)[0],
                       (*outs)[1], results);
  if (static_cast<size_t>((*outs)[1]) != l.inits)
    return fmt::format("has {} inits but {} carries; each init starts one carry", l.inits, (*outs)[1]);
  l.outputs = static_cast<size_t>((*outs)[0]);
  const auto* size = attrs.find<int64_t>("scan_dim_size");
  if (size != nullptr && *size < 0) return fmt::format("scan_dim_size {} is negative", *size);
  for (size_t i = 0; i < l.inputs; ++i) {
    const Type& t = operands[i];
    if (!t.is_tensor()) return fmt::format("input {} is {}, not a tensor", i, to_string(t));
    if (l.dimension >= t.rank())
      return fmt::format("dimension {} is outside input {} of rank {} ({})", l.dimension, i, t.rank(), to_string(t));
    int64_t n = t.shape[static_cast<size_t>(l.dimension)];
    if (i == 0) l.length = n;
    else if (n != l.length)
      return fmt::format("input {} has {} positions along dimension {} but input 0 has {}", i, n, l.dimension,
                         l.length);
  }
  if (size != nullptr) {
    if (l.inputs > 0 && *size != l.length)
      return fmt::format("scan_dim_size {} differs from the inputs' {} positions along dimension {}", *size,
                         l.length, l.dimension);
    l.length = *size;
  } else if (l.inputs == 0) {
    return std::string("has no inputs and no scan_dim_size, so the number of steps is unknown");
  }
  return l;
}

std::vector<Tensor> scan(Builder& b, const std::vector<Tensor>& inputs, const std::vector<Tensor>& inits,
                         int64_t dimension, bool reverse,
                         const std::function<std::vector<Tensor>(Builder&, const std::vector<Tensor>&)>& body) {
  TESSERA_CHECK(!inputs.empty(), "scan of no inputs");
  auto region = std::make_unique<Block>();
  Builder rb(b.module(), *region);
  std::vector<Tensor> args;
  for (const Tensor& x : inputs) args.push_back(rb.wrap(region->add_argument(erase_dim(x.type(), dimension))));
  for (const Tensor& c : inits) args.push_back(rb.wrap(region->add_argument(c.type())));
  std::vector<Tensor> outs = body(rb, args);
  TESSERA_CHECK(outs.size() >= inits.size(), "scan body returned {} values for {} carries", outs.size(),
                inits.size());
  std::vector<Value*> returned;
  std::vector<Type> results;
  int64_t length = inputs[0].type().shape.at(static_cast<size_t>(dimension));
  size_t outputs = outs.size() - inits.size();
  for (size_t k = 0; k < outs.size(); ++k) {
    returned.push_back(outs[k].value());
    results.push_back(k < outputs ? insert_dim(outs[k].type(), dimension, length) : outs[k].type());
  }
  region->append(std::make_unique<Op>(OpKind::Return, returned, std::vector<Type>{}));
  AttrMap a;
  a.set("dimension", dimension);
  if (reverse) a.set("is_reverse", true);
  a.set("operandSegmentSizes", segment_sizes_attr({static_cast<int64_t>(inputs.size()), static_cast<int64_t>(inits.size())}));
  a.set("resultSegmentSizes", segment_sizes_attr({static_cast<int64_t>(outputs), static_cast<int64_t>(inits.size())}));
  std::vector<Tensor> operands = inputs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  return b.emit_with_regions(OpKind::Scan, operands, std::move(a), results,
                             [&](Op& op) { op.adopt_region(std::move(region)); });
}

}  // namespace tessera::ir
