/*
 * coll/loom: the Open MPI 4.1 coll component that hands Allreduce,
 * Reduce_scatter(_block), Allgather and Alltoall (blocking, nonblocking and
 * persistent) to libloom, and everything else, or anything libloom cannot
 * do, to the module below it. C only: Open MPI's internal headers are not
 * valid C++; libloom is reached through its C API (loom.h).
 */
#ifndef MCA_COLL_LOOM_H
#define MCA_COLL_LOOM_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"
#include "opal/mca/base/mca_base_var.h"
#include "loom.h"

BEGIN_C_DECLS

/* The collectives Loom takes over, for statistics and parameters. */
enum coll_loom_collective {
    COLL_LOOM_ALLREDUCE,
    COLL_LOOM_REDUCE_SCATTER,
    COLL_LOOM_REDUCE_SCATTER_BLOCK,
    COLL_LOOM_ALLGATHER,
    COLL_LOOM_ALLTOALL,
    COLL_LOOM_NCOLLECTIVES
};

/* Why a call went to the module below Loom. */
enum coll_loom_fallback {
    COLL_LOOM_FALLBACK_DATATYPE,        /* derived, non-contiguous or unsupported datatype */
    COLL_LOOM_FALLBACK_OP,              /* user-defined or non-commutative op */
    COLL_LOOM_FALLBACK_TYPE_OP,         /* op not defined for the datatype */
    COLL_LOOM_FALLBACK_MISMATCHED_TYPES,/* send and receive signatures differ */
    COLL_LOOM_FALLBACK_NOT_SET_UP,       /* enable could not set Loom up here */
    COLL_LOOM_FALLBACK_LOOM_ERROR,      /* libloom refused the call (see verbose output) */
    COLL_LOOM_NFALLBACKS
};

typedef struct mca_coll_loom_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    bool stats;
    int param_count;      /* libloom parameters exposed as MCA variables */
    char **param_values;  /* their values, by libloom parameter index */
    /* Those changeable at run time: their indices, and where their MCA
     * variables keep their source (an MPI_T write makes it SET). */
    int runtime_count;
    int *runtime_params;
    const mca_base_var_source_t **runtime_sources;
} mca_coll_loom_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_loom_component_t mca_coll_loom_component;

/* The functions of the module below Loom, one pair per slot Loom fills. */
typedef struct coll_loom_previous_t {
    mca_coll_base_module_allreduce_fn_t allreduce;
    mca_coll_base_module_t *allreduce_module;
    mca_coll_base_module_reduce_scatter_fn_t reduce_scatter;
    mca_coll_base_module_t *reduce_scatter_module;
    mca_coll_base_module_reduce_scatter_block_fn_t reduce_scatter_block;
    mca_coll_base_module_t *reduce_scatter_block_module;
    mca_coll_base_module_allgather_fn_t allgather;
    mca_coll_base_module_t *allgather_module;
    mca_coll_base_module_alltoall_fn_t alltoall;
    mca_coll_base_module_t *alltoall_module;
    mca_coll_base_module_iallreduce_fn_t iallreduce;
    mca_coll_base_module_t *iallreduce_module;
    mca_coll_base_module_ireduce_scatter_fn_t ireduce_scatter;
    mca_coll_base_module_t *ireduce_scatter_module;
    mca_coll_base_module_ireduce_scatter_block_fn_t ireduce_scatter_block;
    mca_coll_base_module_t *ireduce_scatter_block_module;
    mca_coll_base_module_iallgather_fn_t iallgather;
    mca_coll_base_module_t *iallgather_module;
    mca_coll_base_module_ialltoall_fn_t ialltoall;
    mca_coll_base_module_t *ialltoall_module;
    mca_coll_base_module_allreduce_init_fn_t allreduce_init;
    mca_coll_base_module_t *allreduce_init_module;
    mca_coll_base_module_reduce_scatter_init_fn_t reduce_scatter_init;
    mca_coll_base_module_t *reduce_scatter_init_module;
    mca_coll_base_module_reduce_scatter_block_init_fn_t reduce_scatter_block_init;
    mca_coll_base_module_t *reduce_scatter_block_init_module;
    mca_coll_base_module_allgather_init_fn_t allgather_init;
    mca_coll_base_module_t *allgather_init_module;
    mca_coll_base_module_alltoall_init_fn_t alltoall_init;
    mca_coll_base_module_t *alltoall_init_module;
} coll_loom_previous_t;

enum coll_loom_state { COLL_LOOM_PENDING, COLL_LOOM_READY, COLL_LOOM_FAILED };

typedef struct mca_coll_loom_module_t {
    mca_coll_base_module_t super;
    ompi_communicator_t *comm;          /* the user's communicator */
    loom_comm_t loom;
    loom_shm_inbox_t shm_inbox;         /* created in enable, attached when loom is made */
    int *node_labels;                   /* per rank of comm: equal for ranks of one node */
    int64_t *counts64;                  /* reduce_scatter's counts for libloom, one per rank */
    char **applied;                     /* per parameter changeable at run time: the value libloom has */
    int rails;
    enum coll_loom_state state;
    bool previous_saved;
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
/* True when enable set Loom up on the module's communicator (on every rank
 * alike); false only after a local failure, reported when it happened. */
/* Parameters changed through MPI_T since the last call go to libloom first,
 * so they apply from this call on. */
void mca_coll_loom_sync_params(mca_coll_loom_module_t *m);
/* False for the parameters libloom reads only when a communicator is set up. */
bool mca_coll_loom_param_is_runtime(const char *name);
static inline bool mca_coll_loom_usable(mca_coll_loom_module_t *m) {
    if (m->state != COLL_LOOM_READY) return false;
    mca_coll_loom_sync_params(m);
    return true;
}

/* Argument checks shared by every form: true when Loom can take the call,
 * else *why says what goes to the module below. */
bool mca_coll_loom_reduction_args(struct ompi_datatype_t *dtype, struct ompi_op_t *op, loom_datatype_t *type,
                                  loom_op_t *lop, enum coll_loom_fallback *why);
bool mca_coll_loom_movement_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, int rcount,
                                 struct ompi_datatype_t *rdtype, loom_datatype_t *type,
                                 enum coll_loom_fallback *why);

/* "allreduce", "reduce_scatter", ...: libloom's and the statistics' names. */
const char *mca_coll_loom_collective_name(enum coll_loom_collective c);

/* The nonblocking and persistent slots: if Loom takes the call (`loom_takes_it`)
 * and starting it succeeds, done; otherwise hand it to the module below.
 * A refusal by the argument checks is counted here with `why`; a refusal by
 * libloom is counted where it happens. */
#define COLL_LOOM_OR_PREVIOUS(coll, loom_takes_it, why, start, previous) \
    do {                                                              \
        if (loom_takes_it) {                                          \
            if ((start) == OMPI_SUCCESS) return MPI_SUCCESS;          \
        } else {                                                      \
            mca_coll_loom_count_fallback(coll, why);                  \
        }                                                             \
        return (previous);                                            \
    } while (0)

/* statistics */
void mca_coll_loom_count_call(enum coll_loom_collective c, size_t bytes, const char *algorithm);
void mca_coll_loom_count_fallback(enum coll_loom_collective c, enum coll_loom_fallback why);
void mca_coll_loom_print_stats(loom_comm_t world);

/* requests: nonblocking and persistent collectives */
/* Creates the request of a nonblocking (started now) or persistent (started
 * by MPI_Start) call. `rcounts` is reduce_scatter's, else NULL. */
int mca_coll_loom_request_start_nonblocking(mca_coll_loom_module_t *m, enum coll_loom_collective c,
                                            const void *sbuf, void *rbuf, int64_t count, const int *rcounts,
                                            loom_datatype_t type, loom_op_t op, bool persistent,
                                            ompi_request_t **request);
void mca_coll_loom_progress_fini(void);
bool mca_coll_loom_in_progress_callback(void);

/* libloom's communicator over the PML on `comm`, in coll/loom's own tag range. */
int mca_coll_loom_create_loom_comm(ompi_communicator_t *comm, loom_comm_t *out);

/* the slots */
int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module);
int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module);
int mca_coll_loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_loom_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);
int mca_coll_loom_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module);
int mca_coll_loom_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_allreduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                 ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                            struct ompi_info_t *info, ompi_request_t **request,
                                            mca_coll_base_module_t *module);
int mca_coll_loom_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                 int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                 struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_loom_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                                int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);

END_C_DECLS
#endif
