// run_parallel (parallel.h): each process runs on a persistent worker of the process's pool
// (support/threads.h), so a run wakes workers instead of starting threads.
#include "comm/parallel.h"

#include "comm/host_communicator.h"
#include "comm/interp_collectives.h"
#include "support/threads.h"

namespace tessera::comm {

std::vector<ir::Literal> run_parallel(const ir::Module& module,
                                      const std::vector<std::vector<std::string>>& programs,
                                      std::vector<ir::Literal> inputs,
                                      const ParallelOptions& options) {
  if (programs.empty() || programs[0].empty()) support::fail("run_parallel: no programs to run");
  auto replicas = static_cast<uint32_t>(programs.size());
  auto partitions = static_cast<uint32_t>(programs[0].size());
  for (const auto& row : programs)
    if (row.size() != partitions)
      support::fail("run_parallel: programs rows have {} and {} entries", partitions, row.size());

  // Hand out the inputs.
  struct Process {
    const ir::Function* fn;
    std::vector<ir::Literal> args, results;
    std::string error;
  };
  std::vector<Process> procs;
  size_t next = 0;
  for (const auto& row : programs)
    for (const std::string& name : row) {
      const ir::Function* fn = module.find_function(name);
      if (fn == nullptr) support::fail("run_parallel: no function @{}", name);
      if (next + fn->num_parameters() > inputs.size())
        support::fail("run_parallel: {} inputs are too few for the programs' parameters", inputs.size());
      std::vector<ir::Literal> args(std::make_move_iterator(inputs.begin() + static_cast<long>(next)),
                                    std::make_move_iterator(inputs.begin() + static_cast<long>(next + fn->num_parameters())));
      next += fn->num_parameters();
      procs.push_back({fn, std::move(args), {}, {}});
    }
  if (next != inputs.size())
    support::fail("run_parallel: {} inputs for programs that take {}", inputs.size(), next);

  if (options.traffic && options.traffic->num_devices() != static_cast<int64_t>(procs.size()))
    support::fail("run_parallel: byte accounting for {} devices, but {} processes run", options.traffic->num_devices(),
                  procs.size());
  HostWorld world(static_cast<int64_t>(procs.size()), options.timeout);
  // Every process catches its own failure, so all run to their end (in bounded time: their waits
  // for peers time out) and each error is reported with its process.
  support::run_concurrently(procs.size(), [&](size_t i) {
    Process& proc = procs[i];
    try {
      HostCommunicator comm(world, static_cast<int64_t>(i));
      if (options.traffic) comm.set_traffic(&options.traffic->device(static_cast<int64_t>(i)));
      CommCollectives collectives(comm);
      interp::Options o = options.base;
      o.module = &module;
      o.collectives = &collectives;
      o.process = interp::ProcessInfo{static_cast<uint32_t>(i / partitions),
                                      static_cast<uint32_t>(i % partitions), replicas, partitions};
      proc.results = options.evaluate ? options.evaluate(static_cast<int64_t>(i), *proc.fn, std::move(proc.args), o)
                                      : interp::evaluate(*proc.fn, std::move(proc.args), o);
    } catch (const std::exception& e) {
      proc.error = e.what();
    }
  });

  std::string errors;
  for (size_t i = 0; i < procs.size(); ++i)
    if (!procs[i].error.empty())
      errors += fmt::format("{}process {} (@{}): {}", errors.empty() ? "" : "; ", i,
                            procs[i].fn->name(), procs[i].error);
  if (!errors.empty()) throw support::UserError("run_parallel: " + errors);
  std::vector<ir::Literal> out;
  for (Process& p : procs)
    for (ir::Literal& r : p.results) out.push_back(std::move(r));
  return out;
}

}  // namespace tessera::comm
