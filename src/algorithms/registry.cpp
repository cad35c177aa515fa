// The one list of algorithms. Each lives in its own file
// (<collective>_<algorithm>.cpp) and is declared here in preference order.
#include "algorithms/algorithm.hpp"

namespace loom {

extern const AlgorithmInfo kAllreduceRecursiveDoubling;
extern const AlgorithmInfo kAllreduceRing;
extern const AlgorithmInfo kAllreduceRabenseifner;
extern const AlgorithmInfo kAllreduceRecursiveMultiplying;
extern const AlgorithmInfo kAllreduceDirect;
extern const AlgorithmInfo kAllreduceHierSplit;
extern const AlgorithmInfo kAllreduceHierLeader;
extern const AlgorithmInfo kReduceScatterRing;
extern const AlgorithmInfo kReduceScatterRecursiveHalving;
extern const AlgorithmInfo kReduceScatterPairwise;
extern const AlgorithmInfo kReduceScatterBlockRing;
extern const AlgorithmInfo kReduceScatterBlockRecursiveHalving;
extern const AlgorithmInfo kReduceScatterBlockPairwise;
extern const AlgorithmInfo kReduceScatterHierarchical;
extern const AlgorithmInfo kReduceScatterBlockHierarchical;
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

const std::vector<const AlgorithmInfo *> &all_algorithms() {
    static const std::vector<const AlgorithmInfo *> list = {
        &kAllreduceRecursiveDoubling,
        &kAllreduceRing,
        &kAllreduceRabenseifner,
        &kAllreduceRecursiveMultiplying,
        &kAllreduceDirect,
        &kAllreduceHierSplit,
        &kAllreduceHierLeader,
        &kAllreduceSharedSlots,
        &kAllreduceNodeSlots,
        &kReduceScatterRing,
        &kReduceScatterRecursiveHalving,
        &kReduceScatterPairwise,
        &kReduceScatterHierarchical,
        &kReduceScatterSharedSlots,
        &kReduceScatterNodeSlots,
        &kReduceScatterBlockRing,
        &kReduceScatterBlockRecursiveHalving,
        &kReduceScatterBlockPairwise,
        &kReduceScatterBlockHierarchical,
        &kReduceScatterBlockSharedSlots,
        &kReduceScatterBlockNodeSlots,
        &kAllgatherRing,
        &kAllgatherRecursiveDoubling,
        &kAllgatherBruck,
        &kAllgatherDirect,
        &kAllgatherHierarchical,
        &kAllgatherRailRing,
        &kAllgatherSharedSlots,
        &kAllgatherNodeSlots,
        &kAlltoallPairwise,
        &kAlltoallBruck,
        &kAlltoallScattered,
        &kAlltoallNodeAggregation,
        &kAlltoallSharedSlots,
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
