// The execution plan of a ShardedProgram on host devices: what ShardedProgram::execute would
// otherwise build on every step, made on its first execute and reused by every later one, so that a
// training step in the steady state allocates nothing (tests/exec/allocation_test.cpp):
//   - the grid's ParallelRun (comm/parallel.h): the world with its channels, each device's
//     communicator, collectives and options;
//   - per device, the vector of its arguments and the vector of its results, which keep their
//     capacity from step to step;
//   - per input, whether it is donated (an output aliases it), and per output, the input whose
//     buffer (type, sharding and vector of pieces) becomes the output's when the layouts agree.
// A step moves every input's pieces into the devices' arguments: a donated one for good (the
// executable's result for the aliased output comes back in that piece's buffer, donor by donor,
// and the input's ShardedBuffer, pieces vector included, becomes the output), the others lent and
// moved back after the run (Executable::run_into borrows them, never writes them). An output that
// already holds pieces of its type no other buffer shares is refilled in place (the loss of a
// training loop that keeps its outputs). Over MPI, and with the interpreter, execute does not use
// a plan.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "comm/parallel.h"
#include "runtime/session.h"

namespace tessera::runtime {

// The interpreter options every device of a session starts from: its kernels and profile.
interp::Options device_options(const SessionOptions& options);

class ExecutionPlan {
 public:
  ExecutionPlan(const SessionOptions& options, int64_t num_devices, const CompiledProgram& program,
                const std::vector<std::pair<size_t, size_t>>& aliases);
  ~ExecutionPlan();
  ExecutionPlan(const ExecutionPlan&) = delete;
  ExecutionPlan& operator=(const ExecutionPlan&) = delete;

  // ShardedProgram::execute on host devices with executables, inputs already checked. One run at a
  // time: the caller holds `mu`.
  void execute(std::vector<ShardedBuffer>& inputs, std::vector<ShardedBuffer>& outputs);
  std::mutex mu;

 private:
  SessionOptions options_;
  size_t devices_;
  CompiledProgram program_;
  std::shared_ptr<const ir::Module> module_;
  const ir::Function* fn_;
  std::vector<uint8_t> donated_;           // per input
  std::vector<int64_t> output_source_;     // per output: the donated input whose buffer it takes; -1: none
  std::unique_ptr<comm::ParallelRun> run_;  // made on the first execute
  std::vector<std::vector<ir::Literal>> args_, results_;  // per device
  std::vector<uint8_t> lent_;              // per input, this step: borrowed by the executables
  std::vector<size_t> first_;              // per input, this step: the first input with its pieces
  std::vector<uint8_t> moved_;             // per input, this step: its pieces moved into the run
};

}  // namespace tessera::runtime
