/*
 * The progress thread (parameter progress_thread) through libloom's API and
 * through MPI (whatever coll component mpirun selects; run it with
 * coll/loom and coll_loom_progress_thread on):
 *   1. libloom: nonblocking allreduces of 1 MiB and 4 KiB are started, then
 *      every rank sleeps 300 ms without calling Loom; the shared-memory
 *      transport's count of moved cells, read before the wait, must already
 *      equal the count after it: the thread moved every byte. Results checked.
 *   2. A thread named "loom-progress" runs while a communicator uses it and
 *      (with --libloom-only: coll/loom is not loaded) none is left once the
 *      last one is freed.
 *   3. A communicator freed with a collective still running finishes it
 *      (the request then reports done, with the right result).
 *   4. MPI_Iallreduce never waited for, then MPI_Finalize: no hang, and no
 *      loom-progress thread after it.
 * Prints "test_progress_thread np=N: ... PASS" or a FAIL line and exits 1.
 * Needs shared memory between the ranks (one node).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom.h"
#include "perf/progress_threads.h"

static int rank, size, failures;

static void check(int ok, const char *what) {
    if (ok) return;
    ++failures;
    fprintf(stderr, "test_progress_thread rank %d: FAIL: %s (%s)\n", rank, what, loom_last_error());
}

static uint64_t cells_moved(loom_comm_t c) {
    loom_transport_info_t t;
    t.version = LOOM_TRANSPORT_INFO_VERSION;
    if (loom_comm_transport_info(c, &t) != LOOM_SUCCESS) return 0;
    for (int i = 0; i < t.transports; ++i)
        for (int e = 0; e < t.transport[i].extras; ++e)
            if (!strcmp(t.transport[i].extra_name[e], "cells_moved")) return t.transport[i].extra_value[e];
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const int libloom_only = argc > 1 && !strcmp(argv[1], "--libloom-only");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int64_t counts[2] = {262144, 1024}; /* floats: 1 MiB, 4 KiB */
    float *in = malloc(sizeof(float) * counts[0]), *out = malloc(sizeof(float) * counts[0]);
    for (int64_t i = 0; i < counts[0]; ++i) in[i] = (float)(rank + 1) + (float)(i % 5);

    loom_comm_t comm = NULL;
    check(loom_comm_create(MPI_COMM_WORLD, &comm) == LOOM_SUCCESS, "loom_comm_create");
    check(loom_comm_set_param(comm, "progress_thread", "on") == LOOM_SUCCESS, "progress_thread on");
    /* Messages for the thread to move: the 4 KiB calls would otherwise take
     * the shared slots, which send none (each rank publishes at the start). */
    check(loom_comm_set_param(comm, "slots_max_bytes", "0") == LOOM_SUCCESS, "slots_max_bytes 0");
    const float rank_sum = (float)size * (size + 1) / 2;
    int thread_moved_all = 1;
    for (int k = 0; k < 2; ++k)
        for (int round = 0; round < 3; ++round) {
            memset(out, 0, sizeof(float) * counts[k]);
            loom_request_t req = NULL;
            MPI_Barrier(MPI_COMM_WORLD);
            check(loom_iallreduce(in, out, counts[k], LOOM_FLOAT, LOOM_SUM, comm, &req) == LOOM_SUCCESS,
                  "loom_iallreduce");
            usleep(300000); /* no Loom call: only the thread can move the messages */
            const uint64_t before_wait = cells_moved(comm);
            check(loom_wait(&req) == LOOM_SUCCESS, "loom_wait");
            if (cells_moved(comm) != before_wait) thread_moved_all = 0;
            for (int64_t i = 0; i < counts[k]; ++i)
                if (out[i] != rank_sum + (float)size * (float)(i % 5)) {
                    check(0, "allreduce result");
                    break;
                }
        }
    check(thread_moved_all, "messages were left for the caller's wait: the thread did not move them all");
    const char *state = NULL;
    check(loom_comm_progress_state(comm, &state) == LOOM_SUCCESS && !strncmp(state, "on: 6 calls driven", 18),
          "progress state counts 6 calls driven by the thread");
    check(loom_progress_threads(NULL) == 1, "one loom-progress thread while the communicator uses it");

    /* Freed with a collective running: finished first. */
    loom_comm_t second = NULL;
    check(loom_comm_create(MPI_COMM_WORLD, &second) == LOOM_SUCCESS, "loom_comm_create (second)");
    loom_comm_set_param(second, "progress_thread", "on");
    loom_request_t left = NULL;
    memset(out, 0, sizeof(float) * counts[0]);
    check(loom_iallreduce(in, out, counts[0], LOOM_FLOAT, LOOM_SUM, second, &left) == LOOM_SUCCESS,
          "loom_iallreduce (second)");
    check(loom_comm_free(&second) == LOOM_SUCCESS, "loom_comm_free with a collective running");
    int done = 0;
    check(loom_test(&left, &done) == LOOM_SUCCESS && done, "the request of a freed communicator is done");
    check(out[counts[0] - 1] == rank_sum + (float)size * (float)((counts[0] - 1) % 5), "its result");
    loom_comm_free(&comm);
    /* Under coll/loom with its progress_thread on, MPI_COMM_WORLD's own
     * Loom communicator uses the thread too (Open MPI's communicator
     * duplication runs an MPI_Iallreduce on it) until MPI_Finalize. */
    if (libloom_only)
        check(loom_progress_threads(NULL) == 0, "no loom-progress thread after the last communicator is freed");

    /* Through MPI: left running at MPI_Finalize. */
    MPI_Request never_waited;
    MPI_Iallreduce(in, out, (int)counts[0], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &never_waited);
    const int during = loom_progress_threads(NULL);
    MPI_Finalize();
    check(loom_progress_threads(NULL) == 0, "no loom-progress thread after MPI_Finalize");
    if (failures) {
        printf("test_progress_thread np=%d rank %d: FAIL (%d)\n", size, rank, failures);
        return 1;
    }
    if (rank == 0)
        printf(
            "test_progress_thread np=%d: thread moved every message, freed communicator finished its call, "
            "%d loom-progress thread(s) during MPI_Iallreduce, none after MPI_Finalize: PASS\n",
            size, during);
    free(in);
    free(out);
    return 0;
}
