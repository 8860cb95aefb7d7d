// The schedule CSV, PyTorch's form (schedule/schedule.h): what print_csv writes (its transfers
// included) reads back as the same schedule for every built-in kind; the built-in schedules written
// in the compute-only form read back as the same schedules (the transfers inserted alike); a bad
// file is refused naming its row and column.
#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error_of.h"

namespace tessera::schedule {
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

TEST(Csv, PrintLoadPrintIsTheIdentityForEveryKind) {
  for (const Schedule& s : {gpipe(3, 4), one_f_one_b(4, 8), interleaved(4, 8, 2), interleaved(2, 4, 4),
                            zero_bubble_h1(4, 6), gpipe(1, 2)}) {
    const std::string text = print_csv(s);
    const Schedule back = parse_csv(text, "mine.csv");
    EXPECT_EQ(print_csv(back), text) << s.name;
    EXPECT_EQ(back.actions, s.actions) << s.name;
    EXPECT_EQ(back.name, "mine.csv");
    EXPECT_EQ(back.stages, s.stages) << s.name;
    EXPECT_EQ(back.microbatches, s.microbatches) << s.name;
    EXPECT_EQ(back.virtual_per_stage, s.virtual_per_stage) << s.name;
  }
}

// PyTorch's format="compute_comms": a transfer's stage is the one sending or receiving, so 1F1B's
// receive of the gradient of virtual stage 1 on stage 0 is 0RECV_B0, of the activation of virtual
// stage 0 on stage 1 is 1RECV_F0; an interleaved chunk receives from the previous stage's chunk.
TEST(Csv, FormatIsPyTorchsWithTransfers) {
  EXPECT_EQ(print_csv(one_f_one_b(2, 1)), "0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n");
  const std::string interleaved_text = print_csv(interleaved(2, 2, 2));
  EXPECT_EQ(interleaved_text.substr(0, interleaved_text.find('\n')),
            "0F0,0SEND_F0,0F1,0SEND_F1,2RECV_F0,2F0,2SEND_F0,2RECV_F1,2F1,2SEND_F1,2RECV_B0,2B0,2SEND_B0,2RECV_B1,2B1,"
            "2SEND_B1,0RECV_B0,0B0,0RECV_B1,0B1");
}

TEST(Csv, ComputeOnlyFormReadsBackAsTheBuiltInSchedules) {
  for (const Schedule& want : {generate(ScheduleKind::kOneFOneB, 2, 4), generate(ScheduleKind::kGPipe, 4, 4),
                               generate(ScheduleKind::kZeroBubbleH1, 4, 8), generate(ScheduleKind::kInterleaved, 2, 4, 2)}) {
    const Schedule got = parse_csv(torch_form(want), "mine.csv");
    EXPECT_EQ(got.stages, want.stages) << want.name;
    EXPECT_EQ(got.microbatches, want.microbatches) << want.name;
    EXPECT_EQ(got.virtual_per_stage, want.virtual_per_stage) << want.name;
    EXPECT_EQ(got.actions, want.actions) << want.name;
    EXPECT_EQ(got.name, "mine.csv");
  }
  // Idle steps (empty cells), spaces around cells and CRLF line ends change nothing.
  const Schedule gpipe = generate(ScheduleKind::kGPipe, 2, 2);
  EXPECT_EQ(parse_csv("0F0, 0F1,,,0B0,0B1\r\n,1F0,1F1,1B0,1B1,\r\n").actions, gpipe.actions);
}

TEST(Csv, ErrorsNameTheRowAndColumn) {
  auto error = [](const std::string& text) { return testing::error_of([&] { parse_csv(text, "mine.csv"); }); };
  const std::string not_an_action =
      "' is not an action [stage][F|I|B|W|SEND_F|RECV_F|SEND_B|RECV_B][microbatch], e.g. 2F0";
  EXPECT_EQ(error("0F0,0X1\n"), "mine.csv row 1 column 2: '0X1" + not_an_action);
  EXPECT_EQ(error("0F0,0F\n"), "mine.csv row 1 column 2: '0F" + not_an_action);
  EXPECT_EQ(error("0F-1\n"), "mine.csv row 1 column 1: '0F-1" + not_an_action);
  EXPECT_EQ(error("0F99999999999999999999\n"), "mine.csv row 1 column 1: '0F99999999999999999999" + not_an_action);
  EXPECT_EQ(error("0F70000\n"), "mine.csv row 1 column 1: '0F70000': an index above 65536 is more than this reader accepts");
  EXPECT_EQ(error("0F0,0UNSHARD0\n"), "mine.csv row 1 column 2: '0UNSHARD0' is PyTorch's UNSHARD action (FSDP's); a "
                                      "schedule here holds F, I, B, W and the sends and receives");
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
  EXPECT_EQ(testing::error_of([] { load_csv("/nonexistent/x.csv"); }),
            "/nonexistent/x.csv: cannot read the file: No such file or directory");
}

// A file that names transfers (compute_comms) is taken as written: none is inserted, so a missing or
// misplaced one is the validator's to name, by its cell.
TEST(Csv, TransfersAreTakenAsWritten) {
  auto error = [](const std::string& text) { return testing::error_of([&] { parse_csv(text, "mine.csv"); }); };
  EXPECT_EQ(error("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1B0,1SEND_B0\n"),
            "mine.csv row 1 column 2 SEND act(mb 0, vs 0) to stage 1: has no matching RECV act(mb 0, vs 0) on stage 1");
  EXPECT_EQ(error("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1RECV_F0,1B0,1SEND_B0\n"),
            "mine.csv row 2 column 1 F(mb 0, vs 1): runs before its input arrives: no earlier RECV act(mb 0, vs 0) from "
            "stage 0 (the value of F(mb 0, vs 0))");
  EXPECT_NE(error("0RECV_F0,0F0,0B0\n").find("mine.csv row 1 column 1 RECV act(mb 0, vs -1) from stage 0: virtual stage "
                                             "-1 is out of range"),
            std::string::npos);
  // Without transfers the same order reads with them inserted.
  EXPECT_EQ(parse_csv("0F0,0B0\n1F0,1B0\n").actions, one_f_one_b(2, 1).actions);
}

}  // namespace
}  // namespace tessera::schedule
