/*
 * coll/loom's entry points: the blocking, nonblocking and persistent slot of
 * every collective in COLL_LOOM_COLLECTIVES (coll_loom.h), generated below
 * from one path per form. A call Loom can take goes to libloom; any other,
 * and any libloom refuses, goes to the module below with a counted reason.
 */
#include "coll_loom.h"

#include <stdio.h>

#include "ompi/datatype/ompi_datatype.h"

/* ------------------------------------------------------------------ */
/* argument conversion shared by blocking, nonblocking and persistent */

/* Loom's type for an MPI datatype, or false (fall back); the last one
 * accepted is kept in the module, with its size. */
static bool loom_type(mca_coll_loom_module_t *m, struct ompi_datatype_t *dtype, loom_datatype_t *out) {
    if (dtype == m->known_dtype && dtype) {
        *out = m->known_type;
        return true;
    }
    if (loom_datatype_from_mpi(dtype, out) != LOOM_SUCCESS) return false;
    size_t size = 0;
    loom_datatype_size(*out, &size);
    m->known_dtype = dtype;
    m->known_type = *out;
    m->known_size = size;
    return true;
}

/* Checks a reduction's type and op; on failure sets *why. The last accepted
 * pair is kept in the module. */
static bool reduction_args(mca_coll_loom_module_t *m, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           loom_datatype_t *type, loom_op_t *lop, enum coll_loom_fallback *why) {
    if (dtype == m->pair_dtype && op == m->pair_op && dtype) {
        *type = m->pair_type;
        *lop = m->pair_lop;
        return true;
    }
    if (!loom_type(m, dtype, type)) {
        *why = COLL_LOOM_FALLBACK_DATATYPE;
        return false;
    }
    if (loom_op_from_mpi(op, lop) != LOOM_SUCCESS) {
        *why = COLL_LOOM_FALLBACK_OP;
        return false;
    }
    if (!loom_op_supported(*type, *lop)) {
        *why = COLL_LOOM_FALLBACK_TYPE_OP;
        return false;
    }
    m->pair_dtype = dtype;
    m->pair_op = op;
    m->pair_type = *type;
    m->pair_lop = *lop;
    return true;
}

/* allgather/alltoall: one element type on both sides (or in place). */
static bool movement_args(mca_coll_loom_module_t *m, const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          int rcount, struct ompi_datatype_t *rdtype, loom_datatype_t *type,
                          enum coll_loom_fallback *why) {
    if (!loom_type(m, rdtype, type)) {
        *why = COLL_LOOM_FALLBACK_DATATYPE;
        return false;
    }
    if (sbuf != MPI_IN_PLACE && (sdtype != rdtype || scount != rcount)) {
        *why = COLL_LOOM_FALLBACK_MISMATCHED_TYPES;
        return false;
    }
    /* Open MPI's request layer retains non-predefined types even when in
     * place; such calls stay with libnbc/tuned. */
    if (sbuf == MPI_IN_PLACE && sdtype && !ompi_datatype_is_predefined(sdtype)) {
        *why = COLL_LOOM_FALLBACK_DATATYPE;
        return false;
    }
    return true;
}

/* alltoallv/allgatherv: one element type on both sides (or in place); the
 * counts are libloom's to check. */
static bool movement_v_args(mca_coll_loom_module_t *m, const void *sbuf, struct ompi_datatype_t *sdtype,
                            struct ompi_datatype_t *rdtype, loom_datatype_t *type, enum coll_loom_fallback *why) {
    if (!loom_type(m, rdtype, type)) {
        *why = COLL_LOOM_FALLBACK_DATATYPE;
        return false;
    }
    if (sbuf != MPI_IN_PLACE && sdtype != rdtype) {
        *why = COLL_LOOM_FALLBACK_MISMATCHED_TYPES;
        return false;
    }
    if (sbuf == MPI_IN_PLACE && sdtype && !ompi_datatype_is_predefined(sdtype)) {
        *why = COLL_LOOM_FALLBACK_DATATYPE;
        return false;
    }
    return true;
}

/* MPI's int array widened into one of the module's rows; returns its sum. */
static size_t widen(const int *from, int64_t *to, int p) {
    size_t total = 0;
    for (int i = 0; i < p; ++i) {
        to[i] = from[i];
        total += (size_t)(from[i] > 0 ? from[i] : 0);
    }
    return total;
}

static size_t sum_of(const int *counts, int p) {
    size_t total = 0;
    for (int i = 0; i < p; ++i) total += (size_t)(counts[i] > 0 ? counts[i] : 0);
    return total;
}

/* The statistics' element size: the module keeps the last type's (loom_type). */
static size_t type_size(mca_coll_loom_module_t *m, loom_datatype_t t) {
    if (m->known_dtype && t == m->known_type) return m->known_size;
    size_t s = 0;
    loom_datatype_size(t, &s);
    return s;
}

/* Records a finished Loom call (1), or reports libloom's refusal (0: the
 * module below takes the call), or an error no module can recover from
 * (minus its MPI error class): a call abandoned under hang_abort, whose
 * missing ranks the module below would wait for too, or one whose ranks
 * disagree, which the others have already failed in Loom. */
static int loom_done(mca_coll_loom_module_t *m, enum coll_loom_collective c, int rc, size_t bytes) {
    const int error_class = loom_mpi_error_class(rc);
    if (error_class) {
        mca_coll_loom_keep_context(m);
        fprintf(stderr, "coll/loom: %s on %s: %s\n", mca_coll_loom_collective_name(c), m->comm->c_name,
                loom_last_error());
        return -error_class;
    }
    if (rc != LOOM_SUCCESS) {
        if (mca_coll_loom_component.verbose >= 1 || rc != LOOM_ERR_ALGORITHM_NOT_APPLICABLE)
            fprintf(stderr, "coll/loom: %s: %s: %s (handing the call to the previous module)\n",
                    mca_coll_loom_collective_name(c), loom_strerror(rc), loom_last_error());
        mca_coll_loom_count_fallback(c, COLL_LOOM_FALLBACK_LOOM_ERROR);
        return 0;
    }
    const char *algorithm = NULL;
    /* Which algorithm ran is only needed for the statistics. */
    if (mca_coll_loom_component.stats) loom_comm_last_algorithm(m->loom, mca_coll_loom_collective_name(c), &algorithm);
    mca_coll_loom_count_call(c, bytes, algorithm);
    return 1;
}

/* ------------------------------------------------------------------ */
/* what differs between the argument shapes (COLL_LOOM_PARAMS_*) */

/* The MPI arguments, as handed to the module below. */
#define COLL_LOOM_ARGS_REDUCE sbuf, rbuf, count, dtype, op
#define COLL_LOOM_ARGS_REDUCE_V sbuf, rbuf, rcounts, dtype, op
#define COLL_LOOM_ARGS_MOVE sbuf, scount, sdtype, rbuf, rcount, rdtype
#define COLL_LOOM_ARGS_MOVE_V sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype
#define COLL_LOOM_ARGS_GATHER_V sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype

/* The checks: true when Loom can take the call, else they set why. A
 * movement has no op; its requests are given LOOM_SUM, which they ignore. */
#define COLL_LOOM_LOP_DECL_REDUCE loom_op_t lop;
#define COLL_LOOM_LOP_DECL_REDUCE_V loom_op_t lop;
#define COLL_LOOM_LOP_DECL_MOVE
#define COLL_LOOM_LOP_DECL_MOVE_V
#define COLL_LOOM_LOP_DECL_GATHER_V
#define COLL_LOOM_CHECK_REDUCE reduction_args(m, dtype, op, &type, &lop, &why)
#define COLL_LOOM_CHECK_REDUCE_V reduction_args(m, dtype, op, &type, &lop, &why)
#define COLL_LOOM_CHECK_MOVE movement_args(m, sbuf, scount, sdtype, rcount, rdtype, &type, &why)
#define COLL_LOOM_CHECK_MOVE_V movement_v_args(m, sbuf, sdtype, rdtype, &type, &why)
#define COLL_LOOM_CHECK_GATHER_V movement_v_args(m, sbuf, sdtype, rdtype, &type, &why)
#define COLL_LOOM_LOP_REDUCE lop
#define COLL_LOOM_LOP_REDUCE_V lop
#define COLL_LOOM_LOP_MOVE LOOM_SUM
#define COLL_LOOM_LOP_MOVE_V LOOM_SUM
#define COLL_LOOM_LOP_GATHER_V LOOM_SUM

/* A null buffer where the call has elements to read or write: an error
 * (MPI_ERR_BUFFER), not a call for the module below, which would crash on
 * it. The types are predefined here, so MPI_BOTTOM cannot be meant. */
static bool null_buffer_v(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_communicator_t *comm) {
    if (sbuf && rbuf) return false;
    int64_t total = 0;
    for (int i = 0; i < ompi_comm_size(comm); ++i) total += rcounts[i];
    return total > 0 && (!sbuf || rcounts[ompi_comm_rank(comm)] > 0);
}
#define COLL_LOOM_NULL_REDUCE (count > 0 && (!sbuf || !rbuf))
#define COLL_LOOM_NULL_REDUCE_V null_buffer_v(sbuf, rbuf, rcounts, comm)
#define COLL_LOOM_NULL_MOVE ((!rbuf && rcount > 0) || (!sbuf && scount > 0))
#define COLL_LOOM_NULL_MOVE_V                                \
    ((!rbuf && sum_of(rcounts, ompi_comm_size(comm)) > 0) || \
     (!sbuf && scounts && sum_of(scounts, ompi_comm_size(comm)) > 0))
#define COLL_LOOM_NULL_GATHER_V ((!sbuf && scount > 0) || (!rbuf && sum_of(rcounts, ompi_comm_size(comm)) > 0))

/* A request's count and counts (mca_coll_loom_request_start_nonblocking). */
#define COLL_LOOM_COUNTS_REDUCE count, NULL
#define COLL_LOOM_COUNTS_REDUCE_V \
    0, &(const coll_loom_vectors_t) { NULL, NULL, rcounts, NULL }
#define COLL_LOOM_COUNTS_MOVE rcount, NULL
#define COLL_LOOM_COUNTS_MOVE_V \
    0, &(const coll_loom_vectors_t) { scounts, sdisps, rcounts, rdisps }
#define COLL_LOOM_COUNTS_GATHER_V \
    scount, &(const coll_loom_vectors_t) { NULL, NULL, rcounts, disps }

/* A blocking call: runs loom_<name>, sets rc and the bytes the statistics
 * count (count x ranks x element size; reduce_scatter: the counts' sum x
 * element size). */
#define COLL_LOOM_RUN_REDUCE(name, send, ranks)              \
    rc = loom_##name(send, rbuf, count, type, lop, m->loom); \
    bytes = (size_t)count * (ranks)*type_size(m, type)
/* The module's own array: blocking collectives on one communicator never
 * overlap, so no allocation per call is needed. */
#define COLL_LOOM_RUN_REDUCE_V(name, send, ranks)                  \
    const int p = ompi_comm_size(comm);                            \
    size_t total = 0;                                              \
    for (int i = 0; i < p; ++i) {                                  \
        m->counts64[i] = rcounts[i];                               \
        total += (size_t)rcounts[i];                               \
    }                                                              \
    rc = loom_##name(send, rbuf, m->counts64, type, lop, m->loom); \
    bytes = total * type_size(m, type)
#define COLL_LOOM_RUN_MOVE(name, send, ranks)            \
    rc = loom_##name(send, rbuf, rcount, type, m->loom); \
    bytes = (size_t)rcount * (ranks)*type_size(m, type)
/* In place the send arrays are not read (MPI lets them be anything). */
#define COLL_LOOM_RUN_MOVE_V(name, send, ranks)                                          \
    const int p = ompi_comm_size(comm);                                                  \
    int64_t *row = m->counts64;                                                          \
    const size_t received = widen(rcounts, row + 2 * p, p);                              \
    widen(rdisps, row + 3 * p, p);                                                       \
    const bool in_place_v = (send) == MPI_IN_PLACE;                                      \
    const size_t sent = in_place_v ? received : widen(scounts, row, p);                  \
    if (!in_place_v) widen(sdisps, row + p, p);                                          \
    rc = loom_##name(send, row, row + p, rbuf, row + 2 * p, row + 3 * p, type, m->loom); \
    bytes = sent * type_size(m, type)
#define COLL_LOOM_RUN_GATHER_V(name, send, ranks)                      \
    const int p = ompi_comm_size(comm);                                \
    int64_t *row = m->counts64;                                        \
    widen(rcounts, row, p);                                            \
    widen(disps, row + p, p);                                          \
    rc = loom_##name(send, scount, rbuf, row, row + p, type, m->loom); \
    bytes = (size_t)((send) == MPI_IN_PLACE ? rcounts[ompi_comm_rank(comm)] : scount) * type_size(m, type)

/* The table's columns in_place and ranks. */
#define COLL_LOOM_SEND(in_place) ((in_place) && sbuf == rbuf ? MPI_IN_PLACE : sbuf)
#define COLL_LOOM_RANKS_1 (size_t)1
#define COLL_LOOM_RANKS_P (size_t) ompi_comm_size(comm)

/* The module below's blocking call, device buffers staged (coll_loom_staging.c). */
#define COLL_LOOM_BELOW_REDUCE mca_coll_loom_below_reduce
#define COLL_LOOM_BELOW_REDUCE_V mca_coll_loom_below_reduce_v
#define COLL_LOOM_BELOW_MOVE mca_coll_loom_below_move
#define COLL_LOOM_BELOW_MOVE_V mca_coll_loom_below_move_v
#define COLL_LOOM_BELOW_GATHER_V mca_coll_loom_below_gather_v
/* Any buffer of the call on the device. */
#define COLL_LOOM_ON_DEVICE_REDUCE (mca_coll_loom_on_device(sbuf) || mca_coll_loom_on_device(rbuf))
#define COLL_LOOM_ON_DEVICE_REDUCE_V COLL_LOOM_ON_DEVICE_REDUCE
#define COLL_LOOM_ON_DEVICE_MOVE COLL_LOOM_ON_DEVICE_REDUCE
#define COLL_LOOM_ON_DEVICE_MOVE_V COLL_LOOM_ON_DEVICE_REDUCE
#define COLL_LOOM_ON_DEVICE_GATHER_V COLL_LOOM_ON_DEVICE_REDUCE

/* ------------------------------------------------------------------ */
/* the common paths, one per form */

/* Blocking: libloom runs the call now; a refusal by the checks is counted
 * here, one by libloom in loom_done. */
#define COLL_LOOM_BLOCKING(name, NAME, shape, in_place, ranks)                                        \
    COLL_LOOM_SIGNATURE_BLOCKING(name, shape) {                                                       \
        mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;                                 \
        loom_datatype_t type;                                                                         \
        COLL_LOOM_LOP_DECL_##shape enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;       \
        if (mca_coll_loom_usable(m) && COLL_LOOM_CHECK_##shape) {                                     \
            if (COLL_LOOM_NULL_##shape) return MPI_ERR_BUFFER;                                        \
            int rc;                                                                                   \
            size_t bytes;                                                                             \
            COLL_LOOM_RUN_##shape(name, COLL_LOOM_SEND(in_place), COLL_LOOM_RANKS_##ranks);           \
            const int outcome = loom_done(m, COLL_LOOM_##NAME, rc, bytes);                            \
            if (outcome != 0) return outcome > 0 ? MPI_SUCCESS : -outcome;                            \
        } else {                                                                                      \
            mca_coll_loom_count_fallback(COLL_LOOM_##NAME, why);                                      \
        }                                                                                             \
        return COLL_LOOM_BELOW_##shape(COLL_LOOM_##NAME, m->previous.name, m->previous.name##_module, \
                                       COLL_LOOM_ARGS_##shape, comm);                                 \
    }

/* Nonblocking (started now) and persistent (started by MPI_Start, checked
 * once here): a request if Loom takes the call and creating it succeeds,
 * else the module below. A refusal by the checks is counted here, one by
 * libloom where it happens. `persistent` is the token false or true: pasted,
 * it picks whether the module below is passed info. */
#define COLL_LOOM_INFO_ARG_false
#define COLL_LOOM_INFO_ARG_true info,
#define COLL_LOOM_REQUEST_BODY(name, slot, NAME, shape, in_place, persistent)                                  \
    {                                                                                                          \
        mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;                                          \
        loom_datatype_t type;                                                                                  \
        COLL_LOOM_LOP_DECL_##shape enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;                \
        if (mca_coll_loom_usable(m) && COLL_LOOM_CHECK_##shape) {                                              \
            if (COLL_LOOM_NULL_##shape) return MPI_ERR_BUFFER;                                                 \
            const int started = mca_coll_loom_request_start_nonblocking(                                       \
                m, COLL_LOOM_##NAME, COLL_LOOM_SEND(in_place), rbuf, COLL_LOOM_COUNTS_##shape, type,           \
                COLL_LOOM_LOP_##shape, persistent, request);                                                   \
            if (started == OMPI_SUCCESS) return MPI_SUCCESS;                                                   \
            if (started == MPI_ERR_OTHER || started == MPI_ERR_TRUNCATE) return started; /* loom_done's */   \
        } else {                                                                                               \
            mca_coll_loom_count_fallback(COLL_LOOM_##NAME, why);                                               \
        }                                                                                                      \
        /* Device buffers: the blocking call below on host copies, now. */                                     \
        if (COLL_LOOM_ON_DEVICE_##shape) {                                                                     \
            if (persistent) return mca_coll_loom_persistent_on_device(COLL_LOOM_##NAME);                       \
            *request = &ompi_request_empty;                                                                    \
            return COLL_LOOM_BELOW_##shape(COLL_LOOM_##NAME, m->previous.name, m->previous.name##_module,      \
                                           COLL_LOOM_ARGS_##shape, comm);                                      \
        }                                                                                                      \
        return m->previous.slot(COLL_LOOM_ARGS_##shape, comm, COLL_LOOM_INFO_ARG_##persistent request,         \
                                m->previous.slot##_module);                                                    \
    }
#define COLL_LOOM_NONBLOCKING(name, NAME, shape, in_place, ranks) \
    COLL_LOOM_SIGNATURE_NONBLOCKING(name, shape) COLL_LOOM_REQUEST_BODY(name, i##name, NAME, shape, in_place, false)
#define COLL_LOOM_PERSISTENT(name, NAME, shape, in_place, ranks) \
    COLL_LOOM_SIGNATURE_PERSISTENT(name, shape) COLL_LOOM_REQUEST_BODY(name, name##_init, NAME, shape, in_place, true)

COLL_LOOM_COLLECTIVES(COLL_LOOM_BLOCKING)
COLL_LOOM_COLLECTIVES(COLL_LOOM_NONBLOCKING)
COLL_LOOM_COLLECTIVES(COLL_LOOM_PERSISTENT)

#ifdef __GNUC__
/* Open MPI calls these through its slot types: each must be exactly one. */
#define COLL_LOOM_SLOT(slot)                                                                                 \
    _Static_assert(                                                                                          \
        __builtin_types_compatible_p(__typeof__(&mca_coll_loom_##slot), mca_coll_base_module_##slot##_fn_t), \
        "mca_coll_loom_" #slot " is not Open MPI's mca_coll_base_module_" #slot "_fn_t");
COLL_LOOM_SLOTS
#undef COLL_LOOM_SLOT
#endif
