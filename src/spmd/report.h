// What partitioning did: the pieces of each parameter and every collective it inserted, with the
// bytes each device moves (nccl-tests' accounting: all-gather and reduce-scatter move (n-1)/n of
// the whole, all-reduce twice that, all-to-all (n-1)/n of its operand, a permute or broadcast its
// operand).
//
// explain() says, for each collective, which operand or result of which op needed it, along which
// dimension; warnings() lists the gathers that bring a value to more than its piece where a
// cheaper way is known (`tessera partition --explain`, and --strict, which refuses them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/module.h"
#include "ir/sharding.h"
#include "ir/type.h"

namespace tessera::spmd {

struct ParameterPiece {
  ir::Type global;
  std::vector<int64_t> local_shape;
  int64_t bytes_per_device = 0;
  ir::Sharding sharding;
};

struct CollectiveRecord {
  std::string kind;      // "all_gather", "reduce_scatter", ...
  std::string origin;    // the op of the global program it serves
  int64_t group_size = 1;
  int64_t bytes_per_device = 0;
  const ir::Op* op = nullptr;  // the collective in the local program
  // Which operand or result of `origin` needed it, and along which dimension (empty for a
  // collective the program wrote itself).
  std::string forced_by;
  // Non-empty for a gather that brings a value to more than its piece where a cheaper way is
  // known: why it is avoidable.
  std::string avoidable;
};

struct Report {
  std::vector<ParameterPiece> parameters;
  std::vector<CollectiveRecord> collectives;

  std::map<std::string, int64_t> counts() const;  // collectives by kind
  int64_t count(const std::string& kind) const;
  int64_t bytes_per_device() const;  // over every collective
  std::string to_string() const;     // a table for people
  // One line per collective: kind, group, bytes per device, the op and what forced it.
  std::string explain() const;
  // One line per avoidable gather, naming the op, its place and the dimension.
  std::vector<std::string> warnings() const;
};

int64_t byte_size(const ir::Type& t);

// A collective the program wrote itself (in a manual body), recorded like the inserted ones.
void record_written(Report& report, const ir::Op& op, const std::string& origin);

// The most bytes live at once while `fn` runs op by op in order: parameters until their last use,
// each result from its op to its last use (regions count with the op that holds them).
int64_t peak_live_bytes(const ir::Function& fn);

}  // namespace tessera::spmd
