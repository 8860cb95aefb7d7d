// --trace and --trace-svg (trace_out.h): the document written, and its timeline drawn by
// support/timeline_svg.h, the writer the pipeline timelines use too.
#include "tools/tessera/trace_out.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "interp/trace.h"
#include "support/error.h"
#include "support/strings.h"
#include "support/timeline_svg.h"

namespace tessera::tools {

namespace {

using support::fail;

void write_file(const std::string& path, const std::string& text, std::string_view option) {
  std::ofstream f(path, std::ios::binary);
  if (!f) fail("{} {}: cannot open the file for writing", option, path);
  f << text;
  if (!f.flush()) fail("{} {}: cannot write the file", option, path);
}

const char* colour_of(const std::string& category) {
  if (category == "collective") return "#e15759";
  if (category == "fused") return "#59a14f";
  if (category == "pipeline") return "#f1ce63";
  if (category == "transfer") return "#b07aa1";
  return "#4e79a7";  // op
}

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
  // A row per (pid, tid) track, times in ms since the first event.
  std::map<std::pair<int64_t, int64_t>, support::TimelineRow> tracks;
  double first = INFINITY;
  size_t spans = 0;
  for (const auto& e : doc["traceEvents"])
    if (e.value("ph", std::string()) == "X") first = std::min(first, e.value("ts", 0.0));
  for (const auto& e : doc["traceEvents"]) {
    auto key = std::pair{e.value("pid", int64_t{0}), e.value("tid", int64_t{0})};
    std::string ph = e.value("ph", std::string());
    if (ph == "M" && e.value("name", std::string()) == "thread_name") {
      tracks[key].name = e["args"].value("name", std::string());
    } else if (ph == "X") {
      const double start = (e.value("ts", 0.0) - first) / 1e3;
      std::string name = e.value("name", std::string());
      tracks[key].boxes.push_back({start, start + e.value("dur", 0.0) / 1e3, colour_of(e.value("cat", std::string())),
                                   name, name});
      ++spans;
    }
  }
  support::Timeline t;
  t.unit = "ms";
  const bool ranks = !tracks.empty() && tracks.begin()->first.first != tracks.rbegin()->first.first;
  for (auto& [key, row] : tracks) {
    if (row.name.empty()) row.name = fmt::format("thread {}", key.second);
    if (ranks) row.name = fmt::format("rank {} {}", key.first, row.name);  // over MPI: which process
    for (const support::TimelineBox& b : row.boxes) t.span = std::max(t.span, b.end);
    t.rows.push_back(std::move(row));
  }
  t.title = fmt::format("trace: {} spans on {} tracks, {:.3f} ms", spans, t.rows.size(), t.span);
  for (const char* c : {"op", "fused", "collective", "pipeline", "transfer"}) t.legend.emplace_back(c, colour_of(c));
  return support::timeline_svg(t);
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
