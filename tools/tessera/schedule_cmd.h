// `tessera schedule`: a pipeline schedule (built in, or loaded from CSV) simulated with given
// per-action costs; prints the per-stage timeline as text, the makespan, the bubble fraction and the
// peak in-flight microbatches per stage, and optionally writes the schedule as CSV and the
// timeline as SVG.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::tools {

struct ScheduleCommand {
  std::string kind = "1f1b";  // gpipe, 1f1b, interleaved, zb-h1
  int64_t stages = 4;
  int64_t microbatches = 8;
  int64_t virtual_per_stage = 1;
  // "f,b[,w[,transfer]]": F costs f, BI b, W w, an unsplit B b+w (schedule/simulate.h). The default
  // 1,1,1 makes a backward twice a forward, and lets zb-h1 split it into two equal halves.
  std::string costs = "1,1,1";
  std::string input;  // a schedule CSV to load and simulate instead of a built-in one
  std::string csv;    // where to write the schedule as CSV ("" = nowhere)
  std::string svg;    // where to write the timeline as SVG ("" = nowhere)
};

// Returns the exit status; user errors are thrown as support::UserError.
int schedule_command(const ScheduleCommand& c, std::ostream& out);

}  // namespace tessera::tools
