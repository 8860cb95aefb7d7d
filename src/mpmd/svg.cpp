// The SVG timeline writer (simulate.h). Plain text output: the picture must open in any browser
// and needs no library; colours follow the kind, and alternate chunks of an interleaved schedule
// use a lighter shade of the same colour so the virtual stages can be told apart.
#include "mpmd/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "support/strings.h"

namespace tessera::mpmd {

namespace {

constexpr double kLeft = 80, kTop = 48, kRow = 26, kGap = 6, kRight = 24, kAxis = 44;

struct Colours {
  const char* dark;
  const char* light;
  const char* meaning;
};

Colours colours_of(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward: return {"#4e79a7", "#a0cbe8", "forward"};
    case ActionKind::kBackward: return {"#59a14f", "#8cd17d", "backward"};
    case ActionKind::kBackwardInput: return {"#f28e2b", "#ffbe7d", "input gradient"};
    case ActionKind::kBackwardWeight: return {"#b07aa1", "#d4a6c8", "weight gradient"};
    default: return {"#999999", "#cccccc", "transfer"};
  }
}

std::string num(double v) { return fmt::format("{:.2f}", v); }

// A tick spacing of 1, 2 or 5 times a power of ten giving at most about 12 ticks.
double tick_step(double span) {
  double raw = span / 12;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

}  // namespace

std::string timeline_svg(const Schedule& s, const Simulation& sim, std::string_view title) {
  const double span = sim.makespan > 0 ? sim.makespan : 1;
  const double scale = std::clamp(960.0 / span, 2.0, 48.0);  // pixels per time unit
  const double plot = span * scale;
  // Whole pixels (rounded: the right margin keeps every box inside). A short makespan is drawn at
  // the clamped 48 pixels per unit, so the plot's width is fractional, and a browser drew such a
  // measured timeline (8.8 ms) a pixel narrower than it declared.
  const double width = std::round(kLeft + plot + kRight);
  const double height = std::round(kTop + static_cast<double>(s.stages) * (kRow + kGap) + kAxis);
  std::string out;
  out += fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\">\n",
      num(width), num(height), num(width), num(height));
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(width), num(height));
  out += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", num(kLeft),
                     support::xml_escape(title));
  // The legend: one coloured word per kind that occurs.
  double legend_x = kLeft;
  for (ActionKind kind : {ActionKind::kForward, ActionKind::kBackward, ActionKind::kBackwardInput,
                          ActionKind::kBackwardWeight}) {
    bool used = false;
    for (const auto& list : s.actions)
      used = used || std::any_of(list.begin(), list.end(), [&](const Action& a) { return a.kind == kind; });
    if (!used) continue;
    Colours c = colours_of(kind);
    std::string text = fmt::format("{} {}", kind_name(kind), c.meaning);
    out += fmt::format("<text x=\"{}\" y=\"38\" font-size=\"11\" fill=\"{}\">{}</text>\n", num(legend_x), c.dark,
                       support::xml_escape(text));
    legend_x += 7.0 * static_cast<double>(text.size()) + 16;
  }
  if (s.virtual_per_stage > 1)
    out += fmt::format("<text x=\"{}\" y=\"38\" font-size=\"11\" fill=\"#555555\">(lighter: odd chunks, "
                       "virtual stages s+P, s+3P, ...)</text>\n",
                       num(legend_x));

  for (int64_t stage = 0; stage < s.stages; ++stage) {
    const double y = kTop + static_cast<double>(stage) * (kRow + kGap);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">stage {}</text>\n",
                       num(kLeft - 8), num(y + kRow * 0.65), stage);
    const auto& list = s.actions[static_cast<size_t>(stage)];
    for (size_t i = 0; i < list.size(); ++i) {
      const Action& a = list[i];
      const Interval& t = sim.times[static_cast<size_t>(stage)][i];
      if (!a.is_compute() || t.end <= t.start) continue;
      const int64_t chunk = a.virtual_stage / s.stages;
      Colours c = colours_of(a.kind);
      const double x = kLeft + t.start * scale, w = (t.end - t.start) * scale;
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" "
          "stroke-width=\"1\"><title>{}: {} to {}</title></rect>\n",
          num(x), num(y), num(w), num(kRow), chunk % 2 == 0 ? c.dark : c.light, support::xml_escape(describe(a)),
          t.start, t.end);
      if (w >= 14)
        out += fmt::format(
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
            num(x + w / 2), num(y + kRow * 0.65), chunk % 2 == 0 ? "#ffffff" : "#000000", a.microbatch);
    }
  }

  // The time axis.
  const double axis_y = kTop + static_cast<double>(s.stages) * (kRow + kGap) + 4;
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>\n", num(kLeft), num(axis_y),
                     num(kLeft + plot), num(axis_y));
  const double step = tick_step(span);
  for (int64_t k = 0; static_cast<double>(k) * step <= span + 1e-9; ++k) {
    const double x = kLeft + static_cast<double>(k) * step * scale;
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>\n", num(x), num(axis_y),
                       num(x), num(axis_y + 5));
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:g}</text>\n", num(x),
                       num(axis_y + 17), static_cast<double>(k) * step);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">time</text>\n",
                     num(kLeft + plot), num(axis_y + 32));
  out += "</svg>\n";
  return out;
}

}  // namespace tessera::mpmd
