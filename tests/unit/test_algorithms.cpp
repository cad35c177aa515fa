// Every registered algorithm against a plain reference: communicator sizes
// 1..17, 32 and 33; counts 0, 1, p-1, p, p+1 and a large odd one; every
// (datatype, op) pair MPI defines; in place and out of place; under the eager
// and the rendezvous protocol (the latter catches plans that deadlock on MPI).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "cooperative_runner.hpp"
#include "node_map.hpp"
#include "reference.hpp"

namespace loom::testing {
namespace {

constexpr size_t kLargeOddCount = 1001;

std::vector<int> communicator_sizes() {
    std::vector<int> sizes;
    for (int p = 1; p <= 17; ++p) sizes.push_back(p);
    sizes.push_back(32);
    sizes.push_back(33);
    return sizes;
}

std::vector<size_t> counts_for(int p) {
    std::set<size_t> c = {0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p), static_cast<size_t>(p + 1),
                          kLargeOddCount};
    return {c.begin(), c.end()};
}

bool reduces(Collective c) {
    return c == Collective::allreduce || c == Collective::reduce_scatter || c == Collective::reduce_scatter_block;
}

// The per-rank counts a reduce_scatter case uses for parameter `count`:
// uneven, with some ranks getting nothing.
std::vector<size_t> uneven_counts(int p, size_t count) {
    std::vector<size_t> counts(p);
    for (int r = 0; r < p; ++r) counts[r] = (r % 4 == 3) ? 0 : count + (r % 2);
    return counts;
}

CollArgs make_args(const AlgorithmInfo &algo, int p, size_t count, bool in_place, size_t elem_size) {
    CollArgs a;
    a.collective = algo.collective;
    a.nranks = p;
    a.count = count;
    if (algo.collective == Collective::reduce_scatter) a.recv_counts = uneven_counts(p, count);
    a.elem_size = elem_size;
    a.in_place = in_place;
    a.segment_bytes = 256;  // small enough that ring algorithms really segment
    a.radix = 3;            // exercises recursive multiplying's fold
    a.max_outstanding = 3;
    a.ring_piece_bytes = 512;  // scattered alltoall sends the large odd blocks in uneven pieces
    return a;
}

std::string where(const CollArgs &a, const char *algo, const std::string &what) {
    return std::string(algo) + " " + a.describe() + (a.nodes ? " on " + a.nodes->describe() : "") + " " + what;
}

// Reductions: runs `combo` on the plan set and compares every rank's result.
std::string check_reduction(const PlanSet &set, const Combo &combo, InProcessProtocol protocol, uint64_t seed,
                            const ShmOptions *shm = nullptr) {
    const CollArgs &a = set.args;
    const int p = a.nranks;
    const TypeCase &t = *combo.type;
    const size_t n_in = a.input_count(), es = t.size;
    std::vector<std::vector<unsigned char>> inputs(p, std::vector<unsigned char>(n_in * es + 1));
    for (int r = 0; r < p; ++r) t.fill(inputs[r].data(), n_in, r, seed, combo.op);
    std::vector<unsigned char> expected = inputs[0];
    for (int r = 1; r < p; ++r) t.combine(expected.data(), inputs[r].data(), n_in, combo.op);

    std::vector<RankBuffers> bufs(p);
    for (int r = 0; r < p; ++r) {
        bufs[r].output.assign(a.output_count(r) * es + 1, 0xEE);
        if (a.in_place) std::memcpy(bufs[r].output.data(), inputs[r].data(), n_in * es);
        else bufs[r].input = inputs[r];
    }
    std::string err = run_plans(set, reduction_kernel(t.type, combo.op), bufs, protocol, shm);
    if (!err.empty()) return err;
    const BlockLayout layout = a.collective == Collective::reduce_scatter ? BlockLayout(a.recv_counts)
                               : a.collective == Collective::reduce_scatter_block
                                   ? BlockLayout(std::vector<size_t>(p, a.count))
                                   : BlockLayout(std::vector<size_t>(p, 0));
    for (int r = 0; r < p; ++r) {
        const size_t offset = a.collective == Collective::allreduce ? 0 : layout.offset(r);
        const size_t n = a.collective == Collective::allreduce ? a.count : layout.count(r);
        size_t bad = 0;
        if (!t.equal(bufs[r].output.data(), expected.data() + offset * es, n, &bad))
            return "rank " + std::to_string(r) + " element " + std::to_string(bad) + " differs for " + t.name + " " +
                   op_name(combo.op);
        if (!a.in_place && bufs[r].input != inputs[r]) return "rank " + std::to_string(r) + " input was modified";
    }
    return {};
}

// Data movement: distinct bytes per (rank, element, byte) and the exact layout.
unsigned char pattern(int rank, size_t elem, size_t byte) {
    return static_cast<unsigned char>((rank * 131 + elem * 7 + byte * 29 + 11) & 0xff);
}

std::string check_movement(const PlanSet &set, InProcessProtocol protocol, const ShmOptions *shm = nullptr) {
    const CollArgs &a = set.args;
    const int p = a.nranks;
    const size_t es = a.elem_size, n_in = a.input_count();
    std::vector<std::vector<unsigned char>> inputs(p, std::vector<unsigned char>(n_in * es + 1));
    for (int r = 0; r < p; ++r)
        for (size_t e = 0; e < n_in; ++e)
            for (size_t b = 0; b < es; ++b) inputs[r][e * es + b] = pattern(r, e, b);
    std::vector<RankBuffers> bufs(p);
    for (int r = 0; r < p; ++r) {
        bufs[r].output.assign(a.output_count(r) * es + 1, 0xEE);
        if (a.in_place)
            std::memcpy(bufs[r].output.data() + a.in_place_input_offset(r) * es, inputs[r].data(), n_in * es);
        else
            bufs[r].input = inputs[r];
    }
    std::string err = run_plans(set, nullptr, bufs, protocol, shm);
    if (!err.empty()) return err;
    for (int r = 0; r < p; ++r) {
        for (int src = 0; src < p; ++src) {
            // allgather: block src is src's input; alltoall: block src is src's block r.
            const size_t src_first = a.collective == Collective::allgather ? 0 : r * a.count;
            for (size_t e = 0; e < a.count; ++e)
                for (size_t b = 0; b < es; ++b)
                    if (bufs[r].output[(src * a.count + e) * es + b] != pattern(src, src_first + e, b))
                        return "rank " + std::to_string(r) + " block " + std::to_string(src) + " element " +
                               std::to_string(e) + " is wrong";
        }
        if (bufs[r].output.back() != 0xEE) return "rank " + std::to_string(r) + " wrote past its receive buffer";
        if (!a.in_place && bufs[r].input != inputs[r]) return "rank " + std::to_string(r) + " input was modified";
    }
    return {};
}

// Node-aware algorithms only apply once the ranks' nodes are known.
bool node_aware(const AlgorithmInfo &algo) { return !algo.not_applicable(make_args(algo, 4, 8, false, 4)).empty(); }

// Emulated topologies for p ranks: one node, two nodes of consecutive ranks,
// up to four nodes, and uneven nodes (sizes 3, 1, 2, 3, 1, 2 ...) whose ranks are
// shuffled, so a node's ranks are neither consecutive nor in order.
std::vector<NodeMap> topologies_for(int p) {
    std::vector<NodeMap> maps;
    NodeMap m;
    EXPECT_EQ(NodeMap::parse("nodes=1", p, &m), LOOM_SUCCESS);
    maps.push_back(m);
    if (p < 2) return maps;
    EXPECT_EQ(NodeMap::parse("nodes=2", p, &m), LOOM_SUCCESS);
    maps.push_back(m);
    EXPECT_EQ(NodeMap::parse("nodes=" + std::to_string(std::min(4, p)) + ",rails=2", p, &m), LOOM_SUCCESS);
    maps.push_back(m);
    std::vector<int> labels;
    const int sizes[] = {3, 1, 2};
    for (int node = 0; static_cast<int>(labels.size()) < p; ++node)
        for (int i = 0; i < sizes[node % 3] && static_cast<int>(labels.size()) < p; ++i) labels.push_back(node);
    std::mt19937 shuffle(static_cast<unsigned>(p));
    std::shuffle(labels.begin(), labels.end(), shuffle);
    maps.push_back(NodeMap::from_labels(labels));
    return maps;
}

// The topology variants a case runs under: none, or for node-aware
// algorithms every emulated topology above.
std::vector<const NodeMap *> variants(const AlgorithmInfo &algo, const std::vector<NodeMap> &maps) {
    if (!node_aware(algo)) return {nullptr};
    std::vector<const NodeMap *> v;
    for (const NodeMap &m : maps) v.push_back(&m);
    return v;
}

class AlgorithmMatrix : public ::testing::TestWithParam<const AlgorithmInfo *> {};

TEST_P(AlgorithmMatrix, MatchesReferenceForEverySizeCountTypeAndOp) {
    const AlgorithmInfo &algo = *GetParam();
    const std::vector<Combo> combos = all_combos();
    std::map<size_t, std::vector<Combo>> by_size;
    for (const Combo &c : combos) by_size[c.type->size].push_back(c);
    const std::vector<size_t> elem_sizes = {1, 2, 4, 8, 16, 32};
    int failures = 0, cases = 0;
    uint64_t seed = 1;
    for (int p : communicator_sizes()) {
        // Node-aware plans grow as p^2 messages; 2..17 ranks cover every
        // shape of node (three topologies each) in a sensible time.
        if (node_aware(algo) && p > 17) continue;
        const std::vector<NodeMap> maps = topologies_for(p);
        for (const NodeMap *nodes : variants(algo, maps))
        for (size_t count : counts_for(p)) {
            for (bool in_place : {false, true}) {
                if (reduces(algo.collective)) {
                    for (const auto &[es, group] : by_size) {
                        CollArgs a = make_args(algo, p, count, in_place, es);
                        a.nodes = nodes;
                        if (!algo.not_applicable(a).empty()) continue;
                        const PlanSet set = build_plans(algo, a);
                        for (size_t i = 0; i < group.size(); ++i) {
                            // The deadlock check does not depend on the type: once per plan.
                            const InProcessProtocol proto = i == 0 ? InProcessProtocol::rendezvous : InProcessProtocol::eager;
                            std::string err = check_reduction(set, group[i], proto, seed++);
                            ++cases;
                            if (!err.empty() && failures++ < 20) ADD_FAILURE() << where(a, algo.name, err);
                        }
                    }
                } else {
                    for (size_t es : elem_sizes) {
                        CollArgs a = make_args(algo, p, count, in_place, es);
                        a.nodes = nodes;
                        if (!algo.not_applicable(a).empty()) continue;
                        const PlanSet set = build_plans(algo, a);
                        for (auto proto : {InProcessProtocol::eager, InProcessProtocol::rendezvous}) {
                            std::string err = check_movement(set, proto);
                            ++cases;
                            if (!err.empty() && failures++ < 20) ADD_FAILURE() << where(a, algo.name, err);
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(cases, 0) << algo.name << " never ran";
    RecordProperty("cases", cases);
}

std::string algorithm_test_name(const ::testing::TestParamInfo<const AlgorithmInfo *> &info) {
    return std::string(collective_name(info.param->collective)) + "_" + info.param->name;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, AlgorithmMatrix, ::testing::ValuesIn(all_algorithms()), algorithm_test_name);

// Every algorithm over the shared-memory transport: rings of 4 cells of 24
// bytes, so messages are cut into many cells and senders find rings full;
// those of 100-300 bytes are handed over by single copy (once the receiver
// has found it may read the sender), and larger ones take the rendezvous
// base transport, so all three paths interleave; ranks on 1, 2 or 3
// emulated nodes, so some peers are remote.
TEST_P(AlgorithmMatrix, MatchesReferenceOverSharedMemory) {
    const AlgorithmInfo &algo = *GetParam();
    const std::vector<Combo> combos = all_combos();
    int failures = 0, cases = 0;
    uint64_t seed = 7;
    for (int nodes : {1, 2, 3}) {
        ShmOptions shm;
        shm.geometry.cells = 4;
        shm.geometry.cell_payload = 24;
        shm.max_bytes = 300;
        shm.single_copy.mode = SingleCopyPolicy::always;
        shm.single_copy.min_bytes = 100;
        shm.nodes = nodes;
        for (int p : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17}) {
            // Node-aware algorithms see the nodes the rings emulate.
            std::vector<int> labels(p);
            for (int r = 0; r < p; ++r) labels[r] = r % nodes;
            const NodeMap map = NodeMap::from_labels(labels);
            for (size_t count : counts_for(p)) {
                for (bool in_place : {false, true}) {
                    if (reduces(algo.collective)) {
                        // One type per element size: the path, not the arithmetic, is under test.
                        std::set<size_t> sizes_done;
                        for (const Combo &combo : combos) {
                            if (!sizes_done.insert(combo.type->size).second) continue;
                            CollArgs a = make_args(algo, p, count, in_place, combo.type->size);
                            if (node_aware(algo)) a.nodes = &map;
                            if (!algo.not_applicable(a).empty()) continue;
                            std::string err = check_reduction(build_plans(algo, a), combo,
                                                              InProcessProtocol::rendezvous, seed++, &shm);
                            ++cases;
                            if (!err.empty() && failures++ < 20)
                                ADD_FAILURE() << "nodes=" << nodes << " " << where(a, algo.name, err);
                        }
                    } else {
                        for (size_t es : {size_t{1}, size_t{8}, size_t{32}}) {
                            CollArgs a = make_args(algo, p, count, in_place, es);
                            if (node_aware(algo)) a.nodes = &map;
                            if (!algo.not_applicable(a).empty()) continue;
                            std::string err = check_movement(build_plans(algo, a), InProcessProtocol::rendezvous, &shm);
                            ++cases;
                            if (!err.empty() && failures++ < 20)
                                ADD_FAILURE() << "nodes=" << nodes << " " << where(a, algo.name, err);
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(cases, 0) << algo.name << " never ran";
}

// Ring algorithms with and without segmentation, and recursive multiplying
// with several radices, give the same results.
TEST(AlgorithmKnobs, SegmentationAndRadixDoNotChangeResults) {
    const Combo combo{&all_type_cases()[4], LOOM_SUM};  // int32 SUM
    ASSERT_EQ(combo.type->type, LOOM_INT32);
    for (const AlgorithmInfo *algo : all_algorithms()) {
        if (!reduces(algo->collective)) continue;
        for (int p : {2, 5, 8, 9, 16}) {
            for (size_t segment : {size_t{0}, size_t{4}, size_t{64}, size_t{1} << 20}) {
                for (int radix : {2, 3, 4, 8}) {
                    CollArgs a = make_args(*algo, p, 257, false, 4);
                    a.segment_bytes = segment;
                    a.radix = radix;
                    if (!algo->not_applicable(a).empty()) continue;
                    std::string err = check_reduction(build_plans(*algo, a), combo, InProcessProtocol::rendezvous, 99);
                    EXPECT_TRUE(err.empty()) << algo->name << " segment=" << segment << " radix=" << radix << " "
                                             << a.describe() << ": " << err;
                }
            }
        }
    }
}

// The restricted algorithm says why it does not apply, and applies elsewhere.
TEST(AlgorithmRestrictions, RecursiveDoublingAllgatherNeedsPowerOfTwo) {
    const AlgorithmInfo *rd = find_algorithm(Collective::allgather, "recursive_doubling");
    ASSERT_NE(rd, nullptr);
    CollArgs a;
    a.collective = Collective::allgather;
    a.count = 4;
    a.nranks = 6;
    EXPECT_FALSE(rd->not_applicable(a).empty());
    a.nranks = 8;
    EXPECT_TRUE(rd->not_applicable(a).empty());
}

TEST(AlgorithmRegistry, AtLeastThreeAlgorithmsPerCollectiveWithUniqueNames) {
    for (int c = 0; c < kCollectiveCount; ++c) {
        auto list = algorithms_for(static_cast<Collective>(c));
        EXPECT_GE(list.size(), 3u) << collective_name(static_cast<Collective>(c));
        std::set<std::string> names;
        for (auto *a : list) {
            EXPECT_TRUE(names.insert(a->name).second) << "duplicate name " << a->name;
            EXPECT_NE(std::string(a->restrictions), "");
            EXPECT_NE(std::string(a->description), "");
        }
    }
}

}  // namespace
}  // namespace loom::testing
