// MPI point-to-point transport over a private duplicate of the user's
// communicator, so Loom's messages never match the user's or another
// library's. Works with any MPI.
#pragma once
#include <mpi.h>

#include "transport/transport.hpp"

namespace loom {

// Duplicates `user_comm` (collective over it).
Status make_mpi_transport(MPI_Comm user_comm, std::unique_ptr<Transport> *out);

}  // namespace loom
