// run_parallel and ParallelRun (parallel.h): each process runs on a persistent worker of the
// process's pool (support/threads.h), so a run wakes workers instead of starting threads; a
// ParallelRun keeps the world, the communicators and the collectives from one run to the next.
#include "comm/parallel.h"

#include "comm/host_communicator.h"
#include "comm/interp_collectives.h"
#include "support/threads.h"

namespace tessera::comm {

struct ParallelRun::Process {
  const ir::Function* fn;
  interp::Options options;  // base, with the fields below
  std::unique_ptr<HostCommunicator> comm;
  std::unique_ptr<CommCollectives> collectives;
  std::string error;  // of the last run; empty: it succeeded
};

ParallelRun::ParallelRun(const ir::Module& module, std::vector<const ir::Function*> functions, uint32_t partitions,
                         std::chrono::milliseconds timeout, const interp::Options& base, Traffic* traffic)
    : module_(&module), partitions_(partitions), timeout_(timeout), traffic_(traffic) {
  auto replicas = static_cast<uint32_t>(functions.size() / partitions);
  if (traffic && traffic->num_devices() != static_cast<int64_t>(functions.size()))
    support::fail("run_parallel: byte accounting for {} devices, but {} processes run", traffic->num_devices(),
                  functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    auto p = std::make_unique<Process>();
    p->fn = functions[i];
    p->options = base;
    p->options.module = &module;
    p->options.process = interp::ProcessInfo{static_cast<uint32_t>(i / partitions), static_cast<uint32_t>(i % partitions),
                                             replicas, partitions};
    processes_.push_back(std::move(p));
  }
  connect();
}

ParallelRun::~ParallelRun() = default;

const ir::Function& ParallelRun::function(size_t process) const { return *processes_.at(process)->fn; }

void ParallelRun::connect() {
  // The communicators point into the world: they go first.
  for (auto& p : processes_) {
    p->collectives.reset();
    p->comm.reset();
  }
  world_ = std::make_unique<HostWorld>(static_cast<int64_t>(processes_.size()), timeout_);
  for (size_t i = 0; i < processes_.size(); ++i) {
    Process& p = *processes_[i];
    p.comm = std::make_unique<HostCommunicator>(*world_, static_cast<int64_t>(i));
    if (traffic_) p.comm->set_traffic(&traffic_->device(static_cast<int64_t>(i)));
    p.collectives = std::make_unique<CommCollectives>(*p.comm);
    p.options.collectives = p.collectives.get();
  }
}

void ParallelRun::run(const std::function<void(size_t process, const interp::Options& options)>& body) {
  struct Call {
    ParallelRun* self;
    const std::function<void(size_t, const interp::Options&)>* body;
  } call{this, &body};
  // Captures two pointers: the task's std::function keeps them inline (no allocation per run).
  support::run_concurrently(processes_.size(), [c = &call](size_t i) {
    Process& proc = *c->self->processes_[i];
    try {
      (*c->body)(i, proc.options);
    } catch (const std::exception& e) {
      proc.error = e.what();
    }
  });
  std::string errors;
  for (size_t i = 0; i < processes_.size(); ++i) {
    Process& p = *processes_[i];
    if (p.error.empty()) continue;
    errors += fmt::format("{}process {} (@{}): {}", errors.empty() ? "" : "; ", i, p.fn->name(), p.error);
    p.error.clear();
  }
  if (errors.empty()) return;
  connect();
  throw support::UserError("run_parallel: " + errors);
}

std::vector<ir::Literal> run_parallel(const ir::Module& module,
                                      const std::vector<std::vector<std::string>>& programs,
                                      std::vector<ir::Literal> inputs,
                                      const ParallelOptions& options) {
  if (programs.empty() || programs[0].empty()) support::fail("run_parallel: no programs to run");
  auto partitions = static_cast<uint32_t>(programs[0].size());
  for (const auto& row : programs)
    if (row.size() != partitions)
      support::fail("run_parallel: programs rows have {} and {} entries", partitions, row.size());

  // Hand out the inputs.
  std::vector<const ir::Function*> fns;
  std::vector<std::vector<ir::Literal>> args, results;
  size_t next = 0;
  for (const auto& row : programs)
    for (const std::string& name : row) {
      const ir::Function* fn = module.find_function(name);
      if (fn == nullptr) support::fail("run_parallel: no function @{}", name);
      if (next + fn->num_parameters() > inputs.size())
        support::fail("run_parallel: {} inputs are too few for the programs' parameters", inputs.size());
      args.emplace_back(std::make_move_iterator(inputs.begin() + static_cast<long>(next)),
                        std::make_move_iterator(inputs.begin() + static_cast<long>(next + fn->num_parameters())));
      next += fn->num_parameters();
      fns.push_back(fn);
    }
  if (next != inputs.size())
    support::fail("run_parallel: {} inputs for programs that take {}", inputs.size(), next);

  ParallelRun run(module, fns, partitions, options.timeout, options.base, options.traffic);
  results.resize(fns.size());
  run.run([&](size_t i, const interp::Options& o) {
    results[i] = options.evaluate ? options.evaluate(static_cast<int64_t>(i), *fns[i], std::move(args[i]), o)
                                  : interp::evaluate(*fns[i], std::move(args[i]), o);
  });
  std::vector<ir::Literal> out;
  for (auto& r : results)
    for (ir::Literal& v : r) out.push_back(std::move(v));
  return out;
}

}  // namespace tessera::comm
