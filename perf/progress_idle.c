/*
 * progress_idle: what the progress thread costs a rank that has nothing to
 * do. Each rank makes one nonblocking allreduce with progress_thread on
 * (the thread starts), waits for it, then sleeps for SECONDS (default 10)
 * and also for SECONDS with a request pending that its peers start only
 * after that time. Prints, per rank, the CPU time the loom-progress thread
 * used in each period, as a percentage of the period.
 *   mpirun -np 2 build/perf/progress_idle [SECONDS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom.h"
#include "progress_threads.h"

/* CPU seconds (user + system) of this process's loom-progress thread. */
static double thread_cpu(void) {
    double cpu = 0;
    loom_progress_threads(&cpu);
    return cpu;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double seconds = argc > 1 ? atof(argv[1]) : 10;
    loom_comm_t c;
    if (loom_comm_create(MPI_COMM_WORLD, &c) != LOOM_SUCCESS ||
        loom_comm_set_param(c, "progress_thread", "on") != LOOM_SUCCESS) {
        fprintf(stderr, "progress_idle: %s\n", loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float x = 1, y = 0;
    loom_request_t req;
    loom_iallreduce(&x, &y, 1, LOOM_FLOAT, LOOM_SUM, c, &req);
    loom_wait(&req);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Idle: nothing pending. */
    double before = thread_cpu();
    usleep((useconds_t)(seconds * 1e6));
    const double idle = thread_cpu() - before;
    /* Waiting: rank 0's request is pending while the others sleep before starting theirs. */
    MPI_Barrier(MPI_COMM_WORLD);
    before = thread_cpu();
    if (rank == 0) loom_iallreduce(&x, &y, 1, LOOM_FLOAT, LOOM_SUM, c, &req);
    usleep((useconds_t)(seconds * 1e6));
    const double waiting = thread_cpu() - before;
    if (rank != 0) loom_iallreduce(&x, &y, 1, LOOM_FLOAT, LOOM_SUM, c, &req);
    loom_wait(&req);
    const char *state = "";
    loom_comm_progress_state(c, &state);
    printf("progress_idle rank %d of %d: thread CPU idle %.1f ms in %.0f s (%.3f %%), with a request pending %.1f ms "
           "(%.3f %%); %s\n",
           rank, size, idle * 1e3, seconds, 100 * idle / seconds, waiting * 1e3, 100 * waiting / seconds, state);
    loom_comm_free(&c);
    MPI_Finalize();
    return 0;
}
