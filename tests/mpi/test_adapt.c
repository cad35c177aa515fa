/* Parameter adapt: blocking calls of every adaptable collective, in place and
 * out of place, at counts 1, p-1, p, p+1 and large odd ones, many times over
 * so that every size class learns and explores, with nonblocking calls in
 * between. Every result is checked exactly (integer data), and after every
 * call every rank must have run the same algorithm. At the end the classes
 * must have explored more than one algorithm, the state and the rules
 * document must say what was learnt, and with adapt off both say it is off. */
#include <loom.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_checks.h"

static int rank, size, failures;

static uint64_t name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; s && *s; ++s) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* Every rank ran the same algorithm for `collective`'s last call. */
static void check_same_algorithm(loom_comm_t comm, const char *collective, int call) {
    const char *name = NULL;
    LOOM_OK(loom_comm_last_algorithm(comm, collective, &name));
    uint64_t h = name_hash(name), lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s call %d: the ranks ran different algorithms (this rank %s)", collective, call,
          name ? name : "?");
}

static int64_t in_value(int r, int64_t j, int call) { return (int64_t)r * 1000003 + j * 7 + call; }

/* One call of `collective` with `count` elements per block (allreduce: the
 * vector), blocking or not, in place or not; checks the result. */
static void run(loom_comm_t comm, const char *collective, int64_t count, int nonblocking, int in_place, int call) {
    const int64_t total = count * size;
    int64_t *send = malloc(sizeof(int64_t) * (size_t)(total + 1));
    int64_t *recv = malloc(sizeof(int64_t) * (size_t)(total + 1));
    loom_request_t req = NULL;
    int rc;
    const int is_allreduce = !strcmp(collective, "allreduce"), is_rsb = !strcmp(collective, "reduce_scatter_block");
    const int is_allgather = !strcmp(collective, "allgather");
    const int64_t n_in = is_allreduce ? count : is_allgather ? count : total;
    for (int64_t j = 0; j < n_in; ++j) send[j] = in_value(rank, j, call);
    if (in_place) {
        if (is_allgather) memcpy(recv + rank * count, send, sizeof(int64_t) * (size_t)count);
        else memcpy(recv, send, sizeof(int64_t) * (size_t)n_in);
    }
    const void *sb = in_place ? LOOM_IN_PLACE : send;
    if (is_allreduce)
        rc = nonblocking ? loom_iallreduce(sb, recv, count, LOOM_INT64, LOOM_SUM, comm, &req)
                         : loom_allreduce(sb, recv, count, LOOM_INT64, LOOM_SUM, comm);
    else if (is_rsb)
        rc = nonblocking ? loom_ireduce_scatter_block(sb, recv, count, LOOM_INT64, LOOM_SUM, comm, &req)
                         : loom_reduce_scatter_block(sb, recv, count, LOOM_INT64, LOOM_SUM, comm);
    else if (is_allgather)
        rc = nonblocking ? loom_iallgather(sb, recv, count, LOOM_INT64, comm, &req)
                         : loom_allgather(sb, recv, count, LOOM_INT64, comm);
    else
        rc = nonblocking ? loom_ialltoall(sb, recv, count, LOOM_INT64, comm, &req)
                         : loom_alltoall(sb, recv, count, LOOM_INT64, comm);
    CHECK(rc == LOOM_SUCCESS, "%s count %lld: %s", collective, (long long)count, loom_last_error());
    if (rc != LOOM_SUCCESS) goto out;
    if (req) LOOM_OK(loom_wait(&req));
    int64_t bad = -1;
    if (is_allreduce || is_rsb) {
        const int64_t first = is_allreduce ? 0 : rank * count;
        for (int64_t j = 0; j < count && bad < 0; ++j) {
            int64_t want = 0;
            for (int r = 0; r < size; ++r) want += in_value(r, first + j, call);
            if (recv[j] != want) bad = j;
        }
    } else if (is_allgather) {
        for (int64_t j = 0; j < total && bad < 0; ++j)
            if (recv[j] != in_value((int)(j / count), j % count, call)) bad = j;
    } else {
        /* Block r of the result is rank r's block `rank`. */
        for (int64_t j = 0; j < total && bad < 0; ++j)
            if (recv[j] != in_value((int)(j / count), rank * count + j % count, call)) bad = j;
    }
    CHECK(bad < 0, "%s count %lld%s%s call %d: wrong element %lld", collective, (long long)count,
          in_place ? " in place" : "", nonblocking ? " nonblocking" : "", call, (long long)bad);
    if (!nonblocking) check_same_algorithm(comm, collective, call);
out:
    free(send);
    free(recv);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int calls = argc > 1 ? atoi(argv[1]) : 200;
    loom_comm_t comm;
    LOOM_OK(loom_comm_create(MPI_COMM_WORLD, &comm));
    const char *state = NULL, *rules = NULL;
    LOOM_OK(loom_comm_adapt_state(comm, &state));
    CHECK(state && !strcmp(state, "off"), "adapt off: the state says '%s'", state ? state : "(null)");
    CHECK(loom_comm_adapt_rules(comm, &rules) == LOOM_ERR_INVALID_ARGUMENT && strstr(loom_last_error(), "adapt is off"),
          "adapt off: the rules were not refused: %s", loom_last_error());
    LOOM_OK(loom_comm_set_param(comm, "adapt", "1"));

    const char *collectives[] = {"allreduce", "reduce_scatter_block", "allgather", "alltoall"};
    const int64_t counts[] = {1, size > 1 ? size - 1 : 1, size, size + 1, 4099, 65537};
    int64_t total_calls = 0;
    for (int c = 0; c < 4; ++c)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
            /* Fewer calls at the largest size: they take long on shared cores. */
            const int n = counts[k] > 10000 ? calls / 2 : calls;
            for (int i = 0; i < n; ++i) {
                const int in_place = (i / 50) % 2 && strcmp(collectives[c], "alltoall") != 0;
                run(comm, collectives[c], counts[k], i % 17 == 16, in_place, i);
                ++total_calls;
            }
        }

    LOOM_OK(loom_comm_adapt_state(comm, &state));
    /* One rank has nothing to choose between and learns nothing. */
    if (size == 1)
        CHECK(state && !strcmp(state, "nothing learnt yet\n"), "one rank learnt: %s", state ? state : "(null)");
    else
        CHECK(state && strstr(state, "allreduce ") && strstr(state, " explored"), "the state says nothing learnt: %s",
              state ? state : "(null)");
    if (rank == 0 && state) printf("test_adapt np=%d learnt:\n%s", size, state);
    /* Some class had runners-up and timed them: a line with two times or more. */
    if (size > 1) {
        int most_timed = 0;
        for (const char *line = state; line && *line;) {
            const char *end = strchr(line, '\n');
            if (!end) end = line + strlen(line);
            int timed = 0;
            for (const char *p = line; p + 3 <= end; ++p) timed += !strncmp(p, " us", 3) || !strncmp(p, " ms", 3);
            if (timed > most_timed) most_timed = timed;
            line = *end ? end + 1 : end;
        }
        CHECK(most_timed >= 2, "no class timed two algorithms: %s", state ? state : "(null)");
        CHECK(state && !strstr(state, "still learning"), "a class is still learning: %s", state ? state : "(null)");
        LOOM_OK(loom_comm_adapt_rules(comm, &rules));
        CHECK(rules && strstr(rules, "\"rules\"") && strstr(rules, "\"algorithm\"") && strstr(rules, "learnt by adapt"),
              "the rules document: %s", rules ? rules : "(null)");
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_adapt np=%d: %lld calls per rank, %d failures\n", size, (long long)total_calls, total);
    loom_comm_free(&comm);
    MPI_Finalize();
    return total ? 1 : 0;
}
