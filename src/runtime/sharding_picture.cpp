// Sharding pictures (sharding_picture.h): the blocks come from piece_box, one per device, grouped
// by the ranges they cover; the text grid and the SVG draw the same Grid.
#include "runtime/sharding_picture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "runtime/layout.h"
#include "spmd/mesh_math.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::runtime {

namespace {

using Range = std::pair<int64_t, int64_t>;  // [first, end) of one dimension

struct Grid {
  std::vector<Range> rows, cols;                        // one row of 1 element for rank < 2
  std::vector<std::vector<std::vector<int64_t>>> cells;  // [row][col]: device ids, ascending
  bool has_rows = false, has_cols = false;               // rank 2: both; rank 1: columns only
};

Grid grid_of(const ir::Type& type, const ir::Sharding& sharding, const ir::Mesh& mesh) {
  const size_t rank = type.shape.size();
  if (rank > 2)
    support::fail("a sharding picture is drawn for arrays of rank 0, 1 or 2; {} has rank {} (its layout: {})",
                  ir::to_string(type), rank, sharding_text(sharding));
  Grid g;
  g.has_cols = rank >= 1;
  g.has_rows = rank == 2;
  const int row_dim = rank == 2 ? 0 : -1, col_dim = rank == 2 ? 1 : (rank == 1 ? 0 : -1);
  // A maximal mesh puts the whole array on its one device.
  std::vector<int64_t> devices;
  if (spmd::is_maximal(mesh)) {
    devices.push_back(mesh.device_ids.at(0));
  } else {
    for (int64_t p = 0; p < mesh.num_devices(); ++p) devices.push_back(spmd::device_at(mesh, p));
  }
  std::map<std::pair<Range, Range>, std::vector<int64_t>> holders;
  for (int64_t d : devices) {
    PieceBox box = spmd::is_maximal(mesh) ? PieceBox{std::vector<int64_t>(rank, 0), type.shape, type.shape}
                                          : piece_box(type, sharding, mesh, d);
    auto range = [&](int dim) {
      return dim < 0 ? Range{0, 1} : Range{box.start[static_cast<size_t>(dim)],
                                           box.start[static_cast<size_t>(dim)] + box.extent[static_cast<size_t>(dim)]};
    };
    holders[{range(row_dim), range(col_dim)}].push_back(d);
  }
  for (const auto& [key, ds] : holders) {
    g.rows.push_back(key.first);
    g.cols.push_back(key.second);
  }
  for (auto* v : {&g.rows, &g.cols}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  g.cells.assign(g.rows.size(), std::vector<std::vector<int64_t>>(g.cols.size()));
  auto index = [](const std::vector<Range>& v, const Range& r) {
    return static_cast<size_t>(std::lower_bound(v.begin(), v.end(), r) - v.begin());
  };
  for (auto& [key, ds] : holders) {
    std::sort(ds.begin(), ds.end());
    g.cells[index(g.rows, key.first)][index(g.cols, key.second)] = ds;
  }
  return g;
}

// "0,1", or "0-7" for a run of three or more consecutive ids.
std::string device_label(const std::vector<int64_t>& ds) {
  if (ds.empty()) return "-";  // a block no device holds cannot occur; drawn visibly if it does
  std::vector<std::string> parts;
  for (size_t i = 0; i < ds.size();) {
    size_t j = i;
    while (j + 1 < ds.size() && ds[j + 1] == ds[j] + 1) ++j;
    if (j - i >= 2) {
      parts.push_back(fmt::format("{}-{}", ds[i], ds[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(std::to_string(ds[k]));
    }
    i = j + 1;
  }
  return support::join(parts, ",");
}

std::string range_label(const Range& r) { return fmt::format("{}:{}", r.first, r.second); }

std::string axes_text(const std::vector<ir::AxisRef>& axes) {
  std::vector<std::string> names;
  for (const ir::AxisRef& a : axes) names.push_back(ir::to_string(a));
  return support::join(names, ", ");
}

std::string unreduced_note(const ir::Sharding& sharding) {
  if (sharding.unreduced.empty()) return "";
  if (sharding.unreduced_kind != ir::ReductionKind::kSum)
    return fmt::format("unreduced over {}: each block holds a partial {}; the array is their {}", axes_text(sharding.unreduced),
                       ir::to_string(sharding.unreduced_kind), ir::to_string(sharding.unreduced_kind));
  return fmt::format("unreduced over {}: each block holds a partial sum; the array is their sum",
                     axes_text(sharding.unreduced));
}

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string centered(const std::string& text, size_t width) {
  size_t left = (width - std::min(width, text.size())) / 2;
  return std::string(left, ' ') + text + std::string(width - std::min(width, text.size() + left), ' ');
}

}  // namespace

std::string sharding_text(const ir::Sharding& sharding) {
  std::vector<std::string> dims;
  for (const ir::DimSharding& d : sharding.dims) dims.push_back("{" + axes_text(d.axes) + (d.open ? ", ?" : "") + "}");
  std::string out = "[" + support::join(dims, ", ") + "]";
  if (!sharding.replicated.empty()) out += " replicated={" + axes_text(sharding.replicated) + "}";
  if (!sharding.unreduced.empty())
    out += fmt::format(" unreduced={}{{{}}}", sharding.unreduced_kind == ir::ReductionKind::kSum ? "" : ir::to_string(sharding.unreduced_kind),
                       axes_text(sharding.unreduced));
  return out;
}

std::string layout_title(const std::string& name, const ir::Type& type, const ir::Sharding& sharding,
                         const ir::Mesh& mesh) {
  std::vector<std::string> axes;
  for (const ir::MeshAxis& a : mesh.axes) axes.push_back(fmt::format("\"{}\"={}", a.name, a.size));
  return fmt::format("{}: {} {} on @{} [{}]", name, ir::to_string(type), sharding_text(sharding), mesh.name,
                     support::join(axes, ", "));
}

std::string sharding_grid(const std::string& title, const ir::Type& type, const ir::Sharding& sharding,
                          const ir::Mesh& mesh) {
  Grid g = grid_of(type, sharding, mesh);
  std::vector<size_t> width(g.cols.size());
  for (size_t c = 0; c < g.cols.size(); ++c) {
    width[c] = g.has_cols ? range_label(g.cols[c]).size() : 0;
    for (size_t r = 0; r < g.rows.size(); ++r) width[c] = std::max(width[c], device_label(g.cells[r][c]).size());
    width[c] += 2;
  }
  size_t margin = 0;
  if (g.has_rows)
    for (const Range& r : g.rows) margin = std::max(margin, range_label(r).size() + 1);
  auto rule = [&](std::string_view left, std::string_view mid, std::string_view right) {
    std::string line = std::string(margin, ' ') + std::string(left);
    for (size_t c = 0; c < width.size(); ++c) line += repeat("─", width[c]) + std::string(c + 1 < width.size() ? mid : right);
    return line + "\n";
  };
  std::string out = title + "\n";
  if (g.has_cols) {
    std::string line = std::string(margin + 1, ' ');
    for (size_t c = 0; c < width.size(); ++c) line += centered(range_label(g.cols[c]), width[c]) + " ";
    out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  out += rule("┌", "┬", "┐");
  for (size_t r = 0; r < g.rows.size(); ++r) {
    std::string label = g.has_rows ? range_label(g.rows[r]) : "";
    std::string line = std::string(margin - std::min(margin, label.size() + 1), ' ') + label + (g.has_rows ? " " : "");
    line += "│";
    for (size_t c = 0; c < width.size(); ++c) line += centered(device_label(g.cells[r][c]), width[c]) + "│";
    out += line + "\n";
    if (r + 1 < g.rows.size()) out += rule("├", "┼", "┤");
  }
  out += rule("└", "┴", "┘");
  if (std::string note = unreduced_note(sharding); !note.empty()) out += note + "\n";
  return out;
}

std::string sharding_svg(const std::string& title, const ir::Type& type, const ir::Sharding& sharding,
                         const ir::Mesh& mesh) {
  Grid g = grid_of(type, sharding, mesh);
  constexpr double kLeft = 70, kTop = 56, kPlotW = 480, kPlotH = 320, kMinW = 44, kMinH = 26, kCharW = 7.2;
  // Extents are proportional to the ranges, widened where a label would not fit.
  auto sizes = [](const std::vector<Range>& ranges, bool real, double total, double minimum,
                  const std::vector<double>& need) {
    int64_t span = 0;
    for (const Range& r : ranges) span += r.second - r.first;
    std::vector<double> out;
    for (size_t i = 0; i < ranges.size(); ++i) {
      double share = real && span > 0 ? static_cast<double>(ranges[i].second - ranges[i].first) / static_cast<double>(span)
                                      : 1.0 / static_cast<double>(ranges.size());
      out.push_back(std::max({share * total, minimum, need[i]}));
    }
    return out;
  };
  std::vector<double> need_w(g.cols.size(), 0), need_h(g.rows.size(), 0);
  for (size_t c = 0; c < g.cols.size(); ++c)
    for (size_t r = 0; r < g.rows.size(); ++r)
      need_w[c] = std::max(need_w[c], kCharW * static_cast<double>(device_label(g.cells[r][c]).size()) + 12);
  std::vector<double> w = sizes(g.cols, g.has_cols, kPlotW, kMinW, need_w);
  std::vector<double> h = sizes(g.rows, g.has_rows, g.has_rows ? kPlotH : 60, kMinH, need_h);
  double plot_w = 0, plot_h = 0;
  for (double x : w) plot_w += x;
  for (double y : h) plot_h += y;
  std::string note = unreduced_note(sharding);
  double width = std::max(kLeft + plot_w + 20, kCharW * static_cast<double>(title.size()) + 30);
  double height = kTop + plot_h + (note.empty() ? 20 : 44);
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "font-family=\"monospace\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0:.0f}\" height=\"{1:.0f}\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"13\">{2}</text>\n",
      width, height, support::xml_escape(title));
  double x = kLeft;
  for (size_t c = 0; c < g.cols.size(); ++c) {
    if (g.has_cols)
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#555\">{}</text>\n",
                         x + w[c] / 2, kTop - 8, range_label(g.cols[c]));
    double y = kTop;
    for (size_t r = 0; r < g.rows.size(); ++r) {
      const std::vector<int64_t>& ds = g.cells[r][c];
      // One hue per block holder: the golden angle spreads neighbouring devices apart.
      double hue = ds.empty() ? 0 : std::fmod(static_cast<double>(ds[0]) * 137.508, 360.0);
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"hsl({:.0f},60%,80%)\" "
          "stroke=\"#333\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" dominant-baseline=\"middle\">{}</text>\n",
          x, y, w[c], h[r], hue, x + w[c] / 2, y + h[r] / 2, device_label(ds));
      if (c == 0 && g.has_rows)
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" dominant-baseline=\"middle\" "
                           "fill=\"#555\">{}</text>\n",
                           kLeft - 8, y + h[r] / 2, range_label(g.rows[r]));
      y += h[r];
    }
    x += w[c];
  }
  if (!note.empty())
    out += fmt::format("<text x=\"10\" y=\"{:.1f}\">{}</text>\n", kTop + plot_h + 28, support::xml_escape(note));
  out += "</svg>\n";
  return out;
}

}  // namespace tessera::runtime
