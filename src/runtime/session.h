// The Session: a set of devices, and global programs compiled for them and run on them.
//
//   Session s = Session::host(4);                 // 4 host devices, one thread each
//   CompiledProgram p = s.compile(module, "f");   // propagate + partition
//   std::vector<Literal> out = s.run_sharded(p, {x, w});   // whole arrays in, whole arrays out
//
// run_per_device hands each device its own local inputs; run_sharded splits whole arrays by the
// compiled parameter shardings and reassembles the results; sharded_program stages inputs once and
// executes many times with results kept on the devices (ShardedBuffer), donated inputs aliasing
// outputs. Inputs are checked (count, shape, element type) with messages naming the parameter.
//
// Over MPI a ShardedBuffer is rank-local: a rank holds only the pieces of its own devices (the
// other entries are empty), stages only those (stage splits out only its pieces, stage_pieces makes
// each piece alone from its box of the whole array), and execute moves nothing between ranks but
// the program's own collectives. Whole arrays exist only on request: fetch (on every rank) and
// fetch_to (on one rank) gather the pieces; replicated reads a replicated result (a loss) where it
// is, without moving anything.
//
// Each device runs the local program as an exec::Executable, compiled on its first run and kept
// with the CompiledProgram (shared by its copies), so later runs skip the compilation.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/accounting.h"
#include "interp/interpreter.h"
#include "ir/literal.h"
#include "ir/module.h"
#include "spmd/partition.h"

namespace tessera::runtime {

class ExecutableCache;  // runtime/executables.h
class ExecutionPlan;   // runtime/execution_plan.h

struct CompiledProgram {
  std::shared_ptr<ir::Module> module;  // the local program and the meshes
  spmd::Partitioned info;
  // The local program compiled per device, on each device's first run; null: compiled per run.
  std::shared_ptr<ExecutableCache> executables;
  const spmd::Report& report() const { return info.report; }
  const ir::Function& local_function() const;
};

// The ring model's bytes (comm/accounting.h's ring_bytes) one device sends in one run of p's local
// program: each collective op's, with its group size from replica_groups, ops in regions counted
// once. On several devices per rank, the part between devices of one rank moves no MPI bytes.
int64_t ring_model_bytes(const CompiledProgram& p);

// A value kept on the devices: global type, sharding, one piece per device (over MPI, the pieces of
// other ranks' devices are empty Literals).
struct ShardedBuffer {
  ir::Type type;
  ir::Sharding sharding;
  // Null once donated; a donated buffer's type and sharding are then unspecified (execute may hand
  // them to the output that takes its place).
  std::shared_ptr<std::vector<ir::Literal>> pieces;
  bool donated() const { return pieces == nullptr; }
  // The bytes of the pieces this process holds (0 once donated): the runtime's count of a buffer's
  // live bytes on this rank.
  int64_t local_bytes() const;
};

// Makes the piece of a staged array whose box of the whole array is [start, start + extent): a
// Literal of the array's element type and shape `extent`.
using PieceMaker = std::function<ir::Literal(const std::vector<int64_t>& start, const std::vector<int64_t>& extent)>;

class Session;

// A compiled program bound to a session, with staged inputs and outputs kept on the devices.
class ShardedProgram {
 public:
  ShardedProgram(const Session& session, CompiledProgram program, std::vector<std::pair<size_t, size_t>> aliases);
  // Splits a whole host array for parameter `index` (over MPI, only this rank's pieces).
  ShardedBuffer stage(size_t index, const ir::Literal& host) const;
  // The same without the whole array: each of this rank's devices' pieces made alone by `make`
  // (padded with zeros where a dimension is uneven).
  ShardedBuffer stage_pieces(size_t index, const PieceMaker& make) const;
  // Runs on the buffers; inputs that alias an output (output_aliases: {input, output}) are donated:
  // they may not be used again. Results stay where they were computed: over MPI, on their owners.
  std::vector<ShardedBuffer> execute(std::vector<ShardedBuffer>& inputs) const;
  // The same into `outputs` (resized to the program's results), reusing what it holds: an output
  // whose pieces no other buffer shares is refilled in place, and a donated input's buffer becomes
  // its aliased output's. On host devices the program keeps an execution plan from one execute to
  // the next (runtime/execution_plan.h), so that a loop which keeps `outputs` and moves the
  // donated ones back into `inputs` allocates nothing per step once warm. After a failure the
  // outputs are unspecified (the donated inputs are gone, as always).
  void execute(std::vector<ShardedBuffer>& inputs, std::vector<ShardedBuffer>& outputs) const;
  // The whole array, on every rank: over MPI a collective (every rank calls it, in the same order),
  // in which each rank holding a piece the whole needs sends it to the others.
  ir::Literal fetch(const ShardedBuffer& b) const;
  // The whole array on `rank` only (nullopt on the others): over MPI every rank calls it, and the
  // ranks holding pieces the whole needs send them to `rank` (for printing, sampling, checkpoints).
  std::optional<ir::Literal> fetch_to(const ShardedBuffer& b, int64_t rank) const;
  // A replicated buffer's value (a loss: the program's own reduction), read from this rank's first
  // device; nothing moves. A UserError when the buffer is split.
  ir::Literal replicated(const ShardedBuffer& b) const;
  const CompiledProgram& program() const { return program_; }

 private:
  const Session* session_;
  CompiledProgram program_;
  std::vector<std::pair<size_t, size_t>> aliases_;
  std::shared_ptr<ExecutionPlan> plan_;  // shared by copies; a copy that finds it busy makes its own
};

// A timeout given in seconds (`--timeout`, Python's `timeout=`) as SessionOptions::timeout takes
// it: rounded up to whole milliseconds (a positive timeout waits at least 1 ms). A UserError naming
// `what` for a value that is not a number of seconds above 0 and at most 1e7 (116 days): infinity
// would overflow the conversion, and nothing waits forever.
std::chrono::milliseconds timeout_from_seconds(double seconds, std::string_view what);

struct SessionOptions {
  std::chrono::milliseconds timeout = std::chrono::seconds(60);  // per collective
  // Run hot ops with exec's fast kernels (BLAS contractions, strided loops); off: the reference
  // interpreter's kernels only.
  bool fast_kernels = true;
  // Run each device's program as an exec::Executable compiled once per program and device; off:
  // the interpreter walks the program op by op on every run (the driver the executable is checked
  // and measured against). Same results, bit for bit. TESSERA_EXECUTABLE=0 in the environment
  // turns it off for every session.
  bool executable = true;
  interp::Profile* profile = nullptr;  // time per op kind, summed over devices
  interp::Trace* trace = nullptr;      // a span per op on each device's track (interp/trace.h)
  // Bytes each device sent and received in its collectives, added up over every run, next to the
  // ring model (comm/accounting.h; Traffic::table prints them); one counter per session device.
  // Host devices only for now.
  comm::Traffic* traffic = nullptr;
  // A while loop whose body would run more often than this is refused (interp::Options); -1: no limit.
  int64_t max_while_iterations = -1;
};

// Over MPI, the job's ranks a session runs on: `count` consecutive ranks from `first` (count 0:
// every rank), and a world whose failure notices also end the session's waits (a pipeline's
// transfers, whose stages are sessions on groups of ranks; comm::WorldRanks).
struct SessionRanks {
  int first = 0, count = 0;
  std::optional<uint64_t> parent_world;
};

class Session {
 public:
  static Session host(int64_t num_devices, SessionOptions options = {});
  // This process's part of a session over MPI ranks (under mpirun; comm/mpi_communicator.h): each
  // rank runs `local_devices` devices, rank r owning global devices r*local_devices ..
  // (r+1)*local_devices-1. Every rank must make the same calls in the same order, with the same
  // inputs (each rank uses its own devices' part); run_per_device and run_sharded give every rank the
  // whole results, a sharded program's buffers stay on their owners (see the top). A UserError
  // when Tessera was built without MPI. With `ranks`, only those ranks make the session (and
  // every call on it): rank() and the devices are then numbered within them, and collectives
  // involve only them.
  static Session mpi(int64_t local_devices, SessionOptions options = {}, SessionRanks ranks = {});
  int64_t num_devices() const { return num_devices_; }
  int64_t rank() const { return rank_; }  // this process's MPI rank (within ranks()); 0 for host devices
  const SessionRanks& ranks() const { return ranks_; }
  bool over_mpi() const { return local_devices_ > 0; }
  const SessionOptions& options() const { return options_; }

  // Propagates shardings over @fn of `module` and partitions it for this session's devices; the
  // program's mesh must have as many devices as the session.
  CompiledProgram compile(const ir::Module& module, const std::string& fn,
                          const spmd::PartitionOptions& options = {}) const;

  std::vector<std::vector<ir::Literal>> run_per_device(const CompiledProgram& p,
                                                       std::vector<std::vector<ir::Literal>> inputs) const;
  // run_per_device on this rank's devices only: their inputs are read (the other entries may be
  // empty), and only their results come back (the others empty). Nothing moves between ranks but
  // the program's own collectives. On host devices, run_per_device.
  std::vector<std::vector<ir::Literal>> run_owned(const CompiledProgram& p,
                                                  std::vector<std::vector<ir::Literal>> inputs) const;
  // Whether this process runs `device` (always on host devices).
  bool owns(int64_t device) const { return local_devices_ == 0 || device / local_devices_ == rank_; }
  int64_t num_ranks() const { return local_devices_ == 0 ? 1 : num_devices_ / local_devices_; }
  // Every rank's `values`, in rank order (over MPI an exchange among the ranks; every rank calls
  // it): per-rank figures (memory, bytes sent) for rank 0 to print.
  std::vector<std::vector<int64_t>> per_rank(const std::vector<int64_t>& values) const;
  // The same for bytes: every rank's `payload` in rank order (`what` names the exchange in errors:
  // a rank that failed or left, a timeout). A checkpoint save agrees through it (checkpoint.h).
  std::vector<std::string> per_rank_bytes(std::string_view payload, const std::string& what) const;
  std::vector<ir::Literal> run_sharded(const CompiledProgram& p, const std::vector<ir::Literal>& inputs) const;
  // The shape of each device's piece of each parameter: [parameter][device].
  std::vector<std::vector<std::vector<int64_t>>> shard_dims(const CompiledProgram& p) const;
  ShardedProgram sharded_program(const CompiledProgram& p, std::vector<std::pair<size_t, size_t>> output_aliases = {}) const;

 private:
  Session(int64_t n, SessionOptions o) : num_devices_(n), options_(o) {}
  std::vector<std::vector<ir::Literal>> run_devices(const CompiledProgram& p, std::vector<std::vector<ir::Literal>> inputs,
                                                    bool results_everywhere) const;
  int64_t num_devices_;
  SessionOptions options_;
  int64_t local_devices_ = 0;  // over MPI: devices per rank; 0: host devices
  int64_t rank_ = 0;
  SessionRanks ranks_;
};

}  // namespace tessera::runtime
