/*
 * coll/loom: the Open MPI 4.1 coll component that hands Allreduce,
 * Reduce_scatter(_block), Allgather(v) and Alltoall(v) (blocking, nonblocking
 * and persistent) to libloom, and everything else, or anything libloom cannot
 * do, to the module below it. C only: Open MPI's internal headers are not
 * valid C++; libloom is reached through its C API (loom.h).
 */
#ifndef MCA_COLL_LOOM_H
#define MCA_COLL_LOOM_H

#include "ompi_config.h"

// Open MPI's mpi.h before anything that includes it as <mpi.h> (loom.h):
// its extension headers need the MPI types defined first.
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/mca/base/mca_base_var.h"

#include "loom.h"

BEGIN_C_DECLS

/* The collectives Loom takes over, one line each; everything that differs
 * between them is stated here (the module, the slots, the statistics and the
 * entry points in coll_loom_collectives.c are generated from it).
 *   name      Open MPI's slots coll_<name>, coll_i<name>, coll_<name>_init, libloom's
 *             loom_<name>/loom_i<name>, and the name in statistics and parameters
 *   NAME      its enum coll_loom_collective, COLL_LOOM_<NAME>
 *   shape     its MPI arguments before comm: REDUCE (count, dtype, op), REDUCE_V (rcounts,
 *             dtype, op), MOVE (scount, sdtype, rcount, rdtype), MOVE_V (scounts, sdisps,
 *             sdtype, rcounts, rdisps, rdtype) or GATHER_V (scount, sdtype, rcounts, disps,
 *             rdtype); see COLL_LOOM_PARAMS_*
 *   in_place  1: sbuf == rbuf means in place (Open MPI's own communicator code passes that)
 *   ranks     the blocking form's statistics count count x P (comm size) or count x 1 elements
 *             (a request counts its count either way; the vector shapes count what this rank sends) */
#define COLL_LOOM_COLLECTIVES(X)                                \
    X(allreduce, ALLREDUCE, REDUCE, 1, 1)                       \
    X(reduce_scatter, REDUCE_SCATTER, REDUCE_V, 0, 1)           \
    X(reduce_scatter_block, REDUCE_SCATTER_BLOCK, REDUCE, 0, P) \
    X(allgather, ALLGATHER, MOVE, 0, 1)                         \
    X(alltoall, ALLTOALL, MOVE, 0, P)                           \
    X(alltoallv, ALLTOALLV, MOVE_V, 0, 1)                       \
    X(allgatherv, ALLGATHERV, GATHER_V, 0, 1)

/* The MPI arguments of each shape, as in Open MPI's slot types. */
#define COLL_LOOM_PARAMS_REDUCE \
    const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op
#define COLL_LOOM_PARAMS_REDUCE_V \
    const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype, struct ompi_op_t *op
#define COLL_LOOM_PARAMS_MOVE \
    const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype
#define COLL_LOOM_PARAMS_MOVE_V                                                                          \
    const void *sbuf, const int *scounts, const int *sdisps, struct ompi_datatype_t *sdtype, void *rbuf, \
        const int *rcounts, const int *rdisps, struct ompi_datatype_t *rdtype
#define COLL_LOOM_PARAMS_GATHER_V                                                                                   \
    const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *disps, \
        struct ompi_datatype_t *rdtype

/* The three slots of a collective: blocking, nonblocking (i), persistent (_init). */
#define COLL_LOOM_SIGNATURE_BLOCKING(name, shape) \
    int mca_coll_loom_##name(COLL_LOOM_PARAMS_##shape, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
#define COLL_LOOM_SIGNATURE_NONBLOCKING(name, shape)                                                                \
    int mca_coll_loom_i##name(COLL_LOOM_PARAMS_##shape, struct ompi_communicator_t *comm, ompi_request_t **request, \
                              mca_coll_base_module_t *module)
#define COLL_LOOM_SIGNATURE_PERSISTENT(name, shape)                                             \
    int mca_coll_loom_##name##_init(COLL_LOOM_PARAMS_##shape, struct ompi_communicator_t *comm, \
                                    struct ompi_info_t *info, ompi_request_t **request,         \
                                    mca_coll_base_module_t *module)

/* COLL_LOOM_SLOTS expands COLL_LOOM_SLOT(slot) for each of the 21 slots, in
 * the order of coll_loom_previous_t (blocking, nonblocking, persistent);
 * define COLL_LOOM_SLOT first, #undef it after. */
#define COLL_LOOM_SLOT_B(name, ...) COLL_LOOM_SLOT(name)
#define COLL_LOOM_SLOT_I(name, ...) COLL_LOOM_SLOT(i##name)
#define COLL_LOOM_SLOT_P(name, ...) COLL_LOOM_SLOT(name##_init)
#define COLL_LOOM_SLOTS                     \
    COLL_LOOM_COLLECTIVES(COLL_LOOM_SLOT_B) \
    COLL_LOOM_COLLECTIVES(COLL_LOOM_SLOT_I) \
    COLL_LOOM_COLLECTIVES(COLL_LOOM_SLOT_P)

/* For statistics and parameters. */
enum coll_loom_collective {
#define COLL_LOOM_ENUMERATOR(name, NAME, ...) COLL_LOOM_##NAME,
    COLL_LOOM_COLLECTIVES(COLL_LOOM_ENUMERATOR)
#undef COLL_LOOM_ENUMERATOR
        COLL_LOOM_NCOLLECTIVES
};

/* Why a call went to the module below Loom. */
enum coll_loom_fallback {
    COLL_LOOM_FALLBACK_DATATYPE,         /* derived, non-contiguous or unsupported datatype */
    COLL_LOOM_FALLBACK_OP,               /* user-defined or non-commutative op */
    COLL_LOOM_FALLBACK_TYPE_OP,          /* op not defined for the datatype */
    COLL_LOOM_FALLBACK_MISMATCHED_TYPES, /* send and receive signatures differ */
    COLL_LOOM_FALLBACK_NOT_SET_UP,       /* enable could not set Loom up here */
    COLL_LOOM_FALLBACK_LOOM_ERROR,       /* libloom refused the call (see verbose output) */
    COLL_LOOM_NFALLBACKS
};

typedef struct mca_coll_loom_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    bool stats;
    int param_count;     /* libloom parameters exposed as MCA variables */
    char **param_values; /* their values, by libloom parameter index */
    /* Those changeable at run time: their indices, and where their MCA
     * variables keep their source (an MPI_T write makes it SET). */
    int runtime_count;
    int *runtime_params;
    const mca_base_var_source_t **runtime_sources;
} mca_coll_loom_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_loom_component_t mca_coll_loom_component;

/* The functions of the module below Loom, one pair per slot Loom fills. */
typedef struct coll_loom_previous_t {
#define COLL_LOOM_SLOT(slot)                 \
    mca_coll_base_module_##slot##_fn_t slot; \
    mca_coll_base_module_t *slot##_module;
    COLL_LOOM_SLOTS
#undef COLL_LOOM_SLOT
} coll_loom_previous_t;

enum coll_loom_state { COLL_LOOM_PENDING, COLL_LOOM_READY, COLL_LOOM_FAILED };

typedef struct mca_coll_loom_module_t {
    mca_coll_base_module_t super;
    ompi_communicator_t *comm; /* the user's communicator */
    loom_comm_t loom;
    loom_shm_inbox_t shm_inbox; /* created in enable, attached when loom is made */
    int *node_labels;           /* per rank of comm: equal for ranks of one node */
    int64_t *counts64;          /* four rows of one entry per rank: the counts and displacements of
                                   reduce_scatter, alltoallv and allgatherv, widened for libloom */
    char **applied;             /* per parameter changeable at run time: the value libloom has */
    unsigned calls_unsynced;    /* calls since the parameters were last compared (mca_coll_loom_sync_params) */
    /* The last accepted MPI datatype and (datatype, op) pair, converted, and
     * the element size: loops repeat one call. Per module, not per thread:
     * MPI forbids concurrent collectives on one communicator. Predefined
     * handles only (the others fall back), which are never freed. */
    struct ompi_datatype_t *known_dtype;
    loom_datatype_t known_type;
    size_t known_size;
    struct ompi_datatype_t *pair_dtype;
    struct ompi_op_t *pair_op;
    loom_datatype_t pair_type;
    loom_op_t pair_lop;
    int rails;
    enum coll_loom_state state;
    bool previous_saved;
    bool context_kept; /* mca_coll_loom_keep_context */
    coll_loom_previous_t previous;
} mca_coll_loom_module_t;
OBJ_CLASS_DECLARATION(mca_coll_loom_module_t);

/* Shared memory between the ranks of comm on this node: each rank creates
 * its inbox in enable and attaches it at once; a peer's inbox is mapped when
 * first sent to, sends waiting until the peer's enable has created it. */
void mca_coll_loom_shm_create_inbox(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
/* Which node each rank is on: the coll_loom_topology emulation (declared for
 * MPI_COMM_WORLD's ranks) or the hosts' names; no communication. */
void mca_coll_loom_find_nodes(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm);
int mca_coll_loom_shm_attach(mca_coll_loom_module_t *m);

/* component */
int mca_coll_loom_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_loom_comm_query(struct ompi_communicator_t *comm, int *priority);

/* module */
int mca_coll_loom_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
/* Parameters changed through MPI_T since the last call go to libloom first,
 * so they apply from this call on. */
void mca_coll_loom_sync_params(mca_coll_loom_module_t *m);
/* MPI_T_init_thread's count (ompi/mpi/tool/mpit-internal.h, which needs
 * Open MPI's build tree), exported by libmpi. */
extern volatile uint32_t ompi_mpit_init_count;
/* False for the parameters libloom reads only when a communicator is set up. */
bool mca_coll_loom_param_is_runtime(const char *name);
/* True when enable set Loom up on the module's communicator (on every rank
 * alike); false only after a local failure, reported when it happened. */
static inline bool mca_coll_loom_usable(mca_coll_loom_module_t *m) {
    if (m->state != COLL_LOOM_READY) return false;
    /* MPI_T_cvar_write needs MPI_T initialised: while it is, every call
     * compares; otherwise every 64th, which catches a write whose
     * MPI_T_finalize came before this communicator's next call. */
    if (m->applied && (ompi_mpit_init_count || !(++m->calls_unsynced & 63))) mca_coll_loom_sync_params(m);
    return true;
}

/* After such an error the communicator keeps its context id until
 * MPI_Finalize (one extra reference, which Open MPI releases there): the
 * failed call's messages and revoke notices still in flight would
 * otherwise match the calls of a later communicator given the same id. */
static inline void mca_coll_loom_keep_context(mca_coll_loom_module_t *m) {
    if (m->context_kept) return;
    m->context_kept = true;
    OBJ_RETAIN(m->comm);
}

/* "allreduce", "reduce_scatter", ...: libloom's and the statistics' names. */
const char *mca_coll_loom_collective_name(enum coll_loom_collective c);

/* statistics */
/* Calls and bytes per collective, counted inline (every call passes here);
 * the algorithms only with coll_loom_stats on. */
extern uint64_t mca_coll_loom_calls[COLL_LOOM_NCOLLECTIVES], mca_coll_loom_bytes[COLL_LOOM_NCOLLECTIVES];
void mca_coll_loom_count_algorithm(enum coll_loom_collective c, const char *algorithm);
static inline void mca_coll_loom_count_call(enum coll_loom_collective c, size_t bytes, const char *algorithm) {
    mca_coll_loom_calls[c]++;
    mca_coll_loom_bytes[c] += bytes;
    if (algorithm) mca_coll_loom_count_algorithm(c, algorithm);
}
void mca_coll_loom_count_fallback(enum coll_loom_collective c, enum coll_loom_fallback why);

/* coll_loom_staging.c: the module below never sees a device buffer. These
 * run its blocking call on host copies of the device buffers (or on the
 * buffers as given when none is on the device). */
typedef struct {
    char *user, *host;
    ptrdiff_t gap;
    size_t span;
} coll_loom_stage_t;
bool mca_coll_loom_on_device(const void *buf);
/* A persistent call on device buffers that Loom does not take: refused
 * with a message (the module below would be handed device memory). */
int mca_coll_loom_persistent_on_device(enum coll_loom_collective c);
uint64_t mca_coll_loom_staged_fallbacks(enum coll_loom_collective c);
int mca_coll_loom_below_reduce(enum coll_loom_collective c, mca_coll_base_module_allreduce_fn_t fn,
                               mca_coll_base_module_t *below, COLL_LOOM_PARAMS_REDUCE,
                               struct ompi_communicator_t *comm);
int mca_coll_loom_below_reduce_v(enum coll_loom_collective c, mca_coll_base_module_reduce_scatter_fn_t fn,
                                 mca_coll_base_module_t *below, COLL_LOOM_PARAMS_REDUCE_V,
                                 struct ompi_communicator_t *comm);
int mca_coll_loom_below_move(enum coll_loom_collective c, mca_coll_base_module_allgather_fn_t fn,
                             mca_coll_base_module_t *below, COLL_LOOM_PARAMS_MOVE, struct ompi_communicator_t *comm);
int mca_coll_loom_below_move_v(enum coll_loom_collective c, mca_coll_base_module_alltoallv_fn_t fn,
                               mca_coll_base_module_t *below, COLL_LOOM_PARAMS_MOVE_V,
                               struct ompi_communicator_t *comm);
int mca_coll_loom_below_gather_v(enum coll_loom_collective c, mca_coll_base_module_allgatherv_fn_t fn,
                                 mca_coll_base_module_t *below, COLL_LOOM_PARAMS_GATHER_V,
                                 struct ompi_communicator_t *comm);
void mca_coll_loom_print_stats(loom_comm_t world);

/* requests: nonblocking and persistent collectives */
/* The per-rank arrays of a call, as MPI passed them; NULL where it has none. */
typedef struct {
    const int *scounts, *sdispls, *rcounts, *rdispls;
} coll_loom_vectors_t;
/* Creates the request of a nonblocking (started now) or persistent (started
 * by MPI_Start) call. `sbuf` is MPI_IN_PLACE for an in-place call (the
 * caller applies the table's in_place); `vectors` are reduce_scatter's,
 * alltoallv's and allgatherv's arrays, else NULL.
 * Returns OMPI_SUCCESS, MPI_ERR_OTHER when the communicator was abandoned
 * under hang_abort (an error for the caller), or OMPI_ERROR when libloom
 * refuses the call (the module below takes it). */
int mca_coll_loom_request_start_nonblocking(mca_coll_loom_module_t *m, enum coll_loom_collective c, const void *sbuf,
                                            void *rbuf, int64_t count, const coll_loom_vectors_t *vectors,
                                            loom_datatype_t type, loom_op_t op, bool persistent,
                                            ompi_request_t **request);
void mca_coll_loom_progress_fini(void);
bool mca_coll_loom_in_progress_callback(void);

/* libloom's communicator over the PML on `comm`, in coll/loom's own tag range. */
int mca_coll_loom_create_loom_comm(ompi_communicator_t *comm, loom_comm_t *out);

/* the slots (coll_loom_collectives.c) */
#define COLL_LOOM_PROTOTYPES(name, NAME, shape, ...) \
    COLL_LOOM_SIGNATURE_BLOCKING(name, shape);       \
    COLL_LOOM_SIGNATURE_NONBLOCKING(name, shape);    \
    COLL_LOOM_SIGNATURE_PERSISTENT(name, shape);
COLL_LOOM_COLLECTIVES(COLL_LOOM_PROTOTYPES)
#undef COLL_LOOM_PROTOTYPES

END_C_DECLS
#endif
