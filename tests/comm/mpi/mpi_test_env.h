// What the tests under mpirun share: how many devices each rank runs (--local-devices=K on the
// command line; 1 by default), set by mpi_test_main.cpp.
#pragma once

#include <cstdint>

namespace tessera::testing {

int64_t mpi_local_devices();

}  // namespace tessera::testing
