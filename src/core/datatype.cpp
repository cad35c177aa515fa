#include "core/datatype.hpp"

#include <complex>
#include <cstring>

#include "core/exact_sum.hpp"

namespace loom {
namespace {

constexpr DatatypeInfo kTypes[] = {
    {LOOM_INT8, "int8", "MPI_INT8_T", 1, TypeClass::signed_integer},
    {LOOM_UINT8, "uint8", "MPI_UINT8_T", 1, TypeClass::unsigned_integer},
    {LOOM_INT16, "int16", "MPI_INT16_T", 2, TypeClass::signed_integer},
    {LOOM_UINT16, "uint16", "MPI_UINT16_T", 2, TypeClass::unsigned_integer},
    {LOOM_INT32, "int32", "MPI_INT32_T", 4, TypeClass::signed_integer},
    {LOOM_UINT32, "uint32", "MPI_UINT32_T", 4, TypeClass::unsigned_integer},
    {LOOM_INT64, "int64", "MPI_INT64_T", 8, TypeClass::signed_integer},
    {LOOM_UINT64, "uint64", "MPI_UINT64_T", 8, TypeClass::unsigned_integer},
    {LOOM_CHAR, "char", "MPI_CHAR", sizeof(char), TypeClass::character},
    {LOOM_SIGNED_CHAR, "signed_char", "MPI_SIGNED_CHAR", 1, TypeClass::signed_integer},
    {LOOM_UNSIGNED_CHAR, "unsigned_char", "MPI_UNSIGNED_CHAR", 1, TypeClass::unsigned_integer},
    {LOOM_WCHAR, "wchar", "MPI_WCHAR", sizeof(wchar_t), TypeClass::character},
    {LOOM_SHORT, "short", "MPI_SHORT", sizeof(short), TypeClass::signed_integer},
    {LOOM_UNSIGNED_SHORT, "unsigned_short", "MPI_UNSIGNED_SHORT", sizeof(short), TypeClass::unsigned_integer},
    {LOOM_INT, "int", "MPI_INT", sizeof(int), TypeClass::signed_integer},
    {LOOM_UNSIGNED, "unsigned", "MPI_UNSIGNED", sizeof(unsigned), TypeClass::unsigned_integer},
    {LOOM_LONG, "long", "MPI_LONG", sizeof(long), TypeClass::signed_integer},
    {LOOM_UNSIGNED_LONG, "unsigned_long", "MPI_UNSIGNED_LONG", sizeof(long), TypeClass::unsigned_integer},
    {LOOM_LONG_LONG, "long_long", "MPI_LONG_LONG", sizeof(long long), TypeClass::signed_integer},
    {LOOM_UNSIGNED_LONG_LONG, "unsigned_long_long", "MPI_UNSIGNED_LONG_LONG", sizeof(long long),
     TypeClass::unsigned_integer},
    {LOOM_BYTE, "byte", "MPI_BYTE", 1, TypeClass::byte},
    {LOOM_BOOL, "bool", "MPI_C_BOOL", sizeof(bool), TypeClass::boolean},
    {LOOM_FLOAT16, "float16", "(none: C API only)", 2, TypeClass::reduced_float},
    {LOOM_BFLOAT16, "bfloat16", "(none: C API only)", 2, TypeClass::reduced_float},
    {LOOM_FLOAT, "float", "MPI_FLOAT", sizeof(float), TypeClass::floating},
    {LOOM_DOUBLE, "double", "MPI_DOUBLE", sizeof(double), TypeClass::floating},
    {LOOM_LONG_DOUBLE, "long_double", "MPI_LONG_DOUBLE", sizeof(long double), TypeClass::floating},
    {LOOM_C_FLOAT_COMPLEX, "float_complex", "MPI_C_FLOAT_COMPLEX", 2 * sizeof(float), TypeClass::complex},
    {LOOM_C_DOUBLE_COMPLEX, "double_complex", "MPI_C_DOUBLE_COMPLEX", 2 * sizeof(double), TypeClass::complex},
    {LOOM_C_LONG_DOUBLE_COMPLEX, "long_double_complex", "MPI_C_LONG_DOUBLE_COMPLEX", 2 * sizeof(long double),
     TypeClass::complex},
    {LOOM_FLOAT_INT, "float_int", "MPI_FLOAT_INT", sizeof(FloatInt), TypeClass::value_index_pair},
    {LOOM_DOUBLE_INT, "double_int", "MPI_DOUBLE_INT", sizeof(DoubleInt), TypeClass::value_index_pair},
    {LOOM_LONG_INT, "long_int", "MPI_LONG_INT", sizeof(LongInt), TypeClass::value_index_pair},
    {LOOM_2INT, "2int", "MPI_2INT", sizeof(TwoInt), TypeClass::value_index_pair},
    {LOOM_SHORT_INT, "short_int", "MPI_SHORT_INT", sizeof(ShortInt), TypeClass::value_index_pair},
    {LOOM_LONG_DOUBLE_INT, "long_double_int", "MPI_LONG_DOUBLE_INT", sizeof(LongDoubleInt),
     TypeClass::value_index_pair},
};
static_assert(sizeof(kTypes) / sizeof(kTypes[0]) == LOOM_DATATYPE_COUNT, "one entry per loom_datatype_t");

constexpr const char *kOpNames[] = {"sum",  "prod", "min", "max",  "land",   "lor",
                                    "lxor", "band", "bor", "bxor", "minloc", "maxloc"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == LOOM_OP_COUNT, "one name per loom_op_t");

}  // namespace

const DatatypeInfo *datatype_info(loom_datatype_t type) {
    static constexpr DatatypeInfo kExactSum = {kExactSumType, "exact_sum", "(none: Loom's own)", sizeof(ExactSum),
                                               TypeClass::floating};
    if (type == kExactSumType) return &kExactSum;
    if (static_cast<unsigned>(type) >= LOOM_DATATYPE_COUNT) return nullptr;
    return &kTypes[type];
}

bool op_is_valid(loom_op_t op) { return static_cast<unsigned>(op) < LOOM_OP_COUNT; }

const char *op_name(loom_op_t op) { return op_is_valid(op) ? kOpNames[op] : nullptr; }

Status check_datatype(loom_datatype_t type) {
    if (static_cast<unsigned>(type) >= LOOM_DATATYPE_COUNT)
        return fail(LOOM_ERR_INVALID_DATATYPE,
                    "datatype " + std::to_string(static_cast<long>(type)) + " is not a loom_datatype_t (valid: 0.." +
                        std::to_string(LOOM_DATATYPE_COUNT - 1) + "; see loom-info --datatypes)");
    return LOOM_SUCCESS;
}

Status check_reduction(loom_datatype_t type, loom_op_t op) {
    LOOM_RETURN_IF_ERROR(check_datatype(type));
    if (!op_is_valid(op))
        return fail(LOOM_ERR_INVALID_OP, "op " + std::to_string(static_cast<long>(op)) +
                                             " is not a loom_op_t (valid: 0.." + std::to_string(LOOM_OP_COUNT - 1) +
                                             ")");
    if (!reduction_kernel(type, op))
        return fail(LOOM_ERR_INVALID_OP, std::string("op ") + op_name(op) + " is not defined for datatype " +
                                             datatype_info(type)->name +
                                             " (MPI's rules: arithmetic on numbers, logical on integers and "
                                             "bool, bitwise on integers and byte, minloc/maxloc on pairs)");
    return LOOM_SUCCESS;
}

}  // namespace loom
