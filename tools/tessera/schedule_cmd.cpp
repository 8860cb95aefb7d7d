// `tessera schedule` (see schedule_cmd.h).
#include "tools/tessera/schedule_cmd.h"

#include <fmt/format.h>

#include <fstream>

#include "schedule/schedule.h"
#include "schedule/simulate.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::tools {

namespace {

void write_file(const std::string& path, const std::string& text, std::string_view what) {
  std::ofstream file(path, std::ios::binary);
  if (!file) support::fail("{}: cannot open the {} file for writing", path, what);
  file << text;
  if (!file.flush()) support::fail("{}: cannot write the {} file", path, what);
}

}  // namespace

int schedule_command(const ScheduleCommand& c, std::ostream& out) {
  const schedule::Costs costs = schedule::parse_costs(c.costs, "--costs");
  schedule::Schedule s = c.input.empty()
                         ? schedule::generate(schedule::parse_schedule_kind(c.kind), c.stages, c.microbatches,
                                          c.virtual_per_stage)
                         : schedule::load_csv(c.input);
  const schedule::Simulation sim = schedule::simulate(s, costs);

  out << fmt::format("schedule {}: {} stages, {} microbatches, {} virtual stage{} per stage\n", s.name, s.stages,
                     s.microbatches, s.virtual_per_stage, s.virtual_per_stage == 1 ? "" : "s");
  out << fmt::format("costs: F {:g}, B {:g} (BI {:g} + W {:g}), transfer {:g}\n", costs.forward,
                     costs.backward + costs.weight, costs.backward, costs.weight, costs.transfer);
  if (s.virtual_per_stage > 1)
    out << fmt::format("(the costs of a stage's layers; each of its {} virtual stages costs 1/{} of them)\n",
                       s.virtual_per_stage, s.virtual_per_stage);
  out << schedule::text_chart(s, sim);
  double busy = 0;
  for (double b : sim.busy) busy += b;
  const double total = static_cast<double>(s.stages) * sim.makespan;
  out << fmt::format("makespan {:g}\n", sim.makespan);
  out << fmt::format("bubble {:.4f} (idle {:g} of {:g} stage-time units)\n", sim.bubble, total - busy, total);
  if (s.virtual_per_stage == 1)
    out << fmt::format("peak in-flight microbatches per stage: {}\n", support::join(sim.peak_in_flight, " "));
  else
    out << fmt::format("peak in-flight forwards per stage (each holds 1/{} of the stage's activations): {}\n",
                       s.virtual_per_stage, support::join(sim.peak_in_flight, " "));

  if (!c.csv.empty()) {
    write_file(c.csv, schedule::print_csv(s), "schedule CSV");
    out << fmt::format("wrote {}\n", c.csv);
  }
  if (!c.svg.empty()) {
    std::string title = fmt::format("{}: {} stages, {} microbatches{} — bubble {:.4f}", s.name, s.stages,
                                    s.microbatches,
                                    s.virtual_per_stage == 1 ? "" : fmt::format(", {} virtual", s.virtual_per_stage),
                                    sim.bubble);
    write_file(c.svg, schedule::timeline_svg(s, sim, title), "SVG");
    out << fmt::format("wrote {}\n", c.svg);
  }
  return 0;
}

}  // namespace tessera::tools
