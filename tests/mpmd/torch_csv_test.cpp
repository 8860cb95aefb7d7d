// PyTorch's compute-only schedule CSV (mpmd/schedule.h): the built-in schedules written in that
// form read back as the same schedules (the transfers inserted alike), and a bad file is refused
// naming its row and column.
#include "mpmd/schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error_of.h"

namespace tessera::mpmd {
namespace {

// `s`'s compute actions as PyTorch's _dump_csv writes them (format compute_only): a row per stage.
std::string torch_form(const Schedule& s) {
  std::string out;
  for (const std::vector<Action>& row : s.actions) {
    std::string line;
    for (const Action& a : row) {
      if (!a.is_compute()) continue;
      const char* type = a.kind == ActionKind::kForward ? "F" : a.kind == ActionKind::kBackward ? "B"
                         : a.kind == ActionKind::kBackwardInput ? "I" : "W";
      line += (line.empty() ? "" : ",") + std::to_string(a.virtual_stage) + type + std::to_string(a.microbatch);
    }
    out += line + "\n";
  }
  return out;
}

TEST(TorchCsv, BuiltInSchedulesReadBackAsThemselves) {
  for (const Schedule& want : {generate(ScheduleKind::kOneFOneB, 2, 4), generate(ScheduleKind::kGPipe, 4, 4),
                               generate(ScheduleKind::kZeroBubbleH1, 4, 8), generate(ScheduleKind::kInterleaved, 2, 4, 2)}) {
    const Schedule got = parse_torch_csv(torch_form(want), "mine.csv");
    EXPECT_EQ(got.stages, want.stages) << want.name;
    EXPECT_EQ(got.microbatches, want.microbatches) << want.name;
    EXPECT_EQ(got.virtual_per_stage, want.virtual_per_stage) << want.name;
    EXPECT_EQ(got.actions, want.actions) << want.name;
    EXPECT_EQ(got.name, "mine.csv");
  }
  // Idle steps (empty cells) and spaces around cells change nothing.
  const Schedule gpipe = generate(ScheduleKind::kGPipe, 2, 2);
  EXPECT_EQ(parse_torch_csv("0F0, 0F1,,,0B0,0B1\n,1F0,1F1,1B0,1B1,\n").actions, gpipe.actions);
}

TEST(TorchCsv, ErrorsNameTheRowAndColumn) {
  auto error = [](const std::string& text) { return testing::error_of([&] { parse_torch_csv(text, "mine.csv"); }); };
  EXPECT_EQ(error("0F0,0X1\n"), "mine.csv row 1 column 2: '0X1' is not an action [stage][F|I|B|W][microbatch], e.g. 2F0");
  EXPECT_EQ(error("0F0,0F\n"), "mine.csv row 1 column 2: '0F' is not an action [stage][F|I|B|W][microbatch], e.g. 2F0");
  EXPECT_NE(error("0F0\n1RECV_F0,1F0\n").find("mine.csv row 2 column 1: '1RECV_F0' is PyTorch's RECV_F action; this "
                                             "form (compute_only) holds F, I, B and W only"),
            std::string::npos);
  EXPECT_EQ(error("0F0,1F0,0B0\n1B0\n"),
            "mine.csv row 1 column 2: '1F0' is virtual stage 1, which runs on row 2 (stage v on row v mod 2 + 1)");
  EXPECT_NE(error("0F0,2F0,0B0,2B0\n1F0,1B0\n").find("its 3 virtual stages (0-2) do not split over its 2 rows"),
            std::string::npos);
  // The validator's findings, by cell: a backward before its forward on the same row; a cycle
  // (row 1 waits for microbatch 0's gradient before sending microbatch 1's activation, which row 2
  // waits for before that backward), named by the receives inserted for it.
  EXPECT_EQ(error("0F0,0B0\n1B0,1F0\n"), "mine.csv row 2 column 1 B(mb 0, vs 1): backward before its forward F(mb 0, vs 1)");
  const std::string deadlock = error("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n");
  EXPECT_NE(deadlock.find("(the schedule deadlocks)"), std::string::npos) << deadlock;
  EXPECT_NE(deadlock.find("mine.csv row 1 (inserted before column 2) RECV grad(mb 0, vs 1) from stage 1"),
            std::string::npos) << deadlock;
  EXPECT_NE(error("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n").find("microbatch 1 is missing its backward on virtual stage 0"),
            std::string::npos)
      << error("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n");
  EXPECT_EQ(error(""), "mine.csv: no rows (expected one row of actions per stage)");
}

}  // namespace
}  // namespace tessera::mpmd
