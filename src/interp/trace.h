// Spans of what ran, per device, for a timeline (Chrome's trace-event JSON, which Perfetto and
// chrome://tracing read).
//
// One span source serves the profiler and the tracer: the executable (and the interpreter) time
// each step once, and hand that interval to Profile (summed per op kind) and to Trace (kept as a
// span on the device's track). A span names a label (op name, category, fixed JSON arguments such
// as a collective's bytes and groups), interned once per program and trace, so recording a span is
// one push_back of four integers onto the device's vector: no allocation beyond its growth. A track
// is written by the one thread that runs its device at a time; the trace's lock is taken only to
// find a track or intern a label, once per run. The pipeline runner adds its actions and transfers
// to the stage's track from the intervals it already measures; those spans enclose the ops of the
// fragments they run.
//
// In the JSON: pid is the MPI rank (0 in one process), tid the device (or pipeline stage); each
// span is a complete event ("ph": "X") with ts and dur in microseconds since the trace began, and
// args holding the training step and the label's arguments; metadata events name each process
// ("rank R") and thread ("device D"). Over MPI each rank writes its events (events_json) and rank 0
// joins them into one document.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ir {
class Op;
}

namespace tessera::interp {

struct TraceLabel {
  std::string name;      // "stablehlo.dot_general", "F mb 0" ...
  std::string category;  // "op", "fused", "collective", "pipeline", "transfer"
  std::string args;      // JSON object members without braces: "\"bytes\": 64, \"groups\": \"[[0, 1]]\"" (or "")
  auto operator<=>(const TraceLabel&) const = default;
};

struct TraceSpan {
  int64_t start_ns = 0, end_ns = 0;  // since the trace began
  uint32_t label = 0;
  int32_t step = 0;  // the training step (Trace::step when the run began)
};

// The label of a timed op: its name, "op", "fused" (a fused loop rooted at it) or "collective",
// and as arguments its result types and, for a collective, the bytes of its operands on this
// device and its replica groups (or source-target pairs).
TraceLabel op_label(const ir::Op& op, bool fused);

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Trace(int64_t pid = 0);
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  int64_t pid() const { return pid_; }
  void set_pid(int64_t pid) { pid_ = pid; }  // the MPI rank, once known (before any span is written out)
  // Unique among the traces of this process (what a cache of interned ids is keyed by).
  uint64_t serial() const { return serial_; }
  int64_t ns(Clock::time_point t) const { return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count(); }
  int64_t now_ns() const { return ns(Clock::now()); }

  // The step spans started from now on belong to (a training loop sets it before each step).
  void set_step(int64_t step) { step_.store(static_cast<int32_t>(step), std::memory_order_relaxed); }
  int32_t step() const { return step_.load(std::memory_order_relaxed); }

  // The label's id (the same for equal labels). Locked: call once per program, not per op.
  uint32_t intern(const TraceLabel& label);
  // Device `device`'s spans, made on first use (stable: never moves). Locked: call once per run;
  // only the thread running the device appends to it.
  std::vector<TraceSpan>& track(int64_t device);

  // Appends a span to `track` at its step.
  void add(std::vector<TraceSpan>& track, uint32_t label, int64_t start_ns, int64_t end_ns) {
    track.push_back({start_ns, end_ns, label, step()});
  }

  // This process's events, comma-separated (metadata first, then every track's spans in order).
  std::string events_json() const;
  // A whole document from the events of one or more processes (events_json of each rank).
  static std::string document(const std::vector<std::string>& events);
  std::string json() const { return document({events_json()}); }
  // Spans recorded so far on all tracks.
  size_t size() const;

 private:
  int64_t pid_;
  uint64_t serial_;
  Clock::time_point origin_;
  std::atomic<int32_t> step_{0};
  mutable std::mutex mu_;
  std::map<TraceLabel, uint32_t> ids_;
  std::vector<const TraceLabel*> labels_;  // by id (keys of ids_)
  std::map<int64_t, std::unique_ptr<std::vector<TraceSpan>>> tracks_;
};

}  // namespace tessera::interp
