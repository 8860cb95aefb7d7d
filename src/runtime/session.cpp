// Session (see session.h): host devices run the local program as threads that exchange data
// through the in-process communicator (comm::run_parallel); over MPI, each rank runs its own
// devices (comm::run_on_ranks), and its buffers hold only their pieces.
#include "runtime/session.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <span>
#include <map>
#include <mutex>
#include <string_view>

#include "comm/parallel.h"
#ifdef TESSERA_HAVE_MPI
#include "comm/mpi_communicator.h"
#endif
#include "runtime/executables.h"
#include "runtime/execution_plan.h"
#include "runtime/layout.h"
#include "runtime/sharding_picture.h"
#include "spmd/report.h"
#include "spmd/reshard.h"
#include "spmd/mesh_math.h"
#include "support/error.h"
#include "support/strings.h"
#include "support/threads.h"

namespace tessera::runtime {

using ir::Literal;
using support::fail;

const ir::Function& CompiledProgram::local_function() const {
  const ir::Function* f = module->find_function(info.function);
  TESSERA_CHECK(f != nullptr, "compiled program without its function");
  return *f;
}

namespace {

#ifdef TESSERA_HAVE_MPI
comm::WorldRanks world_ranks(const SessionRanks& r) { return {r.first, r.count, r.parent_world}; }
#endif

int64_t ring_model_of(const ir::Block& block) {
  int64_t n = 0;
  for (const auto& op : block.ops()) {
    for (const auto& region : op->regions()) n += ring_model_of(*region);
    if (!ir::has_trait(op->kind(), ir::kCollective) || op->operands().empty()) continue;
    int64_t group = 1;
    if (const auto* g = op->attrs().find<ir::IntMatrix>("replica_groups")) group = std::max<int64_t>(1, g->cols);
    else if (op->attrs().find<ir::IntMatrix>("source_target_pairs")) group = 2;  // a permute: its operand
    int64_t bytes = 0;  // a variadic collective moves each operand as one of its own would
    for (const ir::Value* v : op->operands()) bytes += spmd::byte_size(v->type());
    n += comm::ring_bytes(op->name(), group, bytes);
  }
  return n;
}

}  // namespace

int64_t ring_model_bytes(const CompiledProgram& p) { return ring_model_of(p.local_function().body()); }

namespace {

// Device buffers are allocated afresh for every op; glibc would hand large ones back to the kernel
// on free and fault every page in again on the next step (about 11 us per 4 KiB page here,
// DESIGN.md §6). Keeping freed memory in the process makes a step's buffers reuse the last step's.
void keep_freed_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 512 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

// TESSERA_EXECUTABLE=0 in the environment makes every session interpret its programs on every run
// (SessionOptions::executable off), for measuring what compiling them gains.
SessionOptions from_environment(SessionOptions options) {
  const char* env = std::getenv("TESSERA_EXECUTABLE");
  if (env != nullptr && std::string_view(env) == "0") options.executable = false;
  return options;
}

}  // namespace

Session Session::host(int64_t num_devices, SessionOptions options) {
  if (num_devices < 1) fail("Session::host: {} devices; need at least 1", num_devices);
  support::thread_limit();  // a bad TESSERA_THREADS fails here, naming it, not on a device
  keep_freed_memory();
  return Session(num_devices, from_environment(options));
}

Session Session::mpi(int64_t local_devices, SessionOptions options, SessionRanks ranks) {
#ifdef TESSERA_HAVE_MPI
  if (local_devices < 1) fail("Session::mpi: {} local devices per rank; need at least 1", local_devices);
  comm::MpiProcess& mpi = comm::MpiProcess::get();
  const int count = ranks.count == 0 ? mpi.size() : ranks.count;
  if (ranks.first < 0 || count < 1 || ranks.first + count > mpi.size() || mpi.rank() < ranks.first ||
      mpi.rank() >= ranks.first + count)
    fail("Session::mpi: ranks {}..{} of a job of {}, on rank {} (a session is made by its own ranks only)", ranks.first,
         ranks.first + count - 1, mpi.size(), mpi.rank());
  Session s(local_devices * count, from_environment(options));
  s.local_devices_ = local_devices;
  s.rank_ = mpi.rank() - ranks.first;
  s.ranks_ = ranks;
  return s;
#else
  fail("Session::mpi: this Tessera was built without its MPI backend (install libopenmpi-dev and configure "
       "again with TESSERA_MPI=ON); {} local devices asked for", local_devices);
#endif
}

CompiledProgram Session::compile(const ir::Module& module, const std::string& fn,
                                 const spmd::PartitionOptions& options) const {
  const ir::Function* f = module.find_function(fn);
  if (!f) fail("compile: no function @{}", fn);
  CompiledProgram p;
  p.module = std::make_shared<ir::Module>(module.name);
  p.info = spmd::partition(module, *f, *p.module, options);
  p.executables = std::make_shared<ExecutableCache>();
  if (p.info.num_devices != num_devices_ && p.info.num_devices != 1)
    fail("compile: @{} is sharded over mesh @{} of {} devices, but the session has {}", fn, p.info.mesh,
         p.info.num_devices, num_devices_);
  return p;
}

std::vector<std::vector<Literal>> Session::run_per_device(const CompiledProgram& p,
                                                          std::vector<std::vector<Literal>> inputs) const {
  return run_devices(p, std::move(inputs), true);
}

std::vector<std::vector<Literal>> Session::run_owned(const CompiledProgram& p,
                                                     std::vector<std::vector<Literal>> inputs) const {
  return run_devices(p, std::move(inputs), false);
}

std::vector<std::vector<Literal>> Session::run_devices(const CompiledProgram& p, std::vector<std::vector<Literal>> inputs,
                                                       bool results_everywhere) const {
  const ir::Function& f = p.local_function();
  if (static_cast<int64_t>(inputs.size()) != num_devices_)
    fail("run_per_device: inputs for {} devices, the session has {}", inputs.size(), num_devices_);
  for (size_t d = 0; d < inputs.size(); ++d) {
    if (!results_everywhere && !owns(static_cast<int64_t>(d))) continue;  // another rank's device
    if (inputs[d].size() != f.num_parameters())
      fail("run_per_device: device {} got {} inputs, @{} takes {}", d, inputs[d].size(), f.name(), f.num_parameters());
    for (size_t i = 0; i < inputs[d].size(); ++i) {
      const ir::Type& want = f.parameter(i)->type();
      if (inputs[d][i].type() != want)
        fail("run_per_device: parameter {} of @{} on device {} is {}, got {}", i, f.name(), d, ir::to_string(want),
             ir::to_string(inputs[d][i].type()));
    }
  }
  comm::ParallelOptions o;
  o.timeout = options_.timeout;
  o.base = device_options(options_);
  o.traffic = options_.traffic;
  if (options_.executable) {
    // Device d runs its executable, compiled on its first run (per run without a cache).
    std::shared_ptr<ExecutableCache> cache = p.executables ? p.executables : std::make_shared<ExecutableCache>();
    std::shared_ptr<const ir::Module> module = p.module;
    bool fast = options_.fast_kernels;
    o.evaluate = [cache, module, fast](int64_t device, const ir::Function& fn, std::vector<Literal> args,
                                       const interp::Options& options) {
      return cache->run(module, fn, device, fast, std::move(args), options);
    };
  }
#ifdef TESSERA_HAVE_MPI
  if (over_mpi()) {  // this rank's devices run; with results_everywhere, every rank gets every device's results
    comm::MpiWorld world(local_devices_, options_.timeout, world_ranks(ranks_));
    return comm::run_on_ranks(world, *p.module, p.info.function, std::move(inputs), o.base, o.evaluate,
                              results_everywhere);
  }
#endif
  std::vector<Literal> flat;
  for (auto& device_inputs : inputs)
    for (Literal& in : device_inputs) flat.push_back(std::move(in));
  std::vector<Literal> results = comm::run_parallel(
      *p.module, {std::vector<std::string>(static_cast<size_t>(num_devices_), p.info.function)}, std::move(flat), o);
  size_t per = f.result_types.size();
  std::vector<std::vector<Literal>> out(static_cast<size_t>(num_devices_));
  for (size_t d = 0; d < out.size(); ++d)
    for (size_t r = 0; r < per; ++r) out[d].push_back(std::move(results[d * per + r]));
  return out;
}

std::vector<Literal> Session::run_sharded(const CompiledProgram& p, const std::vector<Literal>& inputs) const {
  ShardedProgram sp = sharded_program(p);
  std::vector<ShardedBuffer> bufs;
  for (size_t i = 0; i < inputs.size(); ++i) bufs.push_back(sp.stage(i, inputs[i]));
  std::vector<ShardedBuffer> outs = sp.execute(bufs);
  std::vector<Literal> whole;
  for (const auto& b : outs) whole.push_back(sp.fetch(b));
  return whole;
}

std::vector<std::vector<std::vector<int64_t>>> Session::shard_dims(const CompiledProgram& p) const {
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (size_t i = 0; i < p.info.parameter_types.size(); ++i) {
    const ir::Sharding& s = p.info.parameter_shardings[i];
    const ir::Mesh& mesh = p.module->mesh(s.mesh);
    Literal probe(p.info.parameter_types[i]);
    std::vector<std::vector<int64_t>> per;
    for (const Literal& piece : split(probe, s, mesh, num_devices_)) per.push_back(piece.shape());
    out.push_back(std::move(per));
  }
  return out;
}

ShardedProgram Session::sharded_program(const CompiledProgram& p, std::vector<std::pair<size_t, size_t>> aliases) const {
  return ShardedProgram(*this, p, std::move(aliases));
}

ShardedProgram::ShardedProgram(const Session& session, CompiledProgram program,
                               std::vector<std::pair<size_t, size_t>> aliases)
    : session_(&session), program_(std::move(program)), aliases_(std::move(aliases)) {
  if (!program_.executables) program_.executables = std::make_shared<ExecutableCache>();
  for (auto [in, out] : aliases_) {
    if (in >= program_.info.parameter_types.size() || out >= program_.info.result_types.size())
      fail("sharded_program: alias {{input {}, output {}}} is out of range ({} inputs, {} outputs)", in, out,
           program_.info.parameter_types.size(), program_.info.result_types.size());
    if (program_.info.parameter_types[in] != program_.info.result_types[out])
      fail("sharded_program: input {} ({}) cannot alias output {} ({})", in,
           ir::to_string(program_.info.parameter_types[in]), out, ir::to_string(program_.info.result_types[out]));
  }
  plan_ = std::make_shared<ExecutionPlan>(session.options(), session.num_devices(), program_, aliases_);
}

ShardedBuffer ShardedProgram::stage(size_t index, const Literal& host) const {
  const auto& info = program_.info;
  if (index >= info.parameter_types.size())
    fail("stage: @{} has {} parameters, no parameter {}", info.function, info.parameter_types.size(), index);
  if (host.type() != info.parameter_types[index])
    fail("stage: parameter {} of @{} is {}, got {}", index, info.function, ir::to_string(info.parameter_types[index]),
         ir::to_string(host.type()));
  const ir::Sharding& s = info.parameter_shardings[index];
  const Session* session = session_;
  auto pieces = std::make_shared<std::vector<Literal>>(split(host, s, program_.module->mesh(s.mesh),
                                                             session_->num_devices(),
                                                             [session](int64_t d) { return session->owns(d); }));
  return {host.type(), s, std::move(pieces)};
}

ShardedBuffer ShardedProgram::stage_pieces(size_t index, const PieceMaker& make) const {
  const auto& info = program_.info;
  if (index >= info.parameter_types.size())
    fail("stage: @{} has {} parameters, no parameter {}", info.function, info.parameter_types.size(), index);
  const ir::Type& type = info.parameter_types[index];
  const ir::Sharding& s = info.parameter_shardings[index];
  const ir::Mesh& mesh = program_.module->mesh(s.mesh);
  auto pieces = std::make_shared<std::vector<Literal>>(static_cast<size_t>(session_->num_devices()));
  // (box start, zeros) -> the device whose piece it is already
  std::map<std::pair<std::vector<int64_t>, bool>, int64_t> made;
  for (int64_t d = 0; d < session_->num_devices(); ++d) {
    if (!session_->owns(d)) continue;
    PieceBox box = piece_box(type, s, mesh, d);
    if (auto it = made.find({box.start, box.zeros}); it != made.end()) {  // a replica of a piece made already
      (*pieces)[static_cast<size_t>(d)] = (*pieces)[static_cast<size_t>(it->second)];
      continue;
    }
    made.emplace(std::pair{box.start, box.zeros}, d);
    if (box.zeros) {  // off the first device along unreduced axes: the pieces sum to the array
      (*pieces)[static_cast<size_t>(d)] = Literal(ir::Type(type.element, box.shape));
      continue;
    }
    Literal part = make(box.start, box.extent);
    if (part.type() != ir::Type(type.element, box.extent))
      fail("stage: the piece of parameter {} of @{} at [{}] is {}, expected {}", index, info.function,
           support::join(box.start, ", "), ir::to_string(part.type()), ir::to_string(ir::Type(type.element, box.extent)));
    Literal& piece = (*pieces)[static_cast<size_t>(d)];
    if (box.extent == box.shape) {
      piece = std::move(part);
    } else {  // an uneven dimension: the piece is padded with zeros
      piece = Literal(ir::Type(type.element, box.shape));
      std::vector<int64_t> zero(box.shape.size(), 0);
      copy_box(part, zero, piece, zero, box.extent);
    }
  }
  return {type, s, std::move(pieces)};
}

int64_t ShardedBuffer::local_bytes() const {
  int64_t n = 0;
  if (pieces)
    for (const Literal& piece : *pieces) n += static_cast<int64_t>(piece.bytes().size());
  return n;
}

std::vector<ShardedBuffer> ShardedProgram::execute(std::vector<ShardedBuffer>& inputs) const {
  std::vector<ShardedBuffer> outputs;
  execute(inputs, outputs);
  return outputs;
}

void ShardedProgram::execute(std::vector<ShardedBuffer>& inputs, std::vector<ShardedBuffer>& outputs) const {
  const auto& info = program_.info;
  if (inputs.size() != info.parameter_types.size())
    fail("execute: @{} takes {} inputs, got {}", info.function, info.parameter_types.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ShardedBuffer& b = inputs[i];
    if (b.donated()) fail("execute: input {} of @{} was donated to an earlier execution and cannot be used again", i, info.function);
    if (b.type != info.parameter_types[i] || !spmd::same_layout(b.sharding, info.parameter_shardings[i], b.type.shape.size()))
      fail("execute: input {} of @{} is {} laid out as {}, the program expects {}", i, info.function,
           ir::to_string(b.type), "@" + b.sharding.mesh + " " + sharding_text(b.sharding),
           "@" + info.parameter_shardings[i].mesh + " " + sharding_text(info.parameter_shardings[i]));
  }
  if (!session_->over_mpi() && session_->options().executable) {
    std::unique_lock<std::mutex> lock(plan_->mu, std::try_to_lock);
    if (lock.owns_lock()) {
      plan_->execute(inputs, outputs);
    } else {  // another copy of this program runs now: a plan of this run's own
      ExecutionPlan own(session_->options(), session_->num_devices(), program_, aliases_);
      own.execute(inputs, outputs);
    }
    return;
  }
  size_t n = static_cast<size_t>(session_->num_devices());
  std::vector<std::vector<Literal>> per(n);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ShardedBuffer& b = inputs[i];
    // Over MPI only this rank's pieces exist, and only its devices run.
    // A donated input's pieces move into the run (no copy) when no other buffer shares them. The
    // others are lent to executables as views of their pieces, which an executable reads and
    // never writes (exec/executable.h); the interpreter, which may write over a dying argument,
    // gets copies.
    bool donated = std::any_of(aliases_.begin(), aliases_.end(), [&](const auto& a) { return a.first == i; });
    bool move = donated && b.pieces.use_count() == 1;
    bool lend = !donated && session_->options().executable;
    for (size_t d = 0; d < n; ++d) {
      Literal& piece = (*b.pieces)[d];
      if (!session_->owns(static_cast<int64_t>(d))) {
        per[d].emplace_back();
        continue;
      }
      if (move) per[d].push_back(std::move(piece));
      else if (lend) per[d].push_back(Literal::view(piece.type(), piece.bytes().data()));
      else per[d].push_back(piece);
    }
  }
  for (auto [in, out] : aliases_) inputs[in].pieces.reset();  // donated
  std::vector<std::vector<Literal>> results = session_->run_owned(program_, std::move(per));
  outputs.clear();
  for (size_t r = 0; r < info.result_types.size(); ++r) {
    auto pieces = std::make_shared<std::vector<Literal>>(n);
    for (size_t d = 0; d < n; ++d)
      if (session_->owns(static_cast<int64_t>(d))) (*pieces)[d] = std::move(results[d][r]);
    outputs.push_back({info.result_types[r], info.result_shardings[r], std::move(pieces)});
  }
}

namespace {

// Over MPI: the pieces of `b` that the whole array needs (layout.h's holders), from their owners to
// `to` (every rank when unset), in `pieces`. Every rank calls it alike; the ranks that hold none
// of them send nothing to one rank, and an empty payload to all.
void gather_pieces(const Session& session, const ShardedBuffer& b, const ir::Mesh& mesh, std::optional<int64_t> to,
                   std::vector<Literal>& pieces) {
#ifdef TESSERA_HAVE_MPI
  std::vector<int64_t> needed = holders(b.type, b.sharding, mesh);
  int64_t k = session.num_devices() / session.num_ranks();
  std::vector<std::byte> mine;
  for (int64_t d : needed)
    if (session.owns(d)) {
      auto bytes = pieces[static_cast<size_t>(d)].bytes();
      mine.insert(mine.end(), bytes.begin(), bytes.end());
    }
  auto unpack = [&](int64_t rank, std::span<const std::byte> payload) {
    size_t at = 0;
    for (int64_t d : needed) {
      if (d / k != rank) continue;
      Literal piece(ir::Type(b.type.element, piece_box(b.type, b.sharding, mesh, d).shape));
      size_t size = piece.bytes().size();
      TESSERA_CHECK(at + size <= payload.size(), "rank {} sent {} bytes of pieces, fewer than needed", rank, payload.size());
      std::copy_n(payload.data() + at, size, piece.bytes().data());
      at += size;
      pieces[static_cast<size_t>(d)] = std::move(piece);
    }
  };
  comm::MpiWorld world(k, session.options().timeout, world_ranks(session.ranks()));
  std::string what = fmt::format("fetch of a {} array", ir::to_string(b.type));
  if (!to) {
    std::vector<std::vector<std::byte>> all = world.exchange_ranks(what, mine);
    for (int64_t r = 0; r < session.num_ranks(); ++r)
      if (r != session.rank()) unpack(r, all[static_cast<size_t>(r)]);
    return;
  }
  std::set<int64_t> senders;
  for (int64_t d : needed)
    if (d / k != *to) senders.insert(d / k);
  if (session.rank() != *to) {
    if (senders.count(session.rank()) > 0) world.send_to(static_cast<int>(*to), what, 0, std::move(mine));
    return;
  }
  for (int64_t r : senders)
    unpack(r, world.receive_from(static_cast<int>(r), what, 0, session.options().timeout));
#else
  (void)session, (void)b, (void)mesh, (void)to, (void)pieces;
#endif
}

}  // namespace

Literal ShardedProgram::fetch(const ShardedBuffer& b) const {
  if (b.donated()) fail("fetch: the buffer was donated");
  const ir::Mesh& mesh = program_.module->mesh(b.sharding.mesh);
  if (!session_->over_mpi()) return assemble(*b.pieces, b.type, b.sharding, mesh);
  std::vector<Literal> pieces = *b.pieces;
  gather_pieces(*session_, b, mesh, std::nullopt, pieces);
  return assemble(pieces, b.type, b.sharding, mesh);
}

std::optional<Literal> ShardedProgram::fetch_to(const ShardedBuffer& b, int64_t rank) const {
  if (b.donated()) fail("fetch: the buffer was donated");
  if (rank < 0 || rank >= session_->num_ranks())
    fail("fetch: rank {} is not one of the session's {} ranks", rank, session_->num_ranks());
  const ir::Mesh& mesh = program_.module->mesh(b.sharding.mesh);
  if (!session_->over_mpi()) return assemble(*b.pieces, b.type, b.sharding, mesh);
  std::vector<Literal> pieces = *b.pieces;
  gather_pieces(*session_, b, mesh, rank, pieces);
  if (session_->rank() != rank) return std::nullopt;
  return assemble(pieces, b.type, b.sharding, mesh);
}

Literal ShardedProgram::replicated(const ShardedBuffer& b) const {
  if (b.donated()) fail("replicated: the buffer was donated");
  if (!b.sharding.unreduced.empty())
    fail("replicated: the {} array is unreduced over mesh @{} (each device holds a partial sum); fetch it instead",
         ir::to_string(b.type), b.sharding.mesh);
  for (int64_t d = 0; d < session_->num_devices(); ++d) {
    if (!session_->owns(d)) continue;
    const Literal& piece = (*b.pieces)[static_cast<size_t>(d)];
    if (piece.type() != b.type)
      fail("replicated: the {} array is split over the devices of mesh @{} (device {} holds {}); fetch it instead",
           ir::to_string(b.type), b.sharding.mesh, d, ir::to_string(piece.type()));
    return piece;
  }
  fail("replicated: this rank holds no device");
}

std::vector<std::string> Session::per_rank_bytes(std::string_view payload, const std::string& what) const {
  if (!over_mpi()) return {std::string(payload)};
#ifdef TESSERA_HAVE_MPI
  comm::MpiWorld world(local_devices_, options_.timeout, world_ranks(ranks_));
  std::vector<std::vector<std::byte>> all = world.exchange_ranks(what, std::as_bytes(std::span(payload)));
  std::vector<std::string> out;
  for (const auto& p : all) out.emplace_back(reinterpret_cast<const char*>(p.data()), p.size());
  return out;
#else
  return {std::string(payload)};
#endif
}

std::vector<std::vector<int64_t>> Session::per_rank(const std::vector<int64_t>& values) const {
  std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  std::vector<std::vector<int64_t>> out;
  for (const std::string& payload : per_rank_bytes(bytes, "per-rank figures")) {
    std::vector<int64_t> v(payload.size() / sizeof(int64_t));
    std::memcpy(v.data(), payload.data(), v.size() * sizeof(int64_t));
    out.push_back(std::move(v));
  }
  return out;
}

std::chrono::milliseconds timeout_from_seconds(double seconds, std::string_view what) {
  constexpr int64_t kMaxSeconds = 10'000'000;  // 116 days
  if (!(seconds > 0 && seconds <= double(kMaxSeconds)))
    fail("{} {}: expected a number of seconds above 0 and at most {} (116 days)", what, seconds, kMaxSeconds);
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

}  // namespace tessera::runtime
