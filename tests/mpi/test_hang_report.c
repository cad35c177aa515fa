/* Hang reports (parameters hang_timeout and hang_abort, loom_comm_state):
 * the last rank skips a collective the others make. Under hang_abort the
 * others' call fails within the timeout with an error naming that rank,
 * and every later call on the communicator fails with it; without it the
 * call prints the report, waits, and finishes once the rank comes late,
 * while loom_comm_state names the rank meanwhile. The skipper's node-mates
 * name it from its inbox; ranks on other nodes (emulated with
 * LOOM_TOPOLOGY, or without shared memory) name the ranks whose messages
 * they wait for, which the skipper's absence holds up. When the skipper
 * comes late to an abandoned call, nothing it sends lands in the others'
 * buffers, and the communicators made afterwards see none of it.
 * Usage: test_hang_report [-c allreduce|alltoall] [-n COUNT] [-m]
 * -m: through MPI_Allreduce (coll/loom, run with coll_loom_hang_timeout and
 * coll_loom_hang_abort set): the others' call returns an error (the
 * component prints the report) and so does their next one.
 * Prints "test_hang_report np=N: C cases, F failures". */
#include <loom.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, failures, cases;

static void check(int ok, const char *what, const char *detail) {
    ++cases;
    if (!ok) {
        ++failures;
        fprintf(stderr, "[rank %d] FAIL %s: %s\n", rank, what, detail ? detail : "");
    }
}

static loom_comm_t make_comm(const char *abort_flag) {
    loom_comm_t comm = NULL;
    if (loom_comm_create(MPI_COMM_WORLD, &comm) != LOOM_SUCCESS) {
        fprintf(stderr, "[rank %d] loom_comm_create: %s\n", rank, loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    loom_comm_set_param(comm, "hang_timeout", "1");
    loom_comm_set_param(comm, "hang_abort", abort_flag);
    return comm;
}

static int run(loom_comm_t comm, int alltoall, int32_t *in, int32_t *out, int64_t count) {
    if (alltoall) return loom_alltoall(in, out, count, LOOM_INT32, comm);
    return loom_allreduce(in, out, count, LOOM_INT32, LOOM_SUM, comm);
}

static int start(loom_comm_t comm, int alltoall, int32_t *in, int32_t *out, int64_t count, loom_request_t *req) {
    if (alltoall) return loom_ialltoall(in, out, count, LOOM_INT32, comm, req);
    return loom_iallreduce(in, out, count, LOOM_INT32, LOOM_SUM, comm, req);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int alltoall = 0;
    int64_t big = 65536;
    int through_mpi = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-m")) through_mpi = 1;
        if (i + 1 < argc && !strcmp(argv[i], "-c")) alltoall = !strcmp(argv[i + 1], "alltoall");
        if (i + 1 < argc && !strcmp(argv[i], "-n")) big = atoll(argv[i + 1]);
    }
    if (through_mpi) {
        const int64_t counts[2] = {4, big};
        float *x = calloc((size_t)big, sizeof(float)), *y = calloc((size_t)big, sizeof(float));
        for (int k = 0; k < 2; ++k) {
            MPI_Comm comm;
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
            if (rank != size - 1) {
                const double t0 = MPI_Wtime();
                int rc = MPI_Allreduce(x, y, (int)counts[k], MPI_FLOAT, MPI_SUM, comm);
                char detail[128];
                snprintf(detail, sizeof detail, "count %lld: MPI error %d after %.1f s", (long long)counts[k], rc,
                         MPI_Wtime() - t0);
                check(rc != MPI_SUCCESS && MPI_Wtime() - t0 < 30, "MPI_Allreduce fails under hang_abort", detail);
                rc = MPI_Allreduce(x, y, (int)counts[k], MPI_FLOAT, MPI_SUM, comm);
                check(rc != MPI_SUCCESS, "the next MPI_Allreduce on the communicator fails", NULL);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Comm_free(&comm);
        }
        free(x);
        free(y);
        int all = 0, total = 0;
        MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cases, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("test_hang_report np=%d: %d cases, %d failures\n", size, total, all);
        MPI_Finalize();
        return all ? 1 : 0;
    }
    const int skipper = size - 1;
    /* Whether this rank sees the skipper's inbox: on its node, with shared memory. */
    int node = 0, nodes = 1, local = 0, local_count = 1, rails = 0;
    {
        loom_comm_t probe = make_comm("0");
        loom_comm_node_info(probe, &node, &nodes, &local, &local_count, &rails);
        loom_comm_free(&probe);
    }
    int *node_of = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(&node, 1, MPI_INT, node_of, 1, MPI_INT, MPI_COMM_WORLD);
    const char *shm = getenv("LOOM_SHARED_MEMORY");
    const int sees_skipper = node_of[skipper] == node && !(shm && !strcmp(shm, "0"));
    char want[64];
    if (sees_skipper) snprintf(want, sizeof want, "waiting for ranks %d:", skipper);
    else snprintf(want, sizeof want, "waiting for ranks ");
    const int64_t per = alltoall ? size : 1; /* elements per count */
    int32_t *in = malloc(sizeof(int32_t) * (size_t)(big * per));
    int32_t *out = malloc(sizeof(int32_t) * (size_t)(big * per));
    for (int64_t i = 0; i < big * per; ++i) in[i] = rank + 1;

    /* hang_abort, a small call (the shared slots on one node) and a large one (a plan). */
    const int64_t counts[2] = {4, big};
    for (int k = 0; k < 2; ++k) {
        loom_comm_t comm = make_comm("1");
        if (rank != skipper) {
            const double t0 = MPI_Wtime();
            int rc = run(comm, alltoall, in, out, counts[k]);
            const double waited = MPI_Wtime() - t0;
            char detail[768];
            snprintf(detail, sizeof detail, "count %lld: got %s after %.1f s: %s", (long long)counts[k],
                     loom_strerror(rc), waited, loom_last_error());
            check(rc == LOOM_ERR_TIMEOUT && strstr(loom_last_error(), want) != NULL, "hang_abort names the skipper",
                  detail);
            check(waited < 30, "hang_abort ends the call within the timeout", detail);
            rc = run(comm, alltoall, in, out, counts[k]);
            snprintf(detail, sizeof detail, "got %s: %s", loom_strerror(rc), loom_last_error());
            check(rc == LOOM_ERR_TIMEOUT && strstr(loom_last_error(), "abandoned") != NULL,
                  "a later call on the abandoned communicator fails", detail);
            const char *state = NULL;
            loom_comm_state(comm, &state);
            check(state && strstr(state, "abandoned") != NULL, "loom_comm_state tells the communicator was abandoned",
                  state);
            for (int64_t i = 0; i < counts[k] * per; ++i) out[i] = -7;
        }
        /* The skipper comes late: what it sends must not land in the others'
         * buffers, which their failed call has given back. */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == skipper) {
            const double t0 = MPI_Wtime();
            int rc = run(comm, alltoall, in, out, counts[k]);
            char detail[768];
            snprintf(detail, sizeof detail, "got %s after %.1f s", loom_strerror(rc), MPI_Wtime() - t0);
            check(MPI_Wtime() - t0 < 30, "the late rank's call ends (done, or failed by hang_abort)", detail);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank != skipper) {
            int64_t touched = 0;
            for (int64_t i = 0; i < counts[k] * per; ++i) touched += out[i] != -7;
            char detail[64];
            snprintf(detail, sizeof detail, "%lld of %lld elements written", (long long)touched,
                     (long long)(counts[k] * per));
            check(touched == 0, "nothing lands in an abandoned call's buffer", detail);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        loom_comm_free(&comm);
    }

    /* No abort: the report, loom_comm_state meanwhile, and the call finishes once the skipper comes. */
    {
        loom_comm_t comm = make_comm("0");
        const char *state = NULL;
        loom_comm_state(comm, &state);
        check(state && !strcmp(state, "idle"), "loom_comm_state before any call", state);
        loom_request_t req = NULL;
        if (rank == skipper) {
            sleep(3);
            check(start(comm, alltoall, in, out, big, &req) == LOOM_SUCCESS, "the late start", loom_last_error());
            check(loom_wait(&req) == LOOM_SUCCESS, "the late rank's wait", loom_last_error());
        } else {
            check(start(comm, alltoall, in, out, big, &req) == LOOM_SUCCESS, "start", loom_last_error());
            const double t0 = MPI_Wtime();
            int done = 0;
            int test_rc = LOOM_SUCCESS;
            while (!done && test_rc == LOOM_SUCCESS && MPI_Wtime() - t0 < 2.0) {
                test_rc = loom_test(&req, &done);
                usleep(500);
            }
            check(test_rc == LOOM_SUCCESS, "tests while the skipper is away", loom_last_error());
            check(!done, "the call waits for the skipper", NULL);
            /* On one node from the skipper's inbox; without shared memory from the messages awaited. */
            char on_node[64], by_message[64];
            snprintf(on_node, sizeof on_node, "not entered it: %d", skipper);
            snprintf(by_message, sizeof by_message, "waiting for messages from ranks %d", skipper);
            loom_comm_state(comm, &state);
            check(state && strstr(state, alltoall ? "alltoall #" : "allreduce #") != NULL &&
                      (strstr(state, on_node) || strstr(state, by_message) ||
                       (!sees_skipper && strstr(state, "waiting for messages from ranks"))),
                  "loom_comm_state names the call and the skipper", state);
            check(loom_wait(&req) == LOOM_SUCCESS, "the wait once the skipper came", loom_last_error());
        }
        /* Every rank's result: allreduce sums 1..size; alltoall's block j comes from rank j. */
        int bad = 0;
        for (int64_t i = 0; i < big * per && !bad; ++i) {
            const int32_t expect = alltoall ? (int32_t)(i / big + 1) : (int32_t)(size * (size + 1) / 2);
            bad = out[i] != expect;
        }
        check(!bad, "the late call's result", NULL);
        loom_comm_free(&comm);
    }
    int all = 0, total = 0;
    MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&cases, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("test_hang_report np=%d: %d cases, %d failures\n", size, total, all);
    free(node_of);
    free(in);
    free(out);
    MPI_Finalize();
    return all ? 1 : 0;
}
