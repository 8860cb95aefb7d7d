// `tessera schedule`: the printed bubble and peak in-flight numbers for each kind, the CSV and SVG
// files it writes, simulating a schedule loaded back from its CSV, the picture in docs/ being what
// the command draws today, and the refusals of bad options and invalid custom schedules.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error_of.h"
#include "tools/tessera/schedule_cmd.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

std::string run(const ScheduleCommand& c) {
  std::ostringstream out;
  EXPECT_EQ(schedule_command(c, out), 0);
  return out.str();
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

ScheduleCommand command(std::string kind, int64_t P, int64_t M, int64_t V = 1) {
  ScheduleCommand c;
  c.kind = std::move(kind);
  c.stages = P;
  c.microbatches = M;
  c.virtual_per_stage = V;
  return c;
}

TEST(ScheduleCommand, ReportsBubbleAndPeakInFlight) {
  std::string out = run(command("1f1b", 4, 8));
  EXPECT_NE(out.find("schedule 1f1b: 4 stages, 8 microbatches, 1 virtual stage per stage\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nstage  3 | .  .  .  F0 B0 B0 F1"), std::string::npos) << out;
  EXPECT_NE(out.find("\nbubble 0.2727 (idle 36 of 132 stage-time units)\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\npeak in-flight microbatches per stage: 4 3 2 1\n"), std::string::npos) << out;

  out = run(command("gpipe", 4, 8));
  EXPECT_NE(out.find("\nbubble 0.2727"), std::string::npos) << out;
  EXPECT_NE(out.find("\npeak in-flight microbatches per stage: 8 8 8 8\n"), std::string::npos) << out;

  out = run(command("interleaved", 4, 8, 2));
  EXPECT_NE(out.find("\nbubble 0.1579"), std::string::npos) << out;  // 3/19
  EXPECT_NE(out.find("peak in-flight forwards per stage (each holds 1/2 of the stage's activations): 11 9 7 5\n"),
            std::string::npos)
      << out;

  out = run(command("zb-h1", 4, 8));
  EXPECT_NE(out.find("\nmakespan 27\nbubble 0.1111"), std::string::npos) << out;  // 1F1B: 33
}

TEST(ScheduleCommand, WritesCsvAndSvgAndSimulatesTheCsvAgain) {
  fs::path dir = fs::temp_directory_path() / fmt::format("tessera_schedule_{}", ::getpid());
  fs::create_directories(dir);
  ScheduleCommand c = command("zb-h1", 3, 4);
  c.costs = "1,1,1,0.5";
  c.csv = (dir / "zb.csv").string();
  c.svg = (dir / "zb.svg").string();
  std::string first = run(c);
  EXPECT_NE(first.find("wrote " + c.csv + "\n"), std::string::npos);
  EXPECT_NE(first.find("wrote " + c.svg + "\n"), std::string::npos);
  std::string csv = read(c.csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "0F0,0SEND_F0,0F1,0SEND_F1,0F2,0SEND_F2,0RECV_B0,0I0,0W0,0F3,0SEND_F3,"
                                          "0RECV_B1,0I1,0W1,0RECV_B2,0I2,0W2,0RECV_B3,0I3,0W3");
  std::string svg = read(c.svg);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");

  ScheduleCommand again;
  again.input = c.csv;
  again.costs = c.costs;
  // The same simulation, the schedule named by its file.
  std::string second = run(again);
  EXPECT_EQ(second.substr(0, second.find(':')), "schedule " + c.csv);
  EXPECT_EQ(second.substr(second.find(':')), first.substr(first.find(':'), first.find("wrote ") - first.find(':')));
  fs::remove_all(dir);
}

TEST(ScheduleCommand, ThePictureInTheDocsIsCurrent) {
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  ASSERT_NE(source, nullptr);
  fs::path out = fs::temp_directory_path() / fmt::format("tessera_schedule_1f1b_{}.svg", ::getpid());
  ScheduleCommand c = command("1f1b", 4, 8);
  c.svg = out.string();
  run(c);
  EXPECT_EQ(read(out), read(fs::path(source) / "docs" / "schedule_1f1b.svg"))
      << "regenerate it: tessera schedule --kind 1f1b --stages 4 --microbatches 8 --svg docs/schedule_1f1b.svg";
  fs::remove(out);
}

TEST(ScheduleCommand, Refusals) {
  using testing::error_of;
  EXPECT_EQ(error_of([] { run(command("pipedream", 4, 8)); }),
            "unknown schedule kind 'pipedream' (expected gpipe, 1f1b, interleaved or zb-h1)");
  ScheduleCommand c = command("1f1b", 4, 8);
  c.costs = "1;2";
  EXPECT_EQ(error_of([&] { run(c); }),
            "--costs: '1;2' is not a non-negative number (expected f,b[,w[,transfer]], e.g. 1,2,1)");
  EXPECT_EQ(error_of([] { run(command("gpipe", 4, 8, 2)); }),
            "gpipe schedule: 2 virtual stages per stage apply only to the interleaved schedule");

  // A hand-written schedule whose second stage computes before receiving its input.
  fs::path file = fs::temp_directory_path() / fmt::format("tessera_bad_schedule_{}.csv", ::getpid());
  std::ofstream(file) << "0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1RECV_F0,1B0,1SEND_B0\n";
  ScheduleCommand custom;
  custom.input = file.string();
  EXPECT_EQ(error_of([&] { run(custom); }),
            file.string() + " row 2 column 1 F(mb 0, vs 1): runs before its input arrives: no earlier RECV act(mb 0, vs 0) "
            "from stage 0 (the value of F(mb 0, vs 0))");
  fs::remove(file);
  custom.input = "/nonexistent/schedule.csv";
  EXPECT_EQ(error_of([&] { run(custom); }), "/nonexistent/schedule.csv: cannot read the file: No such file or directory");
}

}  // namespace
}  // namespace tessera::tools
