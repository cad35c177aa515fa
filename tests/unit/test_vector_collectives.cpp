// The vector collectives (alltoallv, allgatherv) against a reference, with
// what the even-block matrix in test_algorithms.cpp cannot show: counts that
// differ per peer (all zero, some zero, random, skewed, one rank sending
// everything), blocks scattered through the buffers in each rank's own order
// with gaps between them, send blocks that overlap, in place and out of
// place, for 1-17 and 33 ranks, under the eager and the rendezvous protocol
// and over shared memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "algorithms/compose.hpp"
#include "call_args.hpp"
#include "cooperative_runner.hpp"
#include "node_map.hpp"
#include "topologies.hpp"

namespace loom::testing {
namespace {

// Element e of rank r's input, byte b: distinct per (rank, element, byte).
unsigned char pattern(int rank, size_t elem, size_t byte) {
    return static_cast<unsigned char>((rank * 131 + elem * 7 + byte * 29 + 11) & 0xff);
}
constexpr unsigned char kUntouched = 0xEE;

// counts[i][j]: elements rank i sends rank j.
using Matrix = std::vector<std::vector<size_t>>;

enum class Shape { all_zero, even, some_zero, random, skewed, one_sender };
const char *shape_name(Shape s) {
    switch (s) {
        case Shape::all_zero: return "all-zero";
        case Shape::even: return "even";
        case Shape::some_zero: return "some-zero";
        case Shape::random: return "random";
        case Shape::skewed: return "skewed";
        case Shape::one_sender: return "one-sender";
    }
    return "?";
}
constexpr Shape kShapes[] = {Shape::all_zero, Shape::even,   Shape::some_zero,
                             Shape::random,   Shape::skewed, Shape::one_sender};

Matrix count_matrix(Shape shape, int p, uint32_t seed) {
    Matrix m(p, std::vector<size_t>(p, 0));
    std::mt19937 rng(seed);
    for (int i = 0; i < p; ++i)
        for (int j = 0; j < p; ++j) switch (shape) {
                case Shape::all_zero: break;
                case Shape::even: m[i][j] = static_cast<size_t>(p + 1); break;
                case Shape::some_zero: m[i][j] = (i + j) % 3 == 0 ? 0 : (i * 7 + j * 3) % 17 + 1; break;
                case Shape::random: m[i][j] = rng() % 40; break;
                // Zipf-like popularity: rank j receives about 1/(j+1) of the most popular's share.
                case Shape::skewed: m[i][j] = 301 / static_cast<size_t>(j + 1); break;
                case Shape::one_sender: m[i][j] = i == 0 ? 257 : 0; break;
            }
    return m;
}

// Places blocks of `counts` in a buffer in a rank-dependent order with a gap
// of `gap` elements before each; returns the displacements.
std::vector<size_t> scattered_layout(const std::vector<size_t> &counts, int rank, size_t gap) {
    const int p = static_cast<int>(counts.size());
    std::vector<int> order(p);
    std::iota(order.begin(), order.end(), 0);
    std::rotate(order.begin(), order.begin() + rank % std::max(p, 1), order.end());
    if (rank % 2) std::reverse(order.begin(), order.end());
    std::vector<size_t> displs(p);
    size_t at = 0;
    for (int i : order) {
        at += gap;
        displs[i] = at;
        at += counts[i];
    }
    return displs;
}

struct VectorCase {
    const AlgorithmInfo *algo;
    int p;
    Shape shape;
    size_t elem;
    bool in_place;
    bool shared_send;  // alltoallv: every send block starts at displacement 0 (they overlap)
    const NodeMap *nodes = nullptr;  // node-aware algorithms: the ranks' nodes
    std::string describe() const {
        return std::string(algo->name) + " " + collective_name(algo->collective) + " p=" + std::to_string(p) + " " +
               shape_name(shape) + " elem=" + std::to_string(elem) + (in_place ? " in-place" : "") +
               (shared_send ? " overlapping-sends" : "") + (nodes ? " on " + nodes->describe() : "");
    }
};

bool node_aware(const AlgorithmInfo &algo) {
    CollArgs a;
    a.collective = algo.collective;
    a.nranks = 4;
    a.elem_size = 4;
    set_uniform_blocks(a, 8);
    return !algo.not_applicable(a).empty();
}

// The nodes a node-aware algorithm runs on; none for the others.
std::vector<NodeMap> node_maps(const AlgorithmInfo &algo, int p) {
    return node_aware(algo) ? emulated_topologies(p) : std::vector<NodeMap>{};
}

std::vector<const NodeMap *> variants(const std::vector<NodeMap> &maps) {
    if (maps.empty()) return {nullptr};
    std::vector<const NodeMap *> v;
    for (const NodeMap &m : maps) v.push_back(&m);
    return v;
}

// Each rank's call, and the data it starts with.
std::vector<CollArgs> rank_calls(const VectorCase &c, const Matrix &m) {
    std::vector<CollArgs> calls;
    for (int r = 0; r < c.p; ++r) {
        CollArgs a;
        a.collective = c.algo->collective;
        a.nranks = c.p;
        a.elem_size = c.elem;
        a.in_place = c.in_place;
        a.nodes = c.nodes;
        if (a.collective == Collective::alltoallv) {
            // What the ranks learn on communicators that span nodes: the counts
            // of their node's ranks and every rank's totals, not the others' counts.
            if (c.nodes) {
                for (int i = 0; i < c.p; ++i) a.count_matrix.insert(a.count_matrix.end(), m[i].begin(), m[i].end());
                a.node_counts = node_counts_from_matrix(a, r);
                a.count_matrix.clear();
            }
            for (int i = 0; i < c.p; ++i) a.recv_counts.push_back(m[i][r]);
            a.recv_displs = scattered_layout(a.recv_counts, r, 3);
            if (c.in_place) {
                a.send_counts = a.recv_counts;
                a.send_displs = a.recv_displs;
            } else {
                a.send_counts = m[r];
                a.send_displs = c.shared_send ? std::vector<size_t>(c.p, 0) : scattered_layout(m[r], r + 1, 2);
            }
        } else {
            // allgatherv: rank i contributes m[i][0] elements, the same counts everywhere.
            for (int i = 0; i < c.p; ++i) a.recv_counts.push_back(m[i][0]);
            a.recv_displs = scattered_layout(a.recv_counts, r, 3);
            a.count = a.recv_counts[r];
        }
        calls.push_back(a);
    }
    return calls;
}

std::string run_case(const VectorCase &c, InProcessProtocol protocol, const ShmOptions *shm, uint32_t seed,
                     World *world = nullptr) {
    Matrix m = count_matrix(c.shape, c.p, seed);
    // In place, rank i sends j what it receives from j: MPI asks the counts be symmetric.
    if (c.in_place && c.algo->collective == Collective::alltoallv)
        for (int i = 0; i < c.p; ++i)
            for (int j = 0; j < i; ++j) m[i][j] = m[j][i];
    const std::vector<CollArgs> calls = rank_calls(c, m);
    PlanKnobs knobs;
    knobs.segment_bytes = 64;  // rings really segment
    knobs.max_outstanding = 3;
    knobs.ring_piece_bytes = 40;
    const PlanSet set = build_plans(*c.algo, calls[0], knobs, calls);
    const size_t es = c.elem;
    const bool all_to_all = c.algo->collective == Collective::alltoallv;
    std::vector<RankBuffers> bufs(c.p);
    std::vector<std::vector<unsigned char>> inputs(c.p);
    for (int r = 0; r < c.p; ++r) {
        const CollArgs &a = calls[r];
        bufs[r].output.assign(a.output_count(r) * es + 1, kUntouched);
        // In place, the data to send is the receive buffer's blocks (alltoallv) or own block (allgatherv).
        std::vector<unsigned char> &in = c.in_place ? bufs[r].output : bufs[r].input;
        if (!c.in_place) in.assign(a.input_count() * es + 1, 0x5A);
        const size_t first = a.in_place ? a.in_place_input_offset(r) : 0;
        for (size_t e = 0; e < a.input_count(); ++e)
            for (size_t b = 0; b < es; ++b) in[(first + e) * es + b] = pattern(r, e, b);
        inputs[r] = in;
    }
    std::string err = run_plans(set, nullptr, bufs, protocol, shm, world);
    if (!err.empty()) return err;
    for (int r = 0; r < c.p; ++r) {
        const CollArgs &a = calls[r];
        std::vector<unsigned char> expected(a.output_count(r) * es + 1, kUntouched);
        if (c.in_place) expected = inputs[r];  // the gaps keep what they held
        for (int src = 0; src < c.p; ++src) {
            const CollArgs &sender = calls[src];
            // Where src's block for r starts in src's input, in elements.
            const size_t from = all_to_all ? sender.send_displs[r] : 0;
            for (size_t e = 0; e < a.recv_counts[src]; ++e)
                for (size_t b = 0; b < es; ++b) expected[(a.recv_displs[src] + e) * es + b] = pattern(src, from + e, b);
        }
        if (bufs[r].output != expected) {
            size_t at = 0;
            while (bufs[r].output[at] == expected[at]) ++at;
            return "rank " + std::to_string(r) + " byte " + std::to_string(at) + " of " +
                   std::to_string(expected.size()) + " is wrong" +
                   (at + 1 == expected.size() ? " (written past the receive buffer)" : "");
        }
        if (!c.in_place && bufs[r].input != inputs[r]) return "rank " + std::to_string(r) + " input was modified";
    }
    return {};
}

std::vector<const AlgorithmInfo *> vector_algorithms() {
    std::vector<const AlgorithmInfo *> out;
    for (const AlgorithmInfo *a : plan_algorithms())
        if (is_vector_collective(a->collective)) out.push_back(a);
    return out;
}

class VectorMatrix : public ::testing::TestWithParam<const AlgorithmInfo *> {};

TEST_P(VectorMatrix, MatchesReferenceForEveryShapeOfCounts) {
    const AlgorithmInfo *algo = GetParam();
    int failures = 0, cases = 0;
    uint32_t seed = 1;
    std::vector<int> sizes;
    for (int p = 1; p <= 17; ++p) sizes.push_back(p);
    sizes.push_back(33);
    for (int p : sizes) {
        const std::vector<NodeMap> maps = node_maps(*algo, p);
        for (const NodeMap *nodes : variants(maps))
            for (Shape shape : kShapes)
                for (size_t elem : {size_t{1}, size_t{8}, size_t{32}})
                    for (bool in_place : {false, true})
                        for (bool shared_send : {false, true}) {
                            if (shared_send && (in_place || algo->collective != Collective::alltoallv)) continue;
                            VectorCase c{algo, p, shape, elem, in_place, shared_send};
                            c.nodes = nodes;
                            if (!algo->not_applicable(rank_calls(c, count_matrix(shape, p, 0))[0]).empty()) continue;
                            for (auto protocol : {InProcessProtocol::eager, InProcessProtocol::rendezvous}) {
                                const std::string err = run_case(c, protocol, nullptr, seed++);
                                ++cases;
                                if (!err.empty() && failures++ < 20) ADD_FAILURE() << c.describe() << ": " << err;
                            }
                        }
    }
    EXPECT_GT(cases, 0) << algo->name << " never ran";
    RecordProperty("cases", cases);
}

// Over shared memory: tiny rings, so blocks of many sizes take the rings,
// single copy and the base transport, on one to three emulated nodes.
TEST_P(VectorMatrix, MatchesReferenceOverSharedMemory) {
    const AlgorithmInfo *algo = GetParam();
    int failures = 0;
    uint32_t seed = 99;
    for (int nodes : {1, 2, 3}) {
        const ShmOptions shm = tiny_rings(nodes);
        for (int p : {1, 2, 3, 5, 8, 9, 17}) {
            World world;  // every call of this shape on the same transports
            for (Shape shape : kShapes)
                for (bool in_place : {false, true}) {
                    // Node-aware algorithms see the nodes the rings emulate.
                    std::vector<int> labels(p);
                    for (int r = 0; r < p; ++r) labels[r] = r % nodes;
                    const NodeMap map = NodeMap::from_labels(labels);
                    VectorCase c{algo, p, shape, 8, in_place, false};
                    if (node_aware(*algo)) c.nodes = &map;
                    const std::string err = run_case(c, InProcessProtocol::rendezvous, &shm, seed++, &world);
                    if (!err.empty() && failures++ < 20)
                        ADD_FAILURE() << "nodes=" << nodes << " " << c.describe() << ": " << err;
                }
        }
    }
}

std::string vector_test_name(const ::testing::TestParamInfo<const AlgorithmInfo *> &info) {
    return std::string(collective_name(info.param->collective)) + "_" + info.param->name;
}

INSTANTIATE_TEST_SUITE_P(VectorAlgorithms, VectorMatrix, ::testing::ValuesIn(vector_algorithms()), vector_test_name);

TEST(VectorCollectives, EveryAlgorithmOfBothIsTested) {
    int alltoallv = 0, allgatherv = 0;
    for (const AlgorithmInfo *a : vector_algorithms())
        (a->collective == Collective::alltoallv ? alltoallv : allgatherv)++;
    EXPECT_GE(alltoallv, 3);
    EXPECT_GE(allgatherv, 4);
}

// An alltoallv across nodes learns the counts of its node's ranks, not
// every rank's: node_aggregation builds from them alone, and refuses
// counts whose rows are not their node's ranks.
TEST(VectorCollectives, NodeAggregationBuildsFromItsNodesCountsAlone) {
    const AlgorithmInfo *node_aggregation = find_algorithm(Collective::alltoallv, "node_aggregation");
    ASSERT_NE(node_aggregation, nullptr);
    NodeMap nodes;
    ASSERT_EQ(NodeMap::parse("0,0,0,1,1,2,2,2,2", 9, &nodes), LOOM_SUCCESS);
    const Matrix m = count_matrix(Shape::random, 9, 5);
    const VectorCase c{node_aggregation, 9, Shape::random, 4, false, false, &nodes};
    const std::vector<CollArgs> calls = rank_calls(c, m);
    for (int r = 0; r < 9; ++r) {
        const CollArgs &a = calls[static_cast<size_t>(r)];
        EXPECT_TRUE(a.count_matrix.empty());
        const size_t k = nodes.members[nodes.node_of[r]].size();
        EXPECT_EQ(a.node_counts.rows(), k) << "rank " << r;
        EXPECT_EQ(a.node_counts.counts.size(), 2 * k * 9) << "rank " << r;
        for (size_t i = 0; i < k; ++i)
            for (size_t peer = 0; peer < 9; ++peer) {
                const int member = nodes.members[nodes.node_of[r]][i];
                EXPECT_EQ(a.node_counts.sent(i, peer), m[member][peer]);
                EXPECT_EQ(a.node_counts.received(i, peer), m[peer][member]);
            }
        EXPECT_EQ(node_aggregation->not_applicable(a), "") << "rank " << r;
    }
    size_t total = 0, largest = 0;
    for (const auto &row : m)
        for (size_t block : row) {
            total += block;
            largest = std::max(largest, block);
        }
    EXPECT_EQ(calls[4].node_counts.total, total);
    EXPECT_EQ(calls[4].node_counts.largest, largest);
    // Node 0 has 3 ranks: 2 ranks' counts (node 1's) do not describe it.
    CollArgs wrong = calls[0];
    wrong.node_counts = calls[3].node_counts;
    wrong.node_counts.node = 0;
    EXPECT_NE(node_aggregation->not_applicable(wrong), "");
    wrong.node_counts = NodeCounts{};
    EXPECT_NE(node_aggregation->not_applicable(wrong), "");
}

// The plan of a rank depends on that rank's own counts only: a plan built
// from another rank's arguments differs, so the runtime must never share
// plans across ranks (it builds each rank's from its own call).
TEST(VectorCollectives, AnAlltoallvPlanFollowsItsRanksCounts) {
    const AlgorithmInfo *pairwise = find_algorithm(Collective::alltoallv, "pairwise");
    ASSERT_NE(pairwise, nullptr);
    const Matrix m = count_matrix(Shape::random, 5, 3);
    const VectorCase c{pairwise, 5, Shape::random, 4, false, false};
    const std::vector<CollArgs> calls = rank_calls(c, m);
    const Program mine = build_program(*pairwise, calls[2], PlanKnobs(), 2);
    size_t sent = 0;
    for (const Step &s : mine.steps)
        if (s.kind == StepKind::send) sent += s.src.count;
    size_t expected = 0;
    for (int j = 0; j < 5; ++j)
        if (j != 2) expected += m[2][j];
    EXPECT_EQ(sent, expected);
}

// Skewed shards still load a node's rails alike: the node-aware allgathervs
// cut each node's shards into equal pieces, one per lane, so on every node
// each lane carries the same elements to the other nodes (to one element
// per piece), whichever of the node's ranks holds the large shard. And
// node_ring relays: no node sends more than the most any node must
// receive (total minus its own shards), where hierarchical makes a node of
// large shards send them to every other node.
TEST(VectorCollectives, NodeAwareAllgathervLoadsEveryRailOfANodeAlike) {
    for (const char *name : {"hierarchical", "node_ring"}) {
        const AlgorithmInfo *algo = find_algorithm(Collective::allgatherv, name);
        ASSERT_NE(algo, nullptr) << name;
        const bool relays = std::string(name) == "node_ring";
        for (const char *labels : {"0,1,2,3,0,1,2,3", "0,0,0,1,1,1,2,2,2", "0,0,1,1,1,2"}) {
            std::vector<int> label_of;
            for (const char *c = labels; *c; ++c)
                if (*c != ',') label_of.push_back(*c - '0');
            const NodeMap map = NodeMap::from_labels(label_of);
            const int p = map.nranks();
            Matrix m(p, std::vector<size_t>(p, 0));
            // Rank 0's shard 4x the others, and node 0's ranks' shards twice.
            for (int i = 0; i < p; ++i) m[i][0] = (i == 0 ? 4000 : 1000 + 7 * i) * (map.node_of[i] == 0 ? 2 : 1);
            const VectorCase c{algo, p, Shape::skewed, 4, false, false, &map};
            const std::vector<CollArgs> calls = rank_calls(c, m);
            // elements[node][lane]: sent to other nodes; own[node]: the node's shards.
            std::vector<std::vector<size_t>> elements(map.nodes(), std::vector<size_t>(p, 0));
            std::vector<size_t> own(map.nodes(), 0);
            size_t total = 0;
            for (int r = 0; r < p; ++r) {
                own[map.node_of[r]] += m[r][0];
                total += m[r][0];
                for (const Step &s : build_program(*algo, calls[r], PlanKnobs(), r).steps)
                    if (s.kind == StepKind::send && map.node_of[s.peer] != map.node_of[r])
                        elements[map.node_of[r]][s.lane] += s.src.count;
            }
            const size_t most_received = total - *std::min_element(own.begin(), own.end());
            for (int node = 0; node < map.nodes(); ++node) {
                int lanes = p;
                for (int n = 0; n < map.nodes(); ++n) lanes = std::min(lanes, map.ranks_on(n));
                if (!relays) lanes = map.ranks_on(node);
                const auto first = elements[node].begin();
                const size_t most = *std::max_element(first, first + lanes),
                             least = *std::min_element(first, first + lanes);
                const size_t sent = std::accumulate(first, elements[node].end(), size_t{0});
                EXPECT_LE(most - least, static_cast<size_t>(map.nodes() - 1))
                    << name << " " << labels << ": node " << node;
                EXPECT_GT(least, 0u) << name << " " << labels << ": node " << node;
                if (relays) {
                    EXPECT_LE(sent, most_received) << name << " " << labels << ": node " << node;
                }
            }
        }
    }
}

}  // namespace
}  // namespace loom::testing
