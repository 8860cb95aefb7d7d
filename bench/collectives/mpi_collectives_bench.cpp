// The MPI half of `tessera bench collectives`: run under `mpirun -np N`, it times OpenMPI's own
// MPI_Allreduce, MPI_Reduce_scatter_block and MPI_Allgather on the same sizes and in the same way
// as the host devices (collective_bench.h: warmed buffers, batches after a barrier, the slowest
// rank's time, the median), and with --tessera also Tessera's MPI communicator (one device per
// rank). Rank 0 prints one line per figure, "record <op> <backend> <ranks> <bytes> <median_us>",
// which the tessera command reads; people run it through that command.
//
//   mpirun -np 4 --allow-run-as-root --oversubscribe bin/tessera_mpi_collectives_bench --sizes 8,32,1K [--tessera]
#include <mpi.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
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
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--tessera") {
        tessera = true;
      } else if (a == "--sizes" && i + 1 < argc) {
        sizes = parse_sizes(argv[++i], "--sizes");
      } else {
        throw tessera::support::UserError(fmt::format("unknown argument {} (expected --sizes a,b,c [--tessera])", a));
      }
    }
    if (sizes.empty()) throw tessera::support::UserError("--sizes: no sizes given");
    MpiProcess& mpi = MpiProcess::get();
    std::vector<BenchRecord> records = bench_openmpi(mpi, sizes);
    if (tessera) {
      MpiWorld world(1, std::chrono::seconds(120));
      MpiCommunicator comm(world, world.rank());
      Group all;
      for (int r = 0; r < world.num_ranks(); ++r) all.push_back(r);
      for (BenchRecord& r : bench_communicator(comm, all, sizes, "mpi")) records.push_back(std::move(r));
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
