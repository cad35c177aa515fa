/*
 * libloom's transport inside Open MPI: sends and receives posted straight to
 * the PML on the user's communicator in coll/loom's own tag range (no MPI-layer checks, no tool
 * interposition), completion polled on the requests, and Open MPI's
 * progress engine driven once per poll unless we are inside its callback.
 */
#include "coll_loom.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

/* Loom's messages travel on the user's communicator with negative tags
 * from the range coll/base reserves for hcoll, which Debian's Open MPI does
 * not ship: user receives never match negative tags (MPI_ANY_TAG
 * included), libnbc and tuned use tags above this range. */
#define LOOM_TAG_FIRST MCA_COLL_BASE_TAG_HCOLL_BASE
#define LOOM_TAG_COUNT ((uint32_t)(MCA_COLL_BASE_TAG_HCOLL_BASE - MCA_COLL_BASE_TAG_HCOLL_END))

static int pml_tag(uint32_t tag) { return LOOM_TAG_FIRST - (int)tag; }

/* One lane: the PML stripes over its own BTLs. */
static int pml_isend(void *context, const void *buf, size_t bytes, int peer, uint32_t tag, int lane, void **handle) {
    (void)lane;
    ompi_request_t *req = NULL;
    int rc = MCA_PML_CALL(isend(buf, bytes, &ompi_mpi_byte.dt, peer, pml_tag(tag), MCA_PML_BASE_SEND_STANDARD,
                                (ompi_communicator_t *)context, &req));
    *handle = req;
    return rc;
}

static int pml_irecv(void *context, void *buf, size_t bytes, int peer, uint32_t tag, int lane, void **handle) {
    (void)lane;
    ompi_request_t *req = NULL;
    int rc =
        MCA_PML_CALL(irecv(buf, bytes, &ompi_mpi_byte.dt, peer, pml_tag(tag), (ompi_communicator_t *)context, &req));
    *handle = req;
    return rc;
}

/* Marks and releases completed requests; returns how many completed, or -1
 * after an error (-2: a message larger than its receive). */
static int sweep(void *const *handles, size_t n, unsigned char *done) {
    int completed = 0;
    for (size_t i = 0; i < n; ++i) {
        ompi_request_t *req = (ompi_request_t *)handles[i];
        if (done[i] || !REQUEST_COMPLETE(req)) continue;
        const int error = req->req_status.MPI_ERROR;
        ompi_request_free(&req);
        done[i] = 1;
        ++completed;
        if (error != MPI_SUCCESS) return error == MPI_ERR_TRUNCATE ? -2 : -1;
    }
    return completed;
}

static int pml_test_many(void *context, void *const *handles, size_t n, unsigned char *done) {
    (void)context;
    for (size_t i = 0; i < n; ++i) done[i] = 0;
    int completed = sweep(handles, n, done);
    if (completed < 0) return completed == -2 ? LOOM_ERR_MISMATCH : 1;
    /* Nothing finished: let Open MPI move data (it yields the core itself
     * when oversubscribed), then look again. Not from inside our own
     * progress callback: opal_progress is not re-entrant. */
    if (completed == 0 && !mca_coll_loom_in_progress_callback()) {
        opal_progress();
        completed = sweep(handles, n, done);
        if (completed < 0) return completed == -2 ? LOOM_ERR_MISMATCH : 1;
    }
    return 0;
}

/* A receive of an abandoned call (hang_abort) is cancelled, so nothing
 * lands in the caller's buffer later; ob1 cannot recall sends. */
static int pml_withdraw(void *context, void *handle, int receive) {
    (void)context;
    if (!receive) return 0;
    ompi_request_t *req = (ompi_request_t *)handle;
    ompi_request_cancel(req);
    ompi_request_wait(&req, MPI_STATUS_IGNORE);
    return 1;
}

/* Revoke notices ride the tag above every plan's (t.max_tag below). An
 * eager send of 8 bytes completes at once, so the value needs no storage. */
#define LOOM_NOTICE_TAG pml_tag(LOOM_TAG_COUNT - 1)
static int pml_notify(void *context, int peer, uint64_t value) {
    return MCA_PML_CALL(send(&value, sizeof value, &ompi_mpi_byte.dt, peer, LOOM_NOTICE_TAG,
                             MCA_PML_BASE_SEND_STANDARD, (ompi_communicator_t *)context));
}

static int pml_probe(void *context, int *peer, uint64_t *value) {
    int flag = 0;
    ompi_status_public_t status;
    if (MCA_PML_CALL(iprobe(MPI_ANY_SOURCE, LOOM_NOTICE_TAG, (ompi_communicator_t *)context, &flag, &status)) !=
            OMPI_SUCCESS ||
        !flag)
        return 0;
    *peer = status.MPI_SOURCE;
    return MCA_PML_CALL(recv(value, sizeof *value, &ompi_mpi_byte.dt, status.MPI_SOURCE, LOOM_NOTICE_TAG,
                             (ompi_communicator_t *)context, MPI_STATUS_IGNORE)) == OMPI_SUCCESS;
}

int mca_coll_loom_create_loom_comm(ompi_communicator_t *comm, loom_comm_t *out) {
    loom_transport_t t;
    t.version = LOOM_TRANSPORT_VERSION;
    t.name = "pml";
    t.context = comm;
    t.rank = ompi_comm_rank(comm);
    t.size = ompi_comm_size(comm);
    t.max_tag = LOOM_TAG_COUNT - 2; /* the last one carries revoke notices */
    t.isend = pml_isend;
    t.irecv = pml_irecv;
    t.test_many = pml_test_many;
    t.withdraw = pml_withdraw;
    t.notify = pml_notify;
    t.probe = pml_probe;
    return loom_comm_create_with_transport(&t, out);
}
