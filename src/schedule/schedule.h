// Pipeline schedules as data: for each stage (a device group), the order in which it runs its
// actions — forwards and backwards of (microbatch, virtual stage) pairs, the backward optionally
// split into its input-gradient (BI) and weight-gradient (W) parts as zero-bubble schedules do —
// and the sends and receives that move activations forward and gradients backward. Virtual stage
// v lives on stage v % stages (the circular assignment of interleaved 1F1B).
//
// Here also: the CSV form (PyTorch's), the built-in generators and the validator. Each generator
// orders only the compute actions; insert_transfers then adds a receive right before the action
// that needs a value and a send right after the one that produced it, so every built-in schedule
// passes validate().
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::schedule {

enum class ActionKind {
  kForward,         // F
  kBackward,        // B: input and weight gradients
  kBackwardInput,   // BI: the input-gradient part (on the critical path)
  kBackwardWeight,  // W: the weight-gradient part (needed by no other stage; fills bubbles)
  kSend,
  kRecv,
};

// What a send or receive carries: an activation (to the next virtual stage) or a gradient (to the
// previous one).
enum class Payload { kNone, kActivation, kGradient };

struct Action {
  ActionKind kind = ActionKind::kForward;
  int64_t microbatch = 0;
  // F, B, BI, W: the virtual stage computed. SEND, RECV: the one that produced the value, so a send
  // and its receive carry the same (payload, microbatch, virtual_stage).
  int64_t virtual_stage = 0;
  Payload payload = Payload::kNone;  // SEND and RECV only

  bool is_compute() const { return kind != ActionKind::kSend && kind != ActionKind::kRecv; }
  friend bool operator==(const Action&, const Action&) = default;
};

struct Schedule {
  std::string name = "custom";
  int64_t stages = 1;
  int64_t microbatches = 1;
  int64_t virtual_per_stage = 1;             // V: virtual stages held by each stage
  std::vector<std::vector<Action>> actions;  // actions[stage] in execution order

  int64_t virtual_stages() const { return stages * virtual_per_stage; }
  int64_t stage_of(int64_t vs) const { return vs % stages; }
  // SEND: the stage of the value's consumer (the next virtual stage for an activation, the previous
  // for a gradient); RECV: its producer's; else -1.
  int64_t peer(const Action& a) const {
    if (a.is_compute()) return -1;
    return stage_of(a.kind == ActionKind::kRecv ? a.virtual_stage
                                                : a.virtual_stage + (a.payload == Payload::kActivation ? 1 : -1));
  }
};

std::string_view kind_name(ActionKind kind);      // "F", "B", "BI", "W", "SEND", "RECV"
std::string_view payload_name(Payload payload);   // "act", "grad" or ""
// "F(mb 2, vs 1)", "SEND act(mb 2, vs 1) to stage 2"; with its place (s.actions[stage][step]):
// "stage 1 step 4 F(mb 2, vs 1)".
std::string describe(const Schedule& s, const Action& a);
std::string describe_at(const Schedule& s, int64_t stage, int64_t step);

// ---- CSV ----

// PyTorch's pipelining form (_PipelineScheduleRuntime._dump_csv / _load_csv): row r is stage r,
// each cell one action `[stage][type][microbatch]` or empty (an idle step). Types: F, B, I (BI), W,
// and the transfers SEND_F, RECV_F, SEND_B, RECV_B, whose stage is the virtual stage sending or
// receiving (RECV_F on v receives v-1's activation, RECV_B on v receives v+1's gradient).
// print_csv writes every action (format="compute_comms"), so what it writes reads back the same.
std::string print_csv(const Schedule& s);
// Reads either form: with no transfer in the file (format="compute_only") they are inserted. The
// stages are the rows, the microbatches and virtual stages the largest indices + 1, the name
// `source`. The result is validated; UserErrors name `source`, the row and column (from 1) of the
// cell at fault, an inserted transfer the cell it serves.
Schedule parse_csv(std::string_view text, std::string_view source = "<csv>");
Schedule load_csv(const std::string& path);

// ---- The built-in schedules ----

enum class ScheduleKind { kGPipe, kOneFOneB, kInterleaved, kZeroBubbleH1 };
std::string_view schedule_kind_name(ScheduleKind kind);  // "gpipe", "1f1b", "interleaved", "zb-h1"
ScheduleKind parse_schedule_kind(std::string_view name);

// `kind` on P stages and M microbatches (V virtual stages per stage: interleaved only), the
// transfers inserted:
// - gpipe: all forwards, then all backwards. Peak in flight: M on every stage.
// - 1f1b (PipeDream-flush): stage s runs P−1−s warm-up forwards, alternates one forward and one
//   backward, then drains. Peak in flight on stage s: min(P−s, M).
// - interleaved: Megatron-LM's interleaved 1F1B: stage s holds virtual stages s, s+P, ...;
//   microbatches go through the chunks in groups of P (V > 1 needs P to divide M); V = 1 is 1F1B.
// - zb-h1: zero-bubble H1 (Qi et al.): 1F1B's order with split backwards; stage s defers its W's
//   by s backwards so they fill the drain bubble, keeping at most P microbatches in flight.
Schedule generate(ScheduleKind kind, int64_t stages, int64_t microbatches, int64_t virtual_per_stage = 1);
inline Schedule gpipe(int64_t P, int64_t M) { return generate(ScheduleKind::kGPipe, P, M); }
inline Schedule one_f_one_b(int64_t P, int64_t M) { return generate(ScheduleKind::kOneFOneB, P, M); }
inline Schedule interleaved(int64_t P, int64_t M, int64_t V) { return generate(ScheduleKind::kInterleaved, P, M, V); }
inline Schedule zero_bubble_h1(int64_t P, int64_t M) { return generate(ScheduleKind::kZeroBubbleH1, P, M); }
void insert_transfers(Schedule& s);

// ---- The validator ----

// Refuses a schedule that would compute the wrong thing or hang, naming the action at fault.
// Checks, in order: 1. sizes; 2. ranges (microbatch, virtual stage, compute on its own stage,
// transfers between the producer's and consumer's stages); 3. no duplicate, no backward both whole
// and split; 4. completeness (F and B, or BI and W, for every pair); 5. every SEND has its RECV and
// vice versa; 6. order on each stage (a forward after its input's producer or RECV, a backward
// after its forward and its gradient's producer or RECV, W after BI, a SEND after its producer);
// 7. progress: run in order with receives waiting for their sends, every stage finishes.
// `place`, when given, names an action's place instead of "stage 1 step 4" (CSV cells).
using PlaceName = std::function<std::string(int64_t stage, int64_t step)>;
void validate(const Schedule& s, const PlaceName& place = nullptr);
// Check 1 for the validator and the generators: each count at least 1, or a UserError beginning
// with `what` ("1f1b schedule", "schedule 'mine'").
void check_counts(std::string_view what, int64_t stages, int64_t microbatches, int64_t virtual_per_stage);

// Runs the stages' lists round robin, each in its order, a RECV waiting until its SEND has run
// (sends never wait), calling `run(stage, step)` (when given) as each action runs. Returns per stage
// how many of its actions ran: all unless the schedule deadlocks. The validator's progress check
// and the simulator's replay.
std::vector<size_t> run_in_order(const Schedule& s, const std::function<void(size_t stage, size_t step)>& run);

}  // namespace tessera::schedule
