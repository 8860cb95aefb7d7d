// --trace and --trace-svg (trace_out.h): the document written, and its timeline drawn.
#include "tools/tessera/trace_out.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "interp/trace.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::tools {

namespace {

using support::fail;

void write_file(const std::string& path, const std::string& text, std::string_view option) {
  std::ofstream f(path, std::ios::binary);
  if (!f) fail("{} {}: cannot open the file for writing", option, path);
  f << text;
  if (!f.flush()) fail("{} {}: cannot write the file", option, path);
}

struct Box {
  double start = 0, end = 0;  // µs
  std::string name, category;
};

struct Track {
  std::string name;
  std::vector<Box> boxes;
};

const char* colour_of(const std::string& category) {
  if (category == "collective") return "#e15759";
  if (category == "fused") return "#59a14f";
  if (category == "pipeline") return "#f1ce63";
  if (category == "transfer") return "#b07aa1";
  return "#4e79a7";  // op
}

std::string num(double x) { return fmt::format("{:.2f}", x); }

}  // namespace

std::string trace_svg(const std::string& document) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(document);
  } catch (const nlohmann::json::exception& e) {
    fail("trace: not JSON: {}", e.what());
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    fail("trace: no traceEvents array");
  std::map<std::pair<int64_t, int64_t>, Track> tracks;  // (pid, tid)
  double first = 0, last = 0;
  bool any = false;
  for (const auto& e : doc["traceEvents"]) {
    auto key = std::pair{e.value("pid", int64_t{0}), e.value("tid", int64_t{0})};
    std::string ph = e.value("ph", std::string());
    if (ph == "M" && e.value("name", std::string()) == "thread_name") {
      tracks[key].name = e["args"].value("name", std::string());
    } else if (ph == "X") {
      Box b{e.value("ts", 0.0), e.value("ts", 0.0) + e.value("dur", 0.0), e.value("name", std::string()),
            e.value("cat", std::string())};
      first = any ? std::min(first, b.start) : b.start;
      last = any ? std::max(last, b.end) : b.end;
      any = true;
      tracks[key].boxes.push_back(std::move(b));
    }
  }
  // Lanes: an event inside another on its track goes one lane further down.
  constexpr double kLeft = 120, kRight = 40, kTop = 56, kLane = 16, kGap = 10, kAxis = 30, kPlot = 1000;
  const double span = any && last > first ? last - first : 1;
  const double scale = kPlot / span;
  std::vector<std::vector<std::vector<const Box*>>> lanes;  // per track, per lane
  for (auto& [key, t] : tracks) {
    std::sort(t.boxes.begin(), t.boxes.end(),
              [](const Box& a, const Box& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
    std::vector<std::vector<const Box*>> by_lane;
    std::vector<double> open;  // ends of the enclosing boxes
    for (const Box& b : t.boxes) {
      while (!open.empty() && open.back() <= b.start) open.pop_back();
      size_t lane = open.size();
      if (by_lane.size() <= lane) by_lane.resize(lane + 1);
      by_lane[lane].push_back(&b);
      open.push_back(b.end);
    }
    if (by_lane.empty()) by_lane.resize(1);
    lanes.push_back(std::move(by_lane));
  }
  double height = kTop + kAxis;
  for (const auto& l : lanes) height += static_cast<double>(l.size()) * kLane + kGap;
  const double width = kLeft + kPlot + kRight;
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
      num(width), num(height));
  size_t events = 0;
  for (const auto& [key, t] : tracks) events += t.boxes.size();
  out += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">trace: {} spans on {} tracks, "
                     "{:.3f} ms</text>\n",
                     num(kLeft), events, tracks.size(), span / 1e3);
  double legend = kLeft;
  for (const char* c : {"op", "fused", "collective", "pipeline", "transfer"}) {
    out += fmt::format("<rect x=\"{}\" y=\"30\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"39\" "
                       "font-size=\"11\">{}</text>\n",
                       num(legend), colour_of(c), num(legend + 14), c);
    legend += 90;
  }
  double y = kTop;
  size_t i = 0;
  const bool ranks = !tracks.empty() && tracks.begin()->first.first != tracks.rbegin()->first.first;
  for (const auto& [key, t] : tracks) {
    const auto& by_lane = lanes[i++];
    std::string name = t.name.empty() ? fmt::format("thread {}", key.second) : t.name;
    if (ranks) name = fmt::format("rank {} {}", key.first, name);  // over MPI: which process
    out += fmt::format("<text x=\"8\" y=\"{}\" font-size=\"11\">{}</text>\n", num(y + 12), support::xml_escape(name));
    for (size_t lane = 0; lane < by_lane.size(); ++lane) {
      const double top = y + static_cast<double>(lane) * kLane;
      out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f2f2f2\"/>\n", num(kLeft), num(top),
                         num(kPlot), num(kLane - 2));
      // Boxes of one category less than a pixel apart are drawn as one (a step of thousands of ops).
      double x0 = -1, x1 = -1;
      const Box* head = nullptr;
      auto flush = [&] {
        if (!head) return;
        out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>\n",
                           num(x0), num(top), num(std::max(x1 - x0, 0.5)), num(kLane - 2), colour_of(head->category),
                           support::xml_escape(head->name));
      };
      for (const Box* b : by_lane[lane]) {
        double bx0 = kLeft + (b->start - first) * scale, bx1 = kLeft + (b->end - first) * scale;
        if (head && head->category == b->category && bx0 <= x1 + 1) {
          x1 = std::max(x1, bx1);
          continue;
        }
        flush();
        head = b;
        x0 = bx0;
        x1 = bx1;
      }
      flush();
    }
    y += static_cast<double>(by_lane.size()) * kLane + kGap;
  }
  // The time axis: five ticks in ms since the first event.
  for (int k = 0; k <= 4; ++k) {
    double x = kLeft + kPlot * k / 4;
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#888888\"/><text x=\"{0}\" y=\"{3}\" "
                       "font-size=\"10\" text-anchor=\"middle\">{4:.3f} ms</text>\n",
                       num(x), num(y), num(y + 5), num(y + 17), span * k / 4 / 1e3);
  }
  return out + "</svg>\n";
}

void write_trace(const std::vector<std::string>& events, const std::string& path, const std::string& svg,
                 std::ostream& out) {
  std::string document = interp::Trace::document(events);
  if (!path.empty()) {
    write_file(path, document, "--trace");
    out << fmt::format("trace written to {} (open it in Perfetto or chrome://tracing)\n", path);
  }
  if (!svg.empty()) {
    write_file(svg, trace_svg(document), "--trace-svg");
    out << fmt::format("trace timeline written to {}\n", svg);
  }
}

}  // namespace tessera::tools
