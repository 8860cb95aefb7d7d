// Pipeline schedules over fragments cut from the whole step: the program form (program.h,
// fragments.h) joined to the schedules as data (schedule.h, generate.h).
//
// The step is written with named computations that are the *virtual stages* of a pipeline (e.g.
// stage0 … stage{N−1}), each called once per microbatch with call_counter = microbatch (scan_calls
// or named_call); virtual stage v goes to stage v mod P (the circular assignment, so N = P·V).
// FragmentPipeline differentiates the whole step (whole_step), cuts it into fragments (fragment(),
// with unnamed glue kept in fragments of its own) and maps every fragment to a schedule action:
//
//   forward fragment of (stage v, counter mb)   -> F(mb, v)
//   transpose fragment of (stage v, counter mb) -> B(mb, v)   (several fragments: all of them, in
//                                                               program order)
//   with split_backward, its input-gradient part -> BI(mb, v), its weight-gradient part -> W(mb, v)
//                                                   (B runs both; every transposed op is in one)
//   unnamed fragment (glue: the loss over microbatches, sums of gradients over microbatches) ->
//       no action; it runs on the mesh the program-form rules gave it, as soon as its inputs exist,
//       and counts as part of the compute action its stage ran just before (if any): a gradient's
//       sum is the B's that made its term, in the measured bubble and in the replay.
//
// Autodiff sums a parameter's gradient over the microbatches inside the transposes, in reverse
// program order (the sum of microbatch 2's contribution is an op of stage0#2ᵀ and reads the partial
// sum of stage0#3ᵀ), which would tie B(2, v) to B(3, v). Those cross-microbatch sums are made glue
// (their marks removed) before cutting, and rebuilt in microbatch order, ((g0 + g1) + g2) + … (see
// separate_microbatch_sums): every backward then depends only on its own microbatch, and a stage
// adds each term as soon as its backward has run. whole() is the step so rewritten: runs are bit
// for bit its results; against autodiff's own association they differ by rounding only.
//
// A schedule is run in two parts. `compile` executes it abstractly against the plan: each stage
// walks its action list; a compute action runs its fragments, whose inputs must already be on the
// stage — a value of the same stage produced by an action later in its list, or from another stage
// before the RECV that brings it, is a UserError naming the action and the value; SEND posts the
// values the plan moves from the action named by the SEND to its peer, RECV waits for them;
// transfers the schedule does not name (glue, skips over stages) are posted right after their
// producer and awaited at first use; a schedule that cannot finish is refused naming each stuck
// stage. The result is an instruction list per stage (run fragment, post value, wait for value),
// which `run` executes with one thread per stage, so a run does exactly what was checked.
//
// It is also the runner of any plan as fragment() cut it (a program of named computations on meshes
// that is not a pipeline, e.g. two models on two meshes): made from the plan, each mesh is a stage
// (partitioned over its spmd mesh's devices when it has one), every fragment is glue, and
// run(parameters) runs them in program order. A pipeline runs its own plan that way too.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "interp/trace.h"
#include "ir/literal.h"
#include "ir/module.h"
#include "mpmd/fragments.h"
#include "mpmd/ranks.h"
#include "mpmd/schedule.h"
#include "mpmd/simulate.h"
#include "runtime/session.h"

namespace tessera::mpmd {

struct FragmentPipelineOptions {
  std::vector<size_t> wrt;  // parameters to differentiate (whole_step's wrt; empty: every float one)
  std::string name;         // of the whole-step function added to the module (default @<step>_pipeline)
  std::chrono::milliseconds transfer_timeout = std::chrono::seconds(60);
  bool fast_kernels = true;
  // Splits each transpose into its input-gradient part (BI: the ops the cotangent sent to the
  // previous virtual stage depends on) and its weight-gradient part (W: the rest), see
  // split_backward below, so that a zero-bubble schedule's BI and W actions run those parts. Without
  // it a schedule with BI or W is refused.
  bool split_backward = false;
  // Rematerialization: each backward recomputes its call's forward from the values that cross into
  // it (the stage's input activation; whole_step's remat) instead of reading the activations its
  // forward kept, which then die in the forward. The same results; fewer bytes saved per stage.
  bool remat = false;
  // The ir::Mesh of the module (by name) that every stage is a group of devices of: each stage's
  // fragments are partitioned over its own devices (spmd) by the layouts fragments.h rule 7 gives
  // them, and their values stay there as pieces. Empty: one device per stage.
  std::string stage_mesh;
  // The processes the stages are spread over (ranks.h), or null for every stage in this one. With
  // ranks every rank makes the same pipeline and the same run calls; each runs only the stages
  // stage_ranks gives it (a stage on several ranks as a session over them, each rank holding only
  // its devices' pieces), values between ranks go shard by shard through `ranks`, parameters of
  // other ranks' stages may be null in RunInputs, and results computed elsewhere come back empty
  // (ShardedBuffer without pieces). A rank that fails tells the others (report_failure). Not owned.
  Ranks* ranks = nullptr;
  // When set: every fragment's ops add their time per op kind to it (interp::Profile, summed over
  // the stages' devices; its own mutex serializes the stages). Not owned.
  interp::Profile* profile = nullptr;
};

// What a fragment is to a schedule.
struct FragmentRole {
  // kBackward: the transpose, or its input-gradient part when split; kWeight: its weight-gradient
  // part. A B action runs both, BI the first, W the second.
  enum class Kind { kGlue, kForward, kBackward, kWeight };
  Kind kind = Kind::kGlue;
  int64_t microbatch = -1, virtual_stage = -1;  // F, B and W only
  std::string to_string() const;               // "F(mb 2, vs 1)", "B(mb 0, vs 3)", "W(mb 0, vs 3)", "glue"
};

// One step of a stage's compiled list.
struct Instruction {
  enum class Kind { kRun, kPost, kWait };
  Kind kind = Kind::kRun;
  size_t fragment = 0;  // kRun
  size_t value = 0;     // kPost, kWait: FragmentPlan::values
  size_t mesh = 0;      // kPost: destination; kWait: source
  int64_t step = -1;    // the schedule action it belongs to (−1: the start, or glue after no compute)
};

// Where an instruction of stage `stage` stands, for messages: its schedule action ("stage 1 step 4
// F(mb 2, vs 1)"), or "stage 1 (glue)" for glue run before the stage's first compute action.
std::string instruction_place(const Schedule& s, size_t stage, int64_t step);

struct CompiledSchedule {
  std::vector<std::vector<Instruction>> stages;
  int64_t scheduled_transfers = 0;  // posted at a SEND of the schedule
  int64_t direct_transfers = 0;     // posted right after their producer (not named by the schedule)
};

struct FragmentPipelineRun {
  // The whole step's results (its results, then the gradients), where they were computed: on a
  // stage of several devices as its pieces there.
  std::vector<runtime::ShardedBuffer> values;
  std::vector<ir::Literal> results;  // the same, whole (RunInputs::whole_results; else empty)
  // Per stage, the most bytes held at once of values produced by forwards and kept for a backward
  // on that stage (activations saved for the transpose), and of everything the stage kept.
  std::vector<int64_t> peak_saved_bytes, peak_store_bytes;
  // Bytes moved between stages: the sum, over the transfers, of the pieces each destination device
  // received (each exactly the part of the value its layout holds; reshard below).
  int64_t transferred_bytes = 0;
  std::vector<int64_t> fragment_runs;  // per fragment: how many times it ran (once, in a run that ends)
  std::vector<Interval> fragment_times;  // per fragment: when it ran, in ms since the run started
  // Per stage, per action of the schedule: when the stage started and ended it, in ms since the run
  // started (an action with nothing to do, or a SEND, is an empty interval), and the CPU time of
  // the stage's thread in it.
  std::vector<std::vector<Interval>> times;
  std::vector<std::vector<double>> cpu_ms;
  // Per stage, per action: the bytes it posted (SEND) or received (RECV) to or from other stages.
  std::vector<std::vector<int64_t>> action_bytes;
};

// What a run reads besides the plan: every parameter of the step, by pointer (a stage reads only
// those on its own mesh, where they stay: a trainer keeps them there across runs). A buffer of one
// piece is a whole array (split onto a stage's devices when read there); one of several pieces is
// laid out on its stage's devices.
struct RunInputs {
  std::vector<const runtime::ShardedBuffer*> parameters;
  bool whole_results = true;
  // When set: each one-device stage's fragments add their ops' spans to the track of device
  // `stage`, and each schedule action its own span around them (interp/trace.h).
  interp::Trace* trace = nullptr;
};

// A whole array as a buffer of one piece (what RunInputs takes for an input not yet on a stage).
runtime::ShardedBuffer whole_buffer(ir::Literal value);

class FragmentPipeline {
 public:
  // `virtual_stages` are the named computations in model order; `stages` is P (N must be a multiple
  // of it). Adds the whole-step function to `module`. UserErrors name a named computation that is
  // not a virtual stage (or the reverse), a stage called without counters, or counters other than
  // 0 … M−1 for some virtual stage.
  FragmentPipeline(ir::Module& module, const ir::Function& step, std::vector<std::string> virtual_stages,
                   int64_t stages, FragmentPipelineOptions options = {});
  // Runs `plan` (from fragment()) as it is, in this process: stage m is plan.meshes[m]. Of the
  // options only transfer_timeout, fast_kernels and profile apply (ranks: a UserError); whole() has
  // no function then.
  explicit FragmentPipeline(FragmentPlan plan, FragmentPipelineOptions options = {});
  ~FragmentPipeline();
  FragmentPipeline(const FragmentPipeline&) = delete;
  FragmentPipeline& operator=(const FragmentPipeline&) = delete;

  const FragmentPlan& plan() const { return plan_; }
  const ir::Function& whole() const { return *whole_; }
  int64_t stages() const { return stages_; }
  int64_t microbatches() const { return microbatches_; }
  const FragmentRole& role(size_t fragment) const { return roles_.at(fragment); }
  // plan().summary() with each fragment's role.
  std::string summary() const;

  // Checks `schedule` against the program and turns it into per-stage instruction lists (see
  // above). UserError: sizes that differ from the program's, BI/W without split_backward, a
  // value needed before it exists on the stage, a stage that cannot finish.
  CompiledSchedule compile(const Schedule& schedule) const;
  // Compiles and runs `schedule`; `parameters` are the step's.
  FragmentPipelineRun run(const Schedule& schedule, const std::vector<ir::Literal>& parameters) const;
  // Runs `compiled` (compile(schedule)): a trainer compiles its schedule once and runs it every step.
  // Each fragment runs as an exec::Executable compiled when the pipeline was made, in a run context
  // of its own (on a stage of several devices: a runtime::ShardedProgram on the stage's session), so
  // one run at a time.
  FragmentPipelineRun run(const CompiledSchedule& compiled, const Schedule& schedule, const RunInputs& inputs) const;
  // Runs every fragment as glue, each stage its own in program order (no schedule): the results of
  // the step as the plan computes them. A transfer the plan lacks is a UserError naming the value.
  FragmentPipelineRun run(const std::vector<ir::Literal>& parameters) const;

  // The devices of each stage: its session and spmd mesh (both null for a one-device stage), and
  // how many of them fragment `f` runs on.
  const runtime::Session* session(int64_t stage) const;
  const ir::Mesh* stage_mesh(int64_t stage = 0) const;
  int64_t devices_of(size_t fragment) const;
  // Whether this process runs stage `stage` (always without ranks).
  bool runs_here(int64_t stage) const;
  // A value of stage `stage`, whole. On a stage of several ranks, every rank of the stage calls it
  // alike (it may gather pieces among them).
  ir::Literal whole(const runtime::ShardedBuffer& b, int64_t stage = 0) const;

 private:
  FragmentPipelineOptions options_;
  std::vector<std::string> names_;
  int64_t stages_ = 1, microbatches_ = 0;
  const ir::Function* whole_ = nullptr;
  FragmentPlan plan_;
  std::vector<std::optional<ir::Mesh>> meshes_;  // per stage, its devices; none: one device
  std::vector<FragmentRole> roles_;
  struct Compiled;  // per fragment: its executable and run context
  std::shared_ptr<Compiled> compiled_;  // shared: its deleter is made where Compiled is complete
  void compile_fragments();
  // run(compiled, schedule, RunInputs) on whole arrays.
  FragmentPipelineRun run(const CompiledSchedule& compiled, const Schedule& schedule,
                          const std::vector<ir::Literal>& parameters) const;
};

// Strips the mpmd marks from the ops of `whole` that sum cotangents of different microbatches
// (an add marked transpose with counter c reading a transpose value of another counter, or such a
// sum), so they become glue; those that only feed each other and the results (a gradient's sum over
// microbatches) are rebuilt at the end of the function as one chain in microbatch order,
// ((g0 + g1) + g2) + …, instead of autodiff's reverse order. Returns how many ops it unmarked.
size_t separate_microbatch_sums(ir::Function& whole);

// Zero-bubble's split of each transpose of a named computation call: its input-gradient part is
// the ops that the values it hands to another named computation (the cotangent sent to the
// previous virtual stage) depend on, its weight-gradient part the rest (marked kWeightAttr), moved
// right after the input-gradient part's last op so that each part is one run of ops (fragments.h
// rule 5 then cuts them into fragments of their own). Returns how many ops it marked.
size_t split_backward(ir::Function& whole);

}  // namespace tessera::mpmd
