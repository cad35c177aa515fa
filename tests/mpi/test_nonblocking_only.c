/* A program that makes only nonblocking collectives (as a data-parallel
 * training loop or an OSU-style nonblocking benchmark does): N
 * MPI_Iallreduce calls of COUNT ints, each checked on this rank, no blocking
 * collective before MPI_Finalize. Under coll/loom with rails, the rails must
 * come up at the first call; the caller checks coll_loom_stats. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int calls = argc > 1 ? atoi(argv[1]) : 4;
    const int count = argc > 2 ? atoi(argv[2]) : 1 << 18;
    int *in = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);
    long wrong = 0;
    for (int c = 0; c < calls; ++c) {
        for (int i = 0; i < count; ++i) in[i] = (rank + 1) * (c + 1) + i % 7;
        MPI_Request req;
        MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < count; ++i)
            wrong += out[i] != (c + 1) * size * (size + 1) / 2 + size * (i % 7);
    }
    printf("test_nonblocking_only rank %d: %d calls of %d ints, %ld wrong elements\n", rank, calls, count, wrong);
    free(in);
    free(out);
    MPI_Finalize();
    return wrong != 0;
}
