// Every registered algorithm against a plain reference: communicator sizes
// 1..17, 32 and 33; counts 0, 1, p-1, p, p+1 and a large odd one; every
// (datatype, op) pair MPI defines; in place and out of place; under the eager
// and the rendezvous protocol (the latter catches plans that deadlock on MPI).
// Allreduce algorithms also give every rank the same bits on inputs whose
// floating-point sums depend on the order of the reductions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "call_args.hpp"
#include "cooperative_runner.hpp"
#include "core/reduced_float.hpp"
#include "node_map.hpp"
#include "reference.hpp"
#include "topologies.hpp"

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
    std::set<size_t> c = {
        0, 1, static_cast<size_t>(p - 1), static_cast<size_t>(p), static_cast<size_t>(p + 1), kLargeOddCount};
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
    // The vector collectives with even blocks in rank order: alltoall's and allgather's
    // layouts, checked alike; uneven and scattered blocks have their own test below.
    if (is_vector_collective(algo.collective)) set_uniform_blocks(a, count);
    a.elem_size = elem_size;
    a.in_place = in_place;
    return a;
}

// The knobs the matrices build with.
PlanKnobs matrix_knobs(int radix = 3, size_t segment_bytes = 256) {
    PlanKnobs k;
    k.segment_bytes = segment_bytes;  // small enough that ring algorithms really segment
    k.radix = radix;                  // 3 exercises recursive multiplying's fold
    k.max_outstanding = 3;
    k.ring_piece_bytes = 512;  // scattered alltoall sends the large odd blocks in uneven pieces
    return k;
}

std::string where(const CollArgs &a, const char *algo, const std::string &what) {
    return std::string(algo) + " " + a.describe() + (a.nodes ? " on " + a.nodes->describe() : "") + " " + what;
}

// Reductions: runs `combo` on the plan set and compares every rank's result.
std::string check_reduction(const PlanSet &set, const Combo &combo, InProcessProtocol protocol, uint64_t seed,
                            const ShmOptions *shm = nullptr, World *world = nullptr) {
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
    std::string err = run_plans(set, reduction_kernel(t.type, combo.op), bufs, protocol, shm, world);
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

std::string check_movement(const PlanSet &set, InProcessProtocol protocol, const ShmOptions *shm = nullptr,
                           World *world = nullptr) {
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
        else bufs[r].input = inputs[r];
    }
    std::string err = run_plans(set, nullptr, bufs, protocol, shm, world);
    if (!err.empty()) return err;
    for (int r = 0; r < p; ++r) {
        for (int src = 0; src < p; ++src) {
            // allgather: block src is src's input; alltoall: block src is src's block r.
            const bool gathers = a.collective == Collective::allgather || a.collective == Collective::allgatherv;
            const size_t block = a.collective == Collective::alltoallv ? a.recv_counts[src] : a.count;
            const size_t src_first = gathers ? 0 : r * block;
            for (size_t e = 0; e < block; ++e)
                for (size_t b = 0; b < es; ++b)
                    if (bufs[r].output[(src * block + e) * es + b] != pattern(src, src_first + e, b))
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
    // Each plan runs a few of its element size's (type, op) pairs, the next
    // ones in turn, so every pair still runs on many sizes and counts (checked
    // below) while the suite runs in a fraction of the full product's time.
    constexpr size_t kCombosPerPlan = 3;
    std::map<size_t, size_t> turn;                       // per element size: the next pair to run
    std::map<std::pair<const TypeCase *, int>, int> ran;  // runs per pair
    for (int p : communicator_sizes()) {
        // Node-aware plans grow as p^2 messages; 2..17 ranks cover every
        // shape of node (three topologies each) in a sensible time.
        if (node_aware(algo) && p > 17) continue;
        const std::vector<NodeMap> maps = emulated_topologies(p);
        for (const NodeMap *nodes : variants(algo, maps))
            for (size_t count : counts_for(p)) {
                for (bool in_place : {false, true}) {
                    if (reduces(algo.collective)) {
                        for (const auto &[es, group] : by_size) {
                            CollArgs a = make_args(algo, p, count, in_place, es);
                            a.nodes = nodes;
                            if (!algo.not_applicable(a).empty()) continue;
                            const PlanSet set = build_plans(algo, a, matrix_knobs());
                            for (size_t j = 0; j < std::min(kCombosPerPlan, group.size()); ++j) {
                                const Combo &combo = group[turn[es]++ % group.size()];
                                // The deadlock check does not depend on the type: once per plan.
                                const InProcessProtocol proto =
                                    j == 0 ? InProcessProtocol::rendezvous : InProcessProtocol::eager;
                                std::string err = check_reduction(set, combo, proto, seed++);
                                ++cases;
                                ++ran[{combo.type, combo.op}];
                                if (!err.empty() && failures++ < 20) ADD_FAILURE() << where(a, algo.name, err);
                            }
                        }
                    } else {
                        for (size_t es : elem_sizes) {
                            CollArgs a = make_args(algo, p, count, in_place, es);
                            a.nodes = nodes;
                            if (!algo.not_applicable(a).empty()) continue;
                            const PlanSet set = build_plans(algo, a, matrix_knobs());
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
    if (reduces(algo.collective))
        for (const Combo &c : combos) {
            const int runs = ran[{c.type, c.op}];
            EXPECT_GE(runs, 4) << algo.name << " ran " << c.type->name << " " << op_name(c.op) << " only " << runs
                               << " times";
        }
    RecordProperty("cases", cases);
}

std::string algorithm_test_name(const ::testing::TestParamInfo<const AlgorithmInfo *> &info) {
    return std::string(collective_name(info.param->collective)) + "_" + info.param->name;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, AlgorithmMatrix, ::testing::ValuesIn(plan_algorithms()), algorithm_test_name);

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
        const ShmOptions shm = tiny_rings(nodes);
        for (int p : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17}) {
            // Node-aware algorithms see the nodes the rings emulate.
            std::vector<int> labels(p);
            for (int r = 0; r < p; ++r) labels[r] = r % nodes;
            const NodeMap map = NodeMap::from_labels(labels);
            World world;  // every call of this shape on the same transports
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
                            std::string err = check_reduction(build_plans(algo, a, matrix_knobs()), combo,
                                                              InProcessProtocol::rendezvous, seed++, &shm, &world);
                            ++cases;
                            if (!err.empty() && failures++ < 20)
                                ADD_FAILURE() << "nodes=" << nodes << " " << where(a, algo.name, err);
                        }
                    } else {
                        for (size_t es : {size_t{1}, size_t{8}, size_t{32}}) {
                            CollArgs a = make_args(algo, p, count, in_place, es);
                            if (node_aware(algo)) a.nodes = &map;
                            if (!algo.not_applicable(a).empty()) continue;
                            std::string err = check_movement(build_plans(algo, a, matrix_knobs()),
                                                             InProcessProtocol::rendezvous, &shm, &world);
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

// Floating-point formats of the same-bits test; values pass through long double.
struct FloatFormat {
    loom_datatype_t type;
    const char *name;
    size_t size;         // bytes per element
    size_t value_bytes;  // bytes holding the value (long double's padding is not compared)
    long double unit_roundoff;
    long double big;  // the cancelling SUM pair: swallows the small values, stays finite
    void (*encode)(long double, void *);
    long double (*decode)(const void *);
};

template <typename T>
void encode_native(long double v, void *out) {
    const T x = static_cast<T>(v);
    std::memcpy(out, &x, sizeof(T));
}
template <typename T>
long double decode_native(const void *in) {
    T x;
    std::memcpy(&x, in, sizeof(T));
    return x;
}
template <uint16_t (*to_bits)(float)>
void encode_reduced(long double v, void *out) {
    const uint16_t h = to_bits(static_cast<float>(v));
    std::memcpy(out, &h, 2);
}
template <float (*from_bits)(uint16_t)>
long double decode_reduced(const void *in) {
    uint16_t h;
    std::memcpy(&h, in, 2);
    return from_bits(h);
}

const std::vector<FloatFormat> &float_formats() {
    constexpr size_t long_double_value_bytes =
        std::numeric_limits<long double>::digits == 64 ? 10 : sizeof(long double);  // x87: 6 bytes of padding
    static const std::vector<FloatFormat> formats = {
        {LOOM_FLOAT16, "float16", 2, 2, 0x1p-11L, 1e4L, encode_reduced<float_to_fp16>, decode_reduced<fp16_to_float>},
        {LOOM_BFLOAT16, "bfloat16", 2, 2, 0x1p-8L, 1e6L, encode_reduced<float_to_bf16>, decode_reduced<bf16_to_float>},
        {LOOM_FLOAT, "float", sizeof(float), sizeof(float), 0x1p-24L, 1e6L, encode_native<float>, decode_native<float>},
        {LOOM_DOUBLE, "double", sizeof(double), sizeof(double), 0x1p-53L, 1e6L, encode_native<double>,
         decode_native<double>},
        {LOOM_LONG_DOUBLE, "long_double", sizeof(long double), long_double_value_bytes,
         std::numeric_limits<long double>::epsilon() / 2, 1e6L, encode_native<long double>, decode_native<long double>},
    };
    return formats;
}

// Rank `rank`'s element i of p. SUM: one rank holds +big, another -big, the
// rest small values, the two ranks depending on i, so the exact sum is small
// and any other order of the additions shows in its bits. PROD: 3 and 1/3
// among factors near 1.
long double cancelling_value(const FloatFormat &f, loom_op_t op, int p, int rank, size_t i) {
    const int plus = static_cast<int>(i % p);
    int minus = static_cast<int>((i + 1 + i / p) % p);
    if (minus == plus) minus = (minus + 1) % p;
    const int small = static_cast<int>((static_cast<size_t>(rank) * 7 + i * 3) % 11);
    const bool paired = p > 1 && (rank == plus || rank == minus);
    if (op == LOOM_SUM) return paired ? (rank == plus ? f.big : -f.big) : 0.01L * (1 + small);
    return paired ? (rank == plus ? 3.0L : 1.0L / 3) : 1 + 0.01L * (small - 5);
}

std::string number(long double v) {
    char text[48];
    std::snprintf(text, sizeof text, "%.21Lg", v);
    return text;
}

// Runs an allreduce plan on cancelling inputs. Empty when every rank got the
// same bits and those are within the rounding error bound of the exact
// result (same bits could be the same wrong bits), else what is wrong.
std::string check_same_bits(const PlanSet &set, const FloatFormat &f, loom_op_t op) {
    const CollArgs &a = set.args;
    const int p = a.nranks;
    const size_t n = a.count, es = f.size;
    std::vector<RankBuffers> bufs(p);
    std::vector<long double> exact(n, op == LOOM_SUM ? 0 : 1), magnitude(n, 0);
    for (int r = 0; r < p; ++r) {
        bufs[r].input.assign(n * es + 1, 0);
        bufs[r].output.assign(n * es + 1, 0xEE);
        for (size_t i = 0; i < n; ++i) {
            f.encode(cancelling_value(f, op, p, r, i), &bufs[r].input[i * es]);
            const long double x = f.decode(&bufs[r].input[i * es]);  // as rounded to the format
            exact[i] = op == LOOM_SUM ? exact[i] + x : exact[i] * x;
            magnitude[i] += std::fabs(x);
        }
    }
    std::string err = run_plans(set, reduction_kernel(f.type, op), bufs);
    if (!err.empty()) return err;
    for (int r = 1; r < p; ++r)
        for (size_t i = 0; i < n; ++i)
            if (std::memcmp(&bufs[r].output[i * es], &bufs[0].output[i * es], f.value_bytes) != 0)
                return "rank " + std::to_string(r) + " element " + std::to_string(i) + " is " +
                       number(f.decode(&bufs[r].output[i * es])) + ", rank 0 has " +
                       number(f.decode(&bufs[0].output[i * es]));
    for (size_t i = 0; i < n; ++i) {
        const long double got = f.decode(&bufs[0].output[i * es]);
        const long double bound = 2 * p * f.unit_roundoff * (op == LOOM_SUM ? magnitude[i] : std::fabs(exact[i]));
        if (!(std::fabs(got - exact[i]) <= bound))
            return "element " + std::to_string(i) + " is " + number(got) + ", exactly " + number(exact[i]);
    }
    return {};
}

bool equal_slices(const Slice &x, const Slice &y) {
    return x.buffer == y.buffer && x.offset == y.offset && x.count == y.count;
}

bool same_plans(const PlanSet &x, const PlanSet &y) {
    for (size_t r = 0; r < x.programs.size(); ++r) {
        const Program &u = *x.programs[r], &v = *y.programs[r];
        if (u.steps.size() != v.steps.size() || u.deps != v.deps || u.scratch_count != v.scratch_count) return false;
        for (size_t i = 0; i < u.steps.size(); ++i) {
            const Step &s = u.steps[i], &t = v.steps[i];
            if (s.kind != t.kind || s.lane != t.lane || s.peer != t.peer || !equal_slices(s.dst, t.dst) ||
                !equal_slices(s.src, t.src) || s.first_dep != t.first_dep || s.dep_count != t.dep_count)
                return false;
        }
    }
    return true;
}

// Floating-point reduction is not associative, so ranks that combine the
// same vectors in different orders get different bits; an allreduce must
// give every rank the same ones. Cancelling inputs make any difference in
// order visible; radices 2..5 where the plan depends on the radix, every
// emulated topology for the node-aware algorithms.
// Only allreduce leaves one result on every rank: the registry's allreduce algorithms.
class AllreduceMatrix : public AlgorithmMatrix {};

TEST_P(AllreduceMatrix, GivesEveryRankTheSameBits) {
    const AlgorithmInfo &algo = *GetParam();
    int failures = 0, cases = 0;
    for (int p : communicator_sizes()) {
        if (node_aware(algo) && p > 17) continue;
        const std::vector<NodeMap> maps = emulated_topologies(p);
        for (const NodeMap *nodes : variants(algo, maps)) {
            // The radices that change the plans of this shape (checked at one count), each run once.
            std::vector<int> radices;
            std::vector<PlanSet> distinct;
            for (int radix = 2; radix <= 5; ++radix) {
                CollArgs a = make_args(algo, p, static_cast<size_t>(p + 1), false, 4);
                a.nodes = nodes;
                if (!algo.not_applicable(a).empty()) continue;
                PlanSet set = build_plans(algo, a, matrix_knobs(radix));
                if (std::any_of(distinct.begin(), distinct.end(), [&](const PlanSet &d) { return same_plans(d, set); }))
                    continue;
                radices.push_back(radix);
                distinct.push_back(std::move(set));
            }
            for (int radix : radices)
                for (size_t count : counts_for(p)) {
                    if (count == 0) continue;
                    for (const FloatFormat &f : float_formats()) {
                        CollArgs a = make_args(algo, p, count, false, f.size);
                        a.nodes = nodes;
                        const PlanSet set = build_plans(algo, a, matrix_knobs(radix));
                        for (loom_op_t op : {LOOM_SUM, LOOM_PROD}) {
                            const std::string err = check_same_bits(set, f, op);
                            ++cases;
                            if (!err.empty() && failures++ < 10)
                                ADD_FAILURE() << where(a, algo.name,
                                                       std::string(f.name) + " " + op_name(op) +
                                                           " radix=" + std::to_string(radix) + ": " + err);
                        }
                    }
                }
        }
    }
    EXPECT_GT(cases, 0) << algo.name << " never ran";
    EXPECT_EQ(failures, 0) << failures << " of " << cases << " cases failed";
    RecordProperty("cases", cases);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, AllreduceMatrix, ::testing::ValuesIn(plan_algorithms(static_cast<int>(Collective::allreduce))),
                         algorithm_test_name);

// Ring algorithms with and without segmentation, and recursive multiplying
// with several radices, give the same results.
TEST(AlgorithmKnobs, SegmentationAndRadixDoNotChangeResults) {
    const Combo combo{&all_type_cases()[4], LOOM_SUM};  // int32 SUM
    ASSERT_EQ(combo.type->type, LOOM_INT32);
    for (const AlgorithmInfo *algo : plan_algorithms()) {
        if (!reduces(algo->collective)) continue;
        for (int p : {2, 5, 8, 9, 16}) {
            for (size_t segment : {size_t{0}, size_t{4}, size_t{64}, size_t{1} << 20}) {
                for (int radix : {2, 3, 4, 8}) {
                    CollArgs a = make_args(*algo, p, 257, false, 4);
                    if (!algo->not_applicable(a).empty()) continue;
                    std::string err = check_reduction(build_plans(*algo, a, matrix_knobs(radix, segment)), combo,
                                                      InProcessProtocol::rendezvous, 99);
                    EXPECT_TRUE(err.empty()) << algo->name << " segment=" << segment << " radix=" << radix << " "
                                             << a.describe() << ": " << err;
                }
            }
        }
    }
}

// hier_pipelined's point: the network phase of the first chunk waits for
// that chunk's node reduce-scatter only, not for every chunk's (as
// hier_split's single chunk does), and the chunk count follows the ring's
// segment size (four segments per piece, at most eight chunks).
TEST(HierPipelined, TheFirstChunkCrossesTheNetworkBeforeTheOthersAreSummed) {
    NodeMap map;
    ASSERT_EQ(NodeMap::parse("nodes=2", 4, &map), LOOM_SUCCESS);
    CollArgs a = args(Collective::allreduce, 4, 0);
    PlanKnobs knobs;
    knobs.segment_bytes = 256;
    a.nodes = &map;
    const int rank = 0;
    const auto same_node = [&](int peer) { return map.node_of[peer] == map.node_of[rank]; };
    // Intra-node receives in the program, and in the first inter-node send's dependency closure.
    const auto count_node_receives = [&](const Program &p, int *total, int *before_network) {
        *total = *before_network = 0;
        StepId first_network = p.size();
        for (StepId id = 0; id < p.size(); ++id) {
            const Step &s = p.steps[id];
            if (s.kind == StepKind::recv && same_node(s.peer)) ++*total;
            if (s.kind == StepKind::send && !same_node(s.peer) && first_network == p.size()) first_network = id;
        }
        ASSERT_LT(first_network, p.size());
        std::vector<char> seen(p.size(), 0);
        std::vector<StepId> todo = {first_network};
        while (!todo.empty()) {
            const StepId id = todo.back();
            todo.pop_back();
            if (seen[id]) continue;
            seen[id] = 1;
            const Step &s = p.steps[id];
            if (s.kind == StepKind::recv && same_node(s.peer)) ++*before_network;
            for (uint32_t d = 0; d < s.dep_count; ++d) todo.push_back(p.deps[s.first_dep + d]);
        }
    };
    // 4 chunks: 4 segments x 256 B x 2 pieces per chunk, 8 KiB in all.
    a.count = 4 * 4 * 256 * 2 / 4;
    const Program pipelined = build_program(*find_algorithm(Collective::allreduce, "hier_pipelined"), a, knobs, rank);
    int total = 0, before = 0;
    count_node_receives(pipelined, &total, &before);
    EXPECT_EQ(total, 8);   // each chunk: one from the node's other rank to sum, one to gather
    EXPECT_EQ(before, 1);  // the first chunk's sum only
    // Past eight chunks' worth, still eight; without segmentation, one (hier_split's program).
    a.count *= 4;
    count_node_receives(build_program(*find_algorithm(Collective::allreduce, "hier_pipelined"), a, knobs, rank), &total,
                        &before);
    EXPECT_EQ(total, 16);
    knobs.segment_bytes = 0;
    const Program one = build_program(*find_algorithm(Collective::allreduce, "hier_pipelined"), a, knobs, rank);
    const Program split = build_program(*find_algorithm(Collective::allreduce, "hier_split"), a, knobs, rank);
    EXPECT_EQ(one.size(), split.size());
    count_node_receives(one, &total, &before);
    EXPECT_EQ(total, 2);
    EXPECT_EQ(before, 1);
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


// The rails transport posts a receive on its lane's rail: every message's
// lane must be the same in its sender's and its receiver's program, for
// every algorithm (the node-aware ones give their inter-node phases lanes).
TEST(AlgorithmLanes, EveryMessageHasTheSameLaneOnBothSides) {
    int checked_lanes = 0;
    for (const AlgorithmInfo *algo : plan_algorithms()) {
        for (const char *spec : {"nodes=2", "nodes=3,rails=2", "0,1,1,0,2,2,2;rails=2", "nodes=4"}) {
            for (int p : {4, 7, 8}) {
                NodeMap map;
                if (NodeMap::parse(spec, p, &map) != LOOM_SUCCESS) continue;
                for (size_t count : {size_t{1}, size_t{1000}}) {
                    CollArgs a = make_args(*algo, p, count, false, 4);
                    a.nodes = &map;
                    if (!algo->not_applicable(a).empty()) continue;
                    std::vector<Program> programs;
                    for (int r = 0; r < p; ++r) programs.push_back(build_program(*algo, a, matrix_knobs(), r));
                    // Per (sender, receiver): the lanes of the sends and of the receives, in program order.
                    std::map<std::pair<int, int>, std::vector<int>> sent, received;
                    for (int r = 0; r < p; ++r)
                        for (const Step &s : programs[r].steps) {
                            if (s.kind == StepKind::send) sent[{r, s.peer}].push_back(s.lane);
                            if (s.kind == StepKind::recv) received[{s.peer, r}].push_back(s.lane);
                            checked_lanes += s.lane != 0;
                        }
                    EXPECT_EQ(sent, received) << algo->name << " " << spec << " " << a.describe();
                }
            }
        }
    }
    EXPECT_GT(checked_lanes, 0) << "no algorithm used a lane other than 0";
}

}  // namespace
}  // namespace loom::testing
