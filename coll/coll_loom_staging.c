/*
 * Device buffers on the way to the module below. Open MPI 4.1 as Debian
 * builds it is not CUDA-aware: a device pointer handed to tuned or libnbc
 * crashes or corrupts. A call Loom hands down is therefore first given host
 * copies of its device buffers (the whole span the datatype covers, as
 * coll/cuda does), run there, and its output copied back.
 */
#include "coll_loom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"

static uint64_t staged_calls[COLL_LOOM_NCOLLECTIVES];

uint64_t mca_coll_loom_staged_fallbacks(enum coll_loom_collective c) { return staged_calls[c]; }

bool mca_coll_loom_on_device(const void *buf) {
    loom_memory_t m = LOOM_MEMORY_HOST;
    if (!buf || buf == MPI_IN_PLACE) return false;
    loom_memory_type(buf, &m);
    return m == LOOM_MEMORY_CUDA;
}

/* A host copy of `count` elements of `dt` at `user` when that is device
 * memory (copied in when asked); s->host stays NULL otherwise. */
static int stage(coll_loom_stage_t *s, const void *user, size_t count, struct ompi_datatype_t *dt, bool copy_in) {
    memset(s, 0, sizeof *s);
    s->user = (char *)user;
    if (count == 0 || !mca_coll_loom_on_device(user)) return OMPI_SUCCESS;
    ptrdiff_t gap = 0;
    const ptrdiff_t span = opal_datatype_span(&dt->super, count, &gap);
    s->host = malloc(span > 0 ? (size_t)span : 1);
    if (!s->host) return OMPI_ERR_OUT_OF_RESOURCE;
    s->gap = gap;
    s->span = (size_t)span;
    if (copy_in && loom_memory_copy(s->host, s->user + gap, s->span) != LOOM_SUCCESS) {
        fprintf(stderr, "coll/loom: staging a device buffer for the module below: %s\n", loom_last_error());
        free(s->host);
        s->host = NULL;
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* The pointer the module below is given for the staged buffer. */
static void *staged(const coll_loom_stage_t *s) { return s->host ? s->host - s->gap : s->user; }

static int unstage(coll_loom_stage_t *s, bool copy_out) {
    int rc = OMPI_SUCCESS;
    if (!s->host) return rc;
    if (copy_out && loom_memory_copy(s->user + s->gap, s->host, s->span) != LOOM_SUCCESS) {
        fprintf(stderr, "coll/loom: copying the module below's output to the device: %s\n", loom_last_error());
        rc = OMPI_ERROR;
    }
    free(s->host);
    s->host = NULL;
    return rc;
}

int mca_coll_loom_persistent_on_device(enum coll_loom_collective c) {
    fprintf(stderr,
            "coll/loom: persistent %s on device buffers that Loom cannot run (see the fallback reason): refused, "
            "because the module below cannot take device memory\n",
            mca_coll_loom_collective_name(c));
    return MPI_ERR_BUFFER;
}

static void count_staged(enum coll_loom_collective c) {
    staged_calls[c]++;
    if (mca_coll_loom_component.verbose >= 2)
        fprintf(stderr, "coll/loom: %s on device buffers staged through host memory for the module below\n",
                mca_coll_loom_collective_name(c));
}

/* Host copies of a call's device buffers, counted: the send side (none in
 * place) copied in; the receive side copied in only in place. */
static int stage_call(enum coll_loom_collective c, coll_loom_stage_t *s, const void *sbuf, size_t send_count,
                      struct ompi_datatype_t *sdtype, coll_loom_stage_t *r, void *rbuf, size_t recv_count,
                      struct ompi_datatype_t *rdtype, bool in_place) {
    int rc = stage(s, in_place ? NULL : sbuf, send_count, sdtype, true);
    if (rc == OMPI_SUCCESS) rc = stage(r, rbuf, recv_count, rdtype, in_place);
    else memset(r, 0, sizeof *r);
    count_staged(c);
    return rc;
}

/* Frees the copies, the receive side copied back when the call below (`rc`)
 * succeeded; the call's result. */
static int unstage_call(coll_loom_stage_t *s, coll_loom_stage_t *r, int rc) {
    unstage(s, false);
    const int copied = unstage(r, rc == OMPI_SUCCESS);
    return rc == OMPI_SUCCESS ? copied : rc;
}

static bool call_on_device(const void *sbuf, void *rbuf, bool in_place) {
    return mca_coll_loom_on_device(in_place ? NULL : sbuf) || mca_coll_loom_on_device(rbuf);
}

int mca_coll_loom_below_reduce(enum coll_loom_collective c, mca_coll_base_module_allreduce_fn_t fn,
                               mca_coll_base_module_t *below, const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, struct ompi_communicator_t *comm) {
    const bool in_place = sbuf == MPI_IN_PLACE || (c == COLL_LOOM_ALLREDUCE && sbuf == rbuf);
    if (!call_on_device(sbuf, rbuf, in_place)) return fn(sbuf, rbuf, count, dtype, op, comm, below);
    const size_t in = (size_t)count * (c == COLL_LOOM_REDUCE_SCATTER_BLOCK ? (size_t)ompi_comm_size(comm) : 1);
    coll_loom_stage_t s, r;
    int rc = stage_call(c, &s, sbuf, in, dtype, &r, rbuf, in_place ? in : (size_t)count, dtype, in_place);
    /* Open MPI's own code passes sbuf == rbuf for in place: both become the copy. */
    if (rc == OMPI_SUCCESS)
        rc = fn(sbuf == MPI_IN_PLACE ? sbuf
                : in_place           ? staged(&r)
                                     : staged(&s),
                staged(&r), count, dtype, op, comm, below);
    return unstage_call(&s, &r, rc);
}

int mca_coll_loom_below_reduce_v(enum coll_loom_collective c, mca_coll_base_module_reduce_scatter_fn_t fn,
                                 mca_coll_base_module_t *below, const void *sbuf, void *rbuf, const int *rcounts,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm) {
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (!call_on_device(sbuf, rbuf, in_place)) return fn(sbuf, rbuf, rcounts, dtype, op, comm, below);
    size_t in = 0;
    for (int i = 0; i < ompi_comm_size(comm); ++i) in += (size_t)rcounts[i];
    const size_t out = (size_t)rcounts[ompi_comm_rank(comm)];
    coll_loom_stage_t s, r;
    int rc = stage_call(c, &s, sbuf, in, dtype, &r, rbuf, in_place ? in : out, dtype, in_place);
    if (rc == OMPI_SUCCESS) rc = fn(in_place ? sbuf : staged(&s), staged(&r), rcounts, dtype, op, comm, below);
    return unstage_call(&s, &r, rc);
}

int mca_coll_loom_below_move(enum coll_loom_collective c, mca_coll_base_module_allgather_fn_t fn,
                             mca_coll_base_module_t *below, const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm) {
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (!call_on_device(sbuf, rbuf, in_place)) return fn(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, below);
    const size_t p = (size_t)ompi_comm_size(comm);
    const size_t in = (size_t)scount * (c == COLL_LOOM_ALLTOALL ? p : 1);
    coll_loom_stage_t s, r;
    int rc = stage_call(c, &s, sbuf, in, sdtype, &r, rbuf, (size_t)rcount * p, rdtype, in_place);
    if (rc == OMPI_SUCCESS)
        rc = fn(in_place ? sbuf : staged(&s), scount, sdtype, staged(&r), rcount, rdtype, comm, below);
    return unstage_call(&s, &r, rc);
}

/* The elements a buffer of blocks `counts` at `displs` spans. */
static size_t extent_of(const int *counts, const int *displs, int p) {
    size_t end = 0;
    for (int i = 0; i < p; ++i)
        if (counts[i] > 0 && (size_t)displs[i] + (size_t)counts[i] > end) end = (size_t)displs[i] + (size_t)counts[i];
    return end;
}

int mca_coll_loom_below_move_v(enum coll_loom_collective c, mca_coll_base_module_alltoallv_fn_t fn,
                               mca_coll_base_module_t *below, const void *sbuf, const int *scounts, const int *sdisps,
                               struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdisps,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm) {
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (!call_on_device(sbuf, rbuf, in_place))
        return fn(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, below);
    const int p = ompi_comm_size(comm);
    const size_t out = extent_of(rcounts, rdisps, p);
    coll_loom_stage_t s, r;
    int rc =
        stage_call(c, &s, sbuf, in_place ? 0 : extent_of(scounts, sdisps, p), sdtype, &r, rbuf, out, rdtype, in_place);
    if (rc == OMPI_SUCCESS)
        rc =
            fn(in_place ? sbuf : staged(&s), scounts, sdisps, sdtype, staged(&r), rcounts, rdisps, rdtype, comm, below);
    return unstage_call(&s, &r, rc);
}

int mca_coll_loom_below_gather_v(enum coll_loom_collective c, mca_coll_base_module_allgatherv_fn_t fn,
                                 mca_coll_base_module_t *below, const void *sbuf, int scount,
                                 struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *disps,
                                 struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm) {
    const bool in_place = sbuf == MPI_IN_PLACE;
    if (!call_on_device(sbuf, rbuf, in_place))
        return fn(sbuf, scount, sdtype, rbuf, rcounts, disps, rdtype, comm, below);
    coll_loom_stage_t s, r;
    int rc = stage_call(c, &s, sbuf, in_place ? 0 : (size_t)scount, sdtype, &r, rbuf,
                        extent_of(rcounts, disps, ompi_comm_size(comm)), rdtype, in_place);
    if (rc == OMPI_SUCCESS)
        rc = fn(in_place ? sbuf : staged(&s), scount, sdtype, staged(&r), rcounts, disps, rdtype, comm, below);
    return unstage_call(&s, &r, rc);
}
