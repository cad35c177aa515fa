/* MPI 4's large-count collectives (MPI_Allreduce_c, MPI_Iallreduce_c,
 * MPI_Allreduce_init_c, ... with MPI_Count counts and MPI_Aint
 * displacements): each collective and form against the MPI's own int-count
 * collective, called through its PMPI_ name so that a preloaded
 * libloom-mpi never sees the reference. Run with libloom-mpi preloaded and
 * LOOM_MPI_STATS set, Loom's statistics show which calls it handled. Under
 * an MPI older than 4 it says so and passes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION < 4
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("SKIP: test_large_count: MPI %d.%d has no large-count collectives\n", MPI_VERSION, MPI_SUBVERSION);
    MPI_Finalize();
    return 0;
}
#else

static int world_rank, failures, cases;

enum { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *mode_name[] = {"blocking", "nonblocking", "persistent"};

/* Completes a call started in `mode`: a persistent one is started, waited
 * for, started again (the same call twice) and freed. */
static void complete(MPI_Request *req, int mode) {
    if (mode == BLOCKING) return;
    if (mode == PERSISTENT) {
        MPI_Start(req);
        MPI_Wait(req, MPI_STATUS_IGNORE);
        MPI_Start(req);
    }
    MPI_Wait(req, MPI_STATUS_IGNORE);
    if (mode == PERSISTENT) MPI_Request_free(req);
}

static void compare(const char *what, int mode, int n, const int *got, const int *want, size_t elements) {
    ++cases;
    for (size_t i = 0; i < elements; ++i)
        if (got[i] != want[i]) {
            if (failures++ < 10)
                fprintf(stderr, "[rank %d] FAIL: %s %s n=%d element %zu: %d, want %d\n", world_rank, mode_name[mode],
                        what, n, i, got[i], want[i]);
            return;
        }
}

static int value(int rank, size_t i) { return rank * 1000 + (int)(i % 997); }

static void reductions(MPI_Comm comm, int n, int mode) {
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    MPI_Request req;
    const size_t total = (size_t)(n + 3) * (size_t)p;
    int *in = malloc(sizeof(int) * (total + 1)), *got = calloc(total + 1, sizeof(int));
    int *want = calloc(total + 1, sizeof(int));
    for (size_t i = 0; i < total; ++i) in[i] = value(rank, i);

    PMPI_Allreduce(in, want, n, MPI_INT, MPI_SUM, comm);
    if (mode == BLOCKING) MPI_Allreduce_c(in, got, n, MPI_INT, MPI_SUM, comm);
    else if (mode == NONBLOCKING) MPI_Iallreduce_c(in, got, n, MPI_INT, MPI_SUM, comm, &req);
    else MPI_Allreduce_init_c(in, got, n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Allreduce_c", mode, n, got, want, (size_t)n);

    /* Uneven blocks, one of them empty. */
    int *counts = malloc(sizeof(int) * p);
    MPI_Count *large_counts = malloc(sizeof(MPI_Count) * p);
    for (int r = 0; r < p; ++r) {
        counts[r] = r % 4 == 3 ? 0 : n + r % 3;
        large_counts[r] = counts[r];
    }
    PMPI_Reduce_scatter(in, want, counts, MPI_INT, MPI_SUM, comm);
    if (mode == BLOCKING) MPI_Reduce_scatter_c(in, got, large_counts, MPI_INT, MPI_SUM, comm);
    else if (mode == NONBLOCKING) MPI_Ireduce_scatter_c(in, got, large_counts, MPI_INT, MPI_SUM, comm, &req);
    else MPI_Reduce_scatter_init_c(in, got, large_counts, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Reduce_scatter_c", mode, n, got, want, (size_t)counts[rank]);

    PMPI_Reduce_scatter_block(in, want, n, MPI_INT, MPI_SUM, comm);
    if (mode == BLOCKING) MPI_Reduce_scatter_block_c(in, got, n, MPI_INT, MPI_SUM, comm);
    else if (mode == NONBLOCKING) MPI_Ireduce_scatter_block_c(in, got, n, MPI_INT, MPI_SUM, comm, &req);
    else MPI_Reduce_scatter_block_init_c(in, got, n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Reduce_scatter_block_c", mode, n, got, want, (size_t)n);
    free(in), free(got), free(want), free(counts), free(large_counts);
}

static void movements(MPI_Comm comm, int n, int mode) {
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    MPI_Request req;
    const size_t total = (size_t)(n + 2) * (size_t)p * 2;
    int *in = malloc(sizeof(int) * (total + 1)), *got = calloc(total + 1, sizeof(int));
    int *want = calloc(total + 1, sizeof(int));
    for (size_t i = 0; i < total; ++i) in[i] = value(rank, i);

    PMPI_Allgather(in, n, MPI_INT, want, n, MPI_INT, comm);
    if (mode == BLOCKING) MPI_Allgather_c(in, n, MPI_INT, got, n, MPI_INT, comm);
    else if (mode == NONBLOCKING) MPI_Iallgather_c(in, n, MPI_INT, got, n, MPI_INT, comm, &req);
    else MPI_Allgather_init_c(in, n, MPI_INT, got, n, MPI_INT, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Allgather_c", mode, n, got, want, (size_t)n * (size_t)p);

    PMPI_Alltoall(in, n, MPI_INT, want, n, MPI_INT, comm);
    if (mode == BLOCKING) MPI_Alltoall_c(in, n, MPI_INT, got, n, MPI_INT, comm);
    else if (mode == NONBLOCKING) MPI_Ialltoall_c(in, n, MPI_INT, got, n, MPI_INT, comm, &req);
    else MPI_Alltoall_init_c(in, n, MPI_INT, got, n, MPI_INT, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Alltoall_c", mode, n, got, want, (size_t)n * (size_t)p);

    /* Skewed blocks placed in reverse order with gaps, as an MoE exchange
     * might: send block i holds n + (rank + i) % 3 elements, or none. */
    int *sc = malloc(sizeof(int) * p), *sd = malloc(sizeof(int) * p), *rc = malloc(sizeof(int) * p),
        *rd = malloc(sizeof(int) * p);
    MPI_Count *lsc = malloc(sizeof(MPI_Count) * p), *lrc = malloc(sizeof(MPI_Count) * p);
    MPI_Aint *lsd = malloc(sizeof(MPI_Aint) * p), *lrd = malloc(sizeof(MPI_Aint) * p);
    int sat = 0, rat = 0;
    for (int i = 0; i < p; ++i) {
        sc[i] = (rank + i) % 4 == 3 ? 0 : n + (rank + i) % 3;
        rc[i] = (i + rank) % 4 == 3 ? 0 : n + (i + rank) % 3;
    }
    for (int i = p - 1; i >= 0; --i) {
        sd[i] = sat, sat += sc[i] + 1;
        rd[i] = rat, rat += rc[i] + 1;
    }
    for (int i = 0; i < p; ++i) lsc[i] = sc[i], lrc[i] = rc[i], lsd[i] = sd[i], lrd[i] = rd[i];
    memset(want, 0, sizeof(int) * (total + 1));
    memset(got, 0, sizeof(int) * (total + 1));
    PMPI_Alltoallv(in, sc, sd, MPI_INT, want, rc, rd, MPI_INT, comm);
    if (mode == BLOCKING) MPI_Alltoallv_c(in, lsc, lsd, MPI_INT, got, lrc, lrd, MPI_INT, comm);
    else if (mode == NONBLOCKING) MPI_Ialltoallv_c(in, lsc, lsd, MPI_INT, got, lrc, lrd, MPI_INT, comm, &req);
    else MPI_Alltoallv_init_c(in, lsc, lsd, MPI_INT, got, lrc, lrd, MPI_INT, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Alltoallv_c", mode, n, got, want, (size_t)rat);

    /* Allgatherv: rank r contributes n + r % 3 elements (none where r % 4 == 3). */
    rat = 0;
    for (int i = p - 1; i >= 0; --i) {
        rc[i] = i % 4 == 3 ? 0 : n + i % 3;
        rd[i] = rat, rat += rc[i] + 1;
    }
    for (int i = 0; i < p; ++i) lrc[i] = rc[i], lrd[i] = rd[i];
    memset(want, 0, sizeof(int) * (total + 1));
    memset(got, 0, sizeof(int) * (total + 1));
    PMPI_Allgatherv(in, rc[rank], MPI_INT, want, rc, rd, MPI_INT, comm);
    if (mode == BLOCKING) MPI_Allgatherv_c(in, rc[rank], MPI_INT, got, lrc, lrd, MPI_INT, comm);
    else if (mode == NONBLOCKING) MPI_Iallgatherv_c(in, rc[rank], MPI_INT, got, lrc, lrd, MPI_INT, comm, &req);
    else MPI_Allgatherv_init_c(in, rc[rank], MPI_INT, got, lrc, lrd, MPI_INT, comm, MPI_INFO_NULL, &req);
    complete(&req, mode);
    compare("MPI_Allgatherv_c", mode, n, got, want, (size_t)rat);
    free(in), free(got), free(want), free(sc), free(sd), free(rc), free(rd), free(lsc), free(lrc), free(lsd), free(lrd);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int p;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const int ns[] = {0, 1, p - 1, p, p + 1, 1001};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k)
        for (int mode = 0; mode < 3; ++mode) {
            if (ns[k] < 0) continue;
            reductions(MPI_COMM_WORLD, ns[k], mode);
            movements(MPI_COMM_WORLD, ns[k], mode);
        }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) printf("test_large_count np=%d: %d cases per rank, %d failures\n", p, cases, total);
    MPI_Finalize();
    return total != 0;
}
#endif
