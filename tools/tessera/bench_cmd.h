// `tessera bench collectives`: the collectives of Tessera's host devices (or MPI ranks) against
// OpenMPI's own on the same sizes and a memcpy line, in one run (src/comm/collective_bench.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace tessera::tools {

struct BenchCommand {
  std::string what = "collectives";
  int64_t devices = 4;
  int64_t devices_per_rank = 1;  // mpi: devices (threads) per rank, so devices / devices_per_rank ranks
  std::string backend = "host";  // host: threads of this process; mpi: Tessera's MPI communicator
  std::string json;              // where to write the records, if set
  std::string sizes;             // "8,4K,64M"; default 8 B x 4^k up to 64 MiB
  bool openmpi = true;           // also time OpenMPI's collectives under mpirun
  std::string mpirun = "mpirun";
  std::string mpi_bench;         // the MPI half; default: beside this executable
};

int bench_command(const BenchCommand& c, std::ostream& out);

}  // namespace tessera::tools
