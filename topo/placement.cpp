#include "placement.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace loom {

namespace {
// Cores this process may run on and the machine's online ones; false when
// the affinity cannot be read.
bool cores(long *allowed, long *online) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
    *allowed = CPU_COUNT(&set);
    *online = sysconf(_SC_NPROCESSORS_ONLN);
    return true;
}
}  // namespace

bool core_per_rank(int ranks_here, bool trust_yield_hint) {
    const char *yield = std::getenv("OMPI_MCA_mpi_yield_when_idle");  // as `mpirun --mca` passes it
    if (trust_yield_hint && yield && std::strcmp(yield, "1") == 0) return false;
    long allowed = 0, online = 0;
    if (!cores(&allowed, &online)) return false;
    // Bound to fewer cores than the machine has: mpirun gave us a core
    // (--bind-to core) when it is one; unbound, the node's ranks share them all.
    if (allowed < online) return allowed >= 1;
    return online >= ranks_here;
}

bool spare_core_per_rank(int ranks_here) {
    long allowed = 0, online = 0;
    if (!cores(&allowed, &online)) return false;
    // Bound to some cores: the thread shares them. Unbound: the node's ranks share every core.
    if (allowed < online) return allowed >= 2;
    return online >= 2L * ranks_here;
}

}  // namespace loom
