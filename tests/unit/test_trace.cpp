// The step timeline: phase names of compositions, and the trace files a
// traced communicator writes (every step of every call, parseable as
// Chrome trace-event JSON, a file per rank, a bad path reported).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "algorithms/algorithm.hpp"
#include "algorithms/compose.hpp"
#include "node_map.hpp"
#include "runtime/communicator.hpp"
#include "transport/inprocess/inprocess.hpp"

namespace loom {
namespace {

TEST(ProgramPhases, NamedGroupsNameTheirStepsAndNest) {
    Program p;
    ProgramBuilder b(p);
    b.copy(output_slice(0, 4), input_slice(0, 4));
    b.push_group({0, 1}, input_slice(0, 4), output_slice(0, 4), -1, "outer");
    b.send(1, input_slice(0, 4));
    b.push_group({1, 0}, input_slice(0, 2), output_slice(0, 2), -1, "inner");
    b.recv(0, output_slice(0, 2));
    b.pop_group();
    b.pop_group();
    b.copy(output_slice(0, 1), input_slice(0, 1));
    ASSERT_EQ(p.step_phase.size(), p.size());
    EXPECT_EQ(p.phase_of(0), "");
    EXPECT_EQ(p.phase_of(1), "outer");
    EXPECT_EQ(p.phase_of(2), "outer / inner");
    EXPECT_EQ(p.phase_of(3), "");
    Program none;
    ProgramBuilder nb(none);
    nb.copy(output_slice(0, 4), input_slice(0, 4));
    EXPECT_TRUE(none.step_phase.empty());  // a plan without named groups pays nothing
}

// 64 Ki floats over 4 ranks on 2 nodes.
CollArgs allreduce_on_two_nodes(const NodeMap &map) {
    CollArgs a;
    a.collective = Collective::allreduce;
    a.nranks = 4;
    a.count = 1 << 16;
    a.elem_size = 4;
    a.nodes = &map;
    return a;
}

TEST(ProgramPhases, NodeAwarePlansNameTheirSubCollectives) {
    NodeMap map;
    ASSERT_EQ(NodeMap::parse("nodes=2", 4, &map), LOOM_SUCCESS);
    const CollArgs a = allreduce_on_two_nodes(map);
    const Program p = build_program(*find_algorithm(Collective::allreduce, "hier_split"), a, PlanKnobs(), 0);
    std::set<std::string> phases;
    for (StepId id = 0; id < p.size(); ++id) phases.insert(p.phase_of(id));
    EXPECT_TRUE(phases.count("reduce_scatter direct over 2 (node)") ||
                phases.count("reduce_scatter pairwise over 2 (node)"))
        << *phases.begin();
    bool inter = false;
    for (const std::string &s : phases)
        inter |= s.rfind("allreduce ", 0) == 0 && s.find(" over 2") != std::string::npos;
    EXPECT_TRUE(inter);
}

const AlgorithmInfo *ring_where_it_runs(const CollArgs &sub, const PlanKnobs &) {
    const AlgorithmInfo *ring = find_algorithm(sub.collective, "ring");
    return ring && ring->not_applicable(sub).empty() ? ring : nullptr;
}

const AlgorithmInfo *declines(const CollArgs &, const PlanKnobs &) { return nullptr; }

TEST(ProgramPhases, SubCollectivesTakeTheInstalledChooser) {
    NodeMap map;
    ASSERT_EQ(NodeMap::parse("nodes=2", 4, &map), LOOM_SUCCESS);
    const CollArgs a = allreduce_on_two_nodes(map);
    const auto phases_of = [&] {
        const Program p = build_program(*find_algorithm(Collective::allreduce, "hier_split"), a, PlanKnobs(), 0);
        std::set<std::string> phases;
        for (StepId id = 0; id < p.size(); ++id) phases.insert(p.phase_of(id));
        return phases;
    };
    const std::set<std::string> defaults = phases_of();
    const SubCollectiveChooser before = choose_sub_collectives_with(ring_where_it_runs);
    EXPECT_NE(before, nullptr);  // the selector installed its default rules
    const std::set<std::string> rings = phases_of();
    // A chooser that declines leaves the first applicable algorithm.
    choose_sub_collectives_with(declines);
    const std::set<std::string> declined = phases_of();
    choose_sub_collectives_with(before);
    EXPECT_TRUE(rings.count("reduce_scatter ring over 2 (node)")) << *rings.begin();
    EXPECT_TRUE(rings.count("allreduce ring over 2")) << *rings.begin();
    // hier_split's inter-node phase: an allreduce of half the vector over 2 ranks.
    const CollArgs inter = sub_args(a, Collective::allreduce, 2, a.count / 2, false);
    std::string first_allreduce;
    for (const AlgorithmInfo *algo : algorithms_for(Collective::allreduce))
        if (first_allreduce.empty() && algo->build && why_not_applicable(*algo, inter).empty())
            first_allreduce = algo->name;
    EXPECT_TRUE(declined.count("allreduce " + first_allreduce + " over 2")) << first_allreduce;
    EXPECT_EQ(phases_of(), defaults);
}

nlohmann::json read_trace(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str(), nullptr, false);
}

TEST(Trace, EveryRankWritesEveryStepOfEveryCall) {
    char dir[] = "/tmp/loom-trace-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string tmpl = std::string(dir) + "/rank-%r.json";
    const int p = 3;
    {
        InProcessFabric fabric(p);
        std::vector<std::unique_ptr<Communicator>> comms;
        for (int r = 0; r < p; ++r) {
            Config c;
            ASSERT_EQ(c.set("trace", tmpl), LOOM_SUCCESS);
            ASSERT_EQ(c.set("allreduce_algorithm", "ring"), LOOM_SUCCESS);
            comms.push_back(std::make_unique<Communicator>(fabric.endpoint(r), c));
        }
        std::vector<std::thread> threads;
        for (int r = 0; r < p; ++r)
            threads.emplace_back([&, r] {
                std::vector<int32_t> in(1000, r + 1), out(1000);
                for (int call = 0; call < 2; ++call) {
                    CollArgs a;
                    a.collective = Collective::allreduce;
                    a.count = in.size();
                    ASSERT_EQ(comms[r]->run(a, CallData::of(in.data(), false, out.data(), LOOM_INT32, LOOM_SUM)),
                              LOOM_SUCCESS);
                    EXPECT_EQ(out[999], 6);
                }
                std::unique_ptr<Request> req;  // a nonblocking call is traced too
                CollArgs a;
                a.collective = Collective::allreduce;
                a.count = in.size();
                ASSERT_EQ(comms[r]->start(a, CallData::of(in.data(), false, out.data(), LOOM_INT32, LOOM_SUM), &req),
                          LOOM_SUCCESS);
                ASSERT_EQ(req->wait(), LOOM_SUCCESS);
            });
        for (auto &t : threads) t.join();
    }  // the communicators close their files
    for (int r = 0; r < p; ++r) {
        const nlohmann::json doc = read_trace(std::string(dir) + "/rank-" + std::to_string(r) + ".json");
        ASSERT_TRUE(doc.is_array()) << "rank " << r;
        int calls = 0;
        std::map<long long, std::set<long long>> steps;  // call -> steps seen
        std::map<long long, long long> planned, joins;
        for (const auto &e : doc) {
            if (e.value("ph", "") != "X") continue;
            EXPECT_EQ(e.value("pid", -1), r);
            const auto &args = e["args"];
            if (e.value("cat", "") == "call") {
                ++calls;
                EXPECT_EQ(args.value("algorithm", ""), "ring");
                planned[args.value("call", -1LL)] = args.value("steps", 0LL);
                joins[args.value("call", -1LL)] = args.value("joins", 0LL);
                EXPECT_EQ(args.value("bytes", 0LL), 4000);
            } else {
                steps[args.value("call", -1LL)].insert(args.value("step", -1LL));
                EXPECT_GE(e.value("dur", -1.0), 0.0);
                if (e.value("cat", "") == "send" || e.value("cat", "") == "recv") {
                    EXPECT_EQ(args.value("transport", ""), "inprocess");
                    EXPECT_GE(args.value("peer", -1), 0);
                }
            }
        }
        EXPECT_EQ(calls, 3) << "rank " << r;
        ASSERT_EQ(planned.size(), 3u);
        for (const auto &[call, n] : planned)
            EXPECT_EQ(static_cast<long long>(steps[call].size()) + joins[call], n) << "rank " << r << " call " << call;
        unlink((std::string(dir) + "/rank-" + std::to_string(r) + ".json").c_str());
    }
    rmdir(dir);
}

TEST(Trace, AnUnwritablePathIsReportedAndTheCallsRunUntraced) {
    InProcessFabric fabric(1);
    Config c;
    ASSERT_EQ(c.set("trace", "/nonexistent-loom-dir/t-%r.json"), LOOM_SUCCESS);
    Communicator comm(fabric.endpoint(0), c);
    std::vector<int32_t> in(10, 2), out(10);
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = in.size();
    testing::internal::CaptureStderr();
    ASSERT_EQ(comm.run(a, CallData::of(in.data(), false, out.data(), LOOM_INT32, LOOM_SUM)), LOOM_SUCCESS);
    ASSERT_EQ(comm.run(a, CallData::of(in.data(), false, out.data(), LOOM_INT32, LOOM_SUM)), LOOM_SUCCESS);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("loom: trace: cannot write the trace file '/nonexistent-loom-dir/t-0.json'"), std::string::npos)
        << err;
    EXPECT_EQ(out[0], 2);
}

}  // namespace
}  // namespace loom
