// What the MPI backend's own .cpp files share that needs <mpi.h>, kept out of the public headers
// (which never include it).
#pragma once

#include <mpi.h>

namespace tessera::comm {

// The parent of the per-group communicators (mpi_collectives.cpp): a duplicate of
// MPI_COMM_WORLD made when MPI starts, on which nothing else sends or probes.
MPI_Comm creation_comm();

}  // namespace tessera::comm
