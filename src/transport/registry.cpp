#include "transport/registry.hpp"

#include "loom_config.h"
#include "transport/shm/setup_mpi.hpp"
#ifdef LOOM_HAVE_UCX
#include "transport/ucx/setup.hpp"
#endif

namespace loom {

const std::vector<TransportSetup> &transport_setups() {
    static const std::vector<TransportSetup> list = {
        {"shared_memory", set_up_shared_memory_mpi},
#ifdef LOOM_HAVE_UCX
        // Exchanges its addresses through Loom's own collectives.
        {"ucx_rails", [](const MpiSetup &, Communicator &c) { set_up_rails(c); }},
#endif
    };
    return list;
}

const std::vector<void (*)(Communicator &)> &deferred_transport_setups() {
    static const std::vector<void (*)(Communicator &)> list = {
#ifdef LOOM_HAVE_UCX
        set_up_rails,
#endif
    };
    return list;
}

}  // namespace loom
