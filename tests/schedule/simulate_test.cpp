// The simulator against the closed forms: the bubble of GPipe and 1F1B is (P-1)/(M+P-1) and of
// interleaved 1F1B (P-1)/(V·M+P-1) over a grid of P, M, V — with f = b and also with f != b;
// peak in-flight microbatches (M for GPipe, at most P for 1F1B and zero-bubble H1); zero-bubble H1
// beats 1F1B with split costs; transfer latency; the timing invariants; the text chart.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "common/error_of.h"
#include "schedule/schedule.h"
#include "schedule/simulate.h"

namespace tessera::schedule {
namespace {

using testing::error_of;

const int64_t kStages[] = {2, 4, 8};
const int64_t kMicrobatches[] = {1, 4, 8, 16};
const int64_t kVirtual[] = {1, 2, 4};

// The bubble fraction is idle / (P × makespan); with integer (or binary-fraction) costs both are
// exact, and two correctly rounded quotients of the same rational are the same double, so the
// formulas are compared with ==.
double formula(int64_t P, int64_t work_units) {
  return static_cast<double>(P - 1) / static_cast<double>(work_units + P - 1);
}

TEST(Simulate, UniformCostsMatchTheBubbleFormulas) {
  const Costs uniform{1, 1, 0, 0};
  for (int64_t P : kStages)
    for (int64_t M : kMicrobatches) {
      SCOPED_TRACE(fmt::format("P={} M={}", P, M));
      Simulation g = simulate(gpipe(P, M), uniform);
      EXPECT_EQ(g.bubble, formula(P, M));
      EXPECT_EQ(g.makespan, 2.0 * static_cast<double>(M + P - 1));
      Simulation o = simulate(one_f_one_b(P, M), uniform);
      EXPECT_EQ(o.bubble, formula(P, M));
      EXPECT_EQ(o.makespan, 2.0 * static_cast<double>(M + P - 1));
      for (int64_t V : kVirtual) {
        SCOPED_TRACE(fmt::format("V={}", V));
        if (V > 1 && M % P != 0) {
          // Megatron-LM's interleaving needs whole groups of P microbatches.
          EXPECT_EQ(error_of([&] { interleaved(P, M, V); }),
                    fmt::format("interleaved schedule with {} virtual stages per stage: the microbatch count ({}) "
                                "must be a multiple of the stage count ({})",
                                V, M, P));
          continue;
        }
        Simulation i = simulate(interleaved(P, M, V), uniform);
        EXPECT_EQ(i.bubble, formula(P, V * M));
        // Each chunk costs 1/V: the fill and drain shrink to (P-1)/V slots of f + b.
        EXPECT_EQ(i.makespan, 2.0 * static_cast<double>(V * M + P - 1) / static_cast<double>(V));
      }
    }
}

TEST(Simulate, FourStagesEightMicrobatchesIsThreeElevenths) {
  Simulation s = simulate(one_f_one_b(4, 8), Costs{1, 1, 0, 0});
  EXPECT_EQ(fmt::format("{:.4f}", s.bubble), "0.2727");
  EXPECT_EQ(s.bubble, 3.0 / 11.0);
}

// With costs f and b (and an unsplit backward of b + w) the whole pipeline still fills and drains
// in P-1 slots of f + b, so the same fractions hold: GPipe's forward phase takes (M+P-1)·f and
// its backward phase (M+P-1)·b, and 1F1B and interleaved keep those critical paths.
TEST(Simulate, UnequalCostsKeepTheBubbleFormulas) {
  const Costs costs[] = {{1, 2, 0, 0}, {2, 1, 0, 0}, {1, 3, 0, 0}, {0.5, 1.25, 0, 0}, {1, 1, 1, 0}};
  for (const Costs& c : costs)
    for (int64_t P : kStages)
      for (int64_t M : kMicrobatches) {
        SCOPED_TRACE(fmt::format("f={} b={} w={} P={} M={}", c.forward, c.backward, c.weight, P, M));
        const double slot = c.forward + c.backward + c.weight;
        for (const Schedule& s : {gpipe(P, M), one_f_one_b(P, M)}) {
          Simulation r = simulate(s, c);
          EXPECT_EQ(r.bubble, formula(P, M)) << s.name;
          EXPECT_EQ(r.makespan, slot * static_cast<double>(M + P - 1)) << s.name;
        }
        for (int64_t V : kVirtual) {
          if (V > 1 && M % P != 0) continue;
          Simulation r = simulate(interleaved(P, M, V), c);
          EXPECT_EQ(r.bubble, formula(P, V * M)) << "V=" << V;
          EXPECT_EQ(r.makespan, slot * static_cast<double>(V * M + P - 1) / static_cast<double>(V)) << "V=" << V;
        }
      }
}

TEST(Simulate, PeakInFlight) {
  for (int64_t P : kStages)
    for (int64_t M : kMicrobatches) {
      SCOPED_TRACE(fmt::format("P={} M={}", P, M));
      const Costs c{1, 1, 1, 0};
      Simulation g = simulate(gpipe(P, M), c);
      Simulation o = simulate(one_f_one_b(P, M), c);
      Simulation z = simulate(zero_bubble_h1(P, M), c);
      for (int64_t s = 0; s < P; ++s) {
        const size_t i = static_cast<size_t>(s);
        EXPECT_EQ(g.peak_in_flight[i], M) << "gpipe stage " << s;
        EXPECT_EQ(o.peak_in_flight[i], std::min(P - s, M)) << "1f1b stage " << s;
        EXPECT_LE(o.peak_in_flight[i], P);
        // Zero bubble defers W by s backwards on stage s: P - s + s = P, but never more.
        EXPECT_EQ(z.peak_in_flight[i], std::min(P, M)) << "zb-h1 stage " << s;
      }
      for (int64_t V : kVirtual) {
        if (V == 1 || M % P != 0) continue;
        Simulation r = simulate(interleaved(P, M, V), c);
        for (int64_t s = 0; s < P; ++s)
          EXPECT_EQ(r.peak_in_flight[static_cast<size_t>(s)], std::min(2 * (P - 1 - s) + (V - 1) * P + 1, V * M))
              << "interleaved V=" << V << " stage " << s;
      }
    }
}

TEST(Simulate, ZeroBubbleH1BeatsOneFOneBWithSplitCosts) {
  const Costs split{1, 1, 1, 0};  // F = BI = W = 1; 1F1B's whole B costs 2
  for (int64_t P : kStages)
    for (int64_t M : kMicrobatches) {
      SCOPED_TRACE(fmt::format("P={} M={}", P, M));
      Simulation z = simulate(zero_bubble_h1(P, M), split);
      Simulation o = simulate(one_f_one_b(P, M), split);
      EXPECT_LT(z.makespan, o.makespan);
      EXPECT_LT(z.bubble, o.bubble);
      EXPECT_EQ(o.makespan, 3.0 * static_cast<double>(M + P - 1));
      // Qi et al.: ZB-H1's bubble is (P-1)(F+B-W) = P-1 slots once the pipeline is full (M >= P).
      if (M >= P) {
        EXPECT_EQ(z.makespan, static_cast<double>(3 * M + P - 1));
        EXPECT_EQ(z.bubble, formula(P, 3 * M));
      }
    }
}

TEST(Simulate, TransferLatencyDelaysEveryHop) {
  // GPipe: the forward wave crosses P-1 links, and so does the backward wave.
  for (int64_t P : kStages)
    for (int64_t M : kMicrobatches) {
      Simulation r = simulate(gpipe(P, M), Costs{1, 1, 0, 0.5});
      EXPECT_EQ(r.makespan, 2.0 * static_cast<double>(M + P - 1) + 2 * 0.5 * static_cast<double>(P - 1))
          << P << " " << M;
    }
  // Waiting for a transfer is idle: the same work over a longer makespan.
  EXPECT_GT(simulate(one_f_one_b(4, 8), Costs{1, 1, 0, 0.25}).bubble, 3.0 / 11.0);
}

TEST(Simulate, TimesRespectOrderAndTransfers) {
  const Costs c{1, 2, 0.5, 0.25};
  for (const Schedule& s : {gpipe(3, 4), one_f_one_b(4, 8), interleaved(2, 4, 3), zero_bubble_h1(4, 6)}) {
    SCOPED_TRACE(s.name);
    Simulation r = simulate(s, c);
    std::map<std::tuple<Payload, int64_t, int64_t>, double> sent;
    for (size_t st = 0; st < s.actions.size(); ++st)
      for (size_t i = 0; i < s.actions[st].size(); ++i)
        if (s.actions[st][i].kind == ActionKind::kSend)
          sent[{s.actions[st][i].payload, s.actions[st][i].microbatch, s.actions[st][i].virtual_stage}] =
              r.times[st][i].start;
    double busy_total = 0;
    for (size_t st = 0; st < s.actions.size(); ++st) {
      double previous_end = 0, busy = 0;
      for (size_t i = 0; i < s.actions[st].size(); ++i) {
        const Action& a = s.actions[st][i];
        const Interval& t = r.times[st][i];
        EXPECT_GE(t.start, previous_end) << describe(s, a);
        previous_end = t.end;
        if (a.is_compute()) {
          EXPECT_NEAR(t.end - t.start, cost_of(a, c, s.virtual_per_stage), 1e-9) << describe(s, a);
          busy += t.end - t.start;
        }
        if (a.kind == ActionKind::kRecv) {
          EXPECT_GE(t.end, sent.at({a.payload, a.microbatch, a.virtual_stage}) + c.transfer) << describe(s, a);
        }
        EXPECT_LE(t.end, r.makespan);
      }
      EXPECT_EQ(busy, r.busy[st]);
      busy_total += busy;
    }
    EXPECT_DOUBLE_EQ(r.bubble, 1 - busy_total / (static_cast<double>(s.stages) * r.makespan));
  }
}

TEST(Simulate, RefusesInvalidSchedules) {
  Schedule s = one_f_one_b(2, 2);
  s.actions[1].pop_back();  // drop the last gradient send
  EXPECT_EQ(error_of([&] { simulate(s, Costs{}); }),
            "stage 0 step 6 RECV grad(mb 1, vs 1) from stage 1: has no matching SEND grad(mb 1, vs 1) on stage 1");
}

TEST(Simulate, TextChart) {
  Schedule s = one_f_one_b(2, 3);
  EXPECT_EQ(text_chart(s, simulate(s, Costs{1, 1, 0, 0})),
            "time unit per cell: 1\n"
            "stage  0 | F0 F1 .  B0 F2 B1 .  B2\n"
            "stage  1 | .  F0 B0 F1 B1 F2 B2 . \n");
  // Backwards of two units span two cells; split ones show as I and W; chunks follow a dot.
  Schedule z = zero_bubble_h1(2, 1);
  EXPECT_EQ(text_chart(z, simulate(z, Costs{1, 1, 1, 0})),
            "time unit per cell: 1\n"
            "stage  0 | F0 .  .  I0 W0\n"
            "stage  1 | .  F0 I0 W0 . \n");
  Schedule i = interleaved(1, 1, 2);
  EXPECT_EQ(text_chart(i, simulate(i, Costs{1, 2, 0, 0})),
            "time unit per cell: 0.5\n"
            "stage  0 | F0.0 F0.1 B0.1 B0.1 B0.0 B0.0\n");
  // A long schedule is coarsened to the cell budget.
  Schedule g = gpipe(2, 64);
  std::string chart = text_chart(g, simulate(g, Costs{1, 1, 0, 0}), 26);
  EXPECT_EQ(chart.substr(0, chart.find('\n')), "time unit per cell: 5");
}

TEST(Simulate, Costs) {
  Costs c = parse_costs("1,2");
  EXPECT_EQ(std::tie(c.forward, c.backward, c.weight, c.transfer), std::make_tuple(1.0, 2.0, 0.0, 0.0));
  c = parse_costs("1,0.5,0.5,0.1");
  EXPECT_EQ(std::tie(c.forward, c.backward, c.weight, c.transfer), std::make_tuple(1.0, 0.5, 0.5, 0.1));
  Action b;
  b.kind = ActionKind::kBackward;
  EXPECT_EQ(cost_of(b, c), 1.0);
  EXPECT_EQ(cost_of(b, c, 4), 0.25);  // a quarter of the stage's layers
  b.kind = ActionKind::kBackwardWeight;
  EXPECT_EQ(cost_of(b, c), 0.5);
  b.kind = ActionKind::kSend;
  EXPECT_EQ(cost_of(b, c), 0.0);
  EXPECT_EQ(error_of([] { parse_costs("1", "--costs"); }),
            "--costs: '1' has 1 values; expected f,b or f,b,w or f,b,w,transfer");
  EXPECT_EQ(error_of([] { parse_costs("1,x", "--costs"); }),
            "--costs: 'x' is not a non-negative number (expected f,b[,w[,transfer]], e.g. 1,2,1)");
  EXPECT_EQ(error_of([] { parse_costs("1,-1", "--costs"); }),
            "--costs: '-1' is not a non-negative number (expected f,b[,w[,transfer]], e.g. 1,2,1)");
  EXPECT_EQ(error_of([] { parse_costs("0,0,0", "--costs"); }), "--costs: '0,0,0' makes every action free");
}

}  // namespace
}  // namespace tessera::schedule
