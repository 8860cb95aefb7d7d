// --trace of `tessera run` and `tessera train` (interp/trace.h, tools/tessera/trace_out.h): the file
// parses as trace-event JSON, has a track per device, its spans on a track are either disjoint or
// nested (an op inside a pipeline action, never a partial overlap), collectives carry the bytes of
// their operands, a pipeline run has a span per schedule action, and --trace-svg draws it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "interp/npy.h"
#include "interp/trace.h"
#include "schedule/schedule.h"
#include "tools/tessera/partition_cmd.h"
#include "tools/tessera/trace_out.h"
#include "tools/tessera/train_cmd.h"
#include "tools/train_test_util.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

// 8x4 rows split over 2 devices, summed over the rows: one all_reduce of the partial sums, f32[3]
// (12 bytes) on each device.
constexpr const char* kModule = R"(module @jit_colsum attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["data"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, tensor<3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.tanh %0 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %1, %2 : tensor<8x3xf32>, tensor<3xf32>
  }
}
)";

struct Span {
  int64_t start = 0, end = 0;  // ns
  std::string name, category;
  json args;
};

struct Parsed {
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> tracks;  // (pid, tid) -> spans
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
};

Parsed parse_trace(const std::string& path) {
  std::ifstream in(path);
  json doc = json::parse(in);  // throws (and fails the test) on text that is not JSON
  Parsed p;
  for (const json& e : doc.at("traceEvents")) {
    auto key = std::pair{e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()};
    if (e.at("ph") == "M" && e.at("name") == "thread_name") p.thread_names[key] = e.at("args").at("name");
    if (e.at("ph") != "X") continue;
    // ts and dur are microseconds with the nanoseconds as three decimals.
    int64_t start = std::llround(e.at("ts").get<double>() * 1000), dur = std::llround(e.at("dur").get<double>() * 1000);
    p.tracks[key].push_back({start, start + dur, e.at("name"), e.at("cat"), e.at("args")});
  }
  return p;
}

// Every two spans of a track are disjoint or one holds the other. Returns what breaks it, or "".
std::string nesting_error(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
  std::vector<const Span*> open;
  for (const Span& s : spans) {
    if (s.end < s.start) return s.name + " ends before it starts";
    while (!open.empty() && open.back()->end <= s.start) open.pop_back();
    if (!open.empty() && s.end > open.back()->end)
      return fmt::format("{} [{}, {}] overlaps {} [{}, {}]", s.name, s.start, s.end, open.back()->name,
                         open.back()->start, open.back()->end);
    open.push_back(&s);
  }
  return "";
}

TEST(Trace, RunOnTwoDevicesHasATrackPerDeviceAndTheAllReduceBytes) {
  TempDir dir;
  std::string file = dir.file("m.mlir", kModule);
  ir::Literal x(ir::f32({8, 4})), w(ir::f32({4, 3}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, 0.1 * double(i % 7));
  for (int64_t i = 0; i < w.num_elements(); ++i) w.set_double(i, 0.2 * double(i % 5) - 0.3);
  interp::save_npy(x, (dir.path / "x.npy").string());
  interp::save_npy(w, (dir.path / "w.npy").string());
  RunCommand c;
  c.file = file;
  c.devices = 2;
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  c.trace = (dir.path / "t.json").string();
  c.trace_svg = (dir.path / "t.svg").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  EXPECT_NE(out.str().find("trace written to " + c.trace), std::string::npos) << out.str();
  Parsed p = parse_trace(c.trace);
  ASSERT_EQ(p.tracks.size(), 2u);
  for (int64_t d = 0; d < 2; ++d) {
    auto key = std::pair<int64_t, int64_t>{0, d};
    ASSERT_TRUE(p.tracks.count(key)) << "no track of device " << d;
    EXPECT_EQ(p.thread_names[key], fmt::format("device {}", d));
    const std::vector<Span>& spans = p.tracks[key];
    EXPECT_EQ(nesting_error(spans), "") << "device " << d;
    std::vector<const Span*> collectives;
    for (const Span& s : spans)
      if (s.category == "collective") collectives.push_back(&s);
    ASSERT_EQ(collectives.size(), 1u) << "device " << d;
    EXPECT_EQ(collectives[0]->name, "stablehlo.all_reduce");
    EXPECT_EQ(collectives[0]->args.at("bytes").get<int64_t>(), 12);  // f32[3]
    EXPECT_EQ(collectives[0]->args.at("groups").get<std::string>(), "[[0, 1]]");
    EXPECT_TRUE(std::any_of(spans.begin(), spans.end(), [](const Span& s) { return s.name == "stablehlo.dot_general"; }));
  }
  std::string svg = testing::read_file(c.trace_svg);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find(">device 0</text>"), std::string::npos);
  EXPECT_NE(svg.find(">device 1</text>"), std::string::npos);
}

TEST(Trace, TrainDataParallelHasTheSameCollectivesOnEveryDeviceInEveryStep) {
  TempDir dir;
  TrainCommand c = small(write_corpus(dir.path));
  c.plan = "dp";
  c.devices = 2;
  c.steps = 3;
  c.trace = (dir.path / "t.json").string();
  std::ostringstream out;
  ASSERT_EQ(train_command(c, out), 0);
  Parsed p = parse_trace(c.trace);
  ASSERT_EQ(p.tracks.size(), 2u);
  std::map<std::pair<int64_t, int64_t>, int64_t> all_reduces;  // (device, step) -> count
  for (const auto& [key, spans] : p.tracks) {
    EXPECT_EQ(nesting_error(spans), "") << "device " << key.second;
    for (const Span& s : spans)
      if (s.category == "collective") {
        EXPECT_GT(s.args.at("bytes").get<int64_t>(), 0) << s.name;
        if (s.name == "stablehlo.all_reduce") all_reduces[std::pair(key.second, s.args.at("step").get<int64_t>())]++;
      }
  }
  // The gradients are summed by all_reduce on both devices in each of the 3 steps, as often in each.
  const int64_t first = all_reduces[std::pair<int64_t, int64_t>(0, 1)];
  ASSERT_GT(first, 0);
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t t = 1; t <= 3; ++t) EXPECT_EQ(all_reduces[std::pair(d, t)], first) << "device " << d << " step " << t;
}

TEST(Trace, PipelineHasASpanPerScheduleActionHoldingItsOps) {
  TempDir dir;
  TrainCommand c = small(write_corpus(dir.path));
  c.layers = 2;
  c.plan = "pp=2";
  c.schedule = "1f1b";
  c.microbatches = 4;
  c.steps = 2;
  c.trace = (dir.path / "t.json").string();
  std::ostringstream out;
  ASSERT_EQ(train_command(c, out), 0);
  schedule::Schedule schedule = schedule::generate(schedule::parse_schedule_kind("1f1b"), 2, 4, 1);
  Parsed p = parse_trace(c.trace);
  ASSERT_EQ(p.tracks.size(), 2u);
  for (const auto& [key, spans] : p.tracks) {
    const auto stage = static_cast<size_t>(key.second);
    EXPECT_EQ(nesting_error(spans), "") << "stage " << stage;
    int64_t actions = 0, updates = 0, ops_in_actions = 0;
    for (const Span& s : spans) {
      if (s.name == "AdamW update") ++updates;
      else if (s.category == "pipeline" || s.category == "transfer") ++actions;
    }
    // Each op of a fragment lies inside the span of the action that ran it.
    for (const Span& op : spans) {
      if (op.category == "pipeline" || op.category == "transfer") continue;
      for (const Span& a : spans)
        if (a.category == "pipeline" && a.name != "AdamW update" && a.start <= op.start && op.end <= a.end) {
          ++ops_in_actions;
          break;
        }
    }
    EXPECT_EQ(actions, 2 * static_cast<int64_t>(schedule.actions[stage].size())) << "stage " << stage;
    EXPECT_EQ(updates, 2) << "stage " << stage;
    EXPECT_GT(ops_in_actions, 0) << "stage " << stage;
  }
}

TEST(Trace, SvgOfADocumentAndRefusals) {
  interp::Trace t;
  auto& track = t.track(3);
  t.set_step(7);
  t.add(track, t.intern({"outer", "pipeline", ""}), 1000, 9000);
  t.add(track, t.intern({"inner \"quoted\"", "op", "\"bytes\": 4"}), 2000, 3000);
  EXPECT_EQ(t.size(), 2u);
  json doc = json::parse(t.json());
  int64_t spans = 0;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == "X") {
      ++spans;
      EXPECT_EQ(e.at("tid"), 3);
      EXPECT_EQ(e.at("args").at("step"), 7);
      if (e.at("name") == "inner \"quoted\"") {
        EXPECT_EQ(e.at("ts").get<double>(), 2.0);
        EXPECT_EQ(e.at("dur").get<double>(), 1.0);
        EXPECT_EQ(e.at("args").at("bytes"), 4);
      }
    }
  EXPECT_EQ(spans, 2);
  std::string svg = trace_svg(t.json());
  EXPECT_NE(svg.find("2 spans on 1 tracks"), std::string::npos) << svg;
  EXPECT_NE(svg.find("inner &quot;quoted&quot;"), std::string::npos) << svg;
  EXPECT_NE(testing::error_of([] { trace_svg("{\"traceEvents\": 3}"); }).find("no traceEvents array"), std::string::npos);
  EXPECT_NE(testing::error_of([] { trace_svg("not json"); }).find("not JSON"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tools
