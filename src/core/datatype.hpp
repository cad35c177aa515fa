// Element types and reduction operations: sizes, names, which (type, op)
// pairs MPI defines, and the reduction kernels (dst[i] = dst[i] op src[i]).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/pair_types.hpp"
#include "core/reduced_float.hpp"
#include "core/status.hpp"
#include "loom.h"

namespace loom {

enum class TypeClass : uint8_t {
    signed_integer,
    unsigned_integer,
    character,
    byte,
    boolean,
    floating,
    reduced_float,
    complex,
    value_index_pair
};

struct DatatypeInfo {
    loom_datatype_t id;
    const char *name;      // "int32", "float_int", ...
    const char *mpi_name;  // "MPI_INT32_T", ...
    size_t size;           // bytes per element, as laid out in a C array
    TypeClass type_class;
};

// dst[i] = dst[i] op src[i] for i < n; dst and src never overlap.
using ReduceFn = void (*)(void *dst, const void *src, size_t n);

// Loom's own element type for reproducible sums (core/exact_sum.hpp), past
// the public ones: internal calls only, never accepted from a user.
constexpr loom_datatype_t kExactSumType = static_cast<loom_datatype_t>(LOOM_DATATYPE_COUNT);

const DatatypeInfo *datatype_info(loom_datatype_t type);  // nullptr when invalid
const char *op_name(loom_op_t op);                        // nullptr when invalid
bool op_is_valid(loom_op_t op);

// The kernel for (type, op), or nullptr where MPI does not define the pair.
ReduceFn reduction_kernel(loom_datatype_t type, loom_op_t op);

// LOOM_SUCCESS, or an error naming the type/op problem.
Status check_datatype(loom_datatype_t type);
Status check_reduction(loom_datatype_t type, loom_op_t op);

}  // namespace loom
