// Pipeline schedules over fragments cut from the whole step (program.h, fragments.h, schedule/schedule.h).
//
// The step's named computations are the virtual stages of a pipeline, each called once per
// microbatch (call_counter = microbatch); virtual stage v runs on stage v mod P. FragmentPipeline
// differentiates the whole step, cuts it into fragments (glue kept apart) and maps each fragment to
// a schedule action: the forward of (v, mb) to F(mb, v), its transpose to B(mb, v) (with
// split_backward: its input-gradient part to BI, its weight-gradient part to W). Glue (the loss,
// gradient sums over microbatches) is no action: it runs as soon as its inputs exist and counts
// as part of the compute action its stage ran just before.
//
// Autodiff sums a parameter's gradient over microbatches in reverse program order inside the
// transposes, which would tie B(2, v) to B(3, v); separate_microbatch_sums makes those sums glue
// and rebuilds them in microbatch order, so every backward depends on its own microbatch only.
// whole() is the step so rewritten: runs equal it bit for bit.
//
// `compile` executes a schedule abstractly against the plan (a value needed before it can be on
// the stage, or a schedule that cannot finish, is a UserError naming the action and the value) and
// records per stage what it does (run fragment, post value, wait for value); `run` executes those
// lists, one thread per stage, so a run does exactly what was checked. Transfers the schedule does
// not name (glue, skips over stages) are posted right after their producer.
//
// Made from a plan instead of a step, it runs any plan of the program form (e.g. two models on two
// meshes): each mesh a stage, every fragment glue, in program order.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "interp/interpreter.h"
#include "interp/trace.h"
#include "ir/literal.h"
#include "ir/module.h"
#include "mpmd/fragments.h"
#include "mpmd/ranks.h"
#include "runtime/session.h"
#include "schedule/schedule.h"
#include "schedule/simulate.h"

namespace tessera::exec {
class Executable;
class RunContext;
}  // namespace tessera::exec

namespace tessera::mpmd {

struct FragmentPipelineOptions {
  std::vector<size_t> wrt;  // parameters to differentiate (whole_step's wrt; empty: every float one)
  std::chrono::milliseconds transfer_timeout = std::chrono::seconds(60);
  // Splits each transpose into BI and W parts (zero-bubble's split, above); without it, a schedule
  // with BI or W actions is refused.
  bool split_backward = false;
  // Each backward recomputes its call's forward from the values crossing into it (whole_step's
  // remat) instead of keeping the forward's activations: the same results, fewer bytes saved.
  bool remat = false;
  // The ir::Mesh of the module every stage is a device group of: fragments are partitioned over it
  // by fragments.h rule 7's layouts and values stay there as pieces. Empty: one device per stage.
  std::string stage_mesh;
  // The processes the stages are spread over (ranks.h), or null: this process as one rank (a
  // LocalRanks of the pipeline's own). Every rank makes the same pipeline and calls; each runs only
  // its stages (stage_ranks); parameters of other ranks' stages may have no pieces in RunInputs,
  // and results computed elsewhere come back without pieces. Not owned.
  Ranks* ranks = nullptr;
  // Time per op kind of every fragment (summed over devices). Not owned.
  interp::Profile* profile = nullptr;
};

// What a fragment is to a schedule. kBackward: the transpose, or its BI part when split; kWeight:
// its W part. B runs both.
struct FragmentRole {
  enum class Kind { kGlue, kForward, kBackward, kWeight };
  Kind kind = Kind::kGlue;
  int64_t microbatch = -1, virtual_stage = -1;  // F, B and W only
  std::string to_string() const;               // "F(mb 2, vs 1)", "W(mb 0, vs 3)", "glue"
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

// For messages: "stage 1 step 4 F(mb 2, vs 1)", or "stage 1 (glue)" when step < 0.
std::string instruction_place(const schedule::Schedule& s, size_t stage, int64_t step);

struct CompiledSchedule {
  std::vector<std::vector<Instruction>> stages;
  int64_t scheduled_transfers = 0;  // posted at a SEND of the schedule
  int64_t direct_transfers = 0;     // posted right after their producer
};

// Its times and CPU times per stage and action (PipelineResult, simulate.h: an empty interval for
// nothing to do or a SEND) feed the simulator's replays.
struct FragmentPipelineRun : schedule::PipelineResult {
  // The whole step's results (its results, then the gradients) where they were computed (on a
  // device group: its pieces), and whole (RunInputs::whole_results; else empty).
  std::vector<runtime::ShardedBuffer> values;
  std::vector<ir::Literal> results;
  // Per stage, the most bytes held at once: of forward values kept for a backward on the stage
  // (saved activations), and of everything the stage kept.
  std::vector<int64_t> peak_saved_bytes, peak_store_bytes;
  // The bytes the destination devices received, summed over the transfers (only their parts).
  int64_t transferred_bytes = 0;
  std::vector<int64_t> fragment_runs;    // per fragment: how many times it ran
  std::vector<schedule::Interval> fragment_times;  // per fragment: when it ran, ms since the run started
  std::vector<std::vector<int64_t>> action_bytes;  // per stage, per action: the bytes sent or received
};

// What a run reads besides the plan: every step parameter, sharing its pieces (a stage reads those
// on its own mesh, where they stay across runs). One piece is a whole array (split where a stage
// reads it); several are laid out on their stage's devices.
struct RunInputs {
  std::vector<runtime::ShardedBuffer> parameters;
  bool whole_results = true;
  // One-device stages: fragments' op spans on track `stage`, and a span per schedule action.
  interp::Trace* trace = nullptr;
};

// A whole array as a buffer of one piece.
runtime::ShardedBuffer whole_buffer(ir::Literal value);

// A program of one stage (a fragment, a trainer's update): on one device an exec::Executable lent
// its inputs as views (never written, never copied) but for the donated ones, with `options`
// (trace, profile); on a device group (`session`) a runtime::ShardedProgram whose values stay on
// the devices as pieces, execute splitting a whole input (one piece) as the program takes it.
class StageProgram {
 public:
  // `here` false: the stage runs on another rank; the program is compiled (for its layouts and
  // types) but holds no run context, whose arena only its stage's rank needs.
  StageProgram(const runtime::Session* session, const ir::Module& module, const std::string& function,
               std::vector<std::pair<size_t, size_t>> donated = {}, bool here = true);
  ~StageProgram();
  const ir::Sharding& input_layout(size_t k) const { return layouts_.at(k); }  // none on one device
  runtime::ShardedBuffer stage(size_t k, const ir::Literal& x) const;  // input k from a whole array
  runtime::ShardedBuffer stage_pieces(size_t k, const runtime::PieceMaker& make) const;
  std::vector<runtime::ShardedBuffer> execute(std::vector<runtime::ShardedBuffer>& args,
                                              const interp::Options& options) const;
  const runtime::ShardedProgram* sharded() const { return program_.get(); }
  // One device's program (on a group, the partitioned local one), and what a run context of it
  // holds for good on each device (its arenas).
  const ir::Function& local_function() const;
  int64_t context_bytes() const;

 private:
  std::unique_ptr<runtime::ShardedProgram> program_;
  std::shared_ptr<const exec::Executable> executable_;
  std::unique_ptr<exec::RunContext> context_;
  std::vector<ir::Sharding> layouts_;
  std::vector<bool> donated_;  // per input, on one device
};

class FragmentPipeline {
 public:
  // `virtual_stages` are the named computations in model order, spread over `stages` (dividing
  // them). Adds the whole-step function @<step>_pipeline to `module`. UserErrors name a named
  // computation that is not a virtual stage (or the reverse), and counters other than 0 … M−1.
  FragmentPipeline(ir::Module& module, const ir::Function& step, std::vector<std::string> virtual_stages,
                   int64_t stages, FragmentPipelineOptions options = {});
  // Runs `plan` (from fragment()) in this process, stage m on plan.meshes[m]. Only
  // transfer_timeout and profile apply; whole() has no function then.
  explicit FragmentPipeline(FragmentPlan plan, FragmentPipelineOptions options = {});
  ~FragmentPipeline();
  FragmentPipeline(const FragmentPipeline&) = delete;
  FragmentPipeline& operator=(const FragmentPipeline&) = delete;

  const FragmentPlan& plan() const { return plan_; }
  const ir::Function& whole() const { return *whole_; }
  int64_t stages() const { return stages_; }
  int64_t microbatches() const { return microbatches_; }
  const FragmentRole& role(size_t fragment) const { return roles_.at(fragment); }
  std::string summary() const;  // plan().summary() with each fragment's role

  // Checks `schedule` against the program and turns it into per-stage instruction lists.
  CompiledSchedule compile(const schedule::Schedule& schedule) const;
  FragmentPipelineRun run(const schedule::Schedule& schedule, const std::vector<ir::Literal>& parameters) const;
  // Runs `compiled` (a trainer compiles once and runs every step). Every fragment was compiled
  // when the pipeline was made, with a run context of its own: one run at a time.
  FragmentPipelineRun run(const CompiledSchedule& compiled, const schedule::Schedule& schedule,
                          const RunInputs& inputs) const;
  // Every fragment as glue, in program order: the step's results as the plan computes them.
  FragmentPipelineRun run(const std::vector<ir::Literal>& parameters) const;

  // A stage's session and spmd mesh (null for one device), and the devices fragment `f` runs on.
  const runtime::Session* session(int64_t stage) const;
  const ir::Mesh* stage_mesh(int64_t stage = 0) const;
  int64_t devices_of(size_t fragment) const;
  // The stage programs compiled for the fragments: fragments of a stage that compute the same
  // program (every microbatch's forward of a virtual stage) share one, and its arenas.
  size_t programs_compiled() const;
  // What one device of each stage holds for `compiled`'s run, known before it runs: the run
  // contexts of the stage's programs, and its store at its fullest (the values kept for later
  // instructions, with a running fragment's inputs and results together), of which saved
  // activations. Pieces of a stage's group are its device 0's (the largest where uneven).
  struct StageMemory {
    int64_t programs = 0, store = 0, saved = 0;
  };
  std::vector<StageMemory> memory_plan(const CompiledSchedule& compiled) const;
  bool runs_here(int64_t stage) const;  // always on one rank
  Ranks& ranks() const { return *options_.ranks; }  // FragmentPipelineOptions::ranks, or its own
  // A value of stage `stage`, whole. On a stage over several ranks, each of them calls it alike.
  ir::Literal whole(const runtime::ShardedBuffer& b, int64_t stage = 0) const;

 private:
  FragmentPipelineOptions options_;
  std::vector<std::string> names_;
  int64_t stages_ = 1, microbatches_ = 0;
  const ir::Function* whole_ = nullptr;
  FragmentPlan plan_;
  std::vector<std::optional<ir::Mesh>> meshes_;  // per stage, its devices; none: one device
  std::vector<FragmentRole> roles_;
  std::unique_ptr<LocalRanks> local_ranks_;  // options_.ranks when none was given
  struct Compiled;  // the stages' sessions, the fragments' programs and layouts
  std::shared_ptr<Compiled> compiled_;  // shared: its deleter is made where Compiled is complete
  void compile_fragments();
};

// The first BI or W action of `s` as (stage, step), if any: `s` needs a pipeline with split_backward.
std::optional<std::pair<size_t, size_t>> first_split_action(const schedule::Schedule& s);

}  // namespace tessera::mpmd
