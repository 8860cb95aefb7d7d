// Shape rules of the window ops and sort: convolution, reduce_window, select_and_scatter, sort.
// Each check names the spec's constraint number (C1, C2, ...) in its message, so a rejected
// program points at the line of the spec it breaks. Constraints on regions (the bodies' types)
// are checked by the kernels when they run the bodies.
#include <algorithm>
#include <set>

#include "ir/shape_rules.h"
#include "ir/window.h"
#include "support/strings.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;

std::string list(const std::vector<int64_t>& v) { return "[" + support::join(v, ", ") + "]"; }

// A list attribute of `rank` entries, each > 0 (absent lists default to ones).
void check_list(const ShapeQuery& q, const char* name, size_t rank, const char* c_size,
                const char* c_positive) {
  if (name == nullptr) return;
  const auto* v = q.attrs.find<std::vector<int64_t>>(name);
  if (v == nullptr) {
    if (q.attrs.has(name)) reject(q, "{} must be an array<i64>", name);
    return;
  }
  if (v->size() != rank)
    reject(q, "{} has {} entries, must have {} {}", name, v->size(), rank, c_size);
  for (int64_t x : *v)
    if (x <= 0) reject(q, "{} = {} must be positive {}", name, list(*v), c_positive);
}

void check_padding(const ShapeQuery& q, const char* name, size_t rank, const char* c) {
  if (!q.attrs.has(name)) return;
  std::vector<int64_t> shape = padding_shape(q.attrs, name);
  std::vector<int64_t> want{static_cast<int64_t>(rank), 2};
  if (shape != want)
    reject(q, "padding has shape {}, must be {} {}", shape.empty() ? "(not a 2-D integer tensor)" : list(shape),
           list(want), c);
}

// `dims` are distinct dimensions of a rank-n operand.
void check_unique(const ShapeQuery& q, const std::string& what, const std::vector<int64_t>& dims,
                  int64_t n, const char* c) {
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= n) reject(q, "{} dimension {} is out of range for rank {} {}", what, d, n, c);
    if (!seen.insert(d).second) reject(q, "{} dimensions {} repeat {} {}", what, list(dims), d, c);
  }
}

}  // namespace

Types infer_Convolution(const ShapeQuery& q) {
  const Type& lhs = q.operands[0];
  const Type& rhs = q.operands[1];
  const auto* dn = q.attrs.find<ConvDims>("dimension_numbers");
  if (dn == nullptr) reject(q, "has no dimension_numbers");
  int64_t n = lhs.rank();
  if (rhs.rank() != n) reject(q, "lhs {} and rhs {} have different ranks (C1)", to_string(lhs), to_string(rhs));
  if (n < 2) reject(q, "operands of rank {} have no batch and feature dimensions (C1)", n);
  size_t s = static_cast<size_t>(n - 2);
  check_list(q, "window_strides", s, "(C2)", "(C3)");
  check_padding(q, "padding", s, "(C4)");
  check_list(q, "lhs_dilation", s, "(C5)", "(C6)");
  check_list(q, "rhs_dilation", s, "(C7)", "(C8)");
  bool ok = true;
  std::vector<bool> reversal = bool_array(q.attrs, "window_reversal", ok);
  if (!ok) reject(q, "window_reversal must be an array<i1>");
  if (q.attrs.has("window_reversal") && reversal.size() != s)
    reject(q, "window_reversal has {} entries, must have {} (C9)", reversal.size(), s);
  int64_t groups = q.attrs.get_or<int64_t>("feature_group_count", 1);
  int64_t batch_groups = q.attrs.get_or<int64_t>("batch_group_count", 1);
  if (groups <= 0) reject(q, "feature_group_count = {} must be positive (C21)", groups);
  if (batch_groups <= 0) reject(q, "batch_group_count = {} must be positive (C22)", batch_groups);
  if (groups != 1 && batch_groups != 1)
    reject(q, "feature_group_count = {} and batch_group_count = {}: one must be 1 (C23)", groups,
           batch_groups);
  if (dn->input_spatial.size() != s)
    reject(q, "input_spatial_dimensions has {} entries, must have {} (C12)", dn->input_spatial.size(), s);
  std::vector<int64_t> in{dn->input_batch};
  in.insert(in.end(), dn->input_spatial.begin(), dn->input_spatial.end());
  in.push_back(dn->input_feature);
  check_unique(q, "input", in, n, "(C13)");
  if (dn->kernel_spatial.size() != s)
    reject(q, "kernel_spatial_dimensions has {} entries, must have {} (C17)", dn->kernel_spatial.size(), s);
  std::vector<int64_t> kernel = dn->kernel_spatial;
  kernel.push_back(dn->kernel_input_feature);
  kernel.push_back(dn->kernel_output_feature);
  check_unique(q, "kernel", kernel, n, "(C18)");
  if (dn->output_spatial.size() != s)
    reject(q, "output_spatial_dimensions has {} entries, must have {} (C19)", dn->output_spatial.size(), s);
  std::vector<int64_t> out{dn->output_batch};
  out.insert(out.end(), dn->output_spatial.begin(), dn->output_spatial.end());
  out.push_back(dn->output_feature);
  check_unique(q, "output", out, n, "(C20)");
  auto dim = [](const Type& t, int64_t d) { return t.shape[static_cast<size_t>(d)]; };
  int64_t batch = dim(lhs, dn->input_batch), features = dim(lhs, dn->input_feature);
  int64_t out_features = dim(rhs, dn->kernel_output_feature);
  if (batch % batch_groups != 0)
    reject(q, "input batch dimension {} of size {} is not divisible by batch_group_count = {} (C10)",
           dn->input_batch, batch, batch_groups);
  if (features % groups != 0)
    reject(q, "input feature dimension {} of size {} is not divisible by feature_group_count = {} (C11)",
           dn->input_feature, features, groups);
  if (dim(rhs, dn->kernel_input_feature) != features / groups)
    reject(q, "kernel input feature dimension {} has size {}, must be {} (input features {} / feature_group_count {}) (C14)",
           dn->kernel_input_feature, dim(rhs, dn->kernel_input_feature), features / groups, features, groups);
  if (out_features % batch_groups != 0)
    reject(q, "kernel output feature dimension {} of size {} is not divisible by batch_group_count = {} (C15)",
           dn->kernel_output_feature, out_features, batch_groups);
  if (out_features % groups != 0)
    reject(q, "kernel output feature dimension {} of size {} is not divisible by feature_group_count = {} (C16)",
           dn->kernel_output_feature, out_features, groups);
  check_precision_config(q);
  if (lhs.element != rhs.element)
    reject(q, "lhs {} and rhs {} have different element types (C27)", to_string(lhs), to_string(rhs));
  std::vector<int64_t> sizes;
  for (int64_t d : dn->kernel_spatial) sizes.push_back(dim(rhs, d));
  Window w = read_window(q.attrs, kConvolutionWindow, s, sizes);
  std::vector<int64_t> shape(static_cast<size_t>(n));
  shape[static_cast<size_t>(dn->output_batch)] = batch / batch_groups;
  shape[static_cast<size_t>(dn->output_feature)] = out_features;
  for (size_t i = 0; i < s; ++i)
    shape[static_cast<size_t>(dn->output_spatial[i])] = w.num_windows(i, dim(lhs, dn->input_spatial[i]));
  // A written result type may name a wider element type (JAX's preferred_element_type: i8 x i8 ->
  // i32, bf16 x bf16 -> f32), which StableHLO's verifier accepts as it does for dot_general; the
  // products are summed in it.
  ElementType e = q.declared.empty() ? lhs.element : q.declared[0].element;
  return {Type(e, shape)};
}

Types infer_ReduceWindow(const ShapeQuery& q) {
  size_t count = q.operands.size();
  if (count == 0 || count % 2 != 0) reject(q, "expects N inputs and N init values; got {} operands (C1)", count);
  size_t k = count / 2;
  const Type& first = q.operands[0];
  size_t rank = static_cast<size_t>(first.rank());
  for (size_t i = 0; i < k; ++i) {
    if (q.operands[i].shape != first.shape)
      reject(q, "input {} has shape {}, input 0 has {} (C2)", i, to_string(q.operands[i]), to_string(first));
    const Type& init = q.operands[k + i];
    if (init.rank() != 0 || init.element != q.operands[i].element)
      reject(q, "init value {} has type {}, must be a scalar of {} (C1, C3)", i, to_string(init),
             spelling(q.operands[i].element));
  }
  const auto* dims = q.attrs.find<std::vector<int64_t>>("window_dimensions");
  if (dims == nullptr) reject(q, "has no window_dimensions");
  check_list(q, "window_dimensions", rank, "(C4)", "(C5)");
  check_list(q, "window_strides", rank, "(C6)", "(C7)");
  check_list(q, "base_dilations", rank, "(C8)", "(C9)");
  check_list(q, "window_dilations", rank, "(C10)", "(C11)");
  check_padding(q, "padding", rank, "(C12)");
  Window w = read_window(q.attrs, kReduceWindow, rank);
  std::vector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) shape.push_back(w.num_windows(d, first.shape[d]));
  Types out;
  for (size_t i = 0; i < k; ++i) out.emplace_back(q.operands[i].element, shape);
  return out;
}

Types infer_SelectAndScatter(const ShapeQuery& q) {
  const Type& operand = q.operands[0];
  const Type& source = q.operands[1];
  const Type& init = q.operands[2];
  size_t rank = static_cast<size_t>(operand.rank());
  if (source.element != operand.element)
    reject(q, "source {} and operand {} have different element types (C1)", to_string(source), to_string(operand));
  if (init.rank() != 0 || init.element != operand.element)
    reject(q, "init value {} must be a scalar of {} (C3)", to_string(init), spelling(operand.element));
  if (q.attrs.find<std::vector<int64_t>>("window_dimensions") == nullptr)
    reject(q, "has no window_dimensions");
  check_list(q, "window_dimensions", rank, "(C4)", "(C5)");
  check_list(q, "window_strides", rank, "(C6)", "(C7)");
  check_padding(q, "padding", rank, "(C8)");
  Window w = read_window(q.attrs, kSelectAndScatterWindow, rank);
  std::vector<int64_t> windows;
  for (size_t d = 0; d < rank; ++d) windows.push_back(w.num_windows(d, operand.shape[d]));
  if (source.shape != windows)
    reject(q, "source {} must have the shape of the windows, {} (C2)", to_string(source), list(windows));
  return {operand};
}

Types infer_Sort(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "needs at least one input (C1)");
  const Type& first = q.operands[0];
  for (size_t i = 1; i < q.operands.size(); ++i)
    if (q.operands[i].shape != first.shape)
      reject(q, "input {} has shape {}, input 0 has {} (C3)", i, to_string(q.operands[i]), to_string(first));
  const auto* dim = q.attrs.find<int64_t>("dimension");
  if (dim == nullptr) reject(q, "has no dimension");
  int64_t r = first.rank();
  if (*dim < -r || *dim >= r) reject(q, "dimension = {} is out of range [{}, {}) (C4)", *dim, -r, r);
  return {q.operands.begin(), q.operands.end()};
}

}  // namespace tessera::ir::shape_rules
