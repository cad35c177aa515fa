// The cost model: its simulation of the executor's programs against
// closed-form alpha-beta costs, consistency over every algorithm, the
// parameter string, and the error for plans whose messages do not match.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "call_args.hpp"

#include "node_map.hpp"
#include "runtime/device_staging.hpp"
#include "select/cost_model.hpp"
#include "select/phase_prediction.hpp"
#include "transport/inprocess/inprocess.hpp"

namespace loom {
namespace {

// Only the shared-memory link costs anything: closed forms are exact.
CostModel messages_only(double alpha, double gbps) {
    CostModel m;
    m.shared_memory = {alpha, 1.0 / (gbps * 1000)};
    m.intra_node = m.network = m.shared_memory;
    m.reduce_us_per_byte = m.copy_us_per_byte = 1e-12;
    m.shm_max_bytes = SIZE_MAX;
    return m;
}

double predict(const char *name, const CollArgs &a, const CostModel &m) {
    const AlgorithmInfo *algo = find_algorithm(a.collective, name);
    EXPECT_NE(algo, nullptr) << name;
    double us = -1;
    EXPECT_EQ(predict_time(*algo, a, m, &us), LOOM_SUCCESS) << last_error_message();
    return us;
}

TEST(CostModel, RingAndRecursiveDoublingMatchTheirAlphaBetaCosts) {
    const CostModel m = messages_only(2.0, 1.0);  // 2 us, 1000 bytes per us
    for (int p : {2, 4, 5, 8}) {
        const size_t n = 8000 * static_cast<size_t>(p);  // floats
        const double block_bytes = 4.0 * n / p;
        // 2(p-1) rounds of one block each.
        EXPECT_NEAR(predict("ring", args(Collective::allreduce, p, n), m), 2 * (p - 1) * (2.0 + block_bytes / 1000),
                    0.01 * 2 * (p - 1) * (2.0 + block_bytes / 1000))
            << p;
    }
    // lg p rounds of the whole vector.
    EXPECT_NEAR(predict("recursive_doubling", args(Collective::allreduce, 8, 1000), m), 3 * (2.0 + 4.0), 0.05);
    // One round, p-1 messages queued on the sender's link: alpha + (p-1) n beta.
    EXPECT_NEAR(predict("direct", args(Collective::allgather, 4, 1000), m), 2.0 + 3 * 4.0, 0.05);
}

TEST(CostModel, KeepsTrafficInsideNodesWhenTheNetworkIsExpensive) {
    CostModel m;
    m.network = {50.0, 1.0 / 100};                          // 50 us, 100 MB/s
    CollArgs a = args(Collective::allreduce, 16, 1 << 18);  // 1 MiB
    const NodeMap nodes = NodeMap::from_labels({0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
    a.nodes = &nodes;
    EXPECT_LT(predict("hier_split", a, m), predict("ring", a, m));
    EXPECT_LT(predict("hier_split", a, m), predict("recursive_doubling", a, m));
    // Rails: two lanes carry the inter-node phase in parallel.
    NodeMap two_rails = nodes;
    two_rails.rails = 2;
    CollArgs b = a;
    b.nodes = &two_rails;
    EXPECT_LT(predict("hier_split", b, m), predict("hier_split", a, m));
}

TEST(CostModel, EveryAlgorithmCompletesAndGrowsWithSize) {
    const CostModel m;
    const NodeMap nodes = NodeMap::from_labels({0, 0, 1, 1, 2, 2, 2});
    for (const AlgorithmInfo *algo : all_algorithms()) {
        for (int p : {1, 2, 3, 7, 16, 17}) {
            double last = 0;
            for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(p), size_t{1000}, size_t{100000}}) {
                CollArgs a = args(algo->collective, p, count);
                if (p == 7) {
                    a.nodes = &nodes;
                    a.node_slots = true;  // node_slots too, where its input fits the slots
                }
                if (!why_not_applicable(*algo, a).empty()) continue;  // host memory: no cuda_ipc
                double us = -1;
                ASSERT_EQ(predict_time(*algo, a, m, &us), LOOM_SUCCESS)
                    << algo->name << " " << a.describe() << ": " << last_error_message();
                EXPECT_GE(us + 1e-9, last) << algo->name << " " << a.describe();
                last = us;
            }
        }
    }
}

TEST(CostModel, ParsesItsParametersAndNamesBadOnes) {
    CostModel m;
    ASSERT_EQ(CostModel::parse("net=10us:100Gb/s,shm=500ns:20GB/s,reduce=4GB/s,shm_max=64KiB", &m), LOOM_SUCCESS)
        << last_error_message();
    EXPECT_DOUBLE_EQ(m.network.alpha_us, 10);
    EXPECT_DOUBLE_EQ(m.network.us_per_byte, 1.0 / 12500);
    EXPECT_DOUBLE_EQ(m.shared_memory.alpha_us, 0.5);
    EXPECT_DOUBLE_EQ(m.reduce_us_per_byte, 1.0 / 4000);
    EXPECT_EQ(m.shm_max_bytes, 64u * 1024);
    EXPECT_DOUBLE_EQ(m.network.overhead_us, CostModel().network.overhead_us);  // left out: kept
    ASSERT_EQ(CostModel::parse("net=40us:25MB/s:12us", &m), LOOM_SUCCESS) << last_error_message();
    EXPECT_DOUBLE_EQ(m.network.alpha_us, 40);
    EXPECT_DOUBLE_EQ(m.network.overhead_us, 12);
    ASSERT_EQ(CostModel::parse("stripe_min=1MiB,rail_rates=1:0.5", &m), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(m.stripe_min_bytes, 1u << 20);
    EXPECT_DOUBLE_EQ(m.rail_rate(1), 0.5);
    EXPECT_DOUBLE_EQ(m.rail_rate(2), 1.0);  // beyond the list
    ASSERT_EQ(CostModel::parse("pml=200us:20MB/s:3us,rail_min=16KiB", &m), LOOM_SUCCESS) << last_error_message();
    EXPECT_DOUBLE_EQ(m.pml.alpha_us, 200);
    EXPECT_DOUBLE_EQ(m.pml.us_per_byte, 1.0 / 20);
    EXPECT_DOUBLE_EQ(m.pml.overhead_us, 3);
    EXPECT_EQ(m.rail_min_bytes, 16u << 10);
    EXPECT_NE(m.describe().find(",pml=200us:0.02GB/s:3us,rail_min=16384"), std::string::npos) << m.describe();
    ASSERT_EQ(CostModel::parse("node_speeds=1:0.5,rails_down=1:0:1", &m), LOOM_SUCCESS) << last_error_message();
    EXPECT_DOUBLE_EQ(m.node_speed(1), 0.5);
    EXPECT_DOUBLE_EQ(m.node_speed(7), 1.0);
    EXPECT_EQ(m.rails_down, (std::vector<int>{1, 0}));
    CostModel exact;
    exact.node_speeds = {0.1, 1.0 / 3};
    exact.rail_rates = {1, 0.7};
    exact.rails_down = {0};
    ASSERT_EQ(CostModel::parse(exact.describe(), &m), LOOM_SUCCESS) << exact.describe();
    EXPECT_EQ(m.node_speeds, exact.node_speeds);  // read back exactly
    EXPECT_EQ(m.rail_rates, exact.rail_rates);
    EXPECT_NE(exact.describe().find(",pml="), std::string::npos);  // with a rail down some messages may take it
    CostModel again;
    ASSERT_EQ(CostModel::parse(m.describe(), &again), LOOM_SUCCESS) << m.describe();
    EXPECT_EQ(again.describe(), m.describe());

    CostModel untouched;
    EXPECT_EQ(CostModel::parse("net=10us", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("net='10us'"), std::string::npos) << last_error_message();
    EXPECT_EQ(CostModel::parse("wire=1us:1GB/s", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("unknown key 'wire'"), std::string::npos);
    EXPECT_EQ(CostModel::parse("copy=fast", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(CostModel::parse("net=5us:1GB/s:soon", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(CostModel::parse("rail_rates=1:-2", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("rail_rates='1:-2'"), std::string::npos) << last_error_message();
    EXPECT_EQ(CostModel::parse("rail_rates=1:", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(CostModel::parse("stripe_min=lots", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(CostModel::parse("rail_min=-1", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("rail_min='-1'"), std::string::npos) << last_error_message();
    EXPECT_EQ(CostModel::parse("pml=fast", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(CostModel::parse("rails_down=64", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("rails_down='64'"), std::string::npos) << last_error_message();
    EXPECT_EQ(CostModel::parse("node_speeds=1:0", &untouched), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("one per node"), std::string::npos) << last_error_message();
    EXPECT_EQ(untouched.describe(), CostModel().describe());  // a failed parse changes nothing
}

// Rank 0 sends to rank 1, which never receives: the simulation must say so.
void unmatched_build(const CollArgs &, int rank, ProgramBuilder &b) {
    if (rank == 0) b.send(1, input_slice(0, 1));
}
std::string anywhere(const CollArgs &) { return {}; }

// Ranks 1..p-1 each send one block to rank 0: an incast.
void incast_build(const CollArgs &a, int rank, ProgramBuilder &b) {
    if (rank == 0) {
        for (int r = 1; r < a.nranks; ++r) b.recv(r, output_slice(static_cast<size_t>(r) * a.count, a.count));
    } else {
        b.send(0, input_slice(0, a.count));
    }
}

TEST(CostModel, MessagesIntoOneNodeQueueAtItsRail) {
    const AlgorithmInfo incast = {Collective::allgather, "incast", "test", "none", anywhere, incast_build, false};
    CostModel m = messages_only(2.0, 1.0);  // 1000 bytes per us
    m.network = {2.0, 1.0 / 1000};
    CollArgs a = args(Collective::allgather, 4, 1000);  // 4000-byte blocks
    const NodeMap nodes = NodeMap::from_labels({0, 1, 2, 3});
    a.nodes = &nodes;
    double us = -1;
    ASSERT_EQ(predict_time(incast, a, m, &us), LOOM_SUCCESS) << last_error_message();
    // Three nodes' links out are free, node 0's way in takes one block at a time.
    EXPECT_NEAR(us, 3 * 4.0 + 2.0, 0.05);
}

// Direct allgather across 4 nodes: every node sends 3 blocks and receives
// 3, all posted at once. Flows share the links, so the last block is in
// after 3 blocks' time; with each message holding the sender's way out
// and the receiver's way in together it took 5 (node 3's way in waited
// for the others' ways out to reach it).
TEST(CostModel, FlowsToSeveralNodesShareTheLinks) {
    CostModel m = messages_only(2.0, 1.0);
    m.network = {2.0, 1.0 / 1000};
    CollArgs a = args(Collective::allgather, 4, 1000);  // 4000-byte blocks: 4 us each
    const NodeMap nodes = NodeMap::from_labels({0, 1, 2, 3});
    a.nodes = &nodes;
    EXPECT_NEAR(predict("direct", a, m), 3 * 4.0 + 2.0, 0.05);
}

// A message between nodes from stripe_min is cut over every rail by the
// rails' rates, as the UCX rails stripe it; a smaller one takes its lane's.
TEST(CostModel, StripesLargeMessagesOverTheRailsByTheirRates) {
    const AlgorithmInfo incast = {Collective::allgather, "incast", "test", "none", anywhere, incast_build, false};
    CostModel m = messages_only(2.0, 1.0);
    m.network = {2.0, 1.0 / 1000};  // 1000 bytes per us per rail
    m.stripe_min_bytes = 4000;
    CollArgs a = args(Collective::allgather, 2, 1000);  // one 4000-byte block from rank 1 to rank 0
    NodeMap nodes = NodeMap::from_labels({0, 1});
    a.nodes = &nodes;
    double one = -1, two = -1, unequal = -1, below = -1;
    ASSERT_EQ(predict_time(incast, a, m, &one), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(one, 4.0 + 2.0, 0.01);
    nodes.rails = 2;
    ASSERT_EQ(predict_time(incast, a, m, &two), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(two, 2.0 + 2.0, 0.01);  // half the block on each rail
    m.rail_rates = {1.0, 0.5};
    ASSERT_EQ(predict_time(incast, a, m, &unequal), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(unequal, 4.0 / 1.5 + 2.0, 0.01);  // 2/3 and 1/3 of it, done together
    m.stripe_min_bytes = 4001;
    ASSERT_EQ(predict_time(incast, a, m, &below), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(below, 4.0 + 2.0, 0.01);  // lane 0: rail 0 alone
}

// Ranks 1..p-1 each send one block to rank 0, rank r on lane r.
void laned_incast_build(const CollArgs &a, int rank, ProgramBuilder &b) {
    if (rank == 0) {
        for (int r = 1; r < a.nranks; ++r) b.recv(r, output_slice(static_cast<size_t>(r) * a.count, a.count));
    } else {
        b.send(0, input_slice(0, a.count), {}, rank);
    }
}

// laned_incast on rank 0 of node 0 and ranks 1 and 2 of node 1, over RAILS rails.
struct LanedIncast {
    explicit LanedIncast(int rails) : shape(args(Collective::allgather, 3, 1000)) {
        nodes.rails = rails;
        shape.nodes = &nodes;
    }
    LanedIncast(const LanedIncast &) = delete;  // shape points at nodes
    const AlgorithmInfo algo = {Collective::allgather, "laned", "test", "none", anywhere, laned_incast_build, false};
    NodeMap nodes = NodeMap::from_labels({0, 1, 1});
    CollArgs shape;
};

// Below rail_min a message between nodes goes through the PML: on the pml
// link's prices, never striped, and a node's messages on one rail whatever
// their lanes; rail_min 0 leaves every message on the rails.
TEST(CostModel, PricesMessagesBelowRailMinOnThePmlLink) {
    const AlgorithmInfo incast = {Collective::allgather, "incast", "test", "none", anywhere, incast_build, false};
    CostModel m = messages_only(2.0, 1.0);
    m.network = {2.0, 1.0 / 1000};  // 1000 bytes per us per rail
    m.pml = {30.0, 1.0 / 500};      // 500
    m.stripe_min_bytes = 1000;
    CollArgs a = args(Collective::allgather, 2, 1000);  // one 4000-byte block from rank 1 to rank 0
    NodeMap nodes = NodeMap::from_labels({0, 1});
    nodes.rails = 2;
    a.nodes = &nodes;
    double rails = -1, pml = -1, at_rail_min = -1;
    ASSERT_EQ(predict_time(incast, a, m, &rails), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(rails, 2.0 + 2.0, 0.01);  // striped over both rails
    m.rail_min_bytes = 4001;
    ASSERT_EQ(predict_time(incast, a, m, &pml), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(pml, 8.0 + 30.0, 0.01);  // one rail, at the pml's rate and latency
    m.rail_min_bytes = 4000;
    ASSERT_EQ(predict_time(incast, a, m, &at_rail_min), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(at_rail_min, rails, 0.01);
    // Two ranks of node 1 on lanes 1 and 2: on the rails each takes one;
    // through the PML they queue on one.
    const LanedIncast laned(2);
    m.stripe_min_bytes = SIZE_MAX;
    m.rail_min_bytes = 0;
    double laned_rails = -1, laned_pml = -1;
    ASSERT_EQ(predict_time(laned.algo, laned.shape, m, &laned_rails), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(laned_rails, 4.0 + 2.0, 0.01);
    m.rail_min_bytes = 4001;
    ASSERT_EQ(predict_time(laned.algo, laned.shape, m, &laned_pml), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(laned_pml, 2 * 8.0 + 30.0, 0.01);
    // Within a node rail_min changes nothing.
    NodeMap one = NodeMap::from_labels({0, 0});
    a.nodes = &one;
    double within = -1;
    m.rail_min_bytes = 1 << 20;
    ASSERT_EQ(predict_time(incast, a, m, &within), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(within, 4.0 + 2.0, 0.01);
}

// Nodes that differ: a slow node's ways out and in take longer; a rail
// down is left out (lanes map onto the rails left, striping keeps to them),
// and with none left messages go through the PML. One node cannot stand
// for the others then.
TEST(CostModel, PricesSlowNodesAndRailsDown) {
    const AlgorithmInfo incast = {Collective::allgather, "incast", "test", "none", anywhere, incast_build, false};
    CostModel m = messages_only(2.0, 1.0);
    m.network = {2.0, 1.0 / 1000};  // 1000 bytes per us per rail
    m.pml = {30.0, 1.0 / 500};
    m.stripe_min_bytes = 1000;
    CollArgs a = args(Collective::allgather, 2, 1000);  // one 4000-byte block from rank 1 to rank 0
    NodeMap nodes = NodeMap::from_labels({0, 1});
    nodes.rails = 2;
    a.nodes = &nodes;
    const auto time = [&] {
        double us = -1;
        EXPECT_EQ(predict_time(incast, a, m, &us), LOOM_SUCCESS) << last_error_message();
        return us;
    };
    EXPECT_NEAR(time(), 2.0 + 2.0, 0.01);  // striped over both rails
    m.rails_down = {1};
    EXPECT_NEAR(time(), 4.0 + 2.0, 0.01);  // rail 0 alone
    m.rails_down = {0, 1};
    EXPECT_NEAR(time(), 8.0 + 30.0, 0.01);  // through the PML
    m.rails_down.clear();
    m.node_speeds = {1.0, 0.5};  // the sender's node at half speed
    EXPECT_NEAR(time(), 4.0 + 2.0, 0.01);
    m.node_speeds = {0.25};  // the receiver's; node 1 beyond the list: 1
    EXPECT_NEAR(time(), 8.0 + 2.0, 0.01);
    m.node_speeds.clear();

    // Ranks 1 and 2 of node 1 on lanes 1 and 2, rail 1 of 3 down: the lanes
    // map onto rails 0 and 2, one message each.
    const LanedIncast laned(3);
    m.stripe_min_bytes = SIZE_MAX;
    m.rails_down = {1};
    double us = -1;
    ASSERT_EQ(predict_time(laned.algo, laned.shape, m, &us), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(us, 4.0 + 2.0, 0.01);
    m.rails_down = {0, 2};  // rail 1 alone: one message after the other
    ASSERT_EQ(predict_time(laned.algo, laned.shape, m, &us), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(us, 8.0 + 2.0, 0.01);
    m.rails_down = {5};  // beyond the call's rails: nothing is down
    ASSERT_EQ(predict_time(laned.algo, laned.shape, m, &us), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(us, 4.0 + 2.0, 0.01);
    // Through the PML on unequal rails: the pml link's own rate, not a rail's.
    m.rails_down.clear();
    m.rail_rates = {0.5, 1, 1};
    m.rail_min_bytes = 4001;
    ASSERT_EQ(predict_time(laned.algo, laned.shape, m, &us), LOOM_SUCCESS) << last_error_message();
    EXPECT_NEAR(us, 2 * 8.0 + 30.0, 0.01);

    CollArgs spread = args(Collective::allreduce, 8, 1000);
    NodeMap four = NodeMap::from_labels({0, 0, 1, 1, 2, 2, 3, 3});
    spread.nodes = &four;
    CostModel slow;
    slow.node_speeds = {1, 1, 0.5, 1};
    EXPECT_EQ(predict_time(*find_algorithm(Collective::allreduce, "ring"), spread, PlanKnobs(), slow,
                           SimulationScope::node_symmetry, &us),
              LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("the nodes differ"), std::string::npos) << last_error_message();
    double even = -1, uneven = -1;
    ASSERT_EQ(predict_time(*find_algorithm(Collective::allreduce, "ring"), spread, CostModel(), &even), LOOM_SUCCESS);
    ASSERT_EQ(predict_time(*find_algorithm(Collective::allreduce, "ring"), spread, slow, &uneven), LOOM_SUCCESS)
        << last_error_message();
    EXPECT_GT(uneven, even);
}

// A composition's phases as the step timeline names them, each ending by
// the call's end, the last of them at it; a plan without phases has its
// own steps only; the slot paths run no plan.
TEST(CostModel, PredictsACompositionsPhases) {
    CollArgs a = args(Collective::allreduce, 4, 1 << 16);
    const NodeMap nodes = NodeMap::from_labels({0, 0, 1, 1});
    a.nodes = &nodes;
    std::vector<PhaseSpan> phases;
    double us = -1, alone = -1;
    const AlgorithmInfo &split = *find_algorithm(Collective::allreduce, "hier_split");
    ASSERT_EQ(predict_phases(split, a, PlanKnobs(), CostModel(), &phases, &us), LOOM_SUCCESS) << last_error_message();
    ASSERT_EQ(predict_time(split, a, CostModel(), &alone), LOOM_SUCCESS);
    EXPECT_DOUBLE_EQ(us, alone);
    ASSERT_GE(phases.size(), 3u);
    double last = 0;
    bool node_phase = false, own = false;
    for (const PhaseSpan &p : phases) {
        EXPECT_LE(p.start_us, p.end_us) << p.phase;
        EXPECT_LE(p.end_us, us + 1e-9) << p.phase;
        last = std::max(last, p.end_us);
        node_phase |= p.phase.find("(node)") != std::string::npos;
        own |= p.phase == "hier_split (own steps)";
    }
    EXPECT_DOUBLE_EQ(last, us);
    EXPECT_TRUE(node_phase && own);
    ASSERT_EQ(predict_phases(*find_algorithm(Collective::allreduce, "ring"), a, PlanKnobs(), CostModel(), &phases, &us),
              LOOM_SUCCESS);
    ASSERT_EQ(phases.size(), 1u);
    EXPECT_EQ(phases[0].phase, "ring (own steps)");
    EXPECT_EQ(predict_phases(*find_algorithm(Collective::allreduce, "shared_slots"), args(Collective::allreduce, 4, 8),
                             PlanKnobs(), CostModel(), &phases, &us),
              LOOM_ERR_INVALID_ARGUMENT);
}

TEST(CostModel, ChargesEachMessageToTheSendingAndReceivingCore) {
    CostModel m = messages_only(2.0, 1e6);  // bandwidth out of the picture
    m.shared_memory.overhead_us = 1.0;
    // Direct allgather, 4 ranks: the third send leaves at 3 o, arrives 3 o +
    // alpha; each rank has taken its first two messages meanwhile and takes
    // the last one in o more.
    EXPECT_NEAR(predict("direct", args(Collective::allgather, 4, 1), m), 2.0 + 4 * 1.0, 0.05);
    // Recursive doubling pays 2 o per round instead: fewer messages per rank.
    EXPECT_NEAR(predict("recursive_doubling", args(Collective::allgather, 8, 1), m), 3 * (2.0 + 2 * 1.0), 0.05);
}

TEST(CostModel, ReportsPlansWhoseMessagesDoNotMatch) {
    const AlgorithmInfo broken = {Collective::allgather, "broken", "test", "none", anywhere, unmatched_build, false};
    double us = 0;
    EXPECT_EQ(predict_time(broken, args(Collective::allgather, 2, 4), CostModel(), &us), LOOM_ERR_INTERNAL);
    EXPECT_NE(std::string(last_error_message()).find("never find their other side"), std::string::npos)
        << last_error_message();
    EXPECT_EQ(predict_time(broken, args(Collective::allgather, kModelMaxRanks + 1, 4), CostModel(), &us),
              LOOM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// The staging pipeline's price: copies on the pcie link (in and out on one
// stream) against each chunk's collective, whichever is slower, plus a copy
// to fill and one to drain; and the chunk the model picks for a staged
// allreduce on a communicator.
TEST(CostModel, PricesTheStagingPipelineAndPicksItsChunk) {
    CostModel m;
    ASSERT_EQ(CostModel::parse("pcie=5us:10GB/s", &m), LOOM_SUCCESS) << last_error_message();
    EXPECT_DOUBLE_EQ(m.pcie.alpha_us, 5);
    EXPECT_DOUBLE_EQ(m.pcie.us_per_byte, 1.0 / 10000);
    CostModel again;
    ASSERT_EQ(CostModel::parse(m.describe(), &again), LOOM_SUCCESS);
    EXPECT_DOUBLE_EQ(again.pcie.alpha_us, 5);
    const size_t mib = 1 << 20;
    const double copy = 5 + mib / 10000.0;  // one 1 MiB chunk across
    // Copies the slower stage: 8 chunks at two copies each, plus fill and drain.
    EXPECT_DOUBLE_EQ(staged_pipeline_time(8 * mib, mib, 1, m), 2 * copy + 8 * 2 * copy);
    // The collective the slower: it sets the pace.
    EXPECT_DOUBLE_EQ(staged_pipeline_time(8 * mib, mib, 1000, m), 2 * copy + 8 * 1000);
    EXPECT_EQ(staged_pipeline_time(0, mib, 1000, m), 0);

    InProcessFabric fabric(1);
    Config config;
    Communicator comm(fabric.endpoint(0), config);
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = 16 * mib;  // 64 MiB of floats
    a.elem_size = 4;
    a.nranks = 1;
    const size_t chunk = model_chunk_bytes(comm, a, LOOM_FLOAT);
    EXPECT_GE(chunk, 64u * 1024);
    EXPECT_LE(chunk, 16 * mib);
    EXPECT_EQ(chunk & (chunk - 1), 0u) << chunk;
    // A per-chunk cost (pcie latency) that dwarfs the bytes: the largest chunk.
    ASSERT_EQ(comm.config().set("cost_model", "pcie=100ms:1000GB/s"), LOOM_SUCCESS);
    EXPECT_EQ(model_chunk_bytes(comm, a, LOOM_FLOAT), 16 * mib);
    // The parameter wins.
    ASSERT_EQ(comm.config().set("cuda_staging_chunk_bytes", "1MiB"), LOOM_SUCCESS);
    EXPECT_EQ(model_chunk_bytes(comm, a, LOOM_FLOAT), mib);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

std::string names_of(const std::map<std::string, int> &found) {
    std::string s;
    for (const auto &[name, times] : found) s += (s.empty() ? "" : " ") + name + " x" + std::to_string(times);
    return s;
}

// The simulation of node 0's ranks standing for every node against the
// simulation of every rank, on random shapes of nodes of one size: within
// 2 % wherever the plans are symmetric, and symmetric for the algorithms
// that scale (the ring, the node-aware ones).
TEST(CostModel, OneNodeStandsForAllWithin2PercentOfEveryRank) {
    std::mt19937 rng(20261207);
    const CostModel model;
    int compared = 0, declined = 0;
    std::map<std::string, int> symmetric;
    for (int shape = 0; shape < 24; ++shape) {
        const int nodes = std::uniform_int_distribution<int>(2, 12)(rng);
        const int per_node = std::uniform_int_distribution<int>(1, 6)(rng);
        const int p = nodes * per_node;
        std::vector<int> labels;
        for (int r = 0; r < p; ++r) labels.push_back(r / per_node);
        const NodeMap map = NodeMap::from_labels(labels, std::uniform_int_distribution<int>(1, 3)(rng));
        const Collective c = static_cast<Collective>(std::uniform_int_distribution<int>(0, kCollectiveCount - 1)(rng));
        const size_t block = std::vector<size_t>{1, 13, 1000, 65536}[std::uniform_int_distribution<int>(0, 3)(rng)];
        CollArgs a = args(c, p, c == Collective::allreduce ? block * p : block);
        a.nodes = &map;
        for (const AlgorithmInfo *algo : plan_algorithms(static_cast<int>(c))) {
            if (!why_not_applicable(*algo, a).empty()) continue;
            double every = -1, one_node = -1;
            ASSERT_EQ(predict_time(*algo, a, PlanKnobs(), model, SimulationScope::every_rank, &every), LOOM_SUCCESS)
                << algo->name << " " << a.describe() << ": " << last_error_message();
            if (predict_time(*algo, a, PlanKnobs(), model, SimulationScope::node_symmetry, &one_node) != LOOM_SUCCESS) {
                EXPECT_NE(std::string(last_error_message()).find("one node cannot stand for all"), std::string::npos)
                    << last_error_message();
                ++declined;
                continue;
            }
            EXPECT_NEAR(one_node, every, 0.02 * every)
                << algo->name << " on " << a.describe() << " (" << map.describe() << ", " << map.rails << " rails)";
            ++compared;
            ++symmetric[std::string(collective_name(c)) + "/" + algo->name];
        }
    }
    EXPECT_GE(compared, 30) << declined << " declined";
    for (const char *name : {"allreduce/ring", "allreduce/hier_split", "reduce_scatter/ring", "alltoallv/pairwise"})
        EXPECT_GT(symmetric[name], 0) << name << " was never found symmetric (found: " << names_of(symmetric) << ")";
}

TEST(CostModel, SaysWhyOneNodeCannotStandForAll) {
    const NodeMap uneven = NodeMap::from_labels({0, 0, 0, 1, 1, 2, 2, 3, 3});
    CollArgs a = args(Collective::allreduce, 9, 900);
    a.nodes = &uneven;
    double us = 0;
    EXPECT_EQ(predict_time(*find_algorithm(Collective::allreduce, "ring"), a, PlanKnobs(), CostModel(),
                           SimulationScope::node_symmetry, &us),
              LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("nodes of unequal size"), std::string::npos)
        << last_error_message();
    a.nodes = nullptr;
    EXPECT_EQ(predict_time(*find_algorithm(Collective::allreduce, "ring"), a, PlanKnobs(), CostModel(),
                           SimulationScope::node_symmetry, &us),
              LOOM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Simulated ranks times a rank's steps above the budget: the model declines,
// naming it, after building one rank's plan only as far as the budget, and
// plans within it are priced as before.
TEST(CostModel, DeclinesPlansAboveItsStepBudget) {
    const CostModel model;
    const CollArgs a = args(Collective::allgather, 64, 4);
    double before = -1, after = -1, log_p = -1;
    ASSERT_EQ(predict_time(*find_algorithm(Collective::allgather, "ring"), a, model, &before), LOOM_SUCCESS)
        << last_error_message();
    const Program ring = build_program(*find_algorithm(Collective::allgather, "ring"), a, PlanKnobs(), 0);
    // The ring's 64 ranks take more than a budget of 64 x (its steps - 1).
    set_model_max_simulated_steps(64 * (ring.size() - 1));
    EXPECT_EQ(predict_time(*find_algorithm(Collective::allgather, "ring"), a, model, &after),
              LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error_message()).find("steps the simulation covers"), std::string::npos)
        << last_error_message();
    // lg p rounds fit.
    EXPECT_EQ(predict_time(*find_algorithm(Collective::allgather, "recursive_doubling"), a, model, &log_p),
              LOOM_SUCCESS)
        << last_error_message();
    set_model_max_simulated_steps(kModelMaxSimulatedSteps);
    ASSERT_EQ(predict_time(*find_algorithm(Collective::allgather, "ring"), a, model, &after), LOOM_SUCCESS);
    EXPECT_EQ(before, after);

    // A truncated build stops storing steps at the limit.
    const Program cut = build_program(*find_algorithm(Collective::allgather, "ring"), a, PlanKnobs(), 0, 10);
    EXPECT_TRUE(cut.truncated);
    EXPECT_EQ(cut.size(), 10u);
    EXPECT_FALSE(ring.truncated);
}

}  // namespace
}  // namespace loom
