// The SVG timeline writer (timeline_svg.h): each row's boxes in lanes by nesting, runs of boxes
// too thin to tell apart drawn as one, and the time axis.
#include "support/timeline_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/strings.h"

namespace tessera::support {

namespace {

constexpr double kLeft = 120, kRight = 24, kTop = 48, kLane = 24, kGap = 6, kAxis = 44, kPlot = 960;

std::string num(double v) { return fmt::format("{:.2f}", v); }

// A tick spacing of 1, 2 or 5 times a power of ten giving at most about 12 ticks.
double tick_step(double span) {
  const double raw = span / 12, p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

// The row's boxes by lane: a box that starts before an earlier one has ended goes one lane below it.
std::vector<std::vector<const TimelineBox*>> lanes_of(const TimelineRow& row) {
  std::vector<const TimelineBox*> sorted;
  for (const TimelineBox& b : row.boxes) sorted.push_back(&b);
  std::stable_sort(sorted.begin(), sorted.end(), [](const TimelineBox* a, const TimelineBox* b) {
    return a->start != b->start ? a->start < b->start : a->end > b->end;
  });
  std::vector<std::vector<const TimelineBox*>> lanes(1);
  std::vector<double> open;  // ends of the boxes holding the next one
  for (const TimelineBox* b : sorted) {
    while (!open.empty() && open.back() <= b->start) open.pop_back();
    if (lanes.size() <= open.size()) lanes.emplace_back();
    lanes[open.size()].push_back(b);
    open.push_back(b->end);
  }
  return lanes;
}

}  // namespace

std::string timeline_svg(const Timeline& t) {
  double span = t.span;
  if (span <= 0)
    for (const TimelineRow& row : t.rows)
      for (const TimelineBox& b : row.boxes) span = std::max(span, b.end);
  if (span <= 0) span = 1;
  const double scale = t.px_per_unit > 0 ? t.px_per_unit : kPlot / span, plot = span * scale;
  std::vector<std::vector<std::vector<const TimelineBox*>>> lanes;
  double rows_height = 0;
  for (const TimelineRow& row : t.rows) {
    lanes.push_back(lanes_of(row));
    rows_height += static_cast<double>(lanes.back().size()) * kLane + kGap;
  }
  // Whole pixels (rounded: the right margin keeps every box inside); a browser drew a measured
  // timeline of fractional width a pixel narrower than it declared.
  const double width = std::round(kLeft + plot + kRight), height = std::round(kTop + rows_height + kAxis);
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
      num(width), num(height));
  out += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", num(kLeft),
                     xml_escape(t.title));
  double legend_x = kLeft;
  for (const auto& [text, colour] : t.legend) {
    out += fmt::format("<text x=\"{}\" y=\"38\" font-size=\"11\" fill=\"{}\">{}</text>\n", num(legend_x), colour,
                       xml_escape(text));
    legend_x += 7.0 * static_cast<double>(text.size()) + 16;
  }

  double y = kTop;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n", num(kLeft - 8),
                       num(y + kLane * 0.65), xml_escape(t.rows[r].name));
    for (size_t lane = 0; lane < lanes[r].size(); ++lane) {
      const double top = y + static_cast<double>(lane) * kLane;
      // The run of boxes being drawn as one: its first box, its extent and whether it has others.
      const TimelineBox* head = nullptr;
      double x0 = 0, x1 = 0;
      bool alone = true;
      auto flush = [&] {
        if (!head) return;
        const double w = std::max(x1 - x0, 0.5);
        out += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"0.5\">"
            "<title>{}</title></rect>\n",
            num(x0), num(top), num(w), num(kLane - 2), head->fill, xml_escape(head->tooltip));
        if (alone && !head->label.empty() && w >= 7.0 * static_cast<double>(head->label.size()) + 2)  // it fits
          out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                             num(x0 + w / 2), num(top + kLane * 0.65), head->ink, xml_escape(head->label));
      };
      for (const TimelineBox* b : lanes[r][lane]) {
        const double bx0 = kLeft + b->start * scale, bx1 = kLeft + b->end * scale;
        if (head && b->fill == head->fill && bx0 <= x1 + 1 && (bx1 - bx0 < 1 || x1 - x0 < 1)) {
          x1 = std::max(x1, bx1);
          alone = false;
          continue;
        }
        flush();
        head = b, x0 = bx0, x1 = bx1, alone = true;
      }
      flush();
    }
    y += static_cast<double>(lanes[r].size()) * kLane + kGap;
  }

  const double axis_y = y + 4, step = tick_step(span);
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>\n", num(kLeft), num(axis_y),
                     num(kLeft + plot), num(axis_y));
  for (int64_t k = 0; static_cast<double>(k) * step <= span + 1e-9; ++k) {
    const double x = kLeft + static_cast<double>(k) * step * scale;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#000000\"/>\n"
                       "<text x=\"{0}\" y=\"{3}\" font-size=\"10\" text-anchor=\"middle\">{4:g}</text>\n",
                       num(x), num(axis_y), num(axis_y + 5), num(axis_y + 17), static_cast<double>(k) * step);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n", num(kLeft + plot),
                     num(axis_y + 32), xml_escape(t.unit));
  return out + "</svg>\n";
}

}  // namespace tessera::support
