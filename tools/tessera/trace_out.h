// --trace FILE and --trace-svg FILE of `tessera run` and `tessera train`: the trace-event JSON of a
// run (interp/trace.h records it; over MPI every rank's events are joined by rank 0), and a picture
// of its timeline drawn from that JSON, for a quick look without Perfetto.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::tools {

// Writes the trace document of `events` (interp::Trace::events_json of each rank, in rank order) to
// `path` (when non-empty) and its timeline to `svg` (when non-empty), and says so on `out`.
void write_trace(const std::vector<std::string>& events, const std::string& path, const std::string& svg,
                 std::ostream& out);

// A trace document's timeline as SVG (support/timeline_svg.h): a row per track (its thread's name,
// with the rank when there are several processes), time across in ms since the first event, each
// complete event a box coloured by its category; an event inside another on the same track (an op
// in a pipeline action) is drawn in a lane below it. UserError for text that is not a trace
// document.
std::string trace_svg(const std::string& document);

}  // namespace tessera::tools
