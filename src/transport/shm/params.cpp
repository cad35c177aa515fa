#include "transport/shm/params.hpp"

namespace loom {

const ParamId kParamSharedMemory =
    declare_param(ParamSection::shared_memory,
                  {"shared_memory", ParamType::integer, "1", 4,
                   "1: messages between ranks of one node go through Loom's shared-memory rings (up to shm_max_bytes); "
                   "0: everything goes through the point-to-point transport. Read when the communicator is created",
                   0, 1, Collective::allreduce});
const ParamId kParamShmMaxBytes = declare_param(
    ParamSection::shared_memory,
    {"shm_max_bytes", ParamType::size, "128KiB", 5,
     "Largest message sent through the shared-memory rings, never more than half a ring (128 KiB with up to "
     "16 ranks per node, less on larger nodes); larger ones use the point-to-point transport. "
     "Read when the communicator is created",
     0, 1LL << 30, Collective::allreduce});
const ParamId kParamAlltoallShmMaxBytes = declare_param(
    ParamSection::shared_memory,
    {"alltoall_shm_max_bytes", ParamType::size, "256KiB", 5,
     "Largest alltoall block sent through the shared-memory rings; a block above shm_max_bytes goes in pieces of "
     "that size while it fits a whole ring (256 KiB with up to 16 ranks per node). Larger blocks use the "
     "point-to-point transport",
     0, 1LL << 30, Collective::alltoall});
const ParamId kParamSingleCopy = declare_param(
    ParamSection::shared_memory,
    {"single_copy", ParamType::integer, "1", 5,
     "How shared-memory messages of at least single_copy_min_bytes are handed over: 0 through the rings (copied "
     "in and out); 1 per call shape (cached plan), the faster of the rings and single copy (the receiver reads "
     "the send buffer with CMA process_vm_readv) as timed by the node's first rank; 2 always single copy. "
     "Processes that may not read each other's memory (ptrace rules) keep the rings. Read when the communicator "
     "is created",
     0, 2, Collective::allreduce});
const ParamId kParamSingleCopyMinBytes = declare_param(
    ParamSection::shared_memory,
    {"single_copy_min_bytes", ParamType::size, "16KiB", 5,
     "Smallest shared-memory message that single_copy applies to (smaller ones always go through the rings). "
     "Read when the communicator is created",
     1, 1LL << 30, Collective::allreduce});

}  // namespace loom
