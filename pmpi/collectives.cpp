/*
 * libloom-mpi's collectives: MPI_Allreduce, MPI_Reduce_scatter(_block),
 * MPI_Allgather(v), MPI_Alltoall(v), each blocking, nonblocking (MPI_I...)
 * and persistent (MPI 4's MPI_..._init, or Open MPI's MPIX_..._init), and
 * under MPI 4 their large-count forms (MPI_Allreduce_c, ...). A call
 * Loom can take runs in libloom; any other, and any libloom refuses, goes to
 * the MPI's own PMPI_ entry with a counted reason. Wrong arguments are the
 * MPI's errors (the communicator's handler), with libloom's message.
 */
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "loom_mpi.hpp"

#if MPI_VERSION < 4 && defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

using namespace loom_mpi;

namespace {

enum Form { BLOCKING, NONBLOCKING, PERSISTENT };
const int HAND_DOWN = -1; /* not an MPI error code: the MPI's own collective takes the call */

/* The Loom communicator for a call, or null (hand down, counted). */
loom_comm_t front(Collective c, MPI_Comm comm) {
    if (inside_loom) return nullptr; /* libloom's own collectives: the MPI's, uncounted */
    loom_comm_t lc = loom_comm_of(comm);
    if (!lc) count_hand_down(c, HAND_DOWN_NOT_SET_UP);
    return lc;
}

/* Arguments every MPI must refuse are refused here, with the class the MPI
 * standard gives them: Debian's MPICH, built without its argument checks,
 * crashes on them. */
const char *const NEGATIVE = "a count is negative";
const char *const NO_ARRAY = "a count or displacement array is NULL";
const char *const ALIASED =
    "the receive buffer is MPI_IN_PLACE or the send buffer (in place: MPI_IN_PLACE as the send buffer)";
const char *const NULL_TYPE_OR_OP = "MPI_DATATYPE_NULL or MPI_OP_NULL";
const char *const NULL_TYPE = "MPI_DATATYPE_NULL";

template <typename Count>
bool any_negative(const Count *counts, int p) {
    for (int i = 0; i < p; ++i)
        if (counts[i] < 0) return true;
    return false;
}

/* The counts are not negative: any_negative refused those first. */
template <typename Count>
uint64_t sum_of(const Count *counts, int p) {
    uint64_t total = 0;
    for (int i = 0; i < p; ++i) total += static_cast<uint64_t>(counts[i]);
    return total;
}

/* A receive buffer the call must write the program gave as in place, or
 * as its send buffer. */
bool aliased(const void *sbuf, const void *rbuf, uint64_t elements) {
    return elements > 0 && (rbuf == MPI_IN_PLACE || rbuf == sbuf);
}

/* A null buffer where the call has elements to read or write: an error of
 * its own (Open MPI's layer does not check it, and its collectives crash on it). */
int null_buffer(MPI_Comm comm, const char *function) {
    return report(comm, function, MPI_ERR_BUFFER, "a null buffer where the call has elements to read or write");
}

/* The last type, and type and op pair, this thread converted. Only
 * predefined types and ops convert, and those are never freed, so a handle
 * keeps its meaning. */
struct Converted {
    MPI_Datatype dtype = MPI_DATATYPE_NULL;
    loom_datatype_t type = LOOM_BYTE;
    size_t size = 1;
    MPI_Datatype pair_dtype = MPI_DATATYPE_NULL;
    MPI_Op pair_op = MPI_OP_NULL;
    loom_datatype_t pair_type = LOOM_BYTE;
    loom_op_t pair_lop = LOOM_SUM;
};
LOOM_MPI_THREAD_LOCAL Converted converted;

bool loom_type(Collective c, MPI_Datatype dtype, loom_datatype_t *type) {
    Converted &last = converted;
    if (dtype == last.dtype && dtype != MPI_DATATYPE_NULL) {
        *type = last.type;
        return true;
    }
    if (loom_datatype_from_mpi(dtype, type) != LOOM_SUCCESS) {
        count_hand_down(c, HAND_DOWN_DATATYPE);
        return false;
    }
    last.dtype = dtype;
    last.type = *type;
    loom_datatype_size(*type, &last.size);
    return true;
}

bool reduction(Collective c, MPI_Datatype dtype, MPI_Op op, loom_datatype_t *type, loom_op_t *lop) {
    Converted &last = converted;
    if (dtype == last.pair_dtype && op == last.pair_op && dtype != MPI_DATATYPE_NULL) {
        *type = last.pair_type;
        *lop = last.pair_lop;
        return true;
    }
    if (!loom_type(c, dtype, type)) return false;
    if (loom_op_from_mpi(op, lop) != LOOM_SUCCESS) {
        count_hand_down(c, HAND_DOWN_OP);
        return false;
    }
    if (!loom_op_supported(*type, *lop)) {
        count_hand_down(c, HAND_DOWN_TYPE_OP);
        return false;
    }
    last.pair_dtype = dtype;
    last.pair_op = op;
    last.pair_type = *type;
    last.pair_lop = *lop;
    return true;
}

/* One element type on both sides, or in place. */
bool movement(Collective c, const void *sbuf, MPI_Datatype sdtype, MPI_Datatype rdtype, loom_datatype_t *type,
              bool counts_differ = false) {
    if (!loom_type(c, rdtype, type)) return false;
    if (sbuf != MPI_IN_PLACE && (sdtype != rdtype || counts_differ)) {
        count_hand_down(c, HAND_DOWN_MISMATCHED);
        return false;
    }
    return true;
}

size_t element_size(loom_datatype_t type) {
    if (type == converted.type) return converted.size;
    size_t size = 0;
    loom_datatype_size(type, &size);
    return size;
}

int size_of(loom_comm_t lc) {
    int p = 0;
    loom_comm_size(lc, &p);
    return p;
}

int rank_of(loom_comm_t lc) {
    int me = 0;
    loom_comm_rank(lc, &me);
    return me;
}

/* MPI's int (or MPI_Count, MPI_Aint) array as libloom's (which copies it). */
template <typename Count>
const int64_t *widen(const Count *from, int p, std::vector<int64_t> *to) {
    to->assign(from, from + p);
    return to->data();
}

/* After libloom's start: count the call and wrap its request, or report
 * the error, or hand the call down. */
int finish(Collective c, const char *function, MPI_Comm comm, loom_comm_t lc, Form form, int rc, loom_request_t req,
           MPI_Request *handle, uint64_t bytes) {
    if (rc == LOOM_SUCCESS) {
        if (form == BLOCKING) {
            count_call(c, bytes, lc);
            return MPI_SUCCESS;
        }
        if (form == NONBLOCKING) count_call(c, bytes, nullptr);  // a persistent one at each MPI_Start
        return register_request(req, form == PERSISTENT, comm, handle, c, bytes);
    }
    if (loom_mpi_error_class(rc)) return report_error(comm, function, rc);
    static const bool verbose = std::getenv("LOOM_MPI_VERBOSE") != nullptr;
    if (verbose || rc != LOOM_ERR_ALGORITHM_NOT_APPLICABLE)
        std::fprintf(stderr, "loom-mpi: %s: %s: %s (handing the call to the MPI's own)\n", function, loom_strerror(rc),
                     loom_last_error());
    count_hand_down(c, HAND_DOWN_REFUSED);
    return HAND_DOWN;
}

LOOM_MPI_THREAD_LOCAL std::vector<int64_t> counts_a, counts_b, counts_c, counts_d;

/* Each collective takes MPI's int counts, or MPI 4's MPI_Count counts and
 * MPI_Aint displacements (the _c forms). */
template <typename Count>
int allreduce(Form form, const char *function, const void *sbuf, void *rbuf, Count count, MPI_Datatype dtype, MPI_Op op,
              MPI_Comm comm, MPI_Request *handle) {
    loom_comm_t lc = front(ALLREDUCE, comm);
    if (!lc) return HAND_DOWN;
    if (count < 0) return report(comm, function, MPI_ERR_COUNT, NEGATIVE);
    if (aliased(sbuf, rbuf, static_cast<uint64_t>(count))) return report(comm, function, MPI_ERR_BUFFER, ALIASED);
    if (dtype == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return report(comm, function, MPI_ERR_OP, NULL_TYPE_OR_OP);
    loom_datatype_t type;
    loom_op_t lop;
    if (!reduction(ALLREDUCE, dtype, op, &type, &lop)) return HAND_DOWN;
    if (count > 0 && (!sbuf || !rbuf)) return null_buffer(comm, function);
    InsideLoom inside;
    loom_request_t req = nullptr;
    const int rc = form == BLOCKING      ? loom_allreduce(sbuf, rbuf, count, type, lop, lc)
                   : form == NONBLOCKING ? loom_iallreduce(sbuf, rbuf, count, type, lop, lc, &req)
                                         : loom_allreduce_init(sbuf, rbuf, count, type, lop, lc, &req);
    return finish(ALLREDUCE, function, comm, lc, form, rc, req, handle,
                  static_cast<uint64_t>(count) * element_size(type));
}

template <typename Count>
int reduce_scatter(Form form, const char *function, const void *sbuf, void *rbuf, const Count *rcounts,
                   MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Request *handle) {
    loom_comm_t lc = front(REDUCE_SCATTER, comm);
    if (!lc) return HAND_DOWN;
    const int p = size_of(lc), me = rank_of(lc);
    if (!rcounts) return report(comm, function, MPI_ERR_ARG, NO_ARRAY);
    if (any_negative(rcounts, p)) return report(comm, function, MPI_ERR_COUNT, NEGATIVE);
    const uint64_t total = sum_of(rcounts, p);
    if (aliased(sbuf, rbuf, total)) return report(comm, function, MPI_ERR_BUFFER, ALIASED);
    if (dtype == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return report(comm, function, MPI_ERR_OP, NULL_TYPE_OR_OP);
    loom_datatype_t type;
    loom_op_t lop;
    if (!reduction(REDUCE_SCATTER, dtype, op, &type, &lop)) return HAND_DOWN;
    if ((!sbuf && total > 0) || (!rbuf && rcounts[me] > 0)) return null_buffer(comm, function);
    InsideLoom inside;
    const int64_t *counts = widen(rcounts, p, &counts_a);
    loom_request_t req = nullptr;
    const int rc = form == BLOCKING      ? loom_reduce_scatter(sbuf, rbuf, counts, type, lop, lc)
                   : form == NONBLOCKING ? loom_ireduce_scatter(sbuf, rbuf, counts, type, lop, lc, &req)
                                         : loom_reduce_scatter_init(sbuf, rbuf, counts, type, lop, lc, &req);
    return finish(REDUCE_SCATTER, function, comm, lc, form, rc, req, handle, total * element_size(type));
}

template <typename Count>
int reduce_scatter_block(Form form, const char *function, const void *sbuf, void *rbuf, Count rcount,
                         MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Request *handle) {
    loom_comm_t lc = front(REDUCE_SCATTER_BLOCK, comm);
    if (!lc) return HAND_DOWN;
    if (rcount < 0) return report(comm, function, MPI_ERR_COUNT, NEGATIVE);
    if (aliased(sbuf, rbuf, static_cast<uint64_t>(rcount))) return report(comm, function, MPI_ERR_BUFFER, ALIASED);
    if (dtype == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return report(comm, function, MPI_ERR_OP, NULL_TYPE_OR_OP);
    loom_datatype_t type;
    loom_op_t lop;
    if (!reduction(REDUCE_SCATTER_BLOCK, dtype, op, &type, &lop)) return HAND_DOWN;
    if (rcount > 0 && (!sbuf || !rbuf)) return null_buffer(comm, function);
    InsideLoom inside;
    loom_request_t req = nullptr;
    const int rc = form == BLOCKING      ? loom_reduce_scatter_block(sbuf, rbuf, rcount, type, lop, lc)
                   : form == NONBLOCKING ? loom_ireduce_scatter_block(sbuf, rbuf, rcount, type, lop, lc, &req)
                                         : loom_reduce_scatter_block_init(sbuf, rbuf, rcount, type, lop, lc, &req);
    return finish(REDUCE_SCATTER_BLOCK, function, comm, lc, form, rc, req, handle,
                  static_cast<uint64_t>(rcount) * static_cast<uint64_t>(size_of(lc)) * element_size(type));
}

/* Allgather and alltoall: the same arguments, the same checks. */
template <typename Count>
int movement_call(Collective c, Form form, const char *function, const void *sbuf, Count scount, MPI_Datatype sdtype,
                  void *rbuf, Count rcount, MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *handle) {
    loom_comm_t lc = front(c, comm);
    const bool sends = sbuf != MPI_IN_PLACE;
    if (!lc) return HAND_DOWN;
    if (rcount < 0 || (sends && scount < 0)) return report(comm, function, MPI_ERR_COUNT, NEGATIVE);
    if (aliased(sbuf, rbuf, static_cast<uint64_t>(rcount))) return report(comm, function, MPI_ERR_BUFFER, ALIASED);
    if (rdtype == MPI_DATATYPE_NULL || (sends && sdtype == MPI_DATATYPE_NULL))
        return report(comm, function, MPI_ERR_TYPE, NULL_TYPE);
    loom_datatype_t type;
    if (!movement(c, sbuf, sdtype, rdtype, &type, scount != rcount)) return HAND_DOWN;
    if ((!rbuf && rcount > 0) || (!sbuf && scount > 0)) return null_buffer(comm, function);
    InsideLoom inside;
    const bool gather = c == ALLGATHER;
    loom_request_t req = nullptr;
    const int rc = form == BLOCKING ? (gather ? loom_allgather : loom_alltoall)(sbuf, rbuf, rcount, type, lc)
                   : form == NONBLOCKING
                       ? (gather ? loom_iallgather : loom_ialltoall)(sbuf, rbuf, rcount, type, lc, &req)
                       : (gather ? loom_allgather_init : loom_alltoall_init)(sbuf, rbuf, rcount, type, lc, &req);
    return finish(c, function, comm, lc, form, rc, req, handle,
                  static_cast<uint64_t>(rcount) * static_cast<uint64_t>(size_of(lc)) * element_size(type));
}

template <typename Count>
int allgather(Form form, const char *function, const void *sbuf, Count scount, MPI_Datatype sdtype, void *rbuf,
              Count rcount, MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *handle) {
    return movement_call(ALLGATHER, form, function, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, handle);
}

template <typename Count>
int alltoall(Form form, const char *function, const void *sbuf, Count scount, MPI_Datatype sdtype, void *rbuf,
             Count rcount, MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *handle) {
    return movement_call(ALLTOALL, form, function, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, handle);
}

template <typename Count, typename Displacement>
int alltoallv(Form form, const char *function, const void *sbuf, const Count *scounts, const Displacement *sdispls,
              MPI_Datatype sdtype, void *rbuf, const Count *rcounts, const Displacement *rdispls, MPI_Datatype rdtype,
              MPI_Comm comm, MPI_Request *handle) {
    loom_comm_t lc = front(ALLTOALLV, comm);
    if (!lc) return HAND_DOWN;
    const int p = size_of(lc);
    const bool sends = sbuf != MPI_IN_PLACE;
    if (!rcounts || !rdispls || (sends && (!scounts || !sdispls))) return report(comm, function, MPI_ERR_ARG, NO_ARRAY);
    if (any_negative(rcounts, p) || (sends && any_negative(scounts, p)))
        return report(comm, function, MPI_ERR_COUNT, NEGATIVE);
    const uint64_t total = sum_of(rcounts, p);
    if (aliased(sbuf, rbuf, total)) return report(comm, function, MPI_ERR_BUFFER, ALIASED);
    if (rdtype == MPI_DATATYPE_NULL || (sends && sdtype == MPI_DATATYPE_NULL))
        return report(comm, function, MPI_ERR_TYPE, NULL_TYPE);
    loom_datatype_t type;
    if (!movement(ALLTOALLV, sbuf, sdtype, rdtype, &type)) return HAND_DOWN;
    if ((!rbuf && total > 0) || (!sbuf && sum_of(scounts, p) > 0)) return null_buffer(comm, function);
    InsideLoom inside;
    const int64_t *sc = sends ? widen(scounts, p, &counts_a) : nullptr;
    const int64_t *sd = sends ? widen(sdispls, p, &counts_b) : nullptr;
    const int64_t *rc_ = widen(rcounts, p, &counts_c);
    const int64_t *rd = widen(rdispls, p, &counts_d);
    loom_request_t req = nullptr;
    const int rc = form == BLOCKING      ? loom_alltoallv(sbuf, sc, sd, rbuf, rc_, rd, type, lc)
                   : form == NONBLOCKING ? loom_ialltoallv(sbuf, sc, sd, rbuf, rc_, rd, type, lc, &req)
                                         : loom_alltoallv_init(sbuf, sc, sd, rbuf, rc_, rd, type, lc, &req);
    return finish(ALLTOALLV, function, comm, lc, form, rc, req, handle, total * element_size(type));
}

template <typename Count, typename Displacement>
int allgatherv(Form form, const char *function, const void *sbuf, Count scount, MPI_Datatype sdtype, void *rbuf,
               const Count *rcounts, const Displacement *displs, MPI_Datatype rdtype, MPI_Comm comm,
               MPI_Request *handle) {
    loom_comm_t lc = front(ALLGATHERV, comm);
    if (!lc) return HAND_DOWN;
    const int p = size_of(lc);
    const bool sends = sbuf != MPI_IN_PLACE;
    if (!rcounts || !displs) return report(comm, function, MPI_ERR_ARG, NO_ARRAY);
    if (any_negative(rcounts, p) || (sends && scount < 0)) return report(comm, function, MPI_ERR_COUNT, NEGATIVE);
    const uint64_t total = sum_of(rcounts, p);
    if (aliased(sbuf, rbuf, total)) return report(comm, function, MPI_ERR_BUFFER, ALIASED);
    if (rdtype == MPI_DATATYPE_NULL || (sends && sdtype == MPI_DATATYPE_NULL))
        return report(comm, function, MPI_ERR_TYPE, NULL_TYPE);
    loom_datatype_t type;
    if (!movement(ALLGATHERV, sbuf, sdtype, rdtype, &type)) return HAND_DOWN;
    if ((!sbuf && scount > 0) || (!rbuf && total > 0)) return null_buffer(comm, function);
    InsideLoom inside;
    const int64_t *rc_ = widen(rcounts, p, &counts_a);
    const int64_t *rd = widen(displs, p, &counts_b);
    loom_request_t req = nullptr;
    const int rc = form == BLOCKING      ? loom_allgatherv(sbuf, scount, rbuf, rc_, rd, type, lc)
                   : form == NONBLOCKING ? loom_iallgatherv(sbuf, scount, rbuf, rc_, rd, type, lc, &req)
                                         : loom_allgatherv_init(sbuf, scount, rbuf, rc_, rd, type, lc, &req);
    return finish(ALLGATHERV, function, comm, lc, form, rc, req, handle, total * element_size(type));
}

}  // namespace

/* Each collective's parameters and arguments, as MPI declares them. */
#define PARAMS_ALLREDUCE const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm
#define ARGS_ALLREDUCE sbuf, rbuf, count, dtype, op, comm
#define PARAMS_REDUCE_SCATTER \
    const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm
#define ARGS_REDUCE_SCATTER sbuf, rbuf, rcounts, dtype, op, comm
#define PARAMS_REDUCE_SCATTER_BLOCK \
    const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm
#define ARGS_REDUCE_SCATTER_BLOCK sbuf, rbuf, rcount, dtype, op, comm
#define PARAMS_MOVE \
    const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm
#define ARGS_MOVE sbuf, scount, sdtype, rbuf, rcount, rdtype, comm
#define PARAMS_ALLGATHER PARAMS_MOVE
#define ARGS_ALLGATHER ARGS_MOVE
#define PARAMS_ALLTOALL PARAMS_MOVE
#define ARGS_ALLTOALL ARGS_MOVE
#define PARAMS_ALLTOALLV                                                                                              \
    const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdtype, void *rbuf, const int rcounts[], \
        const int rdispls[], MPI_Datatype rdtype, MPI_Comm comm
#define ARGS_ALLTOALLV sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm
#define PARAMS_ALLGATHERV                                                                                   \
    const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, const int rcounts[], const int displs[], \
        MPI_Datatype rdtype, MPI_Comm comm
#define ARGS_ALLGATHERV sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm

/* The blocking and nonblocking entries of one collective. */
#define LOOM_MPI_ENTRIES(Name, lower, SHAPE)                                      \
    int MPI_##Name(PARAMS_##SHAPE) {                                              \
        const int rc = lower(BLOCKING, "MPI_" #Name, ARGS_##SHAPE, nullptr);      \
        return rc != HAND_DOWN ? rc : PMPI_##Name(ARGS_##SHAPE);                  \
    }                                                                             \
    int MPI_I##lower(PARAMS_##SHAPE, MPI_Request *request) {                      \
        const int rc = lower(NONBLOCKING, "MPI_I" #lower, ARGS_##SHAPE, request); \
        return rc != HAND_DOWN ? rc : PMPI_I##lower(ARGS_##SHAPE, request);       \
    }

/* The persistent entry: MPI 4's name, or Open MPI 4's extension. */
#if MPI_VERSION >= 4
#define LOOM_MPI_PERSISTENT(Name, lower, SHAPE)                                        \
    int MPI_##Name##_init(PARAMS_##SHAPE, MPI_Info info, MPI_Request *request) {       \
        const int rc = lower(PERSISTENT, "MPI_" #Name "_init", ARGS_##SHAPE, request); \
        return rc != HAND_DOWN ? rc : PMPI_##Name##_init(ARGS_##SHAPE, info, request); \
    }
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define LOOM_MPI_PERSISTENT(Name, lower, SHAPE)                                         \
    int MPIX_##Name##_init(PARAMS_##SHAPE, MPI_Info info, MPI_Request *request) {       \
        const int rc = lower(PERSISTENT, "MPIX_" #Name "_init", ARGS_##SHAPE, request); \
        return rc != HAND_DOWN ? rc : PMPIX_##Name##_init(ARGS_##SHAPE, info, request); \
    }
#else
#define LOOM_MPI_PERSISTENT(Name, lower, SHAPE)
#endif

/* MPI 4's large-count forms (MPI_Allreduce_c, MPI_Iallreduce_c,
 * MPI_Allreduce_init_c, ...): MPI_Count counts, MPI_Aint displacements. */
#if MPI_VERSION >= 4
#define PARAMS_ALLREDUCE_C const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm
#define PARAMS_REDUCE_SCATTER_C \
    const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm
#define PARAMS_REDUCE_SCATTER_BLOCK_C \
    const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm
#define PARAMS_MOVE_C                                                                                           \
    const void *sbuf, MPI_Count scount, MPI_Datatype sdtype, void *rbuf, MPI_Count rcount, MPI_Datatype rdtype, \
        MPI_Comm comm
#define PARAMS_ALLGATHER_C PARAMS_MOVE_C
#define PARAMS_ALLTOALL_C PARAMS_MOVE_C
#define PARAMS_ALLTOALLV_C                                                                                  \
    const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[], MPI_Datatype sdtype, void *rbuf, \
        const MPI_Count rcounts[], const MPI_Aint rdispls[], MPI_Datatype rdtype, MPI_Comm comm
#define PARAMS_ALLGATHERV_C                                                                         \
    const void *sbuf, MPI_Count scount, MPI_Datatype sdtype, void *rbuf, const MPI_Count rcounts[], \
        const MPI_Aint displs[], MPI_Datatype rdtype, MPI_Comm comm
#define LOOM_MPI_LARGE_COUNT(Name, lower, SHAPE)                                         \
    int MPI_##Name##_c(PARAMS_##SHAPE##_C) {                                             \
        const int rc = lower(BLOCKING, "MPI_" #Name "_c", ARGS_##SHAPE, nullptr);        \
        return rc != HAND_DOWN ? rc : PMPI_##Name##_c(ARGS_##SHAPE);                     \
    }                                                                                    \
    int MPI_I##lower##_c(PARAMS_##SHAPE##_C, MPI_Request *request) {                     \
        const int rc = lower(NONBLOCKING, "MPI_I" #lower "_c", ARGS_##SHAPE, request);   \
        return rc != HAND_DOWN ? rc : PMPI_I##lower##_c(ARGS_##SHAPE, request);          \
    }                                                                                    \
    int MPI_##Name##_init_c(PARAMS_##SHAPE##_C, MPI_Info info, MPI_Request *request) {   \
        const int rc = lower(PERSISTENT, "MPI_" #Name "_init_c", ARGS_##SHAPE, request); \
        return rc != HAND_DOWN ? rc : PMPI_##Name##_init_c(ARGS_##SHAPE, info, request); \
    }
#else
#define LOOM_MPI_LARGE_COUNT(Name, lower, SHAPE)
#endif

#define LOOM_MPI_COLLECTIVE(Name, lower, SHAPE) \
    LOOM_MPI_ENTRIES(Name, lower, SHAPE)        \
    LOOM_MPI_PERSISTENT(Name, lower, SHAPE)     \
    LOOM_MPI_LARGE_COUNT(Name, lower, SHAPE)

extern "C" {
LOOM_MPI_COLLECTIVE(Allreduce, allreduce, ALLREDUCE)
LOOM_MPI_COLLECTIVE(Reduce_scatter, reduce_scatter, REDUCE_SCATTER)
LOOM_MPI_COLLECTIVE(Reduce_scatter_block, reduce_scatter_block, REDUCE_SCATTER_BLOCK)
LOOM_MPI_COLLECTIVE(Allgather, allgather, ALLGATHER)
LOOM_MPI_COLLECTIVE(Alltoall, alltoall, ALLTOALL)
LOOM_MPI_COLLECTIVE(Alltoallv, alltoallv, ALLTOALLV)
LOOM_MPI_COLLECTIVE(Allgatherv, allgatherv, ALLGATHERV)
}
