// `tessera train --moe E,k` with the expert-parallel plans: the losses of `ep` on 4 devices and of
// `dp,ep` on a 2 x 2 mesh equal one device's (with dropped tokens: capacity factor 0.5), each step
// moves tokens with 4 all_to_alls per MoE layer, the checkpoint records the MoE fields (a resume
// with others is refused, naming the option; config_of_metadata reads them back), and bad
// --moe and --plan values are refused, naming the option.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "tools/tessera/train_options.h"
#include "tools/train_test_util.h"

namespace tessera::tools {
namespace {

using testing::TempDir;

constexpr double kLossTolerance = 1e-4;  // relative, f32 over 4 AdamW steps (as the FSDP -> tp resume)

TrainCommand moe_run(const std::filesystem::path& corpus) {
  TrainCommand c = small(corpus);
  c.moe = "4,2";
  c.capacity_factor = 0.5;  // 8 slots per expert for 16 tokens x 2 choices: some dropped
  c.aux_loss_coef = 0.1;
  c.steps = 4;
  return c;
}

TEST(TrainMoe, ExpertParallelPlansGiveOneDevicesLosses) {
  TempDir dir;
  TrainCommand one = moe_run(write_corpus(dir.path));
  one.devices = 1;
  one.losses = (dir.path / "one.txt").string();
  std::ostringstream a;
  ASSERT_EQ(train_command(one, a), 0);
  std::vector<double> want = read_losses(one.losses);
  ASSERT_EQ(want.size(), 4u);
  EXPECT_LT(want[3], want[0]) << a.str();
  for (const char* plan : {"ep=4", "dp,ep"}) {
    TrainCommand sharded = moe_run(dir.path / "corpus.txt");
    sharded.plan = plan;
    sharded.losses = (dir.path / "sharded.txt").string();
    std::ostringstream out;
    ASSERT_EQ(train_command(sharded, out), 0) << plan;
    std::vector<double> got = read_losses(sharded.losses);
    ASSERT_EQ(got.size(), want.size()) << plan;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], kLossTolerance * want[i]) << plan << ", step " << i + 1;
    // One MoE layer: dispatch and combine, forward and backward.
    EXPECT_TRUE(std::regex_search(out.str(), std::regex("all_to_all +4 x"))) << plan << "\n" << out.str();
    EXPECT_NE(out.str().find(std::string("plan ") + (std::string(plan) == "ep=4" ? "ep" : "dp,ep")), std::string::npos)
        << out.str();
  }
}

TEST(TrainMoe, CheckpointRecordsTheExperts) {
  TempDir dir;
  TrainCommand first = moe_run(write_corpus(dir.path));
  first.plan = "ep";
  first.steps = 1;
  first.save = (dir.path / "ckpt").string();
  std::ostringstream out;
  ASSERT_EQ(train_command(first, out), 0);
  TrainCommand other = first;
  other.save.clear();
  other.resume = first.save;
  other.moe = "4,1";
  std::string e = testing::error_of([&] { train_command(other, out); });
  EXPECT_NE(e.find("model.top_k is 2, this run's is 1 (--moe)"), std::string::npos) << e;

  nn::Config c;
  c.experts = 8;
  c.top_k = 2;
  c.capacity_factor = 1.1;
  c.aux_loss_coef = 0.003;
  nn::Config back = config_of_metadata("ckpt", run_metadata(c, nn::LrSchedule{}, 0));
  EXPECT_EQ(back.experts, 8);
  EXPECT_EQ(back.top_k, 2);
  EXPECT_EQ(back.capacity_factor, 1.1);
  EXPECT_EQ(back.aux_loss_coef, 0.003);
  // A dense model's checkpoint from before MoE existed has no model.experts: dense.
  std::map<std::string, std::string> old = run_metadata(nn::Config{}, nn::LrSchedule{}, 0);
  for (const char* key : {"model.experts", "model.top_k", "model.capacity_factor", "model.aux_loss_coef"}) old.erase(key);
  EXPECT_EQ(config_of_metadata("old", old).experts, 0);
}

TEST(TrainMoe, ErrorsNameTheOption) {
  TempDir dir;
  TrainCommand c = moe_run(write_corpus(dir.path));
  std::ostringstream out;
  auto error = [&](const TrainCommand& t) { return testing::error_of([&] { train_command(t, out); }); };
  c.moe.clear();
  c.plan = "ep";
  EXPECT_NE(error(c).find("--plan ep: expert parallelism needs an MoE model (--moe E,k)"), std::string::npos) << error(c);
  c.moe = "3";
  EXPECT_NE(error(c).find("the 3 experts do not split evenly over the expert axis of 4 devices"), std::string::npos)
      << error(c);
  c.moe = "4,3";
  EXPECT_NE(error(c).find("--moe 4,3: top-k routing with k = 3"), std::string::npos) << error(c);
  c.moe = "four";
  EXPECT_NE(error(c).find("--moe four: expected E or E,k"), std::string::npos) << error(c);
  c.moe = "4";
  c.plan = "dp=3,ep=2";
  c.devices = 4;
  EXPECT_NE(error(c).find("--plan dp=3,ep=2: 3 x 2 devices, but the run has 4"), std::string::npos) << error(c);
  c.plan = "pp=2";
  c.devices = 0;
  EXPECT_NE(error(c).find("pipeline plans do not carry the MoE load-balancing loss"), std::string::npos) << error(c);
}

}  // namespace
}  // namespace tessera::tools
