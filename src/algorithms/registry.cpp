// The one list of algorithms. Each lives in its own file
// (<collective>/<algorithm>.cpp; one serving several collectives,
// <algorithm>.cpp) and is declared here; all_algorithms() lists them in
// preference order.
#include "algorithms/algorithm.hpp"

namespace loom {

const ParamId kParamSegmentSize =
    declare_param(ParamSection::knobs,
                  {"segment_size", ParamType::size, "256KiB", 5,
                   "Pipelining segment of ring algorithms in bytes (0 = no segmentation); accepts k/KiB/M/MiB suffixes",
                   0, 1LL << 40, Collective::allreduce});
const ParamId kParamKnomialRadix =
    declare_param(ParamSection::knobs, {"knomial_radix", ParamType::integer, "4", 5,
                                        "Radix k of recursive_multiplying allreduce", 2, 64, Collective::allreduce});
const ParamId kParamAlltoallMaxOutstanding =
    declare_param(ParamSection::knobs, {"alltoall_max_outstanding", ParamType::integer, "8", 5,
                                        "Most sends and receives in flight per rank in the scattered alltoall", 1,
                                        1 << 20, Collective::alltoall});

extern const AlgorithmInfo kAllreduceRecursiveDoubling;
extern const AlgorithmInfo kAllreduceRing;
extern const AlgorithmInfo kAllreduceRabenseifner;
extern const AlgorithmInfo kAllreduceRecursiveMultiplying;
extern const AlgorithmInfo kAllreduceDirect;
extern const AlgorithmInfo kAllreduceHierSplit;
extern const AlgorithmInfo kAllreduceHierPipelined;
extern const AlgorithmInfo kAllreduceHierLeader;
extern const AlgorithmInfo kReduceScatterRing;
extern const AlgorithmInfo kReduceScatterRecursiveHalving;
extern const AlgorithmInfo kReduceScatterPairwise;
extern const AlgorithmInfo kReduceScatterBlockRing;
extern const AlgorithmInfo kReduceScatterBlockRecursiveHalving;
extern const AlgorithmInfo kReduceScatterBlockPairwise;
extern const AlgorithmInfo kReduceScatterHierarchical;
extern const AlgorithmInfo kReduceScatterBlockHierarchical;
extern const AlgorithmInfo kReduceScatterRailRing;
extern const AlgorithmInfo kReduceScatterBlockRailRing;
extern const AlgorithmInfo kAllgatherRing;
extern const AlgorithmInfo kAllgatherRecursiveDoubling;
extern const AlgorithmInfo kAllgatherBruck;
extern const AlgorithmInfo kAllgatherDirect;
extern const AlgorithmInfo kAllgatherHierarchical;
extern const AlgorithmInfo kAllgatherRailRing;
extern const AlgorithmInfo kAlltoallPairwise;
extern const AlgorithmInfo kAlltoallBruck;
extern const AlgorithmInfo kAlltoallScattered;
extern const AlgorithmInfo kAlltoallNodeAggregation;
extern const AlgorithmInfo kAllreduceSharedSlots;
extern const AlgorithmInfo kReduceScatterSharedSlots;
extern const AlgorithmInfo kReduceScatterBlockSharedSlots;
extern const AlgorithmInfo kAllgatherSharedSlots;
extern const AlgorithmInfo kAlltoallSharedSlots;
extern const AlgorithmInfo kAllreduceNodeSlots;
extern const AlgorithmInfo kReduceScatterNodeSlots;
extern const AlgorithmInfo kReduceScatterBlockNodeSlots;
extern const AlgorithmInfo kAllgatherNodeSlots;
extern const AlgorithmInfo kAllreduceCudaIpcOneShot;
extern const AlgorithmInfo kAllreduceCudaIpcReduceScatterAllgather;
extern const AlgorithmInfo kReduceScatterCudaIpcDirect;
extern const AlgorithmInfo kReduceScatterBlockCudaIpcDirect;
extern const AlgorithmInfo kAllgatherCudaIpcDirect;
extern const AlgorithmInfo kAlltoallCudaIpcDirect;
extern const AlgorithmInfo kAlltoallvPairwise;
extern const AlgorithmInfo kAlltoallvScattered;
extern const AlgorithmInfo kAlltoallvNodeAggregation;
extern const AlgorithmInfo kAllgathervRing;
extern const AlgorithmInfo kAllgathervBruck;
extern const AlgorithmInfo kAllgathervDirect;
extern const AlgorithmInfo kAllgathervHierarchical;
extern const AlgorithmInfo kAllgathervNodeRing;

std::string memory_mismatch(const AlgorithmInfo &algo, const CollArgs &args) {
    const MemoryType runs_on = traits_of(algo.path).memory;
    if (args.memory == runs_on) return {};
    if (runs_on == MemoryType::cuda) return "device (CUDA) memory only";
    return "host memory only (device buffers are staged through host memory for it)";
}

std::string cuda_ipc_not_applicable(const CollArgs &a) {
    if (a.nranks > 1 && !a.single_node) return "every rank must be on one node and share Loom's shared memory";
    return {};
}

const std::vector<const AlgorithmInfo *> &all_algorithms() {
    static const std::vector<const AlgorithmInfo *> list = {
        &kAllreduceRecursiveDoubling,
        &kAllreduceRing,
        &kAllreduceRabenseifner,
        &kAllreduceRecursiveMultiplying,
        &kAllreduceDirect,
        &kAllreduceHierSplit,
        &kAllreduceHierPipelined,
        &kAllreduceHierLeader,
        &kAllreduceSharedSlots,
        &kAllreduceNodeSlots,
        &kAllreduceCudaIpcOneShot,
        &kAllreduceCudaIpcReduceScatterAllgather,
        &kReduceScatterRing,
        &kReduceScatterRecursiveHalving,
        &kReduceScatterPairwise,
        &kReduceScatterHierarchical,
        &kReduceScatterRailRing,
        &kReduceScatterSharedSlots,
        &kReduceScatterNodeSlots,
        &kReduceScatterCudaIpcDirect,
        &kReduceScatterBlockRing,
        &kReduceScatterBlockRecursiveHalving,
        &kReduceScatterBlockPairwise,
        &kReduceScatterBlockHierarchical,
        &kReduceScatterBlockRailRing,
        &kReduceScatterBlockSharedSlots,
        &kReduceScatterBlockNodeSlots,
        &kReduceScatterBlockCudaIpcDirect,
        &kAllgatherRing,
        &kAllgatherRecursiveDoubling,
        &kAllgatherBruck,
        &kAllgatherDirect,
        &kAllgatherHierarchical,
        &kAllgatherRailRing,
        &kAllgatherSharedSlots,
        &kAllgatherNodeSlots,
        &kAllgatherCudaIpcDirect,
        &kAlltoallPairwise,
        &kAlltoallBruck,
        &kAlltoallScattered,
        &kAlltoallNodeAggregation,
        &kAlltoallSharedSlots,
        &kAlltoallCudaIpcDirect,
        &kAlltoallvPairwise,
        &kAlltoallvScattered,
        &kAlltoallvNodeAggregation,
        &kAllgathervRing,
        &kAllgathervBruck,
        &kAllgathervDirect,
        &kAllgathervHierarchical,
        &kAllgathervNodeRing,
    };
    return list;
}

std::vector<const AlgorithmInfo *> algorithms_for(Collective c) {
    std::vector<const AlgorithmInfo *> out;
    for (const AlgorithmInfo *a : all_algorithms())
        if (a->collective == c) out.push_back(a);
    return out;
}

const AlgorithmInfo *find_algorithm(Collective c, const std::string &name) {
    for (const AlgorithmInfo *a : all_algorithms())
        if (a->collective == c && name == a->name) return a;
    return nullptr;
}

std::string algorithm_names(Collective c) {
    std::string s;
    for (const AlgorithmInfo *a : algorithms_for(c)) {
        if (!s.empty()) s += ", ";
        s += a->name;
    }
    return s;
}

}  // namespace loom
