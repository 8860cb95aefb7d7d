// The MPI half of `tessera bench collectives`: run under `mpirun -np N`, it times OpenMPI's own
// MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather on the same sizes and in the same way
// as the host devices (collective_bench.h: warmed buffers, batches after a barrier, the slowest
// rank's time, the median), and with --tessera also Tessera's MPI communicator, on
// --local-devices K devices per rank (threads; 1 by default), so N ranks time N·K devices. Rank 0
// prints one line per figure, "record <op> <backend> <devices> <bytes> <median_us>", which the
// tessera command reads; people run it through that command.
//
//   mpirun -np 4 --allow-run-as-root --oversubscribe bin/tessera_mpi_collectives_bench --sizes 8,32,1K
//       [--tessera [--local-devices K]]
#include <mpi.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/collective_bench.h"
#include "comm/mpi_communicator.h"
#include "comm/mpi_process.h"
#include "support/error.h"

namespace {

using namespace tessera::comm;

// OpenMPI's collectives, timed on the MPI thread (MpiProcess::call: only it may call MPI).
std::vector<BenchRecord> bench_openmpi(MpiProcess& mpi, const std::vector<int64_t>& sizes) {
  std::vector<BenchRecord> out;
  mpi.call([&] {
    int n = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    BenchBuffers b(static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end())));
    for (std::string op : {"all_reduce", "reduce_scatter", "all_gather"})
      for (int64_t requested : sizes) {
        int64_t bytes = bench_bytes(op, n, requested);
        if (bytes == 0) continue;
        int count = static_cast<int>(bytes / 4);  // floats in the whole buffer
        auto call = [&] {
          if (op == "all_reduce")
            MPI_Allreduce(b.in(0).data(), b.out(0).data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          else if (op == "reduce_scatter")
            MPI_Reduce_scatter_block(b.in(0).data(), b.out(0).data(), count / n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          else
            MPI_Allgather(b.in(0).data(), count / n, MPI_FLOAT, b.out(0).data(), count / n, MPI_FLOAT, MPI_COMM_WORLD);
        };
        for (int w = 0; w < 2; ++w) call();
        int calls = bench_calls(bytes), batches = bench_batches(bytes);
        std::vector<double> samples(static_cast<size_t>(batches)), slowest(samples.size());
        for (int k = 0; k < batches; ++k) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t = MPI_Wtime();
          for (int i = 0; i < calls; ++i) call();
          samples[static_cast<size_t>(k)] = (MPI_Wtime() - t) * 1e6 / calls;
        }
        MPI_Allreduce(samples.data(), slowest.data(), batches, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        out.push_back(bench_record(op, "openmpi", n, bytes, median(slowest)));
      }
  });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  bool tessera = false;
  int64_t local = 1;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--tessera") {
        tessera = true;
      } else if (a == "--sizes" && i + 1 < argc) {
        sizes = parse_sizes(argv[++i], "--sizes");
      } else if (a == "--local-devices" && i + 1 < argc) {
        std::string k = argv[++i];
        if (k.empty() || k.size() > 3 || k.find_first_not_of("0123456789") != std::string::npos || std::stoll(k) < 1)
          throw tessera::support::UserError(fmt::format("--local-devices {}: expected a count from 1 to 999", k));
        local = std::stoll(k);
      } else {
        throw tessera::support::UserError(
            fmt::format("unknown argument {} (expected --sizes a,b,c [--tessera [--local-devices K]])", a));
      }
    }
    if (sizes.empty()) throw tessera::support::UserError("--sizes: no sizes given");
    MpiProcess& mpi = MpiProcess::get();
    std::vector<BenchRecord> records = bench_openmpi(mpi, sizes);
    if (tessera) {
      MpiWorld world(local, std::chrono::seconds(120));
      Group all;
      for (int64_t d = 0; d < world.num_devices(); ++d) all.push_back(d);
      std::vector<std::vector<BenchRecord>> mine(static_cast<size_t>(local));
      std::vector<std::string> errors(static_cast<size_t>(local));
      std::vector<std::thread> threads;
      for (int64_t j = 0; j < local; ++j)
        threads.emplace_back([&, j] {
          try {
            MpiCommunicator comm(world, world.first_local_device() + j);
            mine[static_cast<size_t>(j)] = bench_communicator(comm, all, sizes, "mpi");
          } catch (const std::exception& e) {
            errors[static_cast<size_t>(j)] = e.what();
          }
        });
      for (auto& t : threads) t.join();
      for (int64_t j = 0; j < local; ++j)
        if (!errors[static_cast<size_t>(j)].empty())
          throw tessera::support::UserError(
              fmt::format("device {}: {}", world.first_local_device() + j, errors[static_cast<size_t>(j)]));
      for (BenchRecord& r : mine[0]) records.push_back(std::move(r));
    }
    if (mpi.rank() == 0)
      for (const BenchRecord& r : records)
        fmt::print("record {} {} {} {} {:.4f}\n", r.op, r.backend, r.devices, r.bytes, r.median_us);
    std::fflush(stdout);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tessera_mpi_collectives_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
