/*
 * coll/loom module: one per communicator. Enable saves the functions of the
 * module below (the fallback) and sets Loom up on the communicator; each
 * slot converts MPI arguments to libloom's, or falls back with a
 * counted reason when libloom cannot do the call.
 */
#include "coll_loom.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"

static void module_construct(mca_coll_loom_module_t *m) {
    m->comm = NULL;
    m->loom = NULL;
    m->shm_inbox = NULL;
    m->node_labels = NULL;
    m->counts64 = NULL;
    m->rails = 1;
    m->state = COLL_LOOM_PENDING;
    m->previous_saved = false;
    memset(&m->previous, 0, sizeof(m->previous));
}

static void release_previous(mca_coll_loom_module_t *m) {
    mca_coll_base_module_t **slots[] = {
        &m->previous.allreduce_module, &m->previous.reduce_scatter_module,
        &m->previous.reduce_scatter_block_module, &m->previous.allgather_module, &m->previous.alltoall_module,
        &m->previous.iallreduce_module, &m->previous.ireduce_scatter_module,
        &m->previous.ireduce_scatter_block_module, &m->previous.iallgather_module, &m->previous.ialltoall_module,
        &m->previous.allreduce_init_module, &m->previous.reduce_scatter_init_module,
        &m->previous.reduce_scatter_block_init_module, &m->previous.allgather_init_module,
        &m->previous.alltoall_init_module,
    };
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); ++i)
        if (*slots[i]) {
            OBJ_RELEASE(*slots[i]);
            *slots[i] = NULL;
        }
    m->previous_saved = false;
}

static void module_destruct(mca_coll_loom_module_t *m) {
    if (m->comm == &ompi_mpi_comm_world.comm && ompi_comm_rank(m->comm) == 0) mca_coll_loom_print_stats(m->loom);
    if (m->loom) loom_comm_free(&m->loom);
    if (m->shm_inbox) loom_shm_inbox_free(&m->shm_inbox);
    free(m->node_labels);
    free(m->counts64);
    if (m->applied)
        for (int i = 0; i < mca_coll_loom_component.param_count; ++i) free(m->applied[i]);
    free(m->applied);
    release_previous(m);
}

OBJ_CLASS_INSTANCE(mca_coll_loom_module_t, mca_coll_base_module_t, module_construct, module_destruct);

bool mca_coll_loom_param_is_runtime(const char *name) {
    /* Read when the communicator is set up (inboxes, node map), so fixed after. */
    static const char *const at_setup[] = {"shared_memory", "shm_max_bytes", "single_copy", "single_copy_min_bytes",
                                             "topology", "verbose"};
    for (size_t i = 0; i < sizeof at_setup / sizeof at_setup[0]; ++i)
        if (!strcmp(name, at_setup[i])) return false;
    return true;
}

void mca_coll_loom_sync_params(mca_coll_loom_module_t *m) {
    if (!m->applied) return;
    /* Only an MPI_T write gives a variable the source SET: until then one
     * load per parameter, independent of each other, instead of a strcmp
     * (a dozen cost 30-60 ns of the 160 ns a one-rank alltoall took). */
    const int n = mca_coll_loom_component.runtime_count;
    const mca_base_var_source_t *const *sources = mca_coll_loom_component.runtime_sources;
    int written = 0;
    for (int k = 0; k < n; ++k) written |= *sources[k] == MCA_BASE_VAR_SOURCE_SET;
    if (!written) return;
    for (int k = 0; k < n; ++k) {
        /* Compared by content: Open MPI frees the old string and the new
         * one may land at the same address. */
        const int i = mca_coll_loom_component.runtime_params[k];
        if (*sources[k] != MCA_BASE_VAR_SOURCE_SET || !m->applied[i]) continue;
        /* Open MPI stores an empty string as NULL. */
        const char *now = mca_coll_loom_component.param_values[i] ? mca_coll_loom_component.param_values[i] : "";
        if (!strcmp(now, m->applied[i])) continue;
        const char *name;
        if (loom_param_info(i, &name, NULL, NULL, NULL) != LOOM_SUCCESS) continue;
        if (loom_comm_set_param(m->loom, name, now) != LOOM_SUCCESS) {
            if (ompi_comm_rank(m->comm) == 0)
                fprintf(stderr, "coll/loom: coll_loom_%s = '%s' set through MPI_T: %s; keeping '%s'\n", name, now,
                        loom_last_error(), m->applied[i]);
        }
        /* Remembered either way, so a bad value is reported once. */
        char *copy = strdup(now);
        if (copy) {
            free(m->applied[i]);
            m->applied[i] = copy;
        }
    }
}

#define SAVE_PREVIOUS(m, comm, slot)                                   \
    do {                                                               \
        (m)->previous.slot = (comm)->c_coll->coll_##slot;              \
        (m)->previous.slot##_module = (comm)->c_coll->coll_##slot##_module; \
        if ((m)->previous.slot##_module) OBJ_RETAIN((m)->previous.slot##_module); \
    } while (0)

/* Everything Loom needs on this communicator, made without communication
 * (enable may run inside a progress callback): the node map, this rank's
 * shared-memory inbox (peers' inboxes are mapped when first sent to), and
 * the libloom communicator, whose messages travel on `comm` itself with
 * tags in a range no other component of this Open MPI uses. Every rank
 * decides alike, so a collective never runs as Loom on some ranks and as
 * the module below on others. */
static bool set_up(mca_coll_loom_module_t *m, struct ompi_communicator_t *comm) {
    m->counts64 = malloc(sizeof(int64_t) * (size_t)ompi_comm_size(comm));
    if (!m->counts64) return false;
    mca_coll_loom_find_nodes(m, comm);
    mca_coll_loom_shm_create_inbox(m, comm);
    if (mca_coll_loom_create_loom_comm(comm, &m->loom) != LOOM_SUCCESS) {
        fprintf(stderr, "coll/loom: %s\n", loom_last_error());
        return false;
    }
    /* MCA values that differ from the table's defaults go to libloom; a bad
     * one is reported once and left at its default. */
    for (int i = 0; i < mca_coll_loom_component.param_count; ++i) {
        const char *name, *def;
        const char *value = mca_coll_loom_component.param_values[i];
        if (!value || loom_param_info(i, &name, &def, NULL, NULL) != LOOM_SUCCESS || !strcmp(value, def)) continue;
        if (loom_comm_set_param(m->loom, name, value) != LOOM_SUCCESS && ompi_comm_rank(comm) == 0)
            fprintf(stderr, "coll/loom: coll_loom_%s: %s; using %s\n", name, loom_last_error(), def);
    }
    /* What libloom has of each parameter that MPI_T may change later. */
    m->applied = calloc((size_t)mca_coll_loom_component.param_count, sizeof(char *));
    for (int i = 0; m->applied && i < mca_coll_loom_component.param_count; ++i) {
        const char *name;
        if (loom_param_info(i, &name, NULL, NULL, NULL) != LOOM_SUCCESS || !mca_coll_loom_param_is_runtime(name))
            continue;
        const char *value = mca_coll_loom_component.param_values[i];
        m->applied[i] = strdup(value ? value : "");
    }
    if (mca_coll_loom_component.verbose >= 1) loom_comm_set_param(m->loom, "verbose", "1");
    if (mca_coll_loom_component.verbose >= 2) loom_comm_set_param(m->loom, "verbose", "2");
    if (m->node_labels && loom_comm_set_nodes(m->loom, m->node_labels, ompi_comm_size(comm), m->rails) != LOOM_SUCCESS)
        fprintf(stderr, "coll/loom: %s\n", loom_last_error());
    /* After the parameters: shm_max_bytes is read when attaching. */
    return mca_coll_loom_shm_attach(m) == LOOM_SUCCESS;
}

int mca_coll_loom_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    /* Modules are enabled from lowest to highest priority, so the table
     * now holds the functions Loom falls back to. */
    if (!m->previous_saved) {
        SAVE_PREVIOUS(m, comm, allreduce);
        SAVE_PREVIOUS(m, comm, reduce_scatter);
        SAVE_PREVIOUS(m, comm, reduce_scatter_block);
        SAVE_PREVIOUS(m, comm, allgather);
        SAVE_PREVIOUS(m, comm, alltoall);
        SAVE_PREVIOUS(m, comm, iallreduce);
        SAVE_PREVIOUS(m, comm, ireduce_scatter);
        SAVE_PREVIOUS(m, comm, ireduce_scatter_block);
        SAVE_PREVIOUS(m, comm, iallgather);
        SAVE_PREVIOUS(m, comm, ialltoall);
        SAVE_PREVIOUS(m, comm, allreduce_init);
        SAVE_PREVIOUS(m, comm, reduce_scatter_init);
        SAVE_PREVIOUS(m, comm, reduce_scatter_block_init);
        SAVE_PREVIOUS(m, comm, allgather_init);
        SAVE_PREVIOUS(m, comm, alltoall_init);
        m->previous_saved = true;
    }
    if (!m->previous.allreduce || !m->previous.reduce_scatter || !m->previous.reduce_scatter_block ||
        !m->previous.allgather || !m->previous.alltoall || !m->previous.iallreduce ||
        !m->previous.ireduce_scatter || !m->previous.ireduce_scatter_block || !m->previous.iallgather ||
        !m->previous.ialltoall) {
        /* Nothing to fall back to: do not take the communicator. */
        release_previous(m);
        return OMPI_ERROR;
    }
    /* Persistent slots are optional below Loom (only libnbc fills them): take
     * one only where there is a module to hand refusals to. */
    if (!m->previous.allreduce_init) m->super.coll_allreduce_init = NULL;
    if (!m->previous.reduce_scatter_init) m->super.coll_reduce_scatter_init = NULL;
    if (!m->previous.reduce_scatter_block_init) m->super.coll_reduce_scatter_block_init = NULL;
    if (!m->previous.allgather_init) m->super.coll_allgather_init = NULL;
    if (!m->previous.alltoall_init) m->super.coll_alltoall_init = NULL;
    if (m->state == COLL_LOOM_PENDING) m->state = set_up(m, comm) ? COLL_LOOM_READY : COLL_LOOM_FAILED;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* argument conversion shared by blocking, nonblocking and persistent */

/* Loom's type for an MPI datatype, or false (fall back). The last one
 * accepted is remembered (predefined handles are never freed): loops call
 * with the same type, and the lookup compares handle after handle. */
static bool loom_type(struct ompi_datatype_t *dtype, loom_datatype_t *out) {
    static _Thread_local struct ompi_datatype_t *known;  /* per thread: no torn pairs under MPI_THREAD_MULTIPLE */
    static _Thread_local loom_datatype_t known_type;
    if (dtype == known && known) {
        *out = known_type;
        return true;
    }
    if (loom_datatype_from_mpi(dtype, out) != LOOM_SUCCESS) return false;
    known = dtype;
    known_type = *out;
    return true;
}

/* Checks a reduction's type and op; on failure sets *why. The last accepted
 * pair is remembered: loops call with the same one. */
static _Thread_local struct ompi_datatype_t *last_dtype;  /* per thread, as in loom_type */
static _Thread_local struct ompi_op_t *last_op;
static _Thread_local loom_datatype_t last_type;
static _Thread_local loom_op_t last_lop;

bool mca_coll_loom_reduction_args(struct ompi_datatype_t *dtype, struct ompi_op_t *op, loom_datatype_t *type,
                           loom_op_t *lop, enum coll_loom_fallback *why) {
    if (dtype == last_dtype && op == last_op) {
        *type = last_type;
        *lop = last_lop;
        return true;
    }
    if (!loom_type(dtype, type)) {
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
    last_dtype = dtype;  /* predefined handles: never freed, safe to remember */
    last_op = op;
    last_type = *type;
    last_lop = *lop;
    return true;
}

/* allgather/alltoall: one element type on both sides (or in place). */
bool mca_coll_loom_movement_args(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, int rcount,
                          struct ompi_datatype_t *rdtype, loom_datatype_t *type, enum coll_loom_fallback *why) {
    if (!loom_type(rdtype, type)) {
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

static size_t type_size(loom_datatype_t t) {
    size_t s = 0;
    loom_datatype_size(t, &s);
    return s;
}

/* Records a finished Loom call, or reports libloom's refusal. */
static bool loom_done(mca_coll_loom_module_t *m, enum coll_loom_collective c, int rc, size_t bytes) {
    if (rc != LOOM_SUCCESS) {
        if (mca_coll_loom_component.verbose >= 1 || rc != LOOM_ERR_ALGORITHM_NOT_APPLICABLE)
            fprintf(stderr, "coll/loom: %s: %s: %s (handing the call to the previous module)\n", mca_coll_loom_collective_name(c),
                    loom_strerror(rc), loom_last_error());
        mca_coll_loom_count_fallback(c, COLL_LOOM_FALLBACK_LOOM_ERROR);
        return false;
    }
    const char *algorithm = NULL;
    /* Which algorithm ran is only needed for the statistics. */
    if (mca_coll_loom_component.stats) loom_comm_last_algorithm(m->loom, mca_coll_loom_collective_name(c), &algorithm);
    mca_coll_loom_count_call(c, bytes, algorithm);
    return true;
}

/* ------------------------------------------------------------------ */
/* blocking */

int mca_coll_loom_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    loom_op_t lop;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    if (mca_coll_loom_usable(m) && mca_coll_loom_reduction_args(dtype, op, &type, &lop, &why)) {
        /* Open MPI's own communicator code passes sbuf == rbuf: same data,
         * so it is an in-place call. */
        int rc = loom_allreduce(sbuf == rbuf ? MPI_IN_PLACE : sbuf, rbuf, count, type, lop, m->loom);
        if (loom_done(m, COLL_LOOM_ALLREDUCE, rc, (size_t)count * type_size(type))) return MPI_SUCCESS;
        why = COLL_LOOM_FALLBACK_LOOM_ERROR;
    } else {
        mca_coll_loom_count_fallback(COLL_LOOM_ALLREDUCE, why);
    }
    return m->previous.allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous.allreduce_module);
}

int mca_coll_loom_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    loom_op_t lop;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    if (mca_coll_loom_usable(m) && mca_coll_loom_reduction_args(dtype, op, &type, &lop, &why)) {
        /* The module's own array: blocking collectives on one communicator
         * never overlap, so no allocation per call is needed. */
        const int p = ompi_comm_size(comm);
        size_t total = 0;
        for (int i = 0; i < p; ++i) {
            m->counts64[i] = rcounts[i];
            total += (size_t)rcounts[i];
        }
        int rc = loom_reduce_scatter(sbuf, rbuf, m->counts64, type, lop, m->loom);
        if (loom_done(m, COLL_LOOM_REDUCE_SCATTER, rc, total * type_size(type))) return MPI_SUCCESS;
    } else {
        mca_coll_loom_count_fallback(COLL_LOOM_REDUCE_SCATTER, why);
    }
    return m->previous.reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, m->previous.reduce_scatter_module);
}

int mca_coll_loom_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    loom_op_t lop;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    if (mca_coll_loom_usable(m) && mca_coll_loom_reduction_args(dtype, op, &type, &lop, &why)) {
        int rc = loom_reduce_scatter_block(sbuf, rbuf, rcount, type, lop, m->loom);
        if (loom_done(m, COLL_LOOM_REDUCE_SCATTER_BLOCK, rc,
                      (size_t)rcount * (size_t)ompi_comm_size(comm) * type_size(type)))
            return MPI_SUCCESS;
    } else {
        mca_coll_loom_count_fallback(COLL_LOOM_REDUCE_SCATTER_BLOCK, why);
    }
    return m->previous.reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                            m->previous.reduce_scatter_block_module);
}

int mca_coll_loom_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    if (mca_coll_loom_usable(m) && mca_coll_loom_movement_args(sbuf, scount, sdtype, rcount, rdtype, &type, &why)) {
        int rc = loom_allgather(sbuf, rbuf, rcount, type, m->loom);
        if (loom_done(m, COLL_LOOM_ALLGATHER, rc, (size_t)rcount * type_size(type))) return MPI_SUCCESS;
    } else {
        mca_coll_loom_count_fallback(COLL_LOOM_ALLGATHER, why);
    }
    return m->previous.allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous.allgather_module);
}

int mca_coll_loom_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    if (mca_coll_loom_usable(m) && mca_coll_loom_movement_args(sbuf, scount, sdtype, rcount, rdtype, &type, &why)) {
        int rc = loom_alltoall(sbuf, rbuf, rcount, type, m->loom);
        if (loom_done(m, COLL_LOOM_ALLTOALL, rc, (size_t)rcount * (size_t)ompi_comm_size(comm) * type_size(type)))
            return MPI_SUCCESS;
    } else {
        mca_coll_loom_count_fallback(COLL_LOOM_ALLTOALL, why);
    }
    return m->previous.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, m->previous.alltoall_module);
}

/* ------------------------------------------------------------------ */
/* nonblocking and persistent: same checks, then a request */


int mca_coll_loom_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    loom_op_t lop;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    bool loom_takes_it = mca_coll_loom_usable(m) && mca_coll_loom_reduction_args(dtype, op, &type, &lop, &why);
    COLL_LOOM_OR_PREVIOUS(COLL_LOOM_ALLREDUCE, loom_takes_it, why,
                mca_coll_loom_request_start_nonblocking(m, COLL_LOOM_ALLREDUCE, sbuf, rbuf, count, NULL, type, lop,
                                                        false, request),
                m->previous.iallreduce(sbuf, rbuf, count, dtype, op, comm, request, m->previous.iallreduce_module));
}

int mca_coll_loom_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    loom_op_t lop;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    bool loom_takes_it = mca_coll_loom_usable(m) && mca_coll_loom_reduction_args(dtype, op, &type, &lop, &why);
    COLL_LOOM_OR_PREVIOUS(COLL_LOOM_REDUCE_SCATTER, loom_takes_it, why,
                          mca_coll_loom_request_start_nonblocking(m, COLL_LOOM_REDUCE_SCATTER, sbuf, rbuf, 0, rcounts,
                                                                  type, lop, false, request),
                          m->previous.ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                                      m->previous.ireduce_scatter_module));
}

int mca_coll_loom_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                        ompi_request_t **request, mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    loom_op_t lop;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    bool loom_takes_it = mca_coll_loom_usable(m) && mca_coll_loom_reduction_args(dtype, op, &type, &lop, &why);
    COLL_LOOM_OR_PREVIOUS(COLL_LOOM_REDUCE_SCATTER_BLOCK, loom_takes_it, why,
                mca_coll_loom_request_start_nonblocking(m, COLL_LOOM_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, NULL,
                                                        type, lop, false, request),
                m->previous.ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                  m->previous.ireduce_scatter_block_module));
}

int mca_coll_loom_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    bool loom_takes_it = mca_coll_loom_usable(m) && mca_coll_loom_movement_args(sbuf, scount, sdtype, rcount, rdtype, &type, &why);
    COLL_LOOM_OR_PREVIOUS(COLL_LOOM_ALLGATHER, loom_takes_it, why,
                mca_coll_loom_request_start_nonblocking(m, COLL_LOOM_ALLGATHER, sbuf, rbuf, rcount, NULL, type,
                                                        LOOM_SUM, false, request),
                m->previous.iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                       m->previous.iallgather_module));
}

int mca_coll_loom_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            ompi_request_t **request, mca_coll_base_module_t *module) {
    mca_coll_loom_module_t *m = (mca_coll_loom_module_t *)module;
    loom_datatype_t type;
    enum coll_loom_fallback why = COLL_LOOM_FALLBACK_NOT_SET_UP;
    bool loom_takes_it = mca_coll_loom_usable(m) && mca_coll_loom_movement_args(sbuf, scount, sdtype, rcount, rdtype, &type, &why);
    COLL_LOOM_OR_PREVIOUS(COLL_LOOM_ALLTOALL, loom_takes_it, why,
                mca_coll_loom_request_start_nonblocking(m, COLL_LOOM_ALLTOALL, sbuf, rbuf, rcount, NULL, type,
                                                        LOOM_SUM, false, request),
                m->previous.ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                      m->previous.ialltoall_module));
}
