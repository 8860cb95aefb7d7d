// The pipeline runtime: executes a Schedule (schedule.h) over the stage programs of a StagedModel
// (stages.h), one host thread per stage, and measures what it did.
//
// Each stage thread runs its action list in order: F evaluates the piece's forward on one
// microbatch and keeps the piece's input until that microbatch's backward; B (or BI then W)
// evaluates the backward programs, adds the parameter gradients to the stage's sums and frees the
// saved input; SEND and RECV move activations and cotangents through a Mailbox (transfer.h). The
// loss and gradients are those of the whole batch: the mean over microbatches, as
// nn::TrainingStep::accumulate computes it, so a schedule changes how, never what.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "mpmd/schedule.h"
#include "mpmd/simulate.h"
#include "mpmd/stages.h"
#include "mpmd/transfer.h"

namespace tessera::mpmd {

class StageState;  // sharded_stage.h

struct RunOptions {
  // How long a RECV waits for its value before the run fails naming it. It bounds the longest
  // chain of compute a stage may wait behind, so it is generous by default. Stuck stages each wait
  // out their own timeout (so that the run can name the cause), so a hung schedule is reported
  // after at most about twice this.
  std::chrono::milliseconds transfer_timeout{60000};
  // validate() the schedule first. Off only to exercise the runtime's own guards (a schedule the
  // validator would refuse must still fail with a message, not hang or crash).
  bool validate = true;  // over MPI ranks (`ranks` set) the schedule is validated regardless
  // The processes the stages are spread over (transfer.h; MpiRanks of mpi_transfer.h for MPI
  // ranks), or null for every stage on a thread of this process. With ranks, every rank makes
  // the same run_pipeline calls; each runs only the stages owner_rank gives it (stage s of P on
  // rank s·R/P), values between ranks go through `ranks`, and a rank that fails tells the others,
  // whose waits on it then end at once naming it. Not owned; must outlive the run.
  Ranks* ranks = nullptr;
};

// What one stage did.
struct StageMeasurements {
  // The most microbatch inputs held at once for a later backward (from F until B, or until W when
  // the backward is split), and the most bytes held: those inputs plus, with a split backward, the
  // output cotangents kept from BI to W.
  int64_t peak_saved = 0;
  int64_t peak_saved_bytes = 0;
  std::vector<Interval> times;  // per action of the stage's list: ms since the run started
  // Per action, the CPU time of the stage's thread (ms). Equal to the wall time when the thread had
  // a core to itself; less when stage threads outnumber cores. For a stage on a device group the
  // devices' threads compute, so this is only the stage thread's share (staging and gathering).
  std::vector<double> cpu_ms;
};

// Over ranks (RunOptions::ranks) every rank gets the loss and every stage's measurements, but
// only the gradients of its own stages' parameters (the others are left empty, Literal()):
// gradients stay where their parameters are.
struct PipelineResult {
  ir::Literal loss;                      // mean over microbatches of the microbatch losses
  std::vector<ir::Literal> gradients;    // d loss / d parameter, in parameter_specs order
  std::vector<StageMeasurements> stages;
};

// Runs one training step's forward and backward. `parameters` in parameter_specs order; tokens and
// targets i32 [batch, seq] (the whole batch; microbatch i is rows i, i+M, ...). The schedule must
// have stages · virtual_per_stage == model.virtual_stages() and model.microbatches() microbatches.
// Fails with a UserError naming the action: a RECV whose value does not come within the timeout
// (with where its sender stands), an action whose input is not there, values left over at the end.
// Each stage runs on one device (the plain interpreter with the fast kernels), or on its group of
// devices when the model has a stage plan.
PipelineResult run_pipeline(const StagedModel& model, const Schedule& schedule,
                            const std::vector<ir::Literal>& parameters, const ir::Literal& tokens,
                            const ir::Literal& targets, const RunOptions& options = {});

// The same on parameters the stages already hold (sharded_stage.h): stages[s] is stage s, holding
// the schedule's virtual stages s, s + P, ...; it keeps them across runs (PipelineTrainer). Over
// ranks, `stages` holds only this rank's stages, ascending (local_stages of transfer.h).
PipelineResult run_pipeline(const StagedModel& model, const Schedule& schedule, std::vector<StageState>& stages,
                            const ir::Literal& tokens, const ir::Literal& targets, const RunOptions& options = {});

// The measured run as a Simulation (times in ms; busy, makespan, bubble from them; peak_in_flight
// the measured peak_saved), so timeline_svg (svg.h) draws the real run like a simulated one.
Simulation measured_simulation(const Schedule& schedule, const PipelineResult& result);

}  // namespace tessera::mpmd
