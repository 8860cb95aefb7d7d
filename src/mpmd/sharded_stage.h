// What one pipeline stage holds and how it runs its programs: the parameters (and AdamW moments)
// of its virtual stages, kept on the stage across steps, and the devices its programs run on.
//
// A stage without a stage plan is one device: its programs run on the plain interpreter (with the
// fast kernels) and its parameters and moments are host arrays. With a stage plan (stages.h) the
// stage is a group of host devices with a runtime::Session of its own: each program is compiled
// once by spmd (propagate + partition) on first use, the parameters and moments are staged once
// onto the group's devices as ShardedBuffers and stay there — the optimizer program takes them
// donated and returns the next ones in place — and only the per-action values (the microbatch's
// input, the received cotangent, the results) are split onto the group and gathered back whole.
// Transfers between stages therefore carry whole arrays, as they would between meshes of
// different layouts. A StageState is used by one thread at a time (its stage's worker).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "mpmd/stages.h"
#include "mpmd/transfer.h"
#include "nn/optimizer.h"
#include "runtime/session.h"

namespace tessera::mpmd {

class StageState {
 public:
  // Stage `stage` of a pipeline of `stages` stages: it holds the virtual stages stage, stage +
  // stages, ... of `model` (the circular assignment of schedule.h). `parameters` are all of the
  // model's, in parameter_specs order; the stage keeps its own. With `adamw` it also keeps that
  // optimizer's moments (zero at first), updated by apply_adamw.
  StageState(const StagedModel& model, int64_t stage, int64_t stages, const std::vector<ir::Literal>& parameters,
             std::optional<nn::AdamW> adamw = std::nullopt);
  StageState(StageState&&) noexcept;
  ~StageState();

  int64_t stage() const { return stage_; }
  const std::vector<int64_t>& virtual_stages() const { return pieces_; }
  int64_t devices() const { return model_->devices_per_stage(); }

  // Runs `fn` (a program of virtual stage `vs` in the model's module) on vs's parameters followed
  // by `tail`; whole arrays in and out.
  std::vector<ir::Literal> evaluate(const ir::Function& fn, int64_t vs, std::vector<ir::Literal> tail);

  // One AdamW step (step number `step`, 1 first) on every parameter this stage holds, with
  // `gradients` by parameter index (the mean over the microbatches). UserError without an
  // optimizer or when a gradient is missing.
  void apply_adamw(int64_t step, const std::map<size_t, ir::Literal>& gradients);

  // The whole value of parameter `index` (of the model's parameter_specs) held here.
  ir::Literal parameter(size_t index) const;
  std::vector<size_t> parameter_indices() const;  // the parameters this stage holds, ascending
  // Bytes of parameters and of optimizer state each device of the group holds.
  int64_t parameter_bytes_per_device() const;
  int64_t optimizer_bytes_per_device() const;

 private:
  struct Piece;  // one virtual stage's parameters, moments and compiled programs
  Piece& piece(int64_t vs) const;  // UserError when this stage does not hold vs

  const StagedModel* model_;
  int64_t stage_;
  std::vector<int64_t> pieces_;
  std::optional<nn::AdamW> adamw_;
  std::unique_ptr<runtime::Session> session_;  // sharded stages only
  std::unique_ptr<ir::Module> optimizer_module_;  // @adamw_<vs> per piece
  std::vector<std::unique_ptr<Piece>> state_;
};

// One StageState per stage of a `stages`-stage pipeline over `model`; with `ranks`, only for the
// stages this rank runs (local_stages of transfer.h), ascending.
std::vector<StageState> stage_states(const StagedModel& model, int64_t stages, const std::vector<ir::Literal>& parameters,
                                     std::optional<nn::AdamW> adamw = std::nullopt, const Ranks* ranks = nullptr);

}  // namespace tessera::mpmd
