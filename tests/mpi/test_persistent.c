/*
 * Persistent collectives allocate nothing per start. Counts the calls to
 * malloc, calloc and realloc (this program's own, which every library in the
 * process goes through) made between start and completion of persistent
 * collectives, every start included, with results checked each time:
 *   - libloom's API: loom_*_init, then loom_start + loom_wait;
 *   - MPI's (MPIX_*_init, MPI_Start + MPI_Wait), through whatever coll
 *     component mpirun selects.
 * Each allocation is charged to the first library on its call stack past
 * the C and C++ runtimes: Open MPI's own (its PML's free lists grow the first
 * time Loom keeps more messages in flight; its PMIx thread) are counted apart. Counts: 1000
 * ints (the shared-memory rings) and 300000 ints (the large path). Exits 1
 * if libloom or coll/loom allocated anything, or a result was wrong.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <mpi.h>

#include <mpi-ext.h> /* needs mpi.h first: Open MPI's MPIX_*_init */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static int counting, inside;
static long loom_allocations, open_mpi_allocations;

/* Whether the allocation being made is Open MPI's: the first frame outside
 * this program and the C and C++ runtimes is in one of its libraries. */
static int open_mpis(void) {
    void *frames[32];
    const int n = backtrace(frames, 32);
    for (int i = 1; i < n; ++i) {
        Dl_info d;
        if (!dladdr(frames[i], &d) || !d.dli_fname) continue;
        const char *name = strrchr(d.dli_fname, '/');
        name = name ? name + 1 : d.dli_fname;
        if (strstr(name, "libc.so") || strstr(name, "libstdc++") || strstr(name, "libgcc") ||
            strstr(name, "test_persistent"))
            continue;
        /* PMIx and libevent are Open MPI's run time: PMIx's own thread
         * allocates while a start is in flight when messages reach it. */
        return strstr(name, "libopen-pal") || strstr(name, "libopen-rte") || strstr(name, "libmpi.so") ||
               strstr(name, "libpmix") || strstr(name, "libevent") ||
               (strncmp(name, "mca_", 4) == 0 && strncmp(name, "mca_coll_loom", 13) != 0);
    }
    return 0;
}

static void count(void) {
    if (!counting || inside) return;
    inside = 1;
    if (open_mpis()) ++open_mpi_allocations;
    else ++loom_allocations;
    inside = 0;
}

void *malloc(size_t n) {
    count();
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    count();
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    count();
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }

enum { STARTS = 20 };
static const char *const names[] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall"};

/* One persistent call of collective c on `count` ints per block, made with
 * libloom (api 1) or MPI (api 0); returns the allocations not Open MPI's
 * over STARTS starts (Open MPI's into *open_mpi), and counts wrong elements
 * into *wrong. */
static long run(int api, int c, int count, loom_comm_t lc, int rank, int size, long *wrong, long *open_mpi) {
    const int blocks = c == 0 ? 1 : size; /* input blocks per rank */
    int *in = malloc(sizeof(int) * (size_t)count * (size_t)blocks);
    int *out = malloc(sizeof(int) * (size_t)count * (size_t)size);
    int *counts = malloc(sizeof(int) * (size_t)size);
    int64_t *counts64 = malloc(sizeof(int64_t) * (size_t)size);
    for (int i = 0; i < size; ++i) counts[i] = count, counts64[i] = count;
    MPI_Request mreq = MPI_REQUEST_NULL;
    loom_request_t lreq = NULL;
    int rc = 0;
    if (api) {
        switch (c) {
            case 0: rc = loom_allreduce_init(in, out, count, LOOM_INT, LOOM_SUM, lc, &lreq); break;
            case 1: rc = loom_reduce_scatter_init(in, out, counts64, LOOM_INT, LOOM_SUM, lc, &lreq); break;
            case 2: rc = loom_reduce_scatter_block_init(in, out, count, LOOM_INT, LOOM_SUM, lc, &lreq); break;
            case 3: rc = loom_allgather_init(in, out, count, LOOM_INT, lc, &lreq); break;
            default: rc = loom_alltoall_init(in, out, count, LOOM_INT, lc, &lreq); break;
        }
    } else {
        switch (c) {
            case 0:
                rc = MPIX_Allreduce_init(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &mreq);
                break;
            case 1:
                rc = MPIX_Reduce_scatter_init(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &mreq);
                break;
            case 2:
                rc = MPIX_Reduce_scatter_block_init(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                                    &mreq);
                break;
            case 3:
                rc = MPIX_Allgather_init(in, count, MPI_INT, out, count, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &mreq);
                break;
            default:
                rc = MPIX_Alltoall_init(in, count, MPI_INT, out, count, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &mreq);
                break;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "test_persistent: %s init failed: %s\n", names[c], api ? loom_last_error() : "MPI error");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long made = 0;
    *open_mpi = 0;
    for (int s = 0; s < STARTS; ++s) {
        for (int b = 0; b < blocks; ++b)
            for (int j = 0; j < count; ++j) in[(size_t)b * (size_t)count + (size_t)j] = rank * 7 + b * 3 + j % 11 + s;
        memset(out, 0xff, sizeof(int) * (size_t)count * (size_t)size);
        const long before = loom_allocations, before_open_mpi = open_mpi_allocations;
        counting = 1;
        if (api) {
            rc = loom_start(lreq);
            if (rc == 0) rc = loom_wait(&lreq);
        } else {
            rc = MPI_Start(&mreq);
            if (rc == 0) rc = MPI_Wait(&mreq, MPI_STATUS_IGNORE);
        }
        counting = 0;
        made += loom_allocations - before;
        *open_mpi += open_mpi_allocations - before_open_mpi;
        if (rc != 0) {
            fprintf(stderr, "test_persistent: %s start %d failed: %s\n", names[c], s, api ? loom_last_error() : "MPI");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        /* What element j of block b of the result must be. */
        const int out_blocks = c == 3 || c == 4 ? size : c == 0 ? 1 : 1;
        for (int b = 0; b < out_blocks; ++b)
            for (int j = 0; j < count; ++j) {
                long want = 0;
                if (c <= 2) { /* sum over ranks of their block `rank` (allreduce: block 0) */
                    const int blk = c == 0 ? 0 : rank;
                    for (int r = 0; r < size; ++r) want += r * 7 + blk * 3 + j % 11 + s;
                } else if (c == 3) { /* allgather: rank b's block 0 */
                    want = b * 7 + j % 11 + s;
                } else { /* alltoall: rank b's block `rank` */
                    want = b * 7 + rank * 3 + j % 11 + s;
                }
                if (out[(size_t)b * (size_t)count + (size_t)j] != (int)want) ++*wrong;
            }
    }
    if (api) loom_request_free(&lreq);
    else MPI_Request_free(&mreq);
    free(in);
    free(out);
    free(counts);
    free(counts64);
    return made;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    {
        void *warm[4];
        backtrace(warm, 4); /* loads what backtrace needs before any counting */
    }
    loom_comm_t lc;
    if (loom_comm_create(MPI_COMM_WORLD, &lc) != LOOM_SUCCESS) {
        fprintf(stderr, "test_persistent: loom_comm_create: %s\n", loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long wrong = 0, loom_made = 0, mpi_made = 0, open_mpi_made = 0;
    const int sizes[] = {1000, 300000};
    for (int api = 1; api >= 0; --api)
        for (int c = 0; c < 5; ++c)
            for (int k = 0; k < 2; ++k) {
                long theirs = 0;
                const long made = run(api, c, sizes[k], lc, rank, size, &wrong, &theirs);
                long most[2] = {made, theirs}, got[2];
                MPI_Allreduce(most, got, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
                if (rank == 0)
                    printf(
                        "test_persistent np=%d %s %s of %d ints: %ld allocations by Loom, %ld by Open MPI in %d "
                        "starts (most on one rank)\n",
                        size, api ? "loom_start" : "MPI_Start", names[c], sizes[k], got[0], got[1], STARTS);
                if (api) loom_made += got[0];
                else mpi_made += got[0];
                open_mpi_made += got[1];
            }
    long total_wrong = 0;
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    loom_comm_free(&lc);
    const int ok = total_wrong == 0 && loom_made == 0 && mpi_made == 0;
    if (rank == 0)
        printf(
            "test_persistent np=%d: %ld wrong elements; allocations outside Open MPI: %ld in loom_start, %ld in "
            "MPI_Start; Open MPI's own: %ld: %s\n",
            size, total_wrong, loom_made, mpi_made, open_mpi_made, ok ? "ok" : "FAILED");
    MPI_Finalize();
    return ok ? 0 : 1;
}
