/*
 * A rail cut mid-run: ITERATIONS validated MPI_Allreduce calls of COUNT
 * doubles each (through whatever coll component mpirun selects). After
 * iteration DOWN_AFTER rank 0 asks for the rail to be taken down (it creates
 * DIR/down and waits for DIR/down.done, which the driving script creates once
 * the link is down); after UP_AFTER the same with DIR/up. Rank 0 prints each
 * iteration's time; every rank checks every element of every result.
 *
 * With TEST_RAIL_FAILOVER_ONE_WAY=1 each iteration is instead an
 * MPI_Allgatherv in which only rank (iteration % size) contributes, then an
 * MPI_Barrier (Open MPI's own): the sender returns as soon as its message
 * has left and waits in the barrier, where only Open MPI's progress engine
 * runs, while its receiver may still find the message's rail dead and ask
 * for it again.
 *
 *   test_rail_failover ITERATIONS COUNT DOWN_AFTER UP_AFTER DIR
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void ask_and_wait(const char *dir, const char *what) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, what);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "test_rail_failover: cannot create %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/%s.done", dir, what);
    struct stat st;
    for (int waited = 0; stat(path, &st) != 0; ++waited) {
        if (waited > 60000) {
            fprintf(stderr, "test_rail_failover: nobody created %s within 60 s\n", path);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        usleep(1000);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6) {
        if (rank == 0) fprintf(stderr, "usage: test_rail_failover ITERATIONS COUNT DOWN_AFTER UP_AFTER DIR\n");
        MPI_Finalize();
        return 2;
    }
    const int iterations = atoi(argv[1]), down_after = atoi(argv[3]), up_after = atoi(argv[4]);
    const long count = atol(argv[2]);
    const char *dir = argv[5];
    double *in = malloc((size_t)count * sizeof *in), *out = malloc((size_t)count * sizeof *out);
    if (!in || !out) MPI_Abort(MPI_COMM_WORLD, 2);
    /* Small integers: every sum is exact, whatever the order of additions. */
    long rank_sum = 0;
    for (int r = 0; r < size; ++r) rank_sum += 3L * r;
    const char *mode = getenv("TEST_RAIL_FAILOVER_ONE_WAY");
    const int one_way = mode && !strcmp(mode, "1");
    int *counts = calloc((size_t)size, sizeof *counts), *displs = calloc((size_t)size, sizeof *displs);
    if (!counts || !displs) MPI_Abort(MPI_COMM_WORLD, 2);
    long wrong = 0;
    for (int i = 1; i <= iterations; ++i) {
        const int sender = i % size;
        for (long j = 0; j < count; ++j) in[j] = (double)(3L * rank + i + j % 1000);
        memset(out, 0xff, (size_t)count * sizeof *out);
        const double start = MPI_Wtime();
        if (one_way) {
            for (int r = 0; r < size; ++r) counts[r] = r == sender ? (int)count : 0;
            MPI_Allgatherv(in, counts[rank], MPI_DOUBLE, out, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        const double seconds = MPI_Wtime() - start;
        long here = 0;
        for (long j = 0; j < count; ++j) {
            const double want =
                one_way ? (double)(3L * sender + i + j % 1000) : (double)(rank_sum + (long)size * (i + j % 1000));
            if (out[j] != want) ++here;
        }
        wrong += here;
        if (rank == 0) printf("iteration %d: %.3f s, %ld wrong elements here\n", i, seconds, here);
        fflush(stdout);
        if (rank == 0 && i == down_after) ask_and_wait(dir, "down");
        if (rank == 0 && i == up_after) ask_and_wait(dir, "up");
    }
    long total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_rail_failover np=%d: %d iterations, %ld wrong elements\n", size, iterations, total);
    free(in);
    free(out);
    free(counts);
    free(displs);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
