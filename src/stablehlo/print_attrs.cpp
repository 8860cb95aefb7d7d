// Attribute values as MLIR, StableHLO and Shardy print them: strings and symbols with MLIR's
// quoting, `array<i64: ...>`, `#stablehlo.*` structs (fields that are empty or zero left out, as
// StableHLO does), comparison enums, and Shardy's meshes and shardings
// (`<@m, [{"a", ?}, {"b"}p1], replicated={"c"}>`, sub-axes `"x":(1)2`).
#include <algorithm>
#include <bit>
#include <cctype>
#include <iterator>

#include "stablehlo/print_internal.h"
#include "stablehlo/printer.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace print_impl {
namespace {

// Attributes MLIR prints as a bare name when set (UnitAttr); every other bool prints true/false.
constexpr std::string_view kUnitAttributes[] = {"use_global_device_ids"};
// Integer attributes that are i32 in the text; every other integer is an i64.
constexpr std::string_view kI32Attributes[] = {"mhlo.num_partitions", "mhlo.num_replicas",
                                               "tf.aliasing_output", "exponent_bits",
                                               "mantissa_bits", "index", "version", "api_version"};

// Float attributes whose type is f32 (the others print as f64).
constexpr std::string_view kF32Attributes[] = {"epsilon"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool is_bare_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s.substr(1))
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'))
      return false;
  return true;
}

std::string axis_ref(const ir::AxisRef& ref) {
  std::string out = quoted(ref.name);
  if (ref.sub) out += fmt::format(":({}){}", ref.sub->pre_size, ref.sub->size);
  return out;
}

std::string axis_refs(const std::vector<ir::AxisRef>& refs) {
  std::string out;
  for (const ir::AxisRef& r : refs) out += (out.empty() ? "" : ", ") + axis_ref(r);
  return out;
}

std::string dim_sharding(const ir::DimSharding& d) {
  std::string out = "{" + axis_refs(d.axes);
  if (d.open) out += d.axes.empty() ? "?" : ", ?";
  out += "}";
  if (d.priority) out += fmt::format("p{}", *d.priority);
  return out;
}

// A `#stablehlo.<name><...>` struct: list fields left out when empty, numbers when zero.
class StructText {
 public:
  StructText& list(std::string_view name, const std::vector<int64_t>& v) {
    if (!v.empty()) field(name, int_list(v));
    return *this;
  }
  StructText& number(std::string_view name, int64_t v) {
    if (v != 0) field(name, std::to_string(v));
    return *this;
  }
  std::string done(std::string_view mnemonic, std::string_view dialect = "stablehlo") const {
    return fmt::format("#{}.{}<{}>", dialect, mnemonic, body_);
  }

 private:
  void field(std::string_view name, const std::string& value) {
    body_ += fmt::format("{}{} = {}", body_.empty() ? "" : ", ", name, value);
  }
  std::string body_;
};

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\\')
      out += "\\\\";
    else if (std::isprint(c) && c != '"')
      out += ch;
    else
      out += fmt::format("\\{:02X}", c);
  }
  return out + "\"";
}

std::string keyword_or_string(std::string_view s) {
  return is_bare_identifier(s) ? std::string(s) : quoted(s);
}

std::string symbol(std::string_view name) { return "@" + keyword_or_string(name); }

std::string int_list(const std::vector<int64_t>& v) { return "[" + support::join(v, ", ") + "]"; }

// One operand's layout: its batch-like and feature-like dimension letters and the spatial dimensions
// numbered in order, each at the position of the operand dimension it names.
std::string conv_layout(size_t rank, std::initializer_list<std::pair<int64_t, char>> named,
                        const std::vector<int64_t>& spatial) {
  std::vector<std::string> slots(rank, "?");
  auto put = [&](int64_t d, std::string text) {
    if (d >= 0 && static_cast<size_t>(d) < rank) slots[static_cast<size_t>(d)] = std::move(text);
  };
  for (auto [d, letter] : named) put(d, std::string(1, letter));
  for (size_t i = 0; i < spatial.size(); ++i) put(spatial[i], std::to_string(i));
  return "[" + support::join(slots, ", ") + "]";
}

std::string conv_dims_text(const ir::ConvDims& d) {
  size_t rank = d.input_spatial.size() + 2;
  return conv_layout(rank, {{d.input_batch, 'b'}, {d.input_feature, 'f'}}, d.input_spatial) + "x" +
         conv_layout(rank, {{d.kernel_input_feature, 'i'}, {d.kernel_output_feature, 'o'}},
                     d.kernel_spatial) +
         "->" +
         conv_layout(rank, {{d.output_batch, 'b'}, {d.output_feature, 'f'}}, d.output_spatial);
}

std::string sharding_body(const ir::Sharding& s) {
  std::string dims;
  for (const ir::DimSharding& d : s.dims) dims += (dims.empty() ? "" : ", ") + dim_sharding(d);
  std::string out = fmt::format("<{}, [{}]", symbol(s.mesh), dims);
  if (!s.replicated.empty()) out += ", replicated={" + axis_refs(s.replicated) + "}";
  if (!s.unreduced.empty())
    out += fmt::format(", unreduced={}{{{}}}", s.unreduced_kind == ir::ReductionKind::kSum ? "" : ir::to_string(s.unreduced_kind),
                       axis_refs(s.unreduced));
  return out + ">";
}

std::string sharding_list(const ir::ShardingList& l) {
  std::string out;
  for (const ir::Sharding& s : l) out += (out.empty() ? "" : ", ") + sharding_body(s);
  return "[" + out + "]";
}

std::string axis_names(const ir::AxisNames& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + quoted(n);
  return "{" + out + "}";
}

std::string axis_ref_list(const std::vector<ir::AxisRef>& refs) { return "{" + axis_refs(refs) + "}"; }

std::string named_attribute(const std::string& name, const ir::Attribute& value) {
  if (const bool* b = std::get_if<bool>(&value); b && listed(kUnitAttributes, name))
    return *b ? keyword_or_string(name) : "";
  return keyword_or_string(name) + " = " + print_attribute(value, name);
}

std::string attr_dict_except(const ir::AttrMap& attrs,
                             std::initializer_list<std::string_view> elided) {
  return attr_dict(attrs, [&](const std::string& name) {
    for (std::string_view e : elided)
      if (e == name) return false;
    return true;
  });
}

}  // namespace print_impl

using namespace print_impl;

std::string print(const ir::Sharding& sharding) {
  return "#sdy.sharding" + sharding_body(sharding);
}

std::string print(const ir::Mesh& mesh) {
  std::string axes;
  for (const ir::MeshAxis& a : mesh.axes)
    axes += fmt::format("{}{}={}", axes.empty() ? "" : ", ", quoted(a.name), a.size);
  std::string out = fmt::format("sdy.mesh {} = <[{}]", symbol(mesh.name), axes);
  if (!mesh.device_ids.empty()) out += ", device_ids=" + int_list(mesh.device_ids);
  return out + ">";
}

std::string print(const ir::Type& type) { return ir::to_string(type); }

std::string print_attribute(const ir::Attribute& attribute, const std::string& name) {
  return std::visit(
      Overloaded{
          [](bool b) -> std::string { return b ? "true" : "false"; },
          [&](int64_t v) {
            return fmt::format("{} : {}", v, listed(kI32Attributes, name) ? "i32" : "i64");
          },
          [&](double v) {
            // An f32 attribute (batch norm's epsilon) is held as a double; it prints as the f32 it is.
            if (listed(kF32Attributes, name))
              return print_float(ir::ElementType::f32, std::bit_cast<uint32_t>(static_cast<float>(v))) + " : f32";
            return print_float(ir::ElementType::f64, std::bit_cast<uint64_t>(v)) + " : f64";
          },
          [](const std::string& s) { return quoted(s); },
          [](const std::vector<int64_t>& v) {
            return v.empty() ? std::string("array<i64>")
                             : "array<i64: " + support::join(v, ", ") + ">";
          },
          [](const ir::IntMatrix& m) {
            return dense(ir::Literal::from_ints(ir::i64({m.rows, m.cols}), m.values));
          },
          [](const ir::Literal& l) { return dense(l); },
          [](ir::ComparisonDirection d) {
            return fmt::format("#stablehlo<comparison_direction {}>", ir::to_string(d));
          },
          [](ir::CompareType t) {
            return fmt::format("#stablehlo<comparison_type {}>", ir::to_string(t));
          },
          [](const ir::ChannelHandle& h) {
            return fmt::format("#stablehlo.channel_handle<handle = {}, type = {}>", h.handle,
                               h.type);
          },
          [](const ir::DotDims& d) {
            return StructText()
                .list("lhs_batching_dimensions", d.lhs_batch)
                .list("rhs_batching_dimensions", d.rhs_batch)
                .list("lhs_contracting_dimensions", d.lhs_contracting)
                .list("rhs_contracting_dimensions", d.rhs_contracting)
                .done("dot");
          },
          [](const ir::RaggedDotDims& d) {
            return StructText()
                .list("lhs_batching_dimensions", d.dot.lhs_batch)
                .list("rhs_batching_dimensions", d.dot.rhs_batch)
                .list("lhs_contracting_dimensions", d.dot.lhs_contracting)
                .list("rhs_contracting_dimensions", d.dot.rhs_contracting)
                .list("lhs_ragged_dimensions", d.lhs_ragged)
                .list("rhs_group_dimensions", d.rhs_group)
                .done("ragged_dot", "chlo");
          },
          [](const ir::GatherDims& d) {
            return StructText()
                .list("offset_dims", d.offset_dims)
                .list("collapsed_slice_dims", d.collapsed_slice_dims)
                .list("operand_batching_dims", d.operand_batching_dims)
                .list("start_indices_batching_dims", d.start_indices_batching_dims)
                .list("start_index_map", d.start_index_map)
                .number("index_vector_dim", d.index_vector_dim)
                .done("gather");
          },
          [](const ir::ScatterDims& d) {
            return StructText()
                .list("update_window_dims", d.update_window_dims)
                .list("inserted_window_dims", d.inserted_window_dims)
                .list("input_batching_dims", d.input_batching_dims)
                .list("scatter_indices_batching_dims", d.scatter_indices_batching_dims)
                .list("scatter_dims_to_operand_dims", d.scatter_dims_to_operand_dims)
                .number("index_vector_dim", d.index_vector_dim)
                .done("scatter");
          },
          [](const ir::ConvDims& d) { return "#stablehlo.conv<" + conv_dims_text(d) + ">"; },
          [](const ir::Sharding& s) { return print(s); },
          [](const ir::ShardingList& l) {
            return "#sdy.sharding_per_value<" + sharding_list(l) + ">";
          },
          [](const ir::AxisNames& a) { return "#sdy<manual_axes" + axis_names(a) + ">"; },
          [](const ir::SymbolGrid& g) {
            std::vector<std::string> rows;
            for (const auto& row : g.rows) {
              std::vector<std::string> names;
              for (const std::string& n : row) names.push_back(symbol(n));
              rows.push_back("[" + support::join(names, ", ") + "]");
            }
            return "[" + support::join(rows, ", ") + "]";
          },
          [](const ir::Opaque& o) { return o.text; },
      },
      attribute);
}

}  // namespace tessera::stablehlo
