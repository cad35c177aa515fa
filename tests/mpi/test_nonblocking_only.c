/* A program that makes only nonblocking collectives (as a data-parallel
 * training loop or an OSU-style nonblocking benchmark does): N calls of
 * COUNT ints each, checked on this rank, no blocking collective before
 * MPI_Finalize. Under coll/loom with rails, the rails must come up at the
 * first call; the caller checks coll_loom_stats.
 *
 * Usage: test_nonblocking_only [N [COUNT [all [COMPUTE_MS]]]]. With "all",
 * each round makes an MPI_Iallreduce, MPI_Ireduce_scatter_block,
 * MPI_Iallgather and MPI_Ialltoall (COUNT ints in all per rank), and with
 * COMPUTE_MS, spins that long between start and wait without calling MPI,
 * so that only a progress thread can move the messages meanwhile. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void compute(double ms) {
    const double until = MPI_Wtime() + ms * 1e-3;
    volatile double x = 1;
    while (MPI_Wtime() < until) x = x * 1.0000001 + 1e-9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int calls = argc > 1 ? atoi(argv[1]) : 4;
    int count = argc > 2 ? atoi(argv[2]) : 1 << 18;
    const int all = argc > 3 && strcmp(argv[3], "all") == 0;
    const double compute_ms = argc > 4 ? atof(argv[4]) : 0;
    if (all) count -= count % size;  /* whole blocks per rank */
    const int block = count / size;
    int *in = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);
    long wrong = 0;
    for (int c = 0; c < calls; ++c) {
        MPI_Request req;
        for (int i = 0; i < count; ++i) in[i] = (rank + 1) * (c + 1) + i % 7;
        MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        compute(compute_ms);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < count; ++i)
            wrong += out[i] != (c + 1) * size * (size + 1) / 2 + size * (i % 7);
        if (!all) continue;
        /* Reduce_scatter_block: block b of the sum lands on rank b. */
        MPI_Ireduce_scatter_block(in, out, block, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        compute(compute_ms);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < block; ++i) {
            const int g = rank * block + i;
            wrong += out[i] != (c + 1) * size * (size + 1) / 2 + size * (g % 7);
        }
        /* Allgather: rank r's block holds r * 1000 + c + i. */
        for (int i = 0; i < block; ++i) in[i] = rank * 1000 + c + i;
        MPI_Iallgather(in, block, MPI_INT, out, block, MPI_INT, MPI_COMM_WORLD, &req);
        compute(compute_ms);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int r = 0; r < size; ++r)
            for (int i = 0; i < block; ++i) wrong += out[r * block + i] != r * 1000 + c + i;
        /* Alltoall: the block for rank d holds rank * 100000 + d * 10 + c + i % 5. */
        for (int d = 0; d < size; ++d)
            for (int i = 0; i < block; ++i) in[d * block + i] = rank * 100000 + d * 10 + c + i % 5;
        MPI_Ialltoall(in, block, MPI_INT, out, block, MPI_INT, MPI_COMM_WORLD, &req);
        compute(compute_ms);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int s = 0; s < size; ++s)
            for (int i = 0; i < block; ++i) wrong += out[s * block + i] != s * 100000 + rank * 10 + c + i % 5;
    }
    printf("test_nonblocking_only rank %d: %d calls of %d ints, %ld wrong elements\n", rank, calls, count, wrong);
    free(in);
    free(out);
    MPI_Finalize();
    return wrong != 0;
}
