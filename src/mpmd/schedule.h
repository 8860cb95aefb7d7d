// Pipeline schedules as data.
//
// A Schedule says, for each stage (a device group), the order in which that stage runs its
// actions: forwards and backwards of (microbatch, virtual stage) pairs — the backward optionally
// split into its input-gradient part (BI) and its weight-gradient part (W), as zero-bubble
// schedules do — and the sends and receives that move activations forward and gradients backward
// between stages. Virtual stages are numbered 0 .. stages·virtual−1 along the model; virtual stage
// v lives on stage v % stages (the circular assignment of interleaved 1F1B), so with one virtual
// stage per device the two numberings coincide.
//
// Schedules print to and load from CSV (format in docs/PIPELINES.md and at print_csv below), so a
// custom schedule can be written by hand, validated (validate.h) and simulated (simulate.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::mpmd {

enum class ActionKind {
  kForward,         // F: the forward of one virtual stage on one microbatch
  kBackward,        // B: the whole backward (input and weight gradients)
  kBackwardInput,   // BI: the input-gradient half of a split backward (on the critical path)
  kBackwardWeight,  // W: the weight-gradient half (needed by no other stage; fills bubbles)
  kSend,            // hand a value to another stage
  kRecv,            // wait for a value from another stage
};

// What a send or receive carries: a forward activation (to the next virtual stage) or a gradient
// (to the previous one).
enum class Payload { kNone, kActivation, kGradient };

struct Action {
  ActionKind kind = ActionKind::kForward;
  int64_t microbatch = 0;
  // For F, B, BI and W: the virtual stage computed. For SEND and RECV: the virtual stage that
  // produced the value (an activation of F at vs goes to vs+1; a gradient of B/BI at vs goes to
  // vs−1), so a send and its receive carry the same (payload, microbatch, virtual_stage).
  int64_t virtual_stage = 0;
  Payload payload = Payload::kNone;  // SEND and RECV only
  int64_t peer = -1;                 // SEND: destination stage; RECV: source stage; else -1

  bool is_compute() const { return kind != ActionKind::kSend && kind != ActionKind::kRecv; }
  friend bool operator==(const Action&, const Action&) = default;
};

struct Schedule {
  std::string name = "custom";  // "gpipe", "1f1b", "interleaved", "zb-h1" or anything for a custom one
  int64_t stages = 1;
  int64_t microbatches = 1;
  int64_t virtual_per_stage = 1;          // V: virtual stages held by each stage
  std::vector<std::vector<Action>> actions;  // actions[stage] in execution order

  int64_t virtual_stages() const { return stages * virtual_per_stage; }
  // The stage holding virtual stage vs (circular assignment).
  int64_t stage_of(int64_t vs) const { return vs % stages; }
};

// "F", "B", "BI", "W", "SEND", "RECV".
std::string_view kind_name(ActionKind kind);
// "act", "grad" or "".
std::string_view payload_name(Payload payload);
// The action as messages and charts name it: "F(mb 2, vs 1)", "SEND act(mb 2, vs 1) to stage 2".
std::string describe(const Action& a);
// describe() with its place: "stage 1 step 4 RECV act(mb 0, vs 0) from stage 0".
std::string describe_at(int64_t stage, int64_t step, const Action& a);

// The schedule as CSV: a first line
//   # tessera-schedule name=<name> stages=<P> microbatches=<M> virtual=<V>
// then the header row `stage,step,kind,microbatch,virtual_stage,payload,peer` and one row per
// action, stages in order and steps 0, 1, ... within a stage. payload is act or grad for SEND and
// RECV and empty otherwise; peer is the other stage for SEND and RECV and empty otherwise.
std::string print_csv(const Schedule& s);
void print_csv(const Schedule& s, std::ostream& out);

// Parses print_csv's format (UserError naming `source`:line and the column on malformed input).
// Rows may come in any order; a stage's actions are ordered by step, and steps must be distinct.
// Lines starting with '#' after the first are comments. The result is not validated.
Schedule parse_csv(std::string_view text, std::string_view source = "<csv>");
Schedule load_csv(const std::string& path);

}  // namespace tessera::mpmd
