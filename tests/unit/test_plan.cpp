// The plan IR: layouts, hazard-derived dependencies, joins, validation,
// posting order, the parameter table and the plan cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/params.hpp"
#include "core/plan.hpp"
#include "node_map.hpp"
#include "runtime/communicator.hpp"
#include "select/cost_model.hpp"
#include "transport/inprocess/inprocess.hpp"
#include "transport/ucx/params.hpp"

namespace loom {
namespace {

std::vector<StepId> deps_of(const Program &p, StepId id) {
    const Step &s = p.steps[id];
    return std::vector<StepId>(p.deps.begin() + s.first_dep, p.deps.begin() + s.first_dep + s.dep_count);
}

TEST(BlockLayout, SplitsUnevenlyWithLargerBlocksFirst) {
    BlockLayout l(10, 4);
    EXPECT_EQ(l.count(0), 3u);
    EXPECT_EQ(l.count(1), 3u);
    EXPECT_EQ(l.count(2), 2u);
    EXPECT_EQ(l.count(3), 2u);
    EXPECT_EQ(l.offset(3), 8u);
    EXPECT_EQ(l.total(), 10u);
    EXPECT_EQ(l.span(1, 2), 5u);
    BlockLayout tiny(2, 5);
    EXPECT_EQ(tiny.count(4), 0u);
    BlockLayout explicit_counts(std::vector<size_t>{0, 4, 1});
    EXPECT_EQ(explicit_counts.offset(2), 4u);
}

TEST(ProgramBuilder, DerivesDependenciesFromHazards) {
    Program p;
    ProgramBuilder b(p);
    const Slice tmp = b.scratch(4);
    StepId copy = b.copy(output_slice(0, 4), input_slice(0, 4));
    StepId send = b.send(1, output_slice(0, 4));     // reads output: after the copy
    StepId recv = b.recv(1, tmp);                    // scratch: independent
    StepId red = b.reduce(output_slice(0, 4), tmp);  // writes output: after send (WAR) and recv (RAW)
    StepId send2 = b.send(2, output_slice(2, 2));    // reads what the reduce wrote
    StepId other = b.send(3, input_slice(0, 4));     // input is never written: no deps
    p.finalize();
    EXPECT_TRUE(deps_of(p, copy).empty());
    EXPECT_EQ(deps_of(p, send), std::vector<StepId>{copy});
    EXPECT_TRUE(deps_of(p, recv).empty());
    std::vector<StepId> rd = deps_of(p, red);
    EXPECT_TRUE(std::find(rd.begin(), rd.end(), send) != rd.end());
    EXPECT_TRUE(std::find(rd.begin(), rd.end(), recv) != rd.end());
    EXPECT_EQ(deps_of(p, send2), std::vector<StepId>{red});
    EXPECT_TRUE(deps_of(p, other).empty());
    EXPECT_EQ(p.validate(4, 4), "");
}

TEST(ProgramBuilder, ZeroLengthStepsBecomeJoinsThatKeepTheirDependencies) {
    Program p;
    ProgramBuilder b(p);
    StepId r = b.recv(1, output_slice(0, 3));
    StepId empty = b.send(1, output_slice(0, 0), {r});
    p.finalize();
    EXPECT_EQ(p.steps[empty].kind, StepKind::join);
    EXPECT_EQ(deps_of(p, empty), std::vector<StepId>{r});
}

TEST(ProgramBuilder, AliasedInputOrdersReadsBeforeOutputWrites) {
    Program p;
    ProgramBuilder b(p);
    b.alias_input_to_output(4);
    StepId send = b.send(1, input_slice(0, 2));   // reads output[4..6)
    StepId recv = b.recv(1, output_slice(5, 2));  // overlaps: must wait for the send
    p.finalize();
    EXPECT_EQ(deps_of(p, recv), std::vector<StepId>{send});
}

TEST(Program, ValidateReportsOutOfBoundsAndInputWrites) {
    Program p;
    ProgramBuilder b(p);
    b.send(1, output_slice(2, 5));
    p.finalize();
    EXPECT_NE(p.validate(0, 4).find("out of bounds"), std::string::npos);
    Program q;
    ProgramBuilder c(q);
    c.recv(1, input_slice(0, 1));
    q.finalize();
    EXPECT_NE(q.validate(4, 4).find("writes the input"), std::string::npos);
}

TEST(Program, MessagesToOnePeerArePostedInProgramOrder) {
    Program p;
    ProgramBuilder b(p);
    StepId first = b.send(1, input_slice(0, 1));
    StepId other_peer = b.send(2, input_slice(0, 1));
    StepId second = b.send(1, input_slice(1, 1));
    p.finalize();
    EXPECT_EQ(p.next_in_peer_order[first], second);
    EXPECT_EQ(p.next_in_peer_order[other_peer], Program::kNoStep);
    EXPECT_EQ(p.initial_unmet[second], 1u);  // waits for `first` to be posted
}

TEST(Params, DefaultsAreValidAndEveryParameterHasHelp) {
    Config c;
    for (const ParamSpec &s : param_table()) {
        EXPECT_EQ(c.raw(s.id), s.default_value);
        EXPECT_GT(std::string(s.help).size(), 10u) << s.name;
        EXPECT_EQ(param_env_name(s).rfind("LOOM_", 0), 0u);
    }
    EXPECT_EQ(forced_algorithm(c, Collective::allreduce), "auto");
    EXPECT_EQ(c.integer(kParamSegmentSize), 256 * 1024);
}

TEST(Params, EveryDeclaredParameterIsListedOnceBySection) {
    const std::vector<ParamSpec> &table = param_table();
    std::set<std::string> names;
    std::set<int> ids;
    for (size_t i = 0; i < table.size(); ++i) {
        EXPECT_TRUE(names.insert(table[i].name).second) << table[i].name << " declared twice";
        EXPECT_TRUE(ids.insert(table[i].id.index).second) << table[i].name;
        EXPECT_EQ(find_param(table[i].name), &table[i]);
        if (i > 0) {
            EXPECT_LE(table[i - 1].section, table[i].section) << table[i].name;
        }
    }
    // Ids are the places of the values: 0 .. n-1, whatever the listing order.
    EXPECT_EQ(*ids.begin(), 0);
    EXPECT_EQ(*ids.rbegin(), static_cast<int>(table.size()) - 1);
    // Declared in the subsystems that read them, from the core up to the rails.
    for (const char *name : {"verbose", "allreduce_algorithm", "segment_size", "plan_cache_entries", "shared_memory",
                             "cost_model", "topology", "rails", "progress_thread", "cuda_ipc", "trace", "hang_abort"})
        EXPECT_NE(find_param(name), nullptr) << name;
    Config c;
    EXPECT_EQ(c.set("rails", "rail0,rail1"), LOOM_SUCCESS);
    EXPECT_EQ(c.raw(kParamRails), "rail0,rail1");
    EXPECT_EQ(c.raw(kParamTopology), "");
}

TEST(Params, TypesOwnedAboveCheckTheirValues) {
    Config c;
    EXPECT_EQ(c.set("cost_model", "net=bogus"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    EXPECT_NE(std::string(last_error_message()).find("parameter cost_model"), std::string::npos);
    EXPECT_EQ(c.set("topology", "nodes=0"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    EXPECT_NE(std::string(last_error_message()).find("parameter topology"), std::string::npos);
    EXPECT_EQ(c.set("alltoall_algorithm", "ring"), LOOM_ERR_UNKNOWN_ALGORITHM);
    EXPECT_EQ(c.raw(kParamCostModel), "");  // unchanged on error
    EXPECT_EQ(c.set("topology", "nodes=2"), LOOM_SUCCESS);
    EXPECT_EQ(c.set("alltoall_algorithm", "bruck"), LOOM_SUCCESS);
}

TEST(Params, BadNamesAndValuesAreClearErrors) {
    Config c;
    EXPECT_EQ(c.set("allreduce_algorithm", "ring"), LOOM_SUCCESS);
    EXPECT_EQ(forced_algorithm(c, Collective::allreduce), "ring");
    EXPECT_EQ(c.set("allreduce_algorithm", "bogus"), LOOM_ERR_UNKNOWN_ALGORITHM);
    EXPECT_NE(std::string(last_error_message()).find("no algorithm 'bogus'"), std::string::npos);
    EXPECT_NE(std::string(last_error_message()).find("ring"), std::string::npos);  // lists the known ones
    EXPECT_EQ(forced_algorithm(c, Collective::allreduce), "ring");                 // unchanged on error
    EXPECT_EQ(c.set("no_such_knob", "1"), LOOM_ERR_UNKNOWN_PARAMETER);
    EXPECT_EQ(c.set("segment_size", "12 apples"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    EXPECT_EQ(c.set("knomial_radix", "1"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    EXPECT_EQ(c.set("segment_size", "64KiB"), LOOM_SUCCESS);
    EXPECT_EQ(c.integer(kParamSegmentSize), 65536);
}

TEST(Params, EnvironmentVariablesOverrideDefaults) {
    setenv("LOOM_ALLGATHER_ALGORITHM", "bruck", 1);
    Config c;
    EXPECT_EQ(c.load_environment(), LOOM_SUCCESS);
    EXPECT_EQ(forced_algorithm(c, Collective::allgather), "bruck");
    setenv("LOOM_ALLGATHER_ALGORITHM", "nonsense", 1);
    Config d;
    EXPECT_EQ(d.load_environment(), LOOM_ERR_UNKNOWN_ALGORITHM);
    EXPECT_NE(std::string(last_error_message()).find("LOOM_ALLGATHER_ALGORITHM"), std::string::npos);
    unsetenv("LOOM_ALLGATHER_ALGORITHM");
}

TEST(PlanCache, ReusesPlansAndEvictsLeastRecentlyUsed) {
    InProcessFabric fabric(1);
    Config config;
    ASSERT_EQ(config.set("plan_cache_entries", "2"), LOOM_SUCCESS);
    Communicator comm(fabric.endpoint(0), config);
    std::vector<int32_t> in(64, 1), out(64);
    auto call = [&](size_t count) {
        CollArgs a;
        a.collective = Collective::allreduce;
        a.count = count;
        CallData d;
        d.sendbuf = in.data();
        d.recvbuf = out.data();
        d.type = LOOM_INT32;
        d.op = LOOM_SUM;
        ASSERT_EQ(comm.run(a, d), LOOM_SUCCESS) << last_error_message();
    };
    call(8);
    call(8);
    EXPECT_EQ(comm.plan_builds(), 1u);
    call(16);
    call(32);  // evicts 8
    EXPECT_EQ(comm.cached_plans(), 2u);
    call(8);
    EXPECT_EQ(comm.plan_builds(), 4u);
    EXPECT_EQ(out[0], 1);
    // A parameter change between calls takes effect at the next call, even
    // for a shape whose plan is cached.
    ASSERT_EQ(comm.config().set("allreduce_algorithm", "ring"), LOOM_SUCCESS);
    call(8);
    EXPECT_STREQ(comm.last_algorithm(Collective::allreduce), "ring");
    ASSERT_EQ(comm.config().set("allreduce_algorithm", "rabenseifner"), LOOM_SUCCESS);
    call(8);
    EXPECT_STREQ(comm.last_algorithm(Collective::allreduce), "rabenseifner");
}

}  // namespace
}  // namespace loom
