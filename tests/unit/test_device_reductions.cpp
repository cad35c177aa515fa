// The element-wise operations the CUDA kernels run (cuda/reductions.hpp,
// core/elementwise.hpp), compiled here for the CPU and checked against
// libloom's CPU kernel of the same (type, op), the F16C and AVX2 ones
// included: where the GPU and the CPU reduce the same inputs, they produce
// the same bits. And the device list covers every pair libloom reduces but
// the host-only types.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/datatype.hpp"
#include "cuda/reductions.hpp"

namespace loom {
namespace {

loom_datatype_t type_named(const std::string &name) {
    for (int t = 0; t < LOOM_DATATYPE_COUNT; ++t)
        if (name == datatype_info(static_cast<loom_datatype_t>(t))->name) return static_cast<loom_datatype_t>(t);
    ADD_FAILURE() << "no datatype named " << name;
    return LOOM_DATATYPE_COUNT;
}
loom_op_t op_named(const std::string &name) {
    for (int o = 0; o < LOOM_OP_COUNT; ++o)
        if (name == op_name(static_cast<loom_op_t>(o))) return static_cast<loom_op_t>(o);
    ADD_FAILURE() << "no op named " << name;
    return LOOM_OP_COUNT;
}

// Finite inputs: NaN payloads are not part of the promise.
template <typename T>
T random_value(std::mt19937_64 &rng) {
    if constexpr (std::is_floating_point_v<T>) {
        return static_cast<T>(std::uniform_real_distribution<double>(-1e3, 1e3)(rng));
    } else if constexpr (std::is_same_v<T, uint16_t>) {  // also fp16/bf16 bits: keep the exponent below all-ones
        return static_cast<uint16_t>(rng() & 0xbbffu);
    } else if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(rng());
    } else {  // value/index pairs, with ties in the values
        T p{};
        p.value = static_cast<decltype(p.value)>(static_cast<int>(rng() % 7) - 3);
        p.index = static_cast<int>(rng() % 5);
        return p;
    }
}
template <typename T>
bool same(const T &a, const T &b) {
    if constexpr (std::is_arithmetic_v<T>) return std::memcmp(&a, &b, sizeof(T)) == 0;
    else return std::memcmp(&a.value, &b.value, sizeof(a.value)) == 0 && a.index == b.index;
}

struct Checked {
    std::string type, op;
};

template <typename T, typename Op>
void check_pair(const char *type_name, const char *op_name_, std::vector<Checked> *checked) {
    using namespace device_list;
    checked->push_back({type_name, op_name_});
    const loom_datatype_t type = type_named(type_name);
    const loom_op_t op = op_named(op_name_);
    ASSERT_EQ(datatype_info(type)->size, sizeof(T)) << type_name;
    const ReduceFn cpu = reduction_kernel(type, op);
    ASSERT_NE(cpu, nullptr) << type_name << " " << op_name_;
    std::mt19937_64 rng(std::hash<std::string>{}(std::string(type_name) + op_name_));
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{1001}}) {
        std::vector<T> dst(n), src(n);
        for (size_t i = 0; i < n; ++i) dst[i] = random_value<T>(rng), src[i] = random_value<T>(rng);
        std::vector<T> want = dst, got = dst;
        for (size_t i = 0; i < n; ++i) want[i] = Op::apply(want[i], src[i]);
        cpu(got.data(), src.data(), n);
        for (size_t i = 0; i < n; ++i)
            if (!same(want[i], got[i])) {
                ADD_FAILURE() << type_name << " " << op_name_ << " n=" << n << ": element " << i
                              << " differs between the shared operation and the CPU kernel";
                break;
            }
    }
}

TEST(DeviceReductions, SharedOperationsMatchTheCpuKernels) {
    using namespace device_list;
    std::vector<Checked> checked;
#define LOOM_CHECK_PAIR(tname, oname, T, Op) check_pair<T, Op>(#tname, #oname, &checked);
    LOOM_DEVICE_REDUCTIONS(LOOM_CHECK_PAIR)
#undef LOOM_CHECK_PAIR
    // Every pair libloom reduces is on the device list, but the host-only types.
    const std::set<std::string> host_only = {"long_double", "float_complex", "double_complex", "long_double_complex",
                                             "long_double_int"};
    std::set<std::pair<std::string, std::string>> listed;
    for (const auto &c : checked)
        EXPECT_TRUE(listed.insert({c.type, c.op}).second) << c.type << " " << c.op << " twice";
    for (int t = 0; t < LOOM_DATATYPE_COUNT; ++t)
        for (int o = 0; o < LOOM_OP_COUNT; ++o) {
            const auto type = static_cast<loom_datatype_t>(t);
            const auto op = static_cast<loom_op_t>(o);
            if (!reduction_kernel(type, op) || host_only.count(datatype_info(type)->name)) continue;
            EXPECT_TRUE(listed.count({datatype_info(type)->name, op_name(op)}))
                << datatype_info(type)->name << " " << op_name(op) << " is missing from cuda/reductions.hpp";
        }
    EXPECT_GT(checked.size(), 200u);
}

}  // namespace
}  // namespace loom
