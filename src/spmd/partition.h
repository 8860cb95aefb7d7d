// The partitioner: a global function and its shardings become one local program that every device
// runs on its own pieces, with the collectives in place.
//
// partition() inlines calls, propagates shardings (propagate.h), then walks the ops once. For each
// op its factor rule and the shardings of its results decide how the work is split (an
// assignment of mesh axes to factors); operands are brought to that layout by reshard (the one
// place layouts change), the op runs on local shapes, partial results of split reductions are
// summed, and results are brought to their propagated layout. Ops with regions are partitioned
// recursively; manual_computation bodies run as written on their local shapes.
#pragma once

#include <string>
#include <vector>

#include "ir/module.h"
#include "spmd/propagate.h"
#include "spmd/report.h"

namespace tessera::spmd {

struct PartitionOptions {
  std::string name;  // of the local function; empty: the global one's
  // Which process-grid coordinate numbers the devices: partitions (1 x N grid, as JAX runs SPMD
  // programs) or replicas (N x 1, for programs run as replicas).
  bool devices_are_replicas = false;
  // Merge the gradient-style all_reduces of the local program into few large ones (combine.h).
  bool combine_all_reduces = true;
  // Every operand gathered whole before each op, which then runs whole on every device: correct
  // but wasteful, the partitioner the property test's byte bound must reject (a test double; not
  // for programs that run).
  bool replicate_operands = false;
  // A gather over split indexed dimensions done locally and summed (split_reads.h) where the cost
  // model finds that cheaper (its index arithmetic runs on the executable's allocation-free integer
  // kernels). Off: such a gather is made whole and reported as avoidable (--explain) instead, with
  // both byte counts, for comparing the two ways.
  bool local_gathers = true;
};

struct Partitioned {
  std::string function;  // the local function's name in the destination module
  int64_t num_devices = 1;
  std::string mesh;      // the function's mesh
  std::vector<ir::Type> parameter_types, result_types;  // global
  std::vector<ir::Sharding> parameter_shardings, result_shardings;
  Report report;
};

// Adds the local program of `fn` (a function of `module`) to `into` (which may be `module`
// itself when the name differs) and describes it.
Partitioned partition(const ir::Module& module, const ir::Function& fn, ir::Module& into,
                      const PartitionOptions& options = {});

// A copy of `fn` in `into` (named `name`) with every func.call replaced by the callee's body.
ir::Function& inline_calls(const ir::Module& module, const ir::Function& fn, ir::Module& into,
                           const std::string& name);

}  // namespace tessera::spmd
