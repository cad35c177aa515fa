// The machine as hwloc sees it: packages, NUMA nodes, cores, and the I/O
// devices collectives care about (GPUs, NICs) with the NUMA node each sits
// near; and the rail each local rank should use: the nearest NIC, spread
// evenly over NICs that are equally near.
#pragma once
#include <string>
#include <vector>

#include "core/status.hpp"

namespace loom {

struct MachineDevice {
    std::string name;  // OS name: "eth0", "mlx5_0", "cuda0"
    std::string kind;  // "network", "openfabrics", "gpu", "coprocessor"
    std::string pci;   // "0000:00:03.0", or "" when not on PCI
    int numa = -1;     // nearest NUMA node (OS index), -1 when unknown
};

struct MachineView {
    int packages = 0, numa_nodes = 0, cores = 0, pus = 0;
    std::vector<MachineDevice> gpus, nics;
    int my_numa = -1;  // NUMA node of the calling thread's binding, -1 when unbound or unknown
    std::string describe() const;
};

// False (with the reason) when Loom was built without hwloc or hwloc fails.
Status discover_machine(MachineView *out);

// The NIC (index into view.nics) for local rank `local` of `local_count`:
// among the NICs nearest the rank's NUMA node (all NICs when none is), the
// (local mod their count)-th. -1 when the machine has no NIC.
int assign_rail(const MachineView &view, int local, int local_count);

}  // namespace loom
