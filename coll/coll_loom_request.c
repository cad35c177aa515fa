/*
 * Requests of coll/loom's nonblocking and persistent collectives. Each wraps
 * a libloom request; one progress callback registered with opal_progress
 * drives them all, so MPI_Test/MPI_Wait/MPI_Waitall on them behave like on
 * any other MPI request.
 */
#include "coll_loom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"

typedef struct mca_coll_loom_request_t {
    ompi_request_t super;
    mca_coll_loom_module_t *module;
    loom_request_t running;    /* the libloom request while active, else NULL */
    loom_request_t persistent; /* MPIX_*_init: libloom's persistent request, made at init; else NULL */
    /* the call, kept for persistent restarts */
    enum coll_loom_collective collective;
    const void *sbuf;
    void *rbuf;
    int64_t count;   /* the call's count; the vector shapes: what this rank sends (statistics) */
    int64_t *vector; /* four rows of one entry per rank, widened: send counts and displacements,
                        receive counts and displacements (those the call has); else NULL */
    loom_datatype_t type;
    loom_op_t op;
} mca_coll_loom_request_t;

static OBJ_CLASS_INSTANCE(mca_coll_loom_request_t, ompi_request_t, NULL, NULL);

/* Active requests, progressed by one callback. */
static mca_coll_loom_request_t **active;
static size_t active_count, active_capacity;
static bool progress_registered;
static int in_progress; /* re-entry guard: opal_progress is not re-entrant */

static int loom_progress(void) {
    if (in_progress || active_count == 0) return 0;
    in_progress = 1;
    int completed = 0;
    for (size_t i = 0; i < active_count;) {
        mca_coll_loom_request_t *r = active[i];
        int done = 0;
        const char *algorithm = NULL;
        int rc = loom_test_algorithm(&r->running, &done, &algorithm);
        if (!done && rc == LOOM_SUCCESS) {
            ++i;
            continue;
        }
        /* Counted once done: an alltoallv that learns the counts first
         * chooses its algorithm after its start. */
        if (rc == LOOM_SUCCESS && algorithm && mca_coll_loom_component.stats)
            mca_coll_loom_count_algorithm(r->collective, algorithm);
        if (rc != LOOM_SUCCESS) {
            fprintf(stderr, "coll/loom: nonblocking collective failed: %s\n", loom_last_error());
            if (r->running && !r->persistent) { /* an error leaves the request to be freed by us */
                loom_request_t dead = r->running;
                loom_request_free(&dead);
            }
        }
        r->running = NULL;
        active[i] = active[--active_count];
        const int error_class = loom_mpi_error_class(rc);
        if (error_class) mca_coll_loom_keep_context(r->module);
        r->super.req_status.MPI_ERROR = rc == LOOM_SUCCESS ? MPI_SUCCESS : error_class ? error_class : MPI_ERR_INTERN;
        r->super.req_status._cancelled = 0;
        ompi_request_complete(&r->super, true);
        ++completed;
    }
    in_progress = 0;
    return completed;
}

bool mca_coll_loom_in_progress_callback(void) { return in_progress != 0; }

void mca_coll_loom_progress_fini(void) {
    if (progress_registered) opal_progress_unregister(loom_progress);
    progress_registered = false;
    free(active);
    active = NULL;
    active_count = active_capacity = 0;
}

static int activate(mca_coll_loom_request_t *r) {
    if (active_count == active_capacity) {
        size_t cap = active_capacity ? 2 * active_capacity : 16;
        mca_coll_loom_request_t **grown = realloc(active, cap * sizeof(*grown));
        if (!grown) return OMPI_ERR_OUT_OF_RESOURCE;
        active = grown;
        active_capacity = cap;
    }
    active[active_count++] = r;
    if (!progress_registered) {
        opal_progress_register(loom_progress);
        progress_registered = true;
    }
    return OMPI_SUCCESS;
}

/* Row k (0 send counts, 1 send displacements, 2 receive counts, 3 receive
 * displacements) of the request's arrays. */
static int64_t *row(const mca_coll_loom_request_t *r, int k) {
    return r->vector + (size_t)k * (size_t)ompi_comm_size(r->module->comm);
}

/* Starts the libloom collective of `r`. Written out rather than generated
 * from COLL_LOOM_COLLECTIVES, alltoall as the default: with five cases and
 * no default GCC emitted a jump table, dearer per call than a compare tree
 * (the vector collectives' two cases came later, not measured so). */
static int start_one(mca_coll_loom_request_t *r) {
    loom_comm_t lc = r->module->loom;
    int rc;
    if (r->persistent) {
        rc = loom_start(r->persistent);
        if (rc == LOOM_SUCCESS) r->running = r->persistent;
    } else switch (r->collective) {
        case COLL_LOOM_ALLREDUCE:
            rc = loom_iallreduce(r->sbuf, r->rbuf, r->count, r->type, r->op, lc, &r->running);
            break;
        case COLL_LOOM_REDUCE_SCATTER:
            rc = loom_ireduce_scatter(r->sbuf, r->rbuf, row(r, 2), r->type, r->op, lc, &r->running);
            break;
        case COLL_LOOM_ALLTOALLV:
            rc =
                loom_ialltoallv(r->sbuf, row(r, 0), row(r, 1), r->rbuf, row(r, 2), row(r, 3), r->type, lc, &r->running);
            break;
        case COLL_LOOM_ALLGATHERV:
            rc = loom_iallgatherv(r->sbuf, r->count, r->rbuf, row(r, 2), row(r, 3), r->type, lc, &r->running);
            break;
        case COLL_LOOM_REDUCE_SCATTER_BLOCK:
            rc = loom_ireduce_scatter_block(r->sbuf, r->rbuf, r->count, r->type, r->op, lc, &r->running);
            break;
        case COLL_LOOM_ALLGATHER: rc = loom_iallgather(r->sbuf, r->rbuf, r->count, r->type, lc, &r->running); break;
        default: rc = loom_ialltoall(r->sbuf, r->rbuf, r->count, r->type, lc, &r->running); break;
    }
    if (rc != LOOM_SUCCESS) {
        r->running = NULL;
        return rc;
    }
    size_t elem = 0;
    loom_datatype_size(r->type, &elem);
    mca_coll_loom_count_call(r->collective, (size_t)r->count * elem, NULL); /* the algorithm once done */
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_complete = REQUEST_PENDING;
    r->super.req_status.MPI_ERROR = MPI_SUCCESS;
    return activate(r);
}

/* Makes libloom's persistent request for `r` (MPIX_*_init): the plan, its
 * scratch and bookkeeping are made here, so that MPI_Start allocates nothing. */
static int init_one(mca_coll_loom_request_t *r) {
    loom_comm_t lc = r->module->loom;
    switch (r->collective) {
        case COLL_LOOM_ALLREDUCE:
            return loom_allreduce_init(r->sbuf, r->rbuf, r->count, r->type, r->op, lc, &r->persistent);
        case COLL_LOOM_REDUCE_SCATTER:
            return loom_reduce_scatter_init(r->sbuf, r->rbuf, row(r, 2), r->type, r->op, lc, &r->persistent);
        case COLL_LOOM_ALLTOALLV:
            return loom_alltoallv_init(r->sbuf, row(r, 0), row(r, 1), r->rbuf, row(r, 2), row(r, 3), r->type, lc,
                                       &r->persistent);
        case COLL_LOOM_ALLGATHERV:
            return loom_allgatherv_init(r->sbuf, r->count, r->rbuf, row(r, 2), row(r, 3), r->type, lc, &r->persistent);
        case COLL_LOOM_REDUCE_SCATTER_BLOCK:
            return loom_reduce_scatter_block_init(r->sbuf, r->rbuf, r->count, r->type, r->op, lc, &r->persistent);
        case COLL_LOOM_ALLGATHER: return loom_allgather_init(r->sbuf, r->rbuf, r->count, r->type, lc, &r->persistent);
        default: return loom_alltoall_init(r->sbuf, r->rbuf, r->count, r->type, lc, &r->persistent);
    }
}

static int request_start(size_t count, ompi_request_t **requests) {
    for (size_t i = 0; i < count; ++i) {
        mca_coll_loom_request_t *r = (mca_coll_loom_request_t *)requests[i];
        if (r->running) return MPI_ERR_REQUEST; /* still active: MPI forbids restarting it */
        int rc = start_one(r);
        if (rc != LOOM_SUCCESS) {
            fprintf(stderr, "coll/loom: MPI_Start: %s\n", loom_last_error());
            const int error_class = loom_mpi_error_class(rc);
            if (error_class) mca_coll_loom_keep_context(r->module);
            return error_class ? error_class : MPI_ERR_INTERN;
        }
    }
    return OMPI_SUCCESS;
}

static int request_free(ompi_request_t **request) {
    mca_coll_loom_request_t *r = (mca_coll_loom_request_t *)*request;
    ompi_communicator_t *comm = r->super.req_mpi_object.comm;
    /* Freeing an active request: finish it first, Loom never leaves a user
     * buffer half written. */
    while (r->running) opal_progress();
    if (r->persistent) loom_request_free(&r->persistent);
    free(r->vector);
    OMPI_REQUEST_FINI(&r->super);
    OBJ_RELEASE(r);
    *request = MPI_REQUEST_NULL;
    OBJ_RELEASE(comm); /* the request's hold (start_nonblocking); may destroy a freed communicator */
    return OMPI_SUCCESS;
}

static int request_cancel(ompi_request_t *request, int complete) {
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives cannot be cancelled (MPI 4.0, 3.7.3) */
}

/* The request's copy of the call's arrays, widened (libloom takes 64-bit
 * counts; a restart needs them after the caller's may be gone); its count
 * for the statistics. An in-place alltoallv's send arrays are not read. */
static int keep_vectors(mca_coll_loom_request_t *r, const coll_loom_vectors_t *v) {
    const int p = ompi_comm_size(r->module->comm);
    r->vector = calloc(4 * (size_t)(p > 0 ? p : 1), sizeof(int64_t));
    if (!r->vector) return OMPI_ERR_OUT_OF_RESOURCE;
    const bool in_place = r->sbuf == MPI_IN_PLACE;
    const int *rows[4] = {in_place ? NULL : v->scounts, in_place ? NULL : v->sdispls, v->rcounts, v->rdispls};
    int64_t sums[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; ++k)
        for (int i = 0; rows[k] && i < p; ++i) sums[k] += row(r, k)[i] = rows[k][i];
    if (r->collective == COLL_LOOM_REDUCE_SCATTER) r->count = sums[2];
    if (r->collective == COLL_LOOM_ALLTOALLV) r->count = in_place ? sums[2] : sums[0];
    return OMPI_SUCCESS;
}

int mca_coll_loom_request_start_nonblocking(mca_coll_loom_module_t *m, enum coll_loom_collective c, const void *sbuf,
                                            void *rbuf, int64_t count, const coll_loom_vectors_t *vectors,
                                            loom_datatype_t type, loom_op_t op, bool persistent,
                                            ompi_request_t **request) {
    mca_coll_loom_request_t *r = OBJ_NEW(mca_coll_loom_request_t);
    if (!r) return OMPI_ERR_OUT_OF_RESOURCE;
    OMPI_REQUEST_INIT(&r->super, persistent);
    r->super.req_status = ompi_status_empty;
    r->super.req_type = OMPI_REQUEST_COLL;
    r->super.req_mpi_object.comm = m->comm;
    r->super.req_free = request_free;
    r->super.req_cancel = request_cancel;
    r->super.req_start = persistent ? request_start : NULL;
    r->module = m;
    r->running = NULL;
    r->persistent = NULL;
    r->collective = c;
    r->sbuf = sbuf; /* MPI_IN_PLACE already where sbuf == rbuf means in place (the table's in_place) */
    r->rbuf = rbuf;
    r->count = count;
    r->vector = NULL;
    r->type = type;
    r->op = op;
    if (vectors && keep_vectors(r, vectors) != OMPI_SUCCESS) {
        OMPI_REQUEST_FINI(&r->super);
        OBJ_RELEASE(r);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = LOOM_SUCCESS;
    if (persistent) {
        /* The algorithm is chosen now, so a forced one that cannot run this
         * call is handed back at init rather than failing MPI_Start. */
        rc = init_one(r);
    } else {
        rc = start_one(r);
    }
    if (rc != LOOM_SUCCESS) {
        /* A communicator abandoned under hang_abort or revoked: the call is
         * an error (its peers are not in the module below either). */
        const int error_class = loom_mpi_error_class(rc);
        if (error_class) mca_coll_loom_keep_context(m);
        if (error_class)
            fprintf(stderr, "coll/loom: %s on %s: %s\n", mca_coll_loom_collective_name(c), m->comm->c_name,
                    loom_last_error());
        else if (mca_coll_loom_component.verbose >= 1 || rc != LOOM_ERR_ALGORITHM_NOT_APPLICABLE)
            fprintf(stderr, "coll/loom: %s (handing the call to the previous module)\n", loom_last_error());
        if (!error_class) mca_coll_loom_count_fallback(c, COLL_LOOM_FALLBACK_LOOM_ERROR);
        free(r->vector);
        OMPI_REQUEST_FINI(&r->super);
        OBJ_RELEASE(r);
        return error_class ? error_class : OMPI_ERROR;
    }
    /* MPI lets a program free the communicator while the call is pending:
     * the request holds it until freed, so that Open MPI keeps its context
     * id and the PML's matching (which Loom's messages use) alive meanwhile. */
    OBJ_RETAIN(m->comm);
    *request = &r->super;
    return OMPI_SUCCESS;
}
