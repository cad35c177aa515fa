#include "transport/registry.hpp"

#include "transport/shm/setup_mpi.hpp"

namespace loom {

const std::vector<TransportSetup> &transport_setups() {
    static const std::vector<TransportSetup> list = {
        {"shared_memory", set_up_shared_memory_mpi},
    };
    return list;
}

}  // namespace loom
