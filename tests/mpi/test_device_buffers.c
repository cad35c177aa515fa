/*
 * Collectives on device buffers (loom_device_alloc: cuMemAlloc through the
 * driver), checked against a host reference: every collective, blocking,
 * nonblocking and persistent, in place and out, with either buffer or both
 * on the device. --api calls libloom; --mpi calls MPI_* (run it with
 * coll/loom loaded), including calls coll/loom hands to the module below
 * (a derived datatype), which must never see a device buffer.
 * On CPU machines tests/mpi/run_device_tests.sh runs it over the stand-in
 * driver of tests/fake_cuda, whose device memory the CPU cannot touch.
 * Exit 77 (skip) when no CUDA driver loaded, unless --require-driver.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom.h"

static int rank, p, failures, use_mpi;
static int ipc_on = 1;     /* cuda_ipc as set on the communicator */
static const char *forced; /* the allreduce algorithm forced, if any */
static loom_comm_t comm;

#define CHECK_RC(call)                                                                                            \
    do {                                                                                                          \
        int rc_ = (call);                                                                                         \
        if (rc_ != 0) {                                                                                           \
            fprintf(stderr, "rank %d: %s failed (%d): %s\n", rank, #call, rc_, use_mpi ? "" : loom_last_error()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                         \
        }                                                                                                         \
    } while (0)

/* Rank r's input element i, exact in float. */
static int value(int r, long i) { return (int)((r * 7 + i * 3) % 101) - 50; }

enum coll { ALLREDUCE, REDUCE_SCATTER_BLOCK, REDUCE_SCATTER, ALLGATHER, ALLTOALL, ALLTOALLV, ALLGATHERV, NCOLL };
static const char *coll_names[] = {
    "allreduce", "reduce_scatter_block", "reduce_scatter", "allgather", "alltoall", "alltoallv", "allgatherv"};

/* The vector collectives' layout for a base count n, blocks in a scattered
 * order with gaps the call must leave alone: what rank i sends rank j
 * (symmetric, as an in-place alltoallv needs; some pairs nothing), and each
 * rank's shard for allgatherv. vsc/vsd: this rank's send side; vrc/vrd: its
 * receive side (and MPI's int copies). */
static int64_t *vsc, *vsd, *vrc, *vrd;
static int *isc, *isd, *ird;
static long pair_elems(long n, int i, int j) { return n == 0 || (i + j) % 5 == 4 ? 0 : n + (i + j) % 3; }
static long shard_elems(long n, int i) { return n == 0 || i % 4 == 3 ? 0 : n + i % 3; }
static long lay_out(const int64_t *counts, int reverse, int gap, int64_t *displs) {
    long at = 0;
    for (int k = 0; k < p; ++k) {
        const int b = reverse ? p - 1 - k : k;
        at += gap;
        displs[b] = at;
        at += counts[b];
    }
    return at;
}
/* Rank r's send layout (in place: its receive layout, reversed with gaps of 1). */
static long send_layout(enum coll c, long n, int r, int in_place, int64_t *counts, int64_t *displs) {
    for (int j = 0; j < p; ++j) counts[j] = c == ALLTOALLV ? pair_elems(n, r, j) : shard_elems(n, r);
    return lay_out(counts, in_place, in_place ? 1 : 2, displs);
}
enum form { BLOCKING, NONBLOCKING, PERSISTENT, ON_STREAM, NFORMS };
static const char *form_names[] = {"blocking", "nonblocking", "persistent", "on the default stream"};
/* Which buffers are on the device. */
enum where { BOTH, SEND_ONLY, RECV_ONLY, NWHERE };
static const char *where_names[] = {"both on device", "send on device", "recv on device"};

static long counts_of(enum coll c, long n, int in_place, long *in_elems, long *out_elems, int64_t *rcounts,
                      int *icounts) {
    if (c == ALLTOALLV || c == ALLGATHERV) {
        for (int i = 0; i < p; ++i) vrc[i] = c == ALLTOALLV ? pair_elems(n, i, rank) : shard_elems(n, i);
        *out_elems = lay_out(vrc, c == ALLTOALLV || rank % 2, 1, vrd);
        const long sent = send_layout(c, n, rank, in_place && c == ALLTOALLV, vsc, vsd);
        *in_elems = c == ALLGATHERV ? shard_elems(n, rank) : in_place ? *out_elems : sent;
        for (int i = 0; i < p; ++i) {
            isc[i] = (int)vsc[i], isd[i] = (int)vsd[i], icounts[i] = (int)vrc[i], ird[i] = (int)vrd[i];
            rcounts[i] = vrc[i];
        }
        return 0;
    }
    long total = 0;
    for (int i = 0; i < p; ++i) {
        rcounts[i] = n + (i % 3); /* uneven */
        icounts[i] = (int)rcounts[i];
        total += rcounts[i];
    }
    switch (c) {
        case ALLREDUCE: *in_elems = n, *out_elems = n; break;
        case REDUCE_SCATTER_BLOCK: *in_elems = n * p, *out_elems = n; break;
        case REDUCE_SCATTER: *in_elems = total, *out_elems = rcounts[rank]; break;
        case ALLGATHER: *in_elems = n, *out_elems = n * p; break;
        default: *in_elems = n * p, *out_elems = n * p; break;
    }
    return total;
}

/* Rank r's input as the collective lays it out. */
static void fill_input(enum coll c, int r, long in_elems, long n, int *out) {
    for (long i = 0; i < in_elems; ++i) out[i] = value(r, i);
    (void)c, (void)n;
}

static void expected_output(enum coll c, long n, long out_elems, const int64_t *rcounts, int *out) {
    long offset = 0;
    if (c == REDUCE_SCATTER_BLOCK) offset = n * rank;
    if (c == REDUCE_SCATTER)
        for (int i = 0; i < rank; ++i) offset += rcounts[i];
    for (long i = 0; i < out_elems; ++i) {
        if (c == ALLGATHER) {
            out[i] = value((int)(i / (n ? n : 1)), i % (n ? n : 1));
        } else if (c == ALLTOALL) {
            const int src = (int)(i / (n ? n : 1));
            out[i] = value(src, rank * n + i % (n ? n : 1));
        } else {
            int s = 0;
            for (int r = 0; r < p; ++r) s += value(r, offset + i);
            out[i] = s;
        }
    }
}

/* Starts or runs collective c. */
static void call(enum coll c, enum form f, const void *s, void *r, long n, int64_t *rcounts, int *icounts,
                 MPI_Datatype mt, loom_request_t *lreq, MPI_Request *mreq) {
    if (use_mpi) {
        switch (f) {
            case BLOCKING:
                if (c == ALLREDUCE) CHECK_RC(MPI_Allreduce(s, r, (int)n, mt, MPI_SUM, MPI_COMM_WORLD));
                if (c == REDUCE_SCATTER_BLOCK)
                    CHECK_RC(MPI_Reduce_scatter_block(s, r, (int)n, mt, MPI_SUM, MPI_COMM_WORLD));
                if (c == REDUCE_SCATTER) CHECK_RC(MPI_Reduce_scatter(s, r, icounts, mt, MPI_SUM, MPI_COMM_WORLD));
                if (c == ALLGATHER) CHECK_RC(MPI_Allgather(s, (int)n, mt, r, (int)n, mt, MPI_COMM_WORLD));
                if (c == ALLTOALL) CHECK_RC(MPI_Alltoall(s, (int)n, mt, r, (int)n, mt, MPI_COMM_WORLD));
                if (c == ALLTOALLV) CHECK_RC(MPI_Alltoallv(s, isc, isd, mt, r, icounts, ird, mt, MPI_COMM_WORLD));
                if (c == ALLGATHERV)
                    CHECK_RC(MPI_Allgatherv(s, icounts[rank], mt, r, icounts, ird, mt, MPI_COMM_WORLD));
                break;
            case NONBLOCKING:
                if (c == ALLREDUCE) CHECK_RC(MPI_Iallreduce(s, r, (int)n, mt, MPI_SUM, MPI_COMM_WORLD, mreq));
                if (c == REDUCE_SCATTER_BLOCK)
                    CHECK_RC(MPI_Ireduce_scatter_block(s, r, (int)n, mt, MPI_SUM, MPI_COMM_WORLD, mreq));
                if (c == REDUCE_SCATTER)
                    CHECK_RC(MPI_Ireduce_scatter(s, r, icounts, mt, MPI_SUM, MPI_COMM_WORLD, mreq));
                if (c == ALLGATHER) CHECK_RC(MPI_Iallgather(s, (int)n, mt, r, (int)n, mt, MPI_COMM_WORLD, mreq));
                if (c == ALLTOALL) CHECK_RC(MPI_Ialltoall(s, (int)n, mt, r, (int)n, mt, MPI_COMM_WORLD, mreq));
                if (c == ALLTOALLV)
                    CHECK_RC(MPI_Ialltoallv(s, isc, isd, mt, r, icounts, ird, mt, MPI_COMM_WORLD, mreq));
                if (c == ALLGATHERV)
                    CHECK_RC(MPI_Iallgatherv(s, icounts[rank], mt, r, icounts, ird, mt, MPI_COMM_WORLD, mreq));
                break;
            default: break; /* Open MPI 4.1 has no MPI_Allreduce_init in mpi.h: --api covers persistent */
        }
        return;
    }
    switch (f) {
        case BLOCKING:
            if (c == ALLREDUCE) CHECK_RC(loom_allreduce(s, r, n, LOOM_INT32, LOOM_SUM, comm));
            if (c == REDUCE_SCATTER_BLOCK) CHECK_RC(loom_reduce_scatter_block(s, r, n, LOOM_INT32, LOOM_SUM, comm));
            if (c == REDUCE_SCATTER) CHECK_RC(loom_reduce_scatter(s, r, rcounts, LOOM_INT32, LOOM_SUM, comm));
            if (c == ALLGATHER) CHECK_RC(loom_allgather(s, r, n, LOOM_INT32, comm));
            if (c == ALLTOALL) CHECK_RC(loom_alltoall(s, r, n, LOOM_INT32, comm));
            if (c == ALLTOALLV) CHECK_RC(loom_alltoallv(s, vsc, vsd, r, vrc, vrd, LOOM_INT32, comm));
            if (c == ALLGATHERV) CHECK_RC(loom_allgatherv(s, vrc[rank], r, vrc, vrd, LOOM_INT32, comm));
            break;
        case NONBLOCKING:
            if (c == ALLREDUCE) CHECK_RC(loom_iallreduce(s, r, n, LOOM_INT32, LOOM_SUM, comm, lreq));
            if (c == REDUCE_SCATTER_BLOCK)
                CHECK_RC(loom_ireduce_scatter_block(s, r, n, LOOM_INT32, LOOM_SUM, comm, lreq));
            if (c == REDUCE_SCATTER) CHECK_RC(loom_ireduce_scatter(s, r, rcounts, LOOM_INT32, LOOM_SUM, comm, lreq));
            if (c == ALLGATHER) CHECK_RC(loom_iallgather(s, r, n, LOOM_INT32, comm, lreq));
            if (c == ALLTOALL) CHECK_RC(loom_ialltoall(s, r, n, LOOM_INT32, comm, lreq));
            if (c == ALLTOALLV) CHECK_RC(loom_ialltoallv(s, vsc, vsd, r, vrc, vrd, LOOM_INT32, comm, lreq));
            if (c == ALLGATHERV) CHECK_RC(loom_iallgatherv(s, vrc[rank], r, vrc, vrd, LOOM_INT32, comm, lreq));
            break;
        case ON_STREAM:
            if (c == ALLREDUCE) CHECK_RC(loom_allreduce_on_stream(s, r, n, LOOM_INT32, LOOM_SUM, comm, NULL));
            if (c == REDUCE_SCATTER_BLOCK)
                CHECK_RC(loom_reduce_scatter_block_on_stream(s, r, n, LOOM_INT32, LOOM_SUM, comm, NULL));
            if (c == REDUCE_SCATTER)
                CHECK_RC(loom_reduce_scatter_on_stream(s, r, rcounts, LOOM_INT32, LOOM_SUM, comm, NULL));
            if (c == ALLGATHER) CHECK_RC(loom_allgather_on_stream(s, r, n, LOOM_INT32, comm, NULL));
            if (c == ALLTOALL) CHECK_RC(loom_alltoall_on_stream(s, r, n, LOOM_INT32, comm, NULL));
            if (c == ALLTOALLV) CHECK_RC(loom_alltoallv_on_stream(s, vsc, vsd, r, vrc, vrd, LOOM_INT32, comm, NULL));
            if (c == ALLGATHERV) CHECK_RC(loom_allgatherv_on_stream(s, vrc[rank], r, vrc, vrd, LOOM_INT32, comm, NULL));
            break;
        default:
            if (c == ALLREDUCE) CHECK_RC(loom_allreduce_init(s, r, n, LOOM_INT32, LOOM_SUM, comm, lreq));
            if (c == REDUCE_SCATTER_BLOCK)
                CHECK_RC(loom_reduce_scatter_block_init(s, r, n, LOOM_INT32, LOOM_SUM, comm, lreq));
            if (c == REDUCE_SCATTER)
                CHECK_RC(loom_reduce_scatter_init(s, r, rcounts, LOOM_INT32, LOOM_SUM, comm, lreq));
            if (c == ALLGATHER) CHECK_RC(loom_allgather_init(s, r, n, LOOM_INT32, comm, lreq));
            if (c == ALLTOALL) CHECK_RC(loom_alltoall_init(s, r, n, LOOM_INT32, comm, lreq));
            if (c == ALLTOALLV) CHECK_RC(loom_alltoallv_init(s, vsc, vsd, r, vrc, vrd, LOOM_INT32, comm, lreq));
            if (c == ALLGATHERV) CHECK_RC(loom_allgatherv_init(s, vrc[rank], r, vrc, vrd, LOOM_INT32, comm, lreq));
            break;
    }
}

static void *device_or_host(int on_device, size_t bytes) {
    void *ptr = NULL;
    if (on_device) CHECK_RC(loom_device_alloc(bytes, &ptr));
    else ptr = malloc(bytes ? bytes : 1);
    return ptr;
}
static void release(int on_device, void *ptr) {
    if (on_device) CHECK_RC(loom_device_free(ptr));
    else free(ptr);
}

/* One case: returns 1 when this rank's output is right. */
static int run_case(enum coll c, enum form f, enum where w, int in_place, long n, MPI_Datatype mt) {
    int64_t *rcounts = malloc(sizeof(int64_t) * (size_t)p);
    int *icounts = malloc(sizeof(int) * (size_t)p);
    long in_elems, out_elems;
    counts_of(c, n, in_place, &in_elems, &out_elems, rcounts, icounts);
    const int vector = c == ALLTOALLV || c == ALLGATHERV;
    const int send_dev = w != RECV_ONLY, recv_dev = w != SEND_ONLY || in_place;
    /* In place, recvbuf holds the input: the larger of the two regions. */
    long recv_elems = out_elems;
    if (in_place && in_elems > recv_elems) recv_elems = in_elems;
    int *host_in = malloc(sizeof(int) * (size_t)(in_elems + 1));
    int *host_out = malloc(sizeof(int) * (size_t)(recv_elems + 1));
    int *want = malloc(sizeof(int) * (size_t)(out_elems + 1));
    fill_input(c, rank, in_elems, n, host_in);
    if (!vector) expected_output(c, n, out_elems, rcounts, want);
    void *send = in_place ? NULL : device_or_host(send_dev, sizeof(int) * (size_t)in_elems);
    void *recv = device_or_host(recv_dev, sizeof(int) * (size_t)recv_elems);
    const int starts = f == PERSISTENT ? 2 : 1;
    int ok = 1;
    loom_request_t lreq = NULL;
    MPI_Request mreq = MPI_REQUEST_NULL;
    for (int start = 0; start < starts && ok; ++start) {
        /* In-place allgather: the rank's block sits at its place in recvbuf. */
        if (in_place) {
            memset(host_out, 0x5a, sizeof(int) * (size_t)recv_elems);
            if (c == ALLGATHER) memcpy(host_out + rank * n, host_in, sizeof(int) * (size_t)n);
            else if (c == ALLGATHERV) memcpy(host_out + vrd[rank], host_in, sizeof(int) * (size_t)in_elems);
            else memcpy(host_out, host_in, sizeof(int) * (size_t)in_elems);
            CHECK_RC(loom_memory_copy(recv, host_out, sizeof(int) * (size_t)recv_elems));
        } else {
            CHECK_RC(loom_memory_copy(send, host_in, sizeof(int) * (size_t)in_elems));
            memset(host_out, 0x5a, sizeof(int) * (size_t)recv_elems);
            CHECK_RC(loom_memory_copy(recv, host_out, sizeof(int) * (size_t)recv_elems));
        }
        /* The vector collectives: the gaps keep what recvbuf held; each block is its sender's. */
        if (vector) {
            memcpy(want, host_out, sizeof(int) * (size_t)out_elems);
            int64_t *peer_c = malloc(sizeof(int64_t) * (size_t)p), *peer_d = malloc(sizeof(int64_t) * (size_t)p);
            for (int src = 0; src < p; ++src) {
                send_layout(c, n, src, in_place && c == ALLTOALLV, peer_c, peer_d);
                const long from = c == ALLTOALLV ? peer_d[rank] : 0;
                for (long e = 0; e < vrc[src]; ++e) want[vrd[src] + e] = value(src, from + e);
            }
            free(peer_c), free(peer_d);
        }
        const void *s = in_place ? (use_mpi ? MPI_IN_PLACE : LOOM_IN_PLACE) : send;
        if (f == PERSISTENT) {
            if (start == 0) call(c, f, s, recv, n, rcounts, icounts, mt, &lreq, &mreq);
            CHECK_RC(loom_start(lreq));
            CHECK_RC(loom_wait(&lreq));
        } else {
            call(c, f, s, recv, n, rcounts, icounts, mt, &lreq, &mreq);
            if (f == NONBLOCKING) {
                if (use_mpi) CHECK_RC(MPI_Wait(&mreq, MPI_STATUS_IGNORE));
                else {
                    int done = 0;
                    while (!done) CHECK_RC(loom_test(&lreq, &done));
                }
            }
        }
        /* Blocking, every buffer on the device: run on the device through CUDA IPC. */
        if (!use_mpi && (f == BLOCKING || f == ON_STREAM) && w == BOTH && ipc_on && !vector) {
            const char *ran = NULL;
            CHECK_RC(loom_comm_last_algorithm(comm, coll_names[c], &ran));
            const int right =
                ran && (c == ALLREDUCE ? !strncmp(ran, "cuda_ipc_", 9) && (!forced || !strcmp(ran, forced))
                                       : !strcmp(ran, "cuda_ipc_direct"));
            if (!right) {
                fprintf(stderr, "rank %d: %s n=%ld on device buffers ran %s\n", rank, coll_names[c], n,
                        ran ? ran : "(none)");
                ok = 0;
            }
        }
        memset(host_out, 0, sizeof(int) * (size_t)recv_elems);
        CHECK_RC(loom_memory_copy(host_out, recv, sizeof(int) * (size_t)recv_elems));
        for (long i = 0; i < out_elems; ++i)
            if (host_out[i] != want[i]) {
                fprintf(stderr, "rank %d: %s %s %s%s n=%ld start %d: element %ld is %d, want %d\n", rank, coll_names[c],
                        form_names[f], where_names[w], in_place ? " in place" : "", n, start, i, host_out[i], want[i]);
                ok = 0;
                break;
            }
    }
    if (f == PERSISTENT && lreq) CHECK_RC(loom_request_free(&lreq));
    if (send) release(send_dev, send);
    release(recv_dev, recv);
    free(host_in), free(host_out), free(want), free(rcounts), free(icounts);
    return ok;
}

/* Detection: device memory, an address inside it, host memory; the cache
 * sees a freed allocation go. */
static void check_detection(void) {
    void *d = NULL;
    loom_memory_t m;
    CHECK_RC(loom_device_alloc(4096, &d));
    CHECK_RC(loom_memory_type(d, &m));
    if (m != LOOM_MEMORY_CUDA) fprintf(stderr, "rank %d: device memory seen as %d\n", rank, m), ++failures;
    CHECK_RC(loom_memory_type((char *)d + 4000, &m));
    if (m != LOOM_MEMORY_CUDA) fprintf(stderr, "rank %d: inside device memory seen as %d\n", rank, m), ++failures;
    int host = 0;
    CHECK_RC(loom_memory_type(&host, &m));
    if (m != LOOM_MEMORY_HOST) fprintf(stderr, "rank %d: host memory seen as %d\n", rank, m), ++failures;
    CHECK_RC(loom_device_free(d));
    CHECK_RC(loom_memory_type(d, &m));
    if (m != LOOM_MEMORY_HOST) fprintf(stderr, "rank %d: freed device memory still seen as %d\n", rank, m), ++failures;
}

static void int_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

/* Calls coll/loom hands to the module below (a derived datatype, a
 * user-defined op), blocking and nonblocking, on device buffers: the module
 * below must be given host copies. Returns the number of wrong outputs. */
static int fallback_cases(void) {
    int wrong = 0;
    const int n = 5;
    MPI_Datatype pair;
    MPI_Op sum;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Op_create(int_sum, 1, &sum);
    int *host_in = malloc(sizeof(int) * 2 * n), *host_out = malloc(sizeof(int) * 2 * n * (size_t)p);
    void *send = NULL, *recv = NULL;
    CHECK_RC(loom_device_alloc(sizeof(int) * 2 * n, &send));
    CHECK_RC(loom_device_alloc(sizeof(int) * 2 * n * (size_t)p, &recv));
    for (int i = 0; i < 2 * n; ++i) host_in[i] = value(rank, i);
    CHECK_RC(loom_memory_copy(send, host_in, sizeof(int) * 2 * n));
    for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
        MPI_Request req = MPI_REQUEST_NULL;
        if (nonblocking) CHECK_RC(MPI_Iallgather(send, n, pair, recv, n, pair, MPI_COMM_WORLD, &req));
        else CHECK_RC(MPI_Allgather(send, n, pair, recv, n, pair, MPI_COMM_WORLD));
        CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_RC(loom_memory_copy(host_out, recv, sizeof(int) * 2 * n * (size_t)p));
        for (int i = 0; i < 2 * n * p; ++i)
            if (host_out[i] != value(i / (2 * n), i % (2 * n))) {
                fprintf(stderr, "rank %d: allgather of a derived type on the device (%s): element %d is %d\n", rank,
                        nonblocking ? "nonblocking" : "blocking", i, host_out[i]);
                ++wrong;
                break;
            }
        if (nonblocking) CHECK_RC(MPI_Iallreduce(send, recv, 2 * n, MPI_INT, sum, MPI_COMM_WORLD, &req));
        else CHECK_RC(MPI_Allreduce(send, recv, 2 * n, MPI_INT, sum, MPI_COMM_WORLD));
        CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_RC(loom_memory_copy(host_out, recv, sizeof(int) * 2 * n));
        for (int i = 0; i < 2 * n; ++i) {
            int want = 0;
            for (int r = 0; r < p; ++r) want += value(r, i);
            if (host_out[i] != want) {
                fprintf(stderr, "rank %d: allreduce with a user op on the device (%s): element %d is %d, want %d\n",
                        rank, nonblocking ? "nonblocking" : "blocking", i, host_out[i], want);
                ++wrong;
                break;
            }
        }
    }
    CHECK_RC(loom_device_free(send));
    CHECK_RC(loom_device_free(recv));
    free(host_in), free(host_out);
    MPI_Op_free(&sum);
    MPI_Type_free(&pair);
    return wrong;
}

int main(int argc, char **argv) {
    int require = 0, quick = 0;
    const char *allreduce_algorithm = NULL;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--mpi")) use_mpi = 1;
        else if (!strcmp(argv[i], "--api")) use_mpi = 0;
        else if (!strcmp(argv[i], "--require-driver")) require = 1;
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--allreduce") && i + 1 < argc) allreduce_algorithm = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--api|--mpi] [--require-driver] [--quick] [--allreduce ALGORITHM]\n", argv[0]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    void *probe = NULL;
    if (loom_device_alloc(16, &probe) != LOOM_SUCCESS) {
        if (rank == 0)
            printf("%s: no CUDA device memory here (%s; %s)\n", require ? "FAIL" : "SKIP", loom_cuda_state(),
                   loom_last_error());
        MPI_Finalize();
        return require ? 1 : 77;
    }
    loom_device_free(probe);
    CHECK_RC(loom_comm_create(MPI_COMM_WORLD, &comm));
    vsc = malloc(sizeof(int64_t) * 4 * (size_t)p);
    vsd = vsc + p, vrc = vsd + p, vrd = vrc + p;
    isc = malloc(sizeof(int) * 3 * (size_t)p);
    isd = isc + p, ird = isd + p;
    if (allreduce_algorithm) CHECK_RC(loom_comm_set_param(comm, "allreduce_algorithm", allreduce_algorithm));
    forced = allreduce_algorithm;
    check_detection();
    const long large = quick ? 4099 : 1000003;
    const long counts[] = {0, 1, p - 1, p, p + 1, large};
    int cases = 0;
    for (int c = 0; c < NCOLL; ++c)
        for (int f = 0; f < NFORMS; ++f) {
            if (use_mpi && (f == PERSISTENT || f == ON_STREAM)) continue;
            for (int w = 0; w < NWHERE; ++w)
                for (int in_place = 0; in_place < 2; ++in_place) {
                    if (in_place && w != BOTH) continue; /* one buffer: on the device */
                    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
                        /* alltoall and the scatters move p times the count: keep them small */
                        long n = counts[k];
                        if (n == large && c != ALLREDUCE && c != ALLGATHER) n = large / (p * 4) + 1;
                        if (n == large && ((f != BLOCKING && f != ON_STREAM) || w != BOTH)) n = 4099;
                        failures += !run_case((enum coll)c, (enum form)f, (enum where)w, in_place, n, MPI_INT);
                        ++cases;
                    }
                }
        }
    loom_staging_info_t info;
    CHECK_RC(loom_comm_staging_info(comm, &info));
    if (!use_mpi) {
        /* Staged (cuda_ipc=0) in many small chunks: the pinned ring is reused. */
        CHECK_RC(loom_comm_set_param(comm, "cuda_ipc", "0"));
        ipc_on = 0;
        CHECK_RC(loom_comm_set_param(comm, "cuda_staging_chunk_bytes", "4096"));
        failures += !run_case(ALLREDUCE, BLOCKING, BOTH, 0, 100003, MPI_INT);
        failures += !run_case(ALLREDUCE, BLOCKING, BOTH, 1, 100003, MPI_INT);
        CHECK_RC(loom_comm_staging_info(comm, &info));
        if (info.staged_calls == 0 || info.pipelined_calls < 2 || info.device_calls == 0) {
            fprintf(stderr, "rank %d: counters: %llu calls on the device, %llu staged, %llu pipelined (%s)\n", rank,
                    (unsigned long long)info.device_calls, (unsigned long long)info.staged_calls,
                    (unsigned long long)info.pipelined_calls, info.reason);
            ++failures;
        }
    } else {
        failures += fallback_cases();
        cases += 4;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: device buffers (%s, %s): %d cases on %d ranks, %d failures", total ? "FAIL" : "PASS",
               use_mpi ? "MPI_* through coll/loom" : "libloom", loom_cuda_state(), cases, p, total);
    if (rank == 0 && !use_mpi)
        printf("; rank 0: %llu calls on the device (CUDA IPC), %llu staged, %llu pipelined%s%s",
               (unsigned long long)info.device_calls, (unsigned long long)info.staged_calls,
               (unsigned long long)info.pipelined_calls, allreduce_algorithm ? "; allreduce forced to " : "",
               allreduce_algorithm ? allreduce_algorithm : "");
    if (rank == 0) printf("\n");
    loom_comm_free(&comm);
    free(vsc), free(isc);
    MPI_Finalize();
    return total ? 1 : 0;
}
