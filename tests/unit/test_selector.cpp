// The default selection and the forced-name path, including its errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "call_args.hpp"

#include "node_map.hpp"
#include "runtime/plan_cache.hpp"
#include "select/builtin_rules.hpp"
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
    EXPECT_EQ(chosen(c, args(Collective::allreduce, 4, 1 << 20)), "ring");  // across nodes: streaming links
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
// Up to slots_max_bytes of input, one node's calls take the shared slots;
// above, and with them off, the built-in rules decide.
TEST(Selector, OneNodeSmallInputsTakeTheSharedSlots) {
    Config c;
    auto one_node = [](CollArgs a) {
        a.single_node = true;
        return a;
    };
    ASSERT_EQ(c.integer(kParamSlotsMaxBytes), 4096);
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 2))), "shared_slots");
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 1024))), "shared_slots");  // 4 KiB
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 1025))), "direct");
    EXPECT_EQ(chosen(c, one_node(args(Collective::alltoall, 4, 256))), "shared_slots");  // 4 KiB of blocks
    EXPECT_EQ(chosen(c, one_node(args(Collective::alltoall, 4, 257))), "scattered");
    EXPECT_EQ(chosen(c, one_node(args(Collective::reduce_scatter, 3, 100))), "shared_slots");
    EXPECT_EQ(chosen(c, args(Collective::allgather, 1, 1000)), "shared_slots");     // one rank
    EXPECT_EQ(chosen(c, args(Collective::allreduce, 4, 2)), "recursive_doubling");  // several nodes, or unknown
    ASSERT_EQ(c.set("slots_max_bytes", "0"), LOOM_SUCCESS);
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 2))), "direct");
    ASSERT_EQ(c.set("slots_max_bytes", "32KiB"), LOOM_SUCCESS);
    EXPECT_EQ(chosen(c, one_node(args(Collective::allreduce, 4, 8192))), "shared_slots");
    EXPECT_NE(c.set("slots_max_bytes", "64KiB"), LOOM_SUCCESS);  // above the slots' capacity
}

TEST(Selector, OneNodeSmallMessagesTakeOneRound) {
    Config c;
    ASSERT_EQ(c.set("slots_max_bytes", "0"), LOOM_SUCCESS);  // the rules alone
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
    EXPECT_EQ(chosen(c, one_node(args(Collective::alltoall, 4, 1 << 18))), "scattered");          // 1 MiB blocks
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
    EXPECT_EQ(chosen(c, on(two, args(Collective::allgather, 4, 64))), "recursive_doubling");             // 256 B blocks
    EXPECT_EQ(chosen(c, on(two, args(Collective::allreduce, 4, 1 << 16))), "hier_leader");               // 256 KiB
    EXPECT_EQ(chosen(c, on(two, args(Collective::allreduce, 4, (1 << 16) + 1))), "hier_split");
    // One rank per node: nothing to keep inside a node.
    EXPECT_EQ(chosen(c, on(one_per_node, args(Collective::allgather, 4, 100))), "recursive_doubling");
}

// The built-in rules document against the choices of the C++ rules it
// replaced (checked over ~1.1 million shapes when it was written): at least
// one call per rule, at its thresholds, with the rule that decides it.
TEST(Selector, BuiltInRulesKeepTheDefaultChoices) {
    const struct {
        Collective c;
        int p;
        const char *map;  // NodeMap::parse spec; "-": no map
        bool single_node;
        size_t count, elem;
        const char *algorithm;
        size_t rule;
    } cases[] = {
        {Collective::allreduce, 4, "nodes=2", false, 2, 4, "hier_leader", 1},
        {Collective::allreduce, 4, "nodes=2", false, 1 << 16, 4, "hier_leader", 1},  // 256 KiB
        {Collective::allreduce, 7, "0,0,0,1,1,2,2", false, 1, 8, "hier_leader", 1},
        {Collective::allreduce, 4, "nodes=2", false, (1 << 16) + 1, 4, "hier_split", 2},
        {Collective::allreduce, 4, "-", true, 2048, 4, "direct", 3},        // 8 KiB
        {Collective::allreduce, 4, "-", true, 2049, 4, "rabenseifner", 4},  // hier_split needs a node map
        {Collective::allreduce, 4, "", true, 2049, 4, "hier_split", 4},
        {Collective::allreduce, 4, "", false, 2, 4, "recursive_doubling", 5},  // one node, no shared memory
        {Collective::allreduce, 9, "-", true, 2, 4, "recursive_doubling", 5},
        {Collective::allreduce, 4, "nodes=4", false, 4096, 4, "recursive_doubling", 5},  // one rank per node
        {Collective::allreduce, 16, "-", false, 4097, 4, "rabenseifner", 6},
        {Collective::allreduce, 16, "-", false, 1 << 17, 4, "rabenseifner", 6},  // 512 KiB
        {Collective::allreduce, 2, "-", false, 1 << 20, 4, "rabenseifner", 7},   // 4 MiB on 2 ranks
        {Collective::allreduce, 3, "-", false, 1 << 20, 4, "ring", 8},
        {Collective::allreduce, 8, "-", false, 1 << 20, 4, "ring", 8},
        {Collective::allreduce, 9, "-", false, 35, 65536, "rabenseifner", 9},  // 35 < 4 x 9 elements
        {Collective::allreduce, 9, "-", false, 36, 65536, "ring", 10},
        {Collective::allreduce, 16, "-", false, (1 << 17) + 1, 4, "ring", 10},
        {Collective::reduce_scatter, 4, "nodes=2", false, 128, 4, "recursive_halving", 11},  // 2 KiB input
        {Collective::reduce_scatter, 4, "nodes=2", false, 129, 4, "hierarchical", 13},
        {Collective::reduce_scatter, 4, "nodes=2", false, 65535, 4, "hierarchical", 13},
        {Collective::reduce_scatter, 4, "nodes=2", false, 65536, 4, "rail_ring", 12},         // 1 MiB input
        {Collective::reduce_scatter, 6, "0,0,1,1,1,2", false, 65536, 4, "hierarchical", 12},  // uneven nodes
        {Collective::reduce_scatter, 4, "-", true, 1 << 18, 4, "pairwise", 14},
        {Collective::reduce_scatter, 16, "-", true, 1024, 4, "recursive_halving", 15},  // 64 KiB input
        {Collective::reduce_scatter, 16, "-", true, 1025, 4, "ring", 16},
        {Collective::reduce_scatter_block, 4, "nodes=2", false, 128, 4, "recursive_halving", 17},
        {Collective::reduce_scatter_block, 6, "0,0,1,1,1,2", false, 100, 8, "hierarchical", 19},
        {Collective::reduce_scatter_block, 4, "nodes=2", false, 65536, 4, "rail_ring", 18},
        {Collective::reduce_scatter_block, 8, "", true, 1 << 20, 1, "pairwise", 20},
        {Collective::reduce_scatter_block, 4, "-", false, 4096, 4, "recursive_halving", 21},
        {Collective::reduce_scatter_block, 4, "-", false, 4097, 4, "ring", 22},
        {Collective::allgather, 4, "nodes=2", false, 64, 4, "recursive_doubling", 24},  // 256 B blocks
        {Collective::allgather, 4, "nodes=2", false, 65, 4, "hierarchical", 26},
        {Collective::allgather, 4, "nodes=2", false, 65536, 4, "hierarchical", 26},  // 256 KiB blocks
        {Collective::allgather, 4, "nodes=2", false, 65537, 4, "rail_ring", 25},
        {Collective::allgather, 6, "nodes=3", false, 1, 1, "hierarchical", 26},  // not a power of two
        {Collective::allgather, 6, "-", true, 1 << 20, 4, "direct", 27},
        {Collective::allgather, 8, "-", false, 1 << 19, 4, "recursive_doubling", 28},  // 16 MiB result
        {Collective::allgather, 4, "nodes=4", false, 100, 4, "recursive_doubling", 28},
        {Collective::allgather, 16, "-", false, 1024, 4, "recursive_doubling", 29},  // 64 KiB result
        {Collective::allgather, 12, "-", false, 5461, 1, "bruck", 30},
        {Collective::allgather, 12, "-", false, 5462, 1, "ring", 31},  // 65544 B result
        {Collective::allgather, 8, "-", false, (1 << 19) + 1, 4, "ring", 31},
        {Collective::alltoall, 4, "nodes=2", false, 1 << 14, 4, "node_aggregation", 32},  // 64 KiB blocks
        {Collective::alltoall, 9, "0,1,2,0,1,2,0,1,2", false, 1, 1, "node_aggregation", 32},
        {Collective::alltoall, 4, "nodes=2", false, (1 << 14) + 1, 4, "pairwise", 33},
        {Collective::alltoall, 5, "-", false, 64, 4, "bruck", 34},  // 256 B blocks
        {Collective::alltoall, 4, "-", false, 64, 4, "scattered", 35},
        {Collective::alltoall, 16, "-", false, 65, 4, "scattered", 35},
        {Collective::alltoall, 4, "-", true, 1 << 18, 4, "scattered", 36},
        {Collective::alltoall, 4, "-", false, 1 << 18, 4, "pairwise", 37},
        {Collective::alltoall, 9, "-", true, (1 << 16) + 1, 4, "pairwise", 37},
    };
    for (const auto &x : cases) {
        CollArgs a = args(x.c, x.p, x.count, x.elem);
        a.single_node = x.single_node;
        NodeMap map;
        if (std::string(x.map) != "-") {
            ASSERT_EQ(NodeMap::parse(x.map, x.p, &map), LOOM_SUCCESS) << x.map;
            a.nodes = &map;
        }
        Selection s;
        ASSERT_EQ(default_selection(a, &s), LOOM_SUCCESS) << a.describe();
        EXPECT_STREQ(s.algorithm->name, x.algorithm) << a.describe() << " map " << x.map << ": " << s.why;
        const std::string rule = "built-in rule " + std::to_string(x.rule) + ": ";
        EXPECT_EQ(s.why.rfind(rule, 0), 0u) << a.describe() << " map " << x.map << ": " << s.why;
    }
}

// Rules 0 and 22: the node slots where every node has them (CollArgs::node_slots),
// up to 512 B allreduce vectors and 256 B allgather blocks; without them the next rule.
TEST(Selector, BuiltInRulesTakeTheNodeSlotsWhereEveryNodeHasThem) {
    NodeMap two;
    ASSERT_EQ(NodeMap::parse("nodes=2", 4, &two), LOOM_SUCCESS);
    const struct {
        Collective c;
        size_t count;
        bool node_slots;
        const char *algorithm;
        size_t rule;
    } cases[] = {
        {Collective::allreduce, 128, true, "node_slots", 0},  // 512 B of int32
        {Collective::allreduce, 129, true, "hier_leader", 1},
        {Collective::allreduce, 128, false, "hier_leader", 1},
        {Collective::allgather, 64, true, "node_slots", 23},  // 256 B blocks
        {Collective::allgather, 65, true, "hierarchical", 26},
        {Collective::allgather, 64, false, "recursive_doubling", 24},
        {Collective::reduce_scatter_block, 1, true, "recursive_halving", 17},
    };
    for (const auto &x : cases) {
        CollArgs a = args(x.c, 4, x.count, 4);
        a.nodes = &two;
        a.node_slots = x.node_slots;
        Selection s;
        ASSERT_EQ(default_selection(a, &s), LOOM_SUCCESS) << a.describe();
        EXPECT_STREQ(s.algorithm->name, x.algorithm) << a.describe() << ": " << s.why;
        EXPECT_EQ(s.why.rfind("built-in rule " + std::to_string(x.rule) + ": ", 0), 0u) << s.why;
    }
}

// Device buffers: the last six built-in rules name the CUDA IPC algorithms,
// which run every rank on one node; across nodes no algorithm runs device
// memory (Loom stages such calls).
TEST(Selector, DeviceMemoryTakesTheCudaIpcRulesOnOneNode) {
    const struct {
        Collective c;
        size_t count;
        const char *algorithm;
        size_t rule;
    } expect[] = {{Collective::allreduce, 16, "cuda_ipc_one_shot", 38},
                  {Collective::allreduce, 16384, "cuda_ipc_one_shot", 38},
                  {Collective::allreduce, 16385, "cuda_ipc_reduce_scatter_allgather", 39},
                  {Collective::reduce_scatter_block, 1000, "cuda_ipc_direct", 41},
                  {Collective::allgather, 1000, "cuda_ipc_direct", 42},
                  {Collective::alltoall, 1000, "cuda_ipc_direct", 43}};
    for (int p : {1, 4}) {
        for (const auto &x : expect) {
            CollArgs a = args(x.c, p, x.count);
            a.memory = MemoryType::cuda;
            a.single_node = p > 1;
            Selection s;
            ASSERT_EQ(default_selection(a, &s), LOOM_SUCCESS) << a.describe() << ": " << last_error_message();
            EXPECT_STREQ(s.algorithm->name, x.algorithm) << a.describe();
            EXPECT_EQ(s.why.rfind("built-in rule " + std::to_string(x.rule) + ": ", 0), 0u) << s.why;
            // The same call on host memory never takes them.
            a.memory = MemoryType::host;
            ASSERT_EQ(default_selection(a, &s), LOOM_SUCCESS);
            EXPECT_NE(s.algorithm->path, CallPath::cuda_ipc) << a.describe();
        }
    }
    CollArgs across = args(Collective::allreduce, 8, 1000);
    across.memory = MemoryType::cuda;
    Selection s;
    EXPECT_EQ(default_selection(across, &s), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
    EXPECT_NE(std::string(last_error_message()).find("stages such calls"), std::string::npos) << last_error_message();
}

// The defaults are an ordinary rules document: it parses, every rule says
// why, and as a user's rules file it makes the same choices.
TEST(Selector, BuiltInRulesAreARulesFile) {
    const RuleSet &builtin = builtin_rules();
    ASSERT_EQ(builtin.rules.size(), 53u);
    EXPECT_EQ(builtin.path, "built-in rules");
    EXPECT_FALSE(builtin.model.has_value());
    for (const Rule &r : builtin.rules) {
        EXPECT_FALSE(r.note.empty()) << "rule " << r.index;
        EXPECT_GE(r.algorithms.size(), 1u) << "rule " << r.index;
    }
    char path[] = "/tmp/loom-builtin-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    const std::string text = builtin_rules_text();
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    NodeMap two;
    ASSERT_EQ(NodeMap::parse("nodes=2", 4, &two), LOOM_SUCCESS);
    for (int coll = 0; coll < kCollectiveCount; ++coll)
        for (int p : {1, 3, 4, 6, 8, 9, 16})
            for (size_t count : {size_t{0}, size_t{7}, size_t{64}, size_t{2048}, size_t{1} << 18})
                for (int shape = 0; shape < 3; ++shape) {
                    CollArgs a = args(static_cast<Collective>(coll), shape == 2 ? 4 : p, count);
                    a.single_node = shape == 1 && p > 1;
                    if (shape == 2) a.nodes = &two;
                    Selection builtin_choice, file_choice;
                    ASSERT_EQ(default_selection(a, &builtin_choice), LOOM_SUCCESS);
                    ASSERT_EQ(select_algorithm(config, a, &file_choice), LOOM_SUCCESS);
                    EXPECT_EQ(builtin_choice.algorithm, file_choice.algorithm) << a.describe();
                    // "built-in rule 4: ..." there, "rule 4 of /tmp/...: ..." here.
                    const std::string rule = builtin_choice.why.substr(std::string("built-in ").size());
                    const std::string index = rule.substr(0, rule.find(':'));
                    EXPECT_EQ(file_choice.why.rfind(index + " of " + path + ": ", 0), 0u) << file_choice.why;
                }
    std::remove(path);
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

// Loom's own calls (a set-up's agreement, alltoallv's counts) ignore a
// forced algorithm, which may not run them: otherwise forcing
// recursive_doubling allgather on 6 ranks would break every alltoallv there.
TEST(Selector, LoomsOwnCallsIgnoreAForcedAlgorithm) {
    Config c;
    ASSERT_EQ(c.set("allgather_algorithm", "recursive_doubling"), LOOM_SUCCESS);
    CollArgs a = args(Collective::allgather, 6, 8);
    Selection s;
    EXPECT_EQ(select_algorithm(c, a, &s), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
    a.internal = true;
    ASSERT_EQ(select_algorithm(c, a, &s), LOOM_SUCCESS) << last_error_message();
    EXPECT_NE(std::string(s.algorithm->name), "recursive_doubling");
    EXPECT_EQ(s.algorithm->not_applicable(a), "");
    // Both go through one plan cache: the key tells them apart.
    CollArgs user = args(Collective::allgather, 8, 8), own = user;
    own.internal = true;
    EXPECT_FALSE(PlanKey::of(user, 1) == PlanKey::of(own, 1));
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
