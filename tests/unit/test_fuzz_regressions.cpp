// What scripts/fuzz-check.sh found, one test per finding, each with the
// input that found it (also kept in tests/fuzz/regressions/TARGET/): bad
// input gets a clear error naming what was wrong, never a crash or a hang.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "core/params.hpp"
#include "loom.h"
#include "select/call_spec.hpp"
#include "select/rules.hpp"
#include "select/selector.hpp"

namespace loom {
namespace {

// fuzz_rules: a number too large for a double made nlohmann-json throw
// out_of_range, which parse_rules did not catch (std::terminate).
TEST(FuzzRegressions, RulesFileWithANumberTooLargeForADoubleIsInvalidJson) {
    const std::string text =
        "{\"rules\":8888888e888d88ol\": nulse, \"radix\":\377\377\377\377\377\377\377\377 3,m_\"ax outstanding\": "
        "4, \"aper_rank\": [4, null]}]}";
    RuleSet set;
    ASSERT_EQ(parse_rules(text, "fuzz.json", &set), LOOM_ERR_INVALID_ARGUMENT);
    const std::string error = last_error_message();
    EXPECT_EQ(error.rfind("fuzz.json: not valid JSON: ", 0), 0u) << error;
    EXPECT_NE(error.find("number overflow parsing '8888888e888'"), std::string::npos) << error;
}

// fuzz_rules: a rate past a double's range ("81e306GB/s": 8.1e310 bytes
// per microsecond is infinite) was taken as a cost of 0 per byte, which the
// model's description then printed as "infGB/s", a value it refuses.
TEST(FuzzRegressions, CostModelRateBeyondADoubleIsRefused) {
    const std::string text = R"({
  "comment": "optional, ignored",
  "model": "shm=1us:8GB/s,intra=3us:10GB/s,net=5us:1.25GB/s,reduce=81e306GB/s",
  "rules": [
    {"collective": "allreduce", "nodes": [2, null], "ppn": [2, 8],
     "bytes": [0, "8KiB"], "algorithm": "hier_leader"},
    {"collective": "allreduce", "comm_size": [2, 16], "bytes": ["1MiB", null],
     "algorithm": "ring", "segment_size": "256KiB"},
    {"collective": "alltoall", "bytes": [0, 256], "algorithm": "bruck"},
    {"collective": "allgather", "single_node": true, "comm_size": [1, 8],
     "algorithm": "direct", "note": "one node: one round"},
    {"collective": "allgather", "total_bytes": [0, "64KiB"],
     "algorithm": ["recursive_doubling", "bruck"]}
  ]
}
)";
    RuleSet set;
    ASSERT_EQ(parse_rules(text, "fuzz.json", &set), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(last_error_message(),
                 "fuzz.json: field 'model': cost model: reduce='81e306GB/s' is not a bandwidth (e.g. 8GB/s)");
    // The same past the other end, and a latency: refused, not 0 or infinite.
    CostModel m;
    EXPECT_EQ(CostModel::parse("copy=1e-320GB/s", &m), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(CostModel::parse("net=1e306ms:1GB/s", &m), LOOM_ERR_INVALID_ARGUMENT);
}

// fuzz_call_spec: explaining a 100 TiB allreduce built and played plans of
// hundreds of millions of segments (minutes, gigabytes); the model now
// declines to price plans that large, and the explanation says so.
TEST(FuzzRegressions, ExplainingAHugeMessageDeclinesToSimulateIt) {
    const Config config;
    CallSpec spec;
    ASSERT_EQ(parse_call_spec("allreduce 110485766MiB nodes=4 ppn=2 rails=2", config, &spec), LOOM_SUCCESS)
        << last_error_message();
    Explanation e;
    ASSERT_EQ(explain_selection(config, spec.args, &e, spec.knobs), LOOM_SUCCESS) << last_error_message();
    ASSERT_NE(e.selection.algorithm, nullptr);
    size_t declined = 0;
    for (const Prediction &p : e.candidates)
        declined += p.not_applicable.find("more segments times simulated ranks than the 16384 the simulation covers") !=
                    std::string::npos;
    EXPECT_GT(declined, 0u) << format_explanation(spec.args, e);
}

// fuzz_call_spec (CI of stop 49): since node 0's ranks stand for all above
// 256 ranks, 4096 ranks on a node meant simulating 4096 programs of 8192
// steps each, 265 s and 12 GB for this explanation; a million ranks,
// building plans of millions of steps. The model now stops building at its
// step budget and declines; the explanation answers at once.
TEST(FuzzRegressions, ExplainingThousandsOfRanksPerNodeStaysWithinTheStepBudget) {
    const Config config;
    for (const char *text : {"allgather 1 nodes=2 ppn=4096", "allreduce 1KiB nodes=65536 ppn=16"}) {
        CallSpec spec;
        ASSERT_EQ(parse_call_spec(text, config, &spec), LOOM_SUCCESS) << last_error_message();
        Explanation e;
        ASSERT_EQ(explain_selection(config, spec.args, &e, spec.knobs), LOOM_SUCCESS) << last_error_message();
        size_t declined = 0;
        for (const Prediction &p : e.candidates)
            declined += p.not_applicable.find("steps the simulation covers") != std::string::npos;
        EXPECT_GT(declined, 0u) << format_explanation(spec.args, e);
    }
}

// Found with the call description's target: nodes= times ppn= made 2^28
// ranks (the limit of np= alone is 2^20), a node map loom-info spent
// minutes and gigabytes on.
TEST(FuzzRegressions, CallDescriptionWithTooManyRanksIsRefused) {
    CallSpec spec;
    ASSERT_EQ(parse_call_spec("allreduce 1 nodes=65536 ppn=4096", Config(), &spec), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(last_error_message(),
                 "explain: nodes=65536 ppn=4096 makes 268435456 ranks, more than the 1048576 np= allows");
}

// Found with the call description's target: an alltoallv on 10^5 ranks
// made every rank's counts, 10^10 of them, and ended in std::bad_alloc.
TEST(FuzzRegressions, AlltoallvDescriptionTooLargeForItsCountMatrixIsRefused) {
    CallSpec spec;
    ASSERT_EQ(parse_call_spec("alltoallv 1KiB np=100000", Config(), &spec), LOOM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(last_error_message(),
                 "explain: alltoallv on 100000 ranks: every rank's counts (np x np) would take 76293 MiB; at most "
                 "4096 ranks");
    EXPECT_EQ(parse_call_spec("alltoallv 1KiB np=4096", Config(), &spec), LOOM_SUCCESS) << last_error_message();
}

// Found with the parameters' target: a size whose bytes overflow a long
// long (signed overflow); 2^34 GiB wrapped to 0 and was taken as 0.
TEST(FuzzRegressions, SizeTooLargeForALongLongIsRefused) {
    Config config;
    EXPECT_EQ(config.set("segment_size", "17179869184g"), LOOM_ERR_INVALID_PARAMETER_VALUE);
    EXPECT_STREQ(last_error_message(), "parameter segment_size = '17179869184g' is not a size in [0, 1099511627776]");
    long long bytes = 0;
    EXPECT_FALSE(parse_size("999999999999999g", &bytes));
    EXPECT_TRUE(parse_size("8589934591g", &bytes));  // the largest count of GiB that fits
    EXPECT_EQ(bytes, 8589934591LL << 30);
}

// fuzz_c_api: a datatype a C caller passes outside the enumerators' bit
// range was undefined behaviour in libloom's C++ (UBSan: "load of value
// 4294902275, which is not a valid value for type 'loom_datatype_t'");
// over int, every int is a value of the type, and the checks refuse it.
TEST(FuzzRegressions, DatatypeAndOpOutOfTheEnumRangeAreRefused) {
    static_assert(std::is_same<std::underlying_type_t<loom_datatype_t>, int>::value, "any int a C caller passes");
    static_assert(std::is_same<std::underlying_type_t<loom_op_t>, int>::value, "any int a C caller passes");
    size_t size = 0;
    EXPECT_EQ(loom_datatype_size(static_cast<loom_datatype_t>(-65021), &size), LOOM_ERR_INVALID_DATATYPE);
    EXPECT_NE(std::string(loom_last_error()).find("datatype -65021 is not a loom_datatype_t"), std::string::npos)
        << loom_last_error();
    EXPECT_EQ(loom_op_supported(LOOM_FLOAT, static_cast<loom_op_t>(117440768)), 0);
}

// A communicator of `size` ranks (this one rank 0) over a caller's
// transport that nobody is reached through: its calls must post no message.
int never_posted(void *, const void *, size_t, int, uint32_t, int, void **) { return LOOM_ERR_INTERNAL; }
int never_received(void *, void *, size_t, int, uint32_t, int, void **) { return LOOM_ERR_INTERNAL; }
int nothing_to_test(void *, void *const *, size_t, unsigned char *) { return 0; }
loom_comm_t comm_reaching_nobody(int size) {
    loom_transport_t ops{};
    ops.version = LOOM_TRANSPORT_VERSION;
    ops.size = size;
    ops.max_tag = 1u << 30;
    ops.isend = never_posted;
    ops.irecv = never_received;
    ops.test_many = nothing_to_test;
    loom_comm_t comm = nullptr;
    EXPECT_EQ(loom_comm_create_with_transport(&ops, &comm), LOOM_SUCCESS) << loom_last_error();
    return comm;
}

// fuzz_c_api (regressions/c_api/loom-own-type-sized-before-its-check): the value past the public types is Loom's own
// exact-sum type inside, 32 bytes; a user's call sized its count with it and failed on the count, before the type was
// refused. To a user it is no type at all.
TEST(FuzzRegressions, LoomsOwnTypeIsNoUsersType) {
    const loom_datatype_t own = static_cast<loom_datatype_t>(LOOM_DATATYPE_COUNT);
    size_t size = 0;
    EXPECT_EQ(loom_datatype_size(own, &size), LOOM_ERR_INVALID_DATATYPE);
    EXPECT_EQ(loom_op_supported(own, LOOM_SUM), 0);
    loom_comm_t comm = comm_reaching_nobody(1);
    ASSERT_NE(comm, nullptr);
    EXPECT_EQ(loom_alltoall(nullptr, nullptr, 378446901656682560LL, own, comm), LOOM_ERR_INVALID_DATATYPE)
        << loom_last_error();
    loom_comm_free(&comm);
}

// fuzz_c_api: a persistent alltoall of no elements from a NULL sendbuf (as
// MPI allows) passed the NULL to memcpy with 0 bytes (UBSan: "null pointer
// passed as argument 2, which is declared to never be null"), in the
// shared slots' one-rank path.
TEST(FuzzRegressions, PersistentCallOfNothingFromANullBufferRuns) {
    loom_comm_t comm = comm_reaching_nobody(1);
    ASSERT_NE(comm, nullptr);
    unsigned char recv = 0xA5;
    loom_request_t req = nullptr;
    ASSERT_EQ(loom_alltoall_init(nullptr, &recv, 0, LOOM_INT8, comm, &req), LOOM_SUCCESS) << loom_last_error();
    EXPECT_EQ(loom_start(req), LOOM_SUCCESS) << loom_last_error();
    EXPECT_EQ(loom_wait(&req), LOOM_SUCCESS) << loom_last_error();
    EXPECT_EQ(loom_request_free(&req), LOOM_SUCCESS);
    EXPECT_EQ(recv, 0xA5);
    loom_comm_free(&comm);
}

// fuzz_c_api (tests/fuzz/regressions/c_api/prepare-reduce-scatter-counts-summing-past-2-60):
// loom_comm_prepare checked each reduce_scatter count but not their sum,
// which the call refuses, and built a plan for about 2^60 elements (it hung).
TEST(FuzzRegressions, PrepareRefusesCountsWhoseSumIsTooLargeAsTheCallDoes) {
    loom_comm_t comm = comm_reaching_nobody(3);
    ASSERT_NE(comm, nullptr);
    const int64_t counts[3] = {1, int64_t{1} << 60, 0};
    const char *algorithm = nullptr;
    EXPECT_EQ(loom_comm_prepare(comm, "reduce_scatter", 0, counts, LOOM_INT8, 0, &algorithm), LOOM_ERR_INVALID_COUNT);
    EXPECT_NE(std::string(loom_last_error()).find("sum of counts is too large"), std::string::npos)
        << loom_last_error();
    const int64_t negative[3] = {1, -2, 0};
    EXPECT_EQ(loom_comm_prepare(comm, "reduce_scatter", 0, negative, LOOM_INT8, 0, &algorithm), LOOM_ERR_INVALID_COUNT);
    EXPECT_NE(std::string(loom_last_error()).find("counts[1] is negative"), std::string::npos) << loom_last_error();
    loom_comm_free(&comm);
}

}  // namespace
}  // namespace loom
