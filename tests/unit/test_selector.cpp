// The default selection and the forced-name path, including its errors.
#include <gtest/gtest.h>

#include "call_args.hpp"

#include "node_map.hpp"
#include "select/selector.hpp"

namespace loom {
namespace {

std::string chosen(const Config &config, const CollArgs &a) {
    Selection s;
    EXPECT_EQ(select_algorithm(config, a, &s), LOOM_SUCCESS) << last_error_message();
    return s.algorithm ? s.algorithm->name : "";
}

TEST(Selector, DefaultsFollowMessageSize) {
    Config c;
    EXPECT_EQ(chosen(c, args(Collective::allreduce, 4, 2)), "recursive_doubling");
    EXPECT_EQ(chosen(c, args(Collective::allreduce, 4, 64 * 1024)), "rabenseifner");
    EXPECT_EQ(chosen(c, args(Collective::allreduce, 4, 1 << 20)), "rabenseifner");  // few ranks
    EXPECT_EQ(chosen(c, args(Collective::allreduce, 16, 1 << 20)), "ring");
    EXPECT_EQ(chosen(c, args(Collective::reduce_scatter_block, 4, 8)), "recursive_halving");
    EXPECT_EQ(chosen(c, args(Collective::reduce_scatter, 4, 1 << 18)), "ring");
    EXPECT_EQ(chosen(c, args(Collective::allgather, 8, 16)), "recursive_doubling");
    EXPECT_EQ(chosen(c, args(Collective::allgather, 6, 16)), "bruck");  // recursive doubling needs 2^k
    EXPECT_EQ(chosen(c, args(Collective::allgather, 8, 1 << 18)), "recursive_doubling");
    EXPECT_EQ(chosen(c, args(Collective::allgather, 16, 1 << 20)), "ring");
    EXPECT_EQ(chosen(c, args(Collective::allgather, 6, 1 << 20)), "ring");
    EXPECT_EQ(chosen(c, args(Collective::alltoall, 16, 4)), "bruck");
    EXPECT_EQ(chosen(c, args(Collective::alltoall, 4, 1024)), "scattered");
    EXPECT_EQ(chosen(c, args(Collective::alltoall, 4, 1 << 16)), "scattered");
    EXPECT_EQ(chosen(c, args(Collective::alltoall, 4, 1 << 20)), "pairwise");
}

// On one node (every rank through shared memory) small messages take one round.
TEST(Selector, OneNodeSmallMessagesTakeOneRound) {
    Config c;
    auto one_node = [](CollArgs a) {
        a.single_node = true;
        return a;
    };
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 2))), "direct");
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 2048))), "direct");  // 8 KiB
    // Above: reduce-scatter then allgather (hier_split, which needs a node map; without one, rabenseifner).
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 2049))), "rabenseifner");
    CollArgs mapped = one_node(args(Collective::allreduce, 4, 1 << 18));
    const NodeMap single = NodeMap::single_node(4);
    mapped.nodes = &single;
    EXPECT_EQ(chosen(c, mapped), "hier_split");
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 9, 2))), "recursive_doubling");  // too many ranks
    EXPECT_EQ(chosen(c, one_node(args(Collective::allgather, 4, 16))), "direct");
    EXPECT_EQ(chosen(c, one_node(args(Collective::allgather, 4, 1 << 18))), "direct");
    EXPECT_EQ(chosen(c, one_node(args(Collective::reduce_scatter_block, 4, 4096))), "pairwise");  // 64 KiB in
    EXPECT_EQ(chosen(c, one_node(args(Collective::alltoall, 4, 1 << 18))), "scattered");  // 1 MiB blocks
    EXPECT_EQ(chosen(c, one_node(args(Collective::reduce_scatter_block, 4, 8))), "pairwise");
    EXPECT_EQ(chosen(c, one_node(args(Collective::reduce_scatter, 4, 1 << 18))), "pairwise");
    EXPECT_EQ(chosen(c, one_node(args(Collective::reduce_scatter, 16, 1 << 18))), "ring");
    EXPECT_EQ(chosen(c, one_node(args(Collective::alltoall, 4, 8))), "scattered");
}

// On several nodes the node-aware algorithms take over where the rules say.
TEST(Selector, SeveralNodesTakeNodeAwareAlgorithms) {
    Config c;
    NodeMap two, four_by_four, one_per_node;
    ASSERT_EQ(NodeMap::parse("nodes=2", 4, &two), LOOM_SUCCESS);
    ASSERT_EQ(NodeMap::parse("nodes=4", 16, &four_by_four), LOOM_SUCCESS);
    ASSERT_EQ(NodeMap::parse("nodes=4", 4, &one_per_node), LOOM_SUCCESS);
    auto on = [](const NodeMap &m, CollArgs a) {
        a.nodes = &m;
        return a;
    };
    EXPECT_EQ(chosen(c, on(two, args(Collective::allreduce, 4, 1 << 20))), "hier_split");
    EXPECT_EQ(chosen(c, on(two, args(Collective::allreduce, 4, 2))), "hier_leader");
    EXPECT_EQ(chosen(c, on(four_by_four, args(Collective::allreduce, 16, 2))), "hier_leader");
    EXPECT_EQ(chosen(c, on(two, args(Collective::reduce_scatter, 4, 1000))), "hierarchical");
    EXPECT_EQ(chosen(c, on(two, args(Collective::reduce_scatter_block, 4, 1000))), "hierarchical");
    EXPECT_EQ(chosen(c, on(two, args(Collective::allgather, 4, 100))), "hierarchical");
    EXPECT_EQ(chosen(c, on(two, args(Collective::alltoall, 4, 8))), "node_aggregation");
    EXPECT_EQ(chosen(c, on(two, args(Collective::alltoall, 4, 1 << 14))), "node_aggregation");  // 64 KiB blocks
    EXPECT_EQ(chosen(c, on(two, args(Collective::alltoall, 4, (1 << 14) + 1))), "pairwise");
    EXPECT_EQ(chosen(c, on(two, args(Collective::reduce_scatter_block, 4, 128))), "recursive_halving");  // 2 KiB in
    EXPECT_EQ(chosen(c, on(two, args(Collective::allgather, 4, 64))), "recursive_doubling");  // 256 B blocks
    EXPECT_EQ(chosen(c, on(two, args(Collective::allreduce, 4, 1 << 16))), "hier_leader");  // 256 KiB
    EXPECT_EQ(chosen(c, on(two, args(Collective::allreduce, 4, (1 << 16) + 1))), "hier_split");
    // One rank per node: nothing to keep inside a node.
    EXPECT_EQ(chosen(c, on(one_per_node, args(Collective::allgather, 4, 100))), "recursive_doubling");
}

TEST(Selector, EveryDefaultChoiceIsApplicable) {
    Config c;
    for (int coll = 0; coll < kCollectiveCount; ++coll)
        for (int p = 1; p <= 33; ++p)
            for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
                CollArgs a = args(static_cast<Collective>(coll), p, count);
                Selection s;
                ASSERT_EQ(select_algorithm(c, a, &s), LOOM_SUCCESS) << a.describe();
                EXPECT_EQ(s.algorithm->not_applicable(a), "") << a.describe();
            }
}

TEST(Selector, ForcedNameWinsAndInapplicableIsAClearError) {
    Config c;
    ASSERT_EQ(c.set("allgather_algorithm", "recursive_doubling"), LOOM_SUCCESS);
    EXPECT_EQ(chosen(c, args(Collective::allgather, 8, 1 << 20)), "recursive_doubling");
    Selection s;
    EXPECT_EQ(select_algorithm(c, args(Collective::allgather, 6, 4), &s), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("recursive_doubling"), std::string::npos) << msg;
    EXPECT_NE(msg.find("p=6"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom
