#include "transport/registry.hpp"

#include <algorithm>

#include "loom_config.h"
#include "transport/shm/setup_mpi.hpp"
#ifdef LOOM_HAVE_UCX
#include "transport/ucx/setup.hpp"
#endif

namespace loom {

std::vector<int> translate_ranks(MPI_Comm from, MPI_Comm to) {
    int n = 0;
    MPI_Comm_size(from, &n);
    MPI_Group g, tg;
    MPI_Comm_group(from, &g);
    MPI_Comm_group(to, &tg);
    std::vector<int> mine(n), out(n);
    for (int i = 0; i < n; ++i) mine[i] = i;
    MPI_Group_translate_ranks(g, n, mine.data(), tg, out.data());
    MPI_Group_free(&g);
    MPI_Group_free(&tg);
    return out;
}

std::vector<int> ranks_in(MPI_Comm group_comm, MPI_Comm comm) {
    std::vector<int> out = translate_ranks(group_comm, comm);
    std::sort(out.begin(), out.end());
    return out;
}

const std::vector<TransportSetup> &transport_setups() {
    static const std::vector<TransportSetup> list = {
        {"shared_memory", set_up_shared_memory_mpi},
#ifdef LOOM_HAVE_UCX
        // Exchanges its addresses through Loom's own collectives.
        {"ucx_rails", [](const MpiSetup &, SetupContext &c) { set_up_rails(c); }},
#endif
    };
    return list;
}

const std::vector<DeferredSetup> &deferred_transport_setups() {
    static const std::vector<DeferredSetup> list = {
#ifdef LOOM_HAVE_UCX
        set_up_rails,
#endif
    };
    return list;
}

}  // namespace loom
