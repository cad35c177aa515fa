// Rules files (validation, matching, authority over the built-in rules) and
// the explanation of a choice, offline and by a communicator.
#include <gtest/gtest.h>

#include <unistd.h>
#include "call_args.hpp"

#include <cstdio>
#include <fstream>

#include "algorithms/algorithm.hpp"
#include "node_map.hpp"
#include "runtime/communicator.hpp"
#include "select/call_spec.hpp"
#include "select/rules.hpp"
#include "select/selector.hpp"
#include "transport/inprocess/inprocess.hpp"

namespace loom {
namespace {

std::string write_file(const std::string &text) {
    char path[] = "/tmp/loom-rules-XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << text;
    return path;
}

// The error of parsing `text`, "" when it parsed.
std::string error_of(const std::string &text) {
    RuleSet set;
    return parse_rules(text, "r.json", &set) == LOOM_SUCCESS ? "" : last_error_message();
}

TEST(Rules, ValidationNamesTheFileTheEntryAndTheField) {
    EXPECT_EQ(error_of(R"({"rules": [{"collective": "allreduce", "bytes": [0, "4KiB"], "algorithm": "direct"}]})"), "");
    const struct {
        const char *text, *expected;
    } bad[] = {
        {"{", "r.json: not valid JSON"},
        {"[]", "r.json: the top level must be an object"},
        {R"({"rule": []})", "unknown top-level field 'rule'"},
        {R"({"rules": {}})", "field 'rules' must be a list"},
        {R"({"rules": [{"algorithm": "ring"}]})", "rule 0: field 'collective': required"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring"},
                       {"collective": "allreduce", "algorithm": "hyperring"}]})",
         "r.json: rule 1: field 'algorithm': allreduce has no algorithm 'hyperring'"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "bytes": [10, 2]}]})",
         "rule 0: field 'bytes': max 2 is below min 10"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "bytes": "lots"}]})",
         "rule 0: field 'bytes': 'lots' is not a size"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "ppn": -1}]})",
         "rule 0: field 'ppn': must not be negative"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "bytes": 18446744073709551615}]})",
         "rule 0: field 'bytes': 18446744073709551615 is too large"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "colour": 1}]})",
         "rule 0: field 'colour': unknown"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "recursive_multiplying", "radix": 1}]})",
         "rule 0: field 'radix': must be in [2, 64]"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "memory": "gpu"}]})", "rule 0: field 'memory'"},
        {R"({"model": "net=fast", "rules": []})", "r.json: field 'model': cost model: net='fast'"},
    };
    for (const auto &b : bad) {
        const std::string err = error_of(b.text);
        EXPECT_NE(err.find(b.expected), std::string::npos) << b.text << "\n  gave: " << err;
    }
}

// Every rank must choose alike: an alltoallv rank knows only its own counts,
// so an alltoallv rule with a size matches only a call that gathered every
// rank's (CollArgs::count_matrix), whose sizes are the same on every rank.
TEST(Rules, AlltoallvSizesDecideOnlyWithEveryRanksCounts) {
    RuleSet set;
    ASSERT_EQ(parse_rules(R"({"rules": [
        {"collective": "alltoallv", "bytes": [0, "1KiB"], "algorithm": "pairwise"},
        {"collective": "alltoallv", "elements_per_rank": [2000, null], "algorithm": "node_aggregation"},
        {"collective": "alltoallv", "nodes": [1, 4], "algorithm": "scattered"}]})",
                          "r.json", &set),
              LOOM_SUCCESS)
        << last_error_message();
    CollArgs a = args(Collective::alltoallv, 4, 16);  // every block 16 elements of 4 bytes
    ASSERT_EQ(a.count_matrix.size(), 16u);
    const Rule *r = match_rule(set, a);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->algorithms[0], "pairwise");
    // This rank sends far more than the others: the mean block is the whole matrix's.
    a.send_counts[1] = 4000;
    a.count_matrix[1] = 4000;
    EXPECT_EQ(message_bytes(a), (16u * 15 + 4000) * 4 / 16);
    // The skew: the largest block over the mean, from every rank's counts.
    EXPECT_EQ(skew_of(a), 4000u * 16 / (16u * 15 + 4000));
    RuleSet skewed;
    ASSERT_EQ(parse_rules(R"({"rules": [{"collective": "alltoallv", "skew": [10, null], "algorithm": "scattered"},
        {"collective": "alltoallv", "algorithm": "pairwise"}]})",
                          "r.json", &skewed),
              LOOM_SUCCESS);
    EXPECT_EQ(match_rule(skewed, a)->algorithms[0], "scattered");
    a.count_matrix[1] = 16;
    EXPECT_EQ(skew_of(a), 1u);
    EXPECT_EQ(match_rule(skewed, a)->algorithms[0], "pairwise");
    a.count_matrix.clear();  // not gathered: only the rule without a size matches
    r = match_rule(set, a);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->algorithms[0], "scattered");
    // What a rank's own call learns across nodes: its node's counts and the
    // totals of every rank's, which decide as the whole matrix did.
    a.node_counts.ranks = 4;
    a.node_counts.counts.assign(2 * 2 * 4, 16);  // a node of 2 ranks
    a.node_counts.total = 16 * 16;
    a.node_counts.largest = 16;
    EXPECT_EQ(message_bytes(a), 16u * 4);
    EXPECT_EQ(match_rule(set, a)->algorithms[0], "pairwise");
    EXPECT_EQ(match_rule(skewed, a)->algorithms[0], "pairwise");
    a.node_counts.largest = 16 * 16;
    EXPECT_EQ(skew_of(a), 16u);
    EXPECT_EQ(match_rule(skewed, a)->algorithms[0], "scattered");
}

TEST(Rules, AnInvalidFileIsReportedAndIgnored) {
    const std::string path = write_file(R"({"rules": [{"collective": "allreduce", "algorithm": "nope"}]})");
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    testing::internal::CaptureStderr();
    Selection s;
    ASSERT_EQ(select_algorithm(config, args(Collective::allreduce, 4, 2), &s), LOOM_SUCCESS);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignoring the rules file: " + path + ": rule 0: field 'algorithm'"), std::string::npos) << err;
    EXPECT_EQ(s.why.rfind("built-in rule", 0), 0u) << s.why;
    Config missing;
    ASSERT_EQ(missing.set("rules_file", "/nonexistent/rules.json"), LOOM_SUCCESS);
    testing::internal::CaptureStderr();
    ASSERT_EQ(select_algorithm(missing, args(Collective::allreduce, 4, 2), &s), LOOM_SUCCESS);
    EXPECT_NE(testing::internal::GetCapturedStderr().find("cannot be read"), std::string::npos);
    std::remove(path.c_str());
}

TEST(Rules, ForcedBeatsRulesWhichBeatTheBuiltInOnes) {
    const std::string path = write_file(R"({
      "rules": [
        {"collective": "allgather", "bytes": [0, 1024], "algorithm": "recursive_doubling"},
        {"collective": "allgather", "bytes": [0, 1024], "comm_size": [2, 64], "algorithm": "ring",
         "segment_size": "8KiB"},
        {"collective": "allreduce", "nodes": [2, null], "ppn": 2, "algorithm": "hier_leader"},
        {"collective": "allreduce", "memory": "device", "algorithm": "ring"}
      ]})");
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    Selection s;
    // Rule 0 matches 8 ranks; on 6 ranks recursive doubling cannot run: rule 1.
    ASSERT_EQ(select_algorithm(config, args(Collective::allgather, 8, 16), &s), LOOM_SUCCESS);
    EXPECT_STREQ(s.algorithm->name, "recursive_doubling");
    EXPECT_EQ(s.why, "rule 0 of " + path);
    ASSERT_EQ(select_algorithm(config, args(Collective::allgather, 6, 16), &s), LOOM_SUCCESS);
    EXPECT_STREQ(s.algorithm->name, "ring");
    EXPECT_EQ(s.why, "rule 1 of " + path);
    ASSERT_TRUE(s.segment_bytes.has_value());
    EXPECT_EQ(*s.segment_bytes, 8192u);
    // Above 1 KiB no rule matches: the built-in rules decide.
    ASSERT_EQ(select_algorithm(config, args(Collective::allgather, 6, 1 << 20), &s), LOOM_SUCCESS);
    EXPECT_EQ(s.why.rfind("built-in rule", 0), 0u) << s.why;
    // Node shape: 3 nodes of 2 ranks match rule 2, one node does not; device rules never match host calls.
    CollArgs a = args(Collective::allreduce, 6, 1 << 16);
    const NodeMap three = NodeMap::from_labels({0, 0, 1, 1, 2, 2});
    a.nodes = &three;
    ASSERT_EQ(select_algorithm(config, a, &s), LOOM_SUCCESS);
    EXPECT_STREQ(s.algorithm->name, "hier_leader");
    a.nodes = nullptr;
    ASSERT_EQ(select_algorithm(config, a, &s), LOOM_SUCCESS);
    EXPECT_STRNE(s.algorithm->name, "hier_leader");
    EXPECT_STRNE(s.algorithm->name, "ring");
    // A forced name outranks every rule.
    ASSERT_EQ(config.set("allgather_algorithm", "bruck"), LOOM_SUCCESS);
    ASSERT_EQ(select_algorithm(config, args(Collective::allgather, 8, 16), &s), LOOM_SUCCESS);
    EXPECT_STREQ(s.algorithm->name, "bruck");
    EXPECT_EQ(s.why, "forced");
    std::remove(path.c_str());
}

// The conditions and fields the built-in rules needed, written in a user's file.
TEST(Rules, ShapeConditionsFallbackListsAndNotes) {
    const struct {
        const char *text, *expected;
    } bad[] = {
        {R"({"rules": [{"collective": "allgather", "algorithm": "ring", "single_node": "yes"}]})",
         "rule 0: field 'single_node': must be true or false"},
        {R"({"rules": [{"collective": "allgather", "algorithm": "ring", "power_of_two": 1}]})",
         "rule 0: field 'power_of_two': must be true or false"},
        {R"({"rules": [{"collective": "allgather", "algorithm": []}]})", "rule 0: field 'algorithm': required"},
        {R"({"rules": [{"collective": "allgather", "algorithm": ["ring", 3]}]})",
         "rule 0: field 'algorithm': required"},
        {R"({"rules": [{"collective": "allgather", "algorithm": ["ring", "nope"]}]})",
         "rule 0: field 'algorithm': allgather has no algorithm 'nope'"},
        {R"({"rules": [{"collective": "allgather", "algorithm": "ring", "note": 3}]})",
         "rule 0: field 'note': must be a string"},
        {R"({"rules": [{"collective": "allreduce", "algorithm": "ring", "elements_per_rank": "4KiB"}]})",
         "rule 0: field 'elements_per_rank': must be an integer"},
        {R"({"rules": [{"collective": "allgather", "algorithm": "ring", "total_bytes": [0, "lots"]}]})",
         "rule 0: field 'total_bytes': 'lots' is not a size"},
    };
    for (const auto &b : bad) {
        const std::string err = error_of(b.text);
        EXPECT_NE(err.find(b.expected), std::string::npos) << b.text << "\n  gave: " << err;
    }
    const std::string path = write_file(R"({"rules": [
        {"collective": "allgather", "power_of_two": false, "total_bytes": [0, "1KiB"],
         "algorithm": ["recursive_doubling", "bruck"], "note": "small results"},
        {"collective": "allgather", "single_node": true, "algorithm": "direct"},
        {"collective": "allreduce", "elements_per_rank": [0, 3], "algorithm": "ring"},
        {"collective": "allgather", "power_of_two": true, "algorithm": ["recursive_doubling"]}]})");
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    auto choice = [&](CollArgs a, bool single_node) {
        a.single_node = single_node;
        Selection s;
        EXPECT_EQ(select_algorithm(config, a, &s), LOOM_SUCCESS) << last_error_message();
        return std::string(s.algorithm->name) + " (" + s.why + ")";
    };
    // 6 x 16 x 4 B = 384 B of result: rule 0, whose first algorithm needs a power of two.
    EXPECT_EQ(choice(args(Collective::allgather, 6, 16), false), "bruck (rule 0 of " + path + ": small results)");
    EXPECT_EQ(choice(args(Collective::allgather, 6, 100), true), "direct (rule 1 of " + path + ")");  // 2400 B
    EXPECT_NE(choice(args(Collective::allgather, 6, 100), false).find("(built-in rule"), std::string::npos);
    EXPECT_EQ(choice(args(Collective::allgather, 8, 16), false), "recursive_doubling (rule 3 of " + path + ")");
    EXPECT_EQ(choice(args(Collective::allreduce, 8, 31), false), "ring (rule 2 of " + path + ")");  // 3 per rank
    EXPECT_NE(choice(args(Collective::allreduce, 8, 32), false).find("(built-in rule"), std::string::npos);
    // Elements per rank and the whole buffer, per collective.
    EXPECT_EQ(elements_per_rank(args(Collective::reduce_scatter_block, 4, 10)), 10u);
    EXPECT_EQ(elements_per_rank(args(Collective::allgather, 4, 10)), 10u);
    EXPECT_EQ(total_bytes(args(Collective::allgather, 4, 10)), 160u);
    EXPECT_EQ(total_bytes(args(Collective::alltoall, 4, 10)), 160u);
    EXPECT_EQ(total_bytes(args(Collective::reduce_scatter, 4, 10)), 160u);  // the whole input
    std::remove(path.c_str());
}

TEST(Rules, TheFilesModelPricesTheCandidatesUnlessTheParameterIsSet) {
    const std::string path = write_file(R"({"model": "net=50us:1GB/s", "rules": []})");
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    EXPECT_DOUBLE_EQ(model_for(config).network.alpha_us, 50);
    ASSERT_EQ(config.set("cost_model", "net=7us:1GB/s"), LOOM_SUCCESS);
    EXPECT_DOUBLE_EQ(model_for(config).network.alpha_us, 7);
    EXPECT_EQ(config.set("cost_model", "net=7us"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    std::remove(path.c_str());
}

TEST(Explain, RanksEveryAlgorithmAndAgreesWithTheModel) {
    Config config;
    CallSpec spec;
    ASSERT_EQ(parse_call_spec("allreduce 1MiB nodes=4 ppn=2", config, &spec), LOOM_SUCCESS) << last_error_message();
    EXPECT_EQ(spec.args.nranks, 8);
    EXPECT_EQ(spec.args.count, 262144u);
    EXPECT_EQ(spec.args.nodes->nodes(), 4);
    Explanation e;
    ASSERT_EQ(explain_selection(config, spec.args, &e, spec.knobs), LOOM_SUCCESS);
    EXPECT_EQ(e.candidates.size(), algorithms_for(Collective::allreduce).size());
    double own = -1;
    ASSERT_EQ(predict_time(*e.selection.algorithm, spec.args, spec.knobs, model_for(config), &own), LOOM_SUCCESS);
    EXPECT_DOUBLE_EQ(e.predicted_us, own);
    for (size_t i = 1; i < e.candidates.size(); ++i) {
        if (e.candidates[i].us < 0) continue;
        EXPECT_LE(e.candidates[i - 1].us, e.candidates[i].us);
    }
    const std::string table = format_explanation(spec.args, e);
    EXPECT_NE(table.find("allreduce 1 MiB on 8 ranks (4 nodes x 2)"), std::string::npos) << table;
    EXPECT_NE(table.find("<- chosen"), std::string::npos) << table;
    EXPECT_NE(explanation_line(spec.args, e).find("runners-up"), std::string::npos);

    for (const char *bad : {"allscatter 1MiB", "allreduce big", "allreduce 1MiB nodes=0", "allreduce 1MiB colour=red",
                            "allreduce 1MiB nodes=4 ppn=2 np=9"})
        EXPECT_EQ(parse_call_spec(bad, config, &spec), LOOM_ERR_INVALID_ARGUMENT) << bad;
}

// skew=S describes a popular expert: every rank sends rank 0 S mean blocks
// (allgatherv: rank 0's shard is S means), the rule sees that skew, and the
// model prices each rank's own program (the hot receiver's is the longest).
TEST(Explain, SkewDescribesEveryRanksCountsAndTheModelPricesEachRanksOwn) {
    Config config;
    CallSpec uniform, skewed;
    ASSERT_EQ(parse_call_spec("alltoallv 1MiB nodes=4 ppn=2 skew=4", config, &skewed), LOOM_SUCCESS)
        << last_error_message();
    ASSERT_EQ(parse_call_spec("alltoallv 1MiB nodes=4 ppn=2", config, &uniform), LOOM_SUCCESS);
    const CollArgs &a = skewed.args;
    const size_t p = 8, mean = (1u << 20) / 4;
    ASSERT_EQ(a.count_matrix.size(), p * p);
    EXPECT_EQ(skew_of(a), 4u);
    EXPECT_EQ(skew_of(uniform.args), 1u);
    for (size_t s = 0; s < p; ++s) {
        EXPECT_EQ(a.count_matrix[s * p], 4 * mean);
        size_t row = 0;
        for (size_t d = 0; d < p; ++d) row += a.count_matrix[s * p + d];
        EXPECT_LE(row, p * mean);
        EXPECT_GT(row, p * mean - p);  // the cold blocks round down
    }
    // Each rank's own arguments: its row to send, its column to receive, packed.
    for (int r = 0; r < 8; ++r) {
        const CollArgs mine = rank_args(a, r);
        size_t at = 0;
        for (size_t peer = 0; peer < p; ++peer) {
            EXPECT_EQ(mine.send_counts[peer], a.count_matrix[static_cast<size_t>(r) * p + peer]);
            EXPECT_EQ(mine.recv_counts[peer], a.count_matrix[peer * p + static_cast<size_t>(r)]);
            EXPECT_EQ(mine.recv_displs[peer], at);
            at += mine.recv_counts[peer];
        }
    }
    EXPECT_EQ(rank_args(a, 0).recv_counts, std::vector<size_t>(p, 4 * mean));
    Explanation e;
    ASSERT_EQ(explain_selection(config, a, &e, skewed.knobs), LOOM_SUCCESS);
    EXPECT_EQ(e.selection.algorithm->name, std::string("scattered"));  // the built-in rule for skew >= 2
    const std::string table = format_explanation(a, e);
    EXPECT_NE(table.find("skew 4"), std::string::npos) << table;
    const AlgorithmInfo *pairwise = find_algorithm(Collective::alltoallv, "pairwise");
    ASSERT_NE(pairwise, nullptr);
    double flat = 0, hot = 0;
    ASSERT_EQ(predict_time(*pairwise, uniform.args, uniform.knobs, model_for(config), &flat), LOOM_SUCCESS);
    ASSERT_EQ(predict_time(*pairwise, a, skewed.knobs, model_for(config), &hot), LOOM_SUCCESS);
    EXPECT_GT(hot, 1.5 * flat) << "rank 0 receives 4 means from every rank";

    ASSERT_EQ(parse_call_spec("allgatherv 64KiB nodes=2 ppn=2 skew=2", config, &skewed), LOOM_SUCCESS);
    EXPECT_EQ(skew_of(skewed.args), 2u);
    EXPECT_EQ(skewed.args.count, skewed.args.recv_counts[0]);
    EXPECT_EQ(rank_args(skewed.args, 3).count, skewed.args.recv_counts[3]);
    EXPECT_LT(skewed.args.recv_counts[3], skewed.args.recv_counts[0]);
    // Skewed shards across nodes: the rule's node_ring relays, and the model
    // agrees it beats hierarchical, whose node of large shards sends them
    // to every other node; small shards keep hierarchical's single round.
    ASSERT_EQ(parse_call_spec("allgatherv 1MiB nodes=4 ppn=2 skew=4", config, &skewed), LOOM_SUCCESS);
    ASSERT_EQ(explain_selection(config, skewed.args, &e, skewed.knobs), LOOM_SUCCESS);
    EXPECT_EQ(e.selection.algorithm->name, std::string("node_ring"));
    double relayed = 0, direct = 0;
    ASSERT_EQ(predict_time(*find_algorithm(Collective::allgatherv, "node_ring"), skewed.args, skewed.knobs,
                           model_for(config), &relayed),
              LOOM_SUCCESS);
    ASSERT_EQ(predict_time(*find_algorithm(Collective::allgatherv, "hierarchical"), skewed.args, skewed.knobs,
                           model_for(config), &direct),
              LOOM_SUCCESS);
    EXPECT_LT(relayed, direct);
    ASSERT_EQ(parse_call_spec("allgatherv 2KiB nodes=4 ppn=2", config, &skewed), LOOM_SUCCESS);
    ASSERT_EQ(explain_selection(config, skewed.args, &e, skewed.knobs), LOOM_SUCCESS);
    EXPECT_EQ(e.selection.algorithm->name, std::string("hierarchical"));
    for (const char *bad : {"allreduce 1MiB skew=2", "alltoallv 1MiB np=4 skew=5", "alltoallv 1MiB skew=0"})
        EXPECT_EQ(parse_call_spec(bad, config, &skewed), LOOM_ERR_INVALID_ARGUMENT) << bad;
}

// Alltoall blocks above one ring message but within a whole ring go through
// the rings in pieces; the scattered plan then sends each block in pieces.
TEST(Explain, AlltoallBlocksThatFitARingTravelInPieces) {
    Config config;
    auto piece = [&](const char *text) {
        CallSpec spec;
        EXPECT_EQ(parse_call_spec(text, config, &spec), LOOM_SUCCESS) << last_error_message();
        return spec.knobs.ring_piece_bytes;
    };
    EXPECT_EQ(piece("alltoall 256KiB np=4"), 128u * 1024);
    EXPECT_EQ(piece("alltoall 200000 np=4"), 128u * 1024);
    EXPECT_EQ(piece("alltoall 128KiB np=4"), 0u);           // one ring message already
    EXPECT_EQ(piece("alltoall 512KiB np=4"), 0u);           // more than a ring: the sender would wait
    EXPECT_EQ(piece("alltoall 256KiB nodes=2 ppn=2"), 0u);  // not all on one node
    EXPECT_EQ(piece("allgather 256KiB np=4"), 0u);
    EXPECT_EQ(piece("alltoall 256KiB np=32"), 0u);  // 32 ranks: 128 KiB rings
    ASSERT_EQ(config.set("alltoall_shm_max_bytes", "128KiB"), LOOM_SUCCESS);
    EXPECT_EQ(piece("alltoall 256KiB np=4"), 0u);
    ASSERT_EQ(config.set("alltoall_shm_max_bytes", "256KiB"), LOOM_SUCCESS);
    ASSERT_EQ(config.set("shm_max_bytes", "64KiB"), LOOM_SUCCESS);
    EXPECT_EQ(piece("alltoall 256KiB np=4"), 64u * 1024);

    CallSpec spec;
    ASSERT_EQ(parse_call_spec("alltoall 200000 np=4 type=int32", config, &spec), LOOM_SUCCESS);
    const Program prog = build_program(*find_algorithm(Collective::alltoall, "scattered"), spec.args, spec.knobs, 0);
    size_t sends = 0, largest = 0;
    for (const Step &s : prog.steps)
        if (s.kind == StepKind::send) {
            ++sends;
            largest = std::max(largest, s.src.count * spec.args.elem_size);
        }
    EXPECT_EQ(sends, 3u * 4);  // 200000 B in 64 KiB pieces: 4 per peer
    EXPECT_EQ(largest, 64u * 1024);
}

// loom-info --explain answers what a communicator of that shape chooses.
TEST(Explain, OfflineAnswerMatchesACommunicatorsChoice) {
    const std::string path = write_file(R"({"rules": [
        {"collective": "alltoall", "bytes": [1024, 4096], "algorithm": "bruck"}]})");
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    ASSERT_EQ(config.set("reduce_scatter_algorithm", "ring"), LOOM_SUCCESS);
    InProcessFabric fabric(4);
    Communicator comm(fabric.endpoint(0), config);
    ASSERT_EQ(comm.set_nodes(NodeMap::from_labels({0, 0, 1, 1})), LOOM_SUCCESS);
    const struct {
        Collective c;
        const char *spec;
        size_t count;
    } calls[] = {
        {Collective::allreduce, "allreduce 1MiB nodes=2 ppn=2", 262144},
        {Collective::allreduce, "allreduce 64 nodes=2 ppn=2", 16},
        {Collective::alltoall, "alltoall 2KiB nodes=2 ppn=2", 512},
        {Collective::alltoall, "alltoall 64KiB nodes=2 ppn=2", 16384},
        {Collective::reduce_scatter, "reduce_scatter 64KiB nodes=2 ppn=2", 4096},
        {Collective::allgather, "allgather 256 nodes=2 ppn=2", 64},
    };
    for (const auto &call : calls) {
        CollArgs a;
        a.collective = call.c;
        a.count = call.count;
        if (call.c == Collective::reduce_scatter) a.recv_counts.assign(4, call.count);
        const char *online = nullptr;
        ASSERT_EQ(comm.prepare(a, LOOM_FLOAT, false, &online), LOOM_SUCCESS) << last_error_message();
        CallSpec spec;
        ASSERT_EQ(parse_call_spec(call.spec, config, &spec), LOOM_SUCCESS) << last_error_message();
        Explanation e;
        ASSERT_EQ(explain_selection(config, spec.args, &e, spec.knobs), LOOM_SUCCESS);
        EXPECT_STREQ(e.selection.algorithm->name, online) << call.spec;
    }
    std::remove(path.c_str());
}

// Memory types: rules name them (host, cuda, cuda_managed, device, any) and
// match only calls on that memory. A rule naming a host algorithm never
// decides a device call (host algorithms run device buffers only staged);
// one naming a CUDA IPC algorithm does, where that runs. A device call no
// algorithm runs is explained as staged, with the reason.
TEST(Rules, MemoryTypesAreParsedMatchedAndExplained) {
    EXPECT_NE(error_of(R"({"rules": [{"collective": "allreduce", "memory": "gpu", "algorithm": "ring"}]})")
                  .find("\"cuda\", \"cuda_managed\", \"device\" or \"any\""),
              std::string::npos);
    const std::string path = write_file(R"({"rules": [
        {"collective": "allreduce", "memory": "cuda", "algorithm": "ring"},
        {"collective": "allreduce", "memory": "device", "algorithm": "cuda_ipc_one_shot"},
        {"collective": "allreduce", "memory": "host", "algorithm": "recursive_doubling"}]})");
    Config config;
    ASSERT_EQ(config.set("rules_file", path), LOOM_SUCCESS);
    const auto rules = rules_for(config);
    CollArgs a = args(Collective::allreduce, 8, 1 << 20);
    const struct {
        MemoryType memory;
        size_t rule;
    } expect[] = {{MemoryType::cuda, 0}, {MemoryType::cuda_managed, 1}, {MemoryType::host, 2}};
    for (const auto &x : expect) {
        a.memory = x.memory;
        const Rule *r = match_rule(*rules, a);
        ASSERT_NE(r, nullptr) << memory_type_name(x.memory);
        EXPECT_EQ(r->index, x.rule) << memory_type_name(x.memory);
    }
    Selection s;
    a.memory = MemoryType::host;
    ASSERT_EQ(select_algorithm(config, a, &s), LOOM_SUCCESS);
    EXPECT_STREQ(s.algorithm->name, "recursive_doubling");
    // On one node: rule 0's ring cannot run device memory, rule 1 decides.
    a.memory = MemoryType::cuda;
    a.single_node = true;
    ASSERT_EQ(select_algorithm(config, a, &s), LOOM_SUCCESS) << last_error_message();
    EXPECT_STREQ(s.algorithm->name, "cuda_ipc_one_shot");
    EXPECT_EQ(s.why.rfind("rule 1 of " + path, 0), 0u) << s.why;
    // Across nodes nothing runs it on the device.
    a.single_node = false;
    EXPECT_EQ(select_algorithm(config, a, &s), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
    EXPECT_NE(std::string(last_error_message()).find("Loom stages such calls through host memory"), std::string::npos)
        << last_error_message();

    CallSpec spec;
    ASSERT_EQ(parse_call_spec("allreduce 1MiB nodes=4 ppn=2 memory=cuda", config, &spec), LOOM_SUCCESS)
        << last_error_message();
    EXPECT_EQ(spec.args.memory, MemoryType::cuda);
    Explanation e;
    ASSERT_EQ(explain_selection(config, spec.args, &e, spec.knobs), LOOM_SUCCESS);
    EXPECT_EQ(e.selection.algorithm, nullptr);
    const std::string table = format_explanation(spec.args, e);
    EXPECT_NE(table.find("on cuda memory"), std::string::npos) << table;
    EXPECT_NE(table.find("chosen: none (no allreduce algorithm runs"), std::string::npos) << table;
    EXPECT_NE(table.find("rule 0 of " + path + " (memory cuda) names ring"), std::string::npos) << table;
    EXPECT_NE(table.find("host memory only"), std::string::npos) << table;
    EXPECT_EQ(parse_call_spec("allreduce 1MiB memory=gpu", config, &spec), LOOM_ERR_INVALID_ARGUMENT);
    std::remove(path.c_str());
}

// The memory type is part of the plan key: a call on other memory is a
// different plan (one rank on device memory: the CUDA IPC one-shot), and
// managed memory, which Loom reads in place as host memory, is no memory a
// plan is made for.
TEST(Rules, TheMemoryTypeIsPartOfThePlanKey) {
    InProcessFabric fabric(1);
    Communicator comm(fabric.endpoint(0), Config());
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = 64;
    const char *algorithm = nullptr;
    ASSERT_EQ(comm.prepare(a, LOOM_FLOAT, false, &algorithm), LOOM_SUCCESS);
    EXPECT_EQ(comm.cached_plans(), 1u);
    EXPECT_FALSE(std::string(algorithm).rfind("cuda_ipc", 0) == 0) << algorithm;
    a.memory = MemoryType::cuda;
    ASSERT_EQ(comm.prepare(a, LOOM_FLOAT, false, &algorithm), LOOM_SUCCESS) << last_error_message();
    EXPECT_STREQ(algorithm, "cuda_ipc_one_shot");
    EXPECT_EQ(comm.cached_plans(), 2u);
    a.memory = MemoryType::cuda_managed;
    EXPECT_EQ(comm.prepare(a, LOOM_FLOAT, false, &algorithm), LOOM_ERR_ALGORITHM_NOT_APPLICABLE);
    EXPECT_NE(std::string(last_error_message()).find("on cuda_managed memory: managed memory is read"),
              std::string::npos)
        << last_error_message();
    EXPECT_EQ(comm.cached_plans(), 2u);
}

}  // namespace
}  // namespace loom
