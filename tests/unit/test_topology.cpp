// Node maps (emulated topologies and their errors), the machine view and
// rail assignment, and plan composition over sub-groups.
#include <gtest/gtest.h>

#include "core/plan.hpp"
#include "machine.hpp"
#include "node_map.hpp"

namespace loom {
namespace {

std::string members(const NodeMap &m) { return m.describe(); }

TEST(NodeMap, ParsesBlockAndExplicitMaps) {
    NodeMap m;
    ASSERT_EQ(NodeMap::parse("nodes=2", 5, &m), LOOM_SUCCESS);
    EXPECT_EQ(members(m), "2 nodes: [0 1 2] [3 4] (emulated)");
    ASSERT_EQ(NodeMap::parse("nodes=4,rails=2", 4, &m), LOOM_SUCCESS);
    EXPECT_EQ(m.rails, 2);
    EXPECT_EQ(m.max_ranks_per_node(), 1);
    ASSERT_EQ(NodeMap::parse("5,3,3,5,9,3;rails=3", 6, &m), LOOM_SUCCESS);
    EXPECT_EQ(members(m), "3 nodes: [0 3] [1 2 5] [4], 3 rails (emulated)");  // numbered by first appearance
    EXPECT_EQ(m.local_index[5], 2);
    EXPECT_FALSE(m.uniform());
    ASSERT_EQ(NodeMap::parse("", 3, &m), LOOM_SUCCESS);
    EXPECT_EQ(m.nodes(), 1);
}

TEST(NodeMap, RejectsWhatDoesNotFitWithTheReason) {
    NodeMap m;
    const struct {
        const char *spec;
        int nranks;
        const char *says;
    } cases[] = {
        {"nodes=0", 4, "positive integer"},      {"nodes=5", 4, "leaves a node empty"},
        {"0,1", 3, "2 node labels for 3 ranks"}, {"0,x,1", 3, "'x' is not a node number"},
        {"nodes=2,rails=0", 4, "rails"},         {"nodes=two", 4, "positive integer"},
    };
    for (const auto &c : cases) {
        EXPECT_EQ(NodeMap::parse(c.spec, c.nranks, &m), LOOM_ERR_INVALID_ARGUMENT) << c.spec;
        EXPECT_NE(std::string(last_error_message()).find(c.says), std::string::npos)
            << c.spec << ": " << last_error_message();
    }
}

TEST(Machine, RailsGoToTheNearestNicsSpreadEvenly) {
    MachineView v;
    v.nics = {{"mlx5_0", "openfabrics", "", 0},
              {"mlx5_1", "openfabrics", "", 1},
              {"mlx5_2", "openfabrics", "", 0},
              {"mlx5_3", "openfabrics", "", 1}};
    v.my_numa = 1;
    EXPECT_EQ(assign_rail(v, 0, 4), 1);
    EXPECT_EQ(assign_rail(v, 1, 4), 3);
    EXPECT_EQ(assign_rail(v, 2, 4), 1);
    v.my_numa = 2;  // no NIC near: spread over all
    EXPECT_EQ(assign_rail(v, 2, 4), 2);
    v.my_numa = -1;
    EXPECT_EQ(assign_rail(v, 5, 8), 1);
    v.nics.clear();
    EXPECT_EQ(assign_rail(v, 0, 1), -1);
}

TEST(Machine, DiscoversThisMachineOrSaysWhyNot) {
    MachineView v;
    if (discover_machine(&v) != LOOM_SUCCESS) GTEST_SKIP() << last_error_message();
    EXPECT_GE(v.pus, 1);
    EXPECT_GE(v.cores, 1);
    EXPECT_NE(v.describe().find("PU(s)"), std::string::npos);
}

TEST(Composition, GroupsMapPeersBuffersAndLanes) {
    Program p;
    ProgramBuilder b(p);
    // A sub-collective over communicator ranks {5, 2}: its peer 1 is rank 2,
    // its input is the parent's input from element 10, its output the
    // parent's output from element 4; a nested group maps through both.
    b.push_group({5, 2}, input_slice(10, 8), output_slice(4, 8), /*lane=*/3);
    b.send(1, input_slice(2, 3));
    b.recv(0, output_slice(1, 2));
    b.push_group({1}, input_slice(4, 2), output_slice(0, 2));
    b.send(0, input_slice(1, 1));
    b.pop_group();
    b.pop_group();
    b.send(7, input_slice(0, 1));
    ASSERT_EQ(p.steps.size(), 4u);
    EXPECT_EQ(p.steps[0].peer, 2);
    EXPECT_EQ(p.steps[0].src.offset, 12u);
    EXPECT_EQ(p.steps[0].lane, 3);
    EXPECT_EQ(p.steps[1].peer, 5);
    EXPECT_EQ(p.steps[1].dst.buffer, Buffer::output);
    EXPECT_EQ(p.steps[1].dst.offset, 5u);
    EXPECT_EQ(p.steps[2].peer, 2);          // nested: group rank 0 -> 1 -> 2
    EXPECT_EQ(p.steps[2].src.offset, 15u);  // 10 + 4 + 1
    EXPECT_EQ(p.steps[2].lane, 3);          // inherited
    EXPECT_EQ(p.steps[3].peer, 7);
    EXPECT_EQ(p.steps[3].lane, 0);
}

}  // namespace
}  // namespace loom
