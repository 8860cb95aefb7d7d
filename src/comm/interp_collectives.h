// The interpreter's collectives across real devices: each collective op of a program runs as an
// exchange on a Communicator, with the process groups of the StableHLO spec.
//
// Process (replica r, partition p) of a num_replicas x num_partitions grid is device
// r * num_partitions + p. Reductions apply the op's own body, folding the group's values in group
// order, so a run gives the same bits every time.
#pragma once

#include "comm/communicator.h"
#include "interp/interpreter.h"

namespace tessera::comm {

class CommCollectives : public interp::Collectives {
 public:
  explicit CommCollectives(Communicator& comm) : comm_(comm) {}
  std::vector<ir::Literal> run(const ir::Op& op, std::vector<ir::Literal> operands,
                               const interp::Combiner& combine,
                               const interp::ProcessInfo& process) override;
  // all_reduce (add or multiply), reduce_scatter (likewise, blocks along a leading dimension) and
  // all_gather (likewise) straight from the operand into the result: the communicator's typed
  // collectives, with no copy of the operand or of the result.
  bool run_into(const ir::Op& op, const ir::Literal& operand, ir::Literal& result,
                const interp::ProcessInfo& process) override;

 private:
  Communicator& comm_;
};

}  // namespace tessera::comm
