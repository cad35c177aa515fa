#include "machine.hpp"

#include <sstream>

#include "loom_config.h"
#ifdef LOOM_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace loom {

std::string MachineView::describe() const {
    std::ostringstream o;
    o << packages << " package(s), " << numa_nodes << " NUMA node(s), " << cores << " core(s), " << pus << " PU(s)";
    auto list = [&](const char *what, const std::vector<MachineDevice> &devs) {
        o << "; " << devs.size() << " " << what;
        for (size_t i = 0; i < devs.size(); ++i) {
            o << (i ? ", " : ": ") << devs[i].name << " (" << devs[i].kind;
            if (!devs[i].pci.empty()) o << " pci " << devs[i].pci;
            if (devs[i].numa >= 0) o << " near NUMA " << devs[i].numa;
            o << ")";
        }
    };
    list("GPU(s)", gpus);
    list("NIC(s)", nics);
    return o.str();
}

int assign_rail(const MachineView &view, int local, int local_count) {
    (void)local_count;
    if (view.nics.empty()) return -1;
    std::vector<int> near;
    for (size_t i = 0; i < view.nics.size(); ++i)
        if (view.my_numa >= 0 && view.nics[i].numa == view.my_numa) near.push_back(static_cast<int>(i));
    if (near.empty())
        for (size_t i = 0; i < view.nics.size(); ++i) near.push_back(static_cast<int>(i));
    return near[static_cast<size_t>(local) % near.size()];
}

#ifdef LOOM_HAVE_HWLOC
namespace {

int numa_of(hwloc_topology_t topo, hwloc_obj_t obj) {
    // The first non-I/O ancestor's nodeset names the NUMA node(s) it sits near.
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!parent || !parent->nodeset || hwloc_bitmap_weight(parent->nodeset) != 1) return -1;
    return hwloc_bitmap_first(parent->nodeset);
}

}  // namespace

Status discover_machine(MachineView *out) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return fail(LOOM_ERR_INTERNAL, "hwloc_topology_init failed");
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return fail(LOOM_ERR_INTERNAL, "hwloc_topology_load failed");
    }
    MachineView v;
    v.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    v.numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    v.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    v.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
        MachineDevice d;
        d.name = os->name ? os->name : "?";
        d.numa = numa_of(topo, os);
        if (os->parent && os->parent->type == HWLOC_OBJ_PCI_DEVICE) {
            char bus[32];
            const auto &pci = os->parent->attr->pcidev;
            std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", pci.domain, pci.bus, pci.dev, pci.func);
            d.pci = bus;
        }
        switch (os->attr->osdev.type) {
            case HWLOC_OBJ_OSDEV_NETWORK:
                d.kind = "network";
                v.nics.push_back(d);
                break;
            case HWLOC_OBJ_OSDEV_OPENFABRICS:
                d.kind = "openfabrics";
                v.nics.push_back(d);
                break;
            case HWLOC_OBJ_OSDEV_GPU:
                d.kind = "gpu";
                v.gpus.push_back(d);
                break;
            case HWLOC_OBJ_OSDEV_COPROC:
                d.kind = "coprocessor";
                v.gpus.push_back(d);
                break;
            default: break;
        }
    }
    // The calling thread's binding, if it is within one NUMA node.
    hwloc_cpuset_t set = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0 && !hwloc_bitmap_iszero(set)) {
        hwloc_nodeset_t nodes = hwloc_bitmap_alloc();
        hwloc_cpuset_to_nodeset(topo, set, nodes);
        if (hwloc_bitmap_weight(nodes) == 1) v.my_numa = hwloc_bitmap_first(nodes);
        hwloc_bitmap_free(nodes);
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    *out = std::move(v);
    return LOOM_SUCCESS;
}
#else
Status discover_machine(MachineView *) {
    return fail(LOOM_ERR_INTERNAL, "Loom was built without hwloc (configure found no libhwloc-dev)");
}
#endif

}  // namespace loom
