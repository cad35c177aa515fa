/* Integration test: every algorithm loom_algorithm_info reports, through the C API
 * under mpirun, blocking and nonblocking, in place and out of place, several
 * datatypes and counts (some above the MPI eager limit; for the vector
 * collectives uneven, some zero, in scattered layouts), checked against
 * values each rank computes on its own. Exits nonzero on any mismatch. */
#include <loom.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_checks.h"

static int rank, size, failures;

/* The collectives this test knows how to check; the algorithms come from
 * loom_algorithm_info, so a new one is tested without touching this file. */
static const char *collectives[] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall",
                                    "alltoallv", "allgatherv"};
enum { NCOLL = sizeof(collectives) / sizeof(collectives[0]) };

static int collective_index(const char *name) {
    for (int c = 0; c < NCOLL; ++c)
        if (!strcmp(collectives[c], name)) return c;
    return -1;
}

/* --list-algorithms: "collective name" per line from the API, for the
 * scripts' checks of loom-info and the man pages (no MPI needed). */
static int list_algorithms(void) {
    const int n = loom_algorithm_count();
    for (int i = 0; i < n; ++i) {
        loom_algorithm_info_t info;
        if (loom_algorithm_info(i, &info) != LOOM_SUCCESS) {
            fprintf(stderr, "loom_algorithm_info(%d): %s\n", i, loom_last_error());
            return 1;
        }
        printf("%s %s\n", info.collective, info.name);
    }
    return n > 0 ? 0 : 1;
}

/* Whether the forced algorithm can run this collective on this
 * communicator: loom_comm_prepare fails exactly as the call would. */
static int applies(loom_comm_t comm, const char *collective, const char *name, char *why, size_t why_size) {
    int64_t *counts = malloc(sizeof(int64_t) * (size_t)size);
    for (int r = 0; r < size; ++r) counts[r] = r + 1;
    const char *chosen = NULL;
    int rc = loom_comm_prepare(comm, collective, size + 1, counts, LOOM_INT, 0, &chosen);
    free(counts);
    if (rc == LOOM_ERR_ALGORITHM_NOT_APPLICABLE) {
        snprintf(why, why_size, "%s", loom_last_error());
        return 0;
    }
    CHECK(rc == LOOM_SUCCESS, "loom_comm_prepare(%s) with %s forced -> %s: %s", collective, name, loom_strerror(rc),
          loom_last_error());
    CHECK(rc != LOOM_SUCCESS || (chosen && !strcmp(chosen, name)), "%s prepared %s, not the forced %s", collective,
          chosen ? chosen : "(none)", name);
    return 1;
}

/* Whether the forced algorithm takes `count` elements of 8 bytes (the
 * largest type the runs use) on this communicator: algorithms with a size
 * limit (shared_slots) run only the counts below it. */
static int takes_count(loom_comm_t comm, const char *collective, int64_t count) {
    int64_t *counts = malloc(sizeof(int64_t) * (size_t)size);
    for (int r = 0; r < size; ++r) counts[r] = count + r % 2;
    const char *chosen = NULL;
    int rc = loom_comm_prepare(comm, collective, count, counts, LOOM_DOUBLE, 0, &chosen);
    free(counts);
    return rc == LOOM_SUCCESS;
}

/* Waits in every form: blocking call (nb 0); nonblocking + test loop + wait
 * (nb 1); persistent (nb 2: made by *_init, started and waited for, started
 * once more when `again` (out of place: same input, same result), freed). */
static int finish(int rc, loom_request_t *req, int nb, int again) {
    if (rc != LOOM_SUCCESS || !nb) return rc;
    for (int start = 0; start < (nb == 2 ? 1 + again : 1); ++start) {
        if (nb == 2) {
            rc = loom_start(*req);
            if (rc != LOOM_SUCCESS) return rc;
        }
        int done = 0;
        for (int i = 0; i < 3 && !done; ++i) {
            rc = loom_test(req, &done);
            if (rc != LOOM_SUCCESS) return rc;
        }
        if (!done) rc = loom_wait(req);
        if (rc != LOOM_SUCCESS) return rc;
    }
    return nb == 2 ? loom_request_free(req) : LOOM_SUCCESS;
}

static void run_allreduce(loom_comm_t comm, int64_t count, int in_place, int nb) {
    /* int SUM, double MAX, 2INT MINLOC */
    int *in = malloc(sizeof(int) * (count + 1)), *out = malloc(sizeof(int) * (count + 1));
    double *din = malloc(sizeof(double) * (count + 1)), *dout = malloc(sizeof(double) * (count + 1));
    struct {
        int v, i;
    } *pin = malloc(8 * (count + 1)), *pout = malloc(8 * (count + 1));
    loom_request_t req;
    for (int64_t i = 0; i < count; ++i) {
        in[i] = rank * 3 + (int)(i % 11);
        out[i] = in[i];
        din[i] = (double)((rank * 7 + i) % 13);
        dout[i] = din[i];
        pin[i].v = (int)((rank + i) % 3);
        pin[i].i = rank;
        pout[i] = pin[i];
    }
    const void *s = in_place ? LOOM_IN_PLACE : in;
    int rc = nb == 2 ? loom_allreduce_init(s, out, count, LOOM_INT, LOOM_SUM, comm, &req)
             : nb    ? loom_iallreduce(s, out, count, LOOM_INT, LOOM_SUM, comm, &req)
                : loom_allreduce(s, out, count, LOOM_INT, LOOM_SUM, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    for (int64_t i = 0; i < count; ++i)
        if (out[i] != 3 * size * (size - 1) / 2 + size * (int)(i % 11)) {
            CHECK(0, "allreduce int sum count=%lld i=%lld got %d", (long long)count, (long long)i, out[i]);
            break;
        }
    s = in_place ? LOOM_IN_PLACE : (const void *)din;
    rc = nb == 2 ? loom_allreduce_init(s, dout, count, LOOM_DOUBLE, LOOM_MAX, comm, &req)
         : nb    ? loom_iallreduce(s, dout, count, LOOM_DOUBLE, LOOM_MAX, comm, &req)
            : loom_allreduce(s, dout, count, LOOM_DOUBLE, LOOM_MAX, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    for (int64_t i = 0; i < count; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want = (double)((r * 7 + i) % 13) > want ? (double)((r * 7 + i) % 13) : want;
        if (dout[i] != want) {
            CHECK(0, "allreduce double max count=%lld i=%lld got %g want %g", (long long)count, (long long)i, dout[i],
                  want);
            break;
        }
    }
    s = in_place ? LOOM_IN_PLACE : (const void *)pin;
    rc = nb == 2 ? loom_allreduce_init(s, pout, count, LOOM_2INT, LOOM_MINLOC, comm, &req)
         : nb    ? loom_iallreduce(s, pout, count, LOOM_2INT, LOOM_MINLOC, comm, &req)
            : loom_allreduce(s, pout, count, LOOM_2INT, LOOM_MINLOC, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    for (int64_t i = 0; i < count; ++i) {
        int best = 99, at = -1;
        for (int r = 0; r < size; ++r)
            if ((int)((r + i) % 3) < best) best = (int)((r + i) % 3), at = r;
        if (pout[i].v != best || pout[i].i != at) {
            CHECK(0, "allreduce minloc count=%lld i=%lld got (%d,%d) want (%d,%d)", (long long)count, (long long)i,
                  pout[i].v, pout[i].i, best, at);
            break;
        }
    }
    free(in), free(out), free(din), free(dout), free(pin), free(pout);
}

static void run_reduce_scatter(loom_comm_t comm, int64_t count, int in_place, int nb, int block) {
    int64_t *counts = calloc(size, sizeof(int64_t)), total = 0, mine, offset = 0;
    for (int r = 0; r < size; ++r) {
        counts[r] = block ? count : (r % 3 == 2 ? 0 : count + r % 2);
        if (r < rank) offset += counts[r];
        total += counts[r];
    }
    mine = counts[rank];
    unsigned char *in = malloc(total + 1), *out = malloc((in_place ? total : mine) + 1);
    for (int64_t i = 0; i < total; ++i) in[i] = (unsigned char)(rank * 50 + i);
    if (in_place) memcpy(out, in, total);
    loom_request_t req;
    const void *s = in_place ? LOOM_IN_PLACE : in;
    int rc;
    if (block)
        rc = nb == 2 ? loom_reduce_scatter_block_init(s, out, count, LOOM_UINT8, LOOM_SUM, comm, &req)
             : nb    ? loom_ireduce_scatter_block(s, out, count, LOOM_UINT8, LOOM_SUM, comm, &req)
                : loom_reduce_scatter_block(s, out, count, LOOM_UINT8, LOOM_SUM, comm);
    else
        rc = nb == 2 ? loom_reduce_scatter_init(s, out, counts, LOOM_UINT8, LOOM_SUM, comm, &req)
             : nb    ? loom_ireduce_scatter(s, out, counts, LOOM_UINT8, LOOM_SUM, comm, &req)
                : loom_reduce_scatter(s, out, counts, LOOM_UINT8, LOOM_SUM, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    for (int64_t i = 0; i < mine; ++i) {
        unsigned char want = 0; /* uint8 sums wrap */
        for (int r = 0; r < size; ++r) want = (unsigned char)(want + (unsigned char)(r * 50 + offset + i));
        if (out[i] != want) {
            CHECK(0, "reduce_scatter%s count=%lld i=%lld got %u want %u", block ? "_block" : "", (long long)count,
                  (long long)i, out[i], want);
            break;
        }
    }
    free(counts), free(in), free(out);
}

static void run_gather_like(loom_comm_t comm, int64_t count, int in_place, int nb, int alltoall) {
    const int64_t n = count * size;
    long *in = malloc(sizeof(long) * (n + 1)), *out = malloc(sizeof(long) * (n + 1));
    for (int64_t i = 0; i < n; ++i) in[i] = rank * 1000000L + i;
    if (in_place) {
        if (alltoall) memcpy(out, in, sizeof(long) * n);
        else memcpy(out + rank * count, in, sizeof(long) * count);
    }
    loom_request_t req;
    const void *s = in_place ? LOOM_IN_PLACE : in;
    int rc;
    if (alltoall)
        rc = nb == 2 ? loom_alltoall_init(s, out, count, LOOM_LONG, comm, &req)
             : nb    ? loom_ialltoall(s, out, count, LOOM_LONG, comm, &req)
                     : loom_alltoall(s, out, count, LOOM_LONG, comm);
    else
        rc =
            nb == 2 ? loom_allgather_init(s, out, count, LOOM_LONG, comm, &req)
            : nb    ? loom_iallgather(s, out, count, LOOM_LONG, comm, &req)
                    : loom_allgather(s, out, count, LOOM_LONG, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    for (int r = 0; r < size; ++r)
        for (int64_t i = 0; i < count; ++i) {
            long want = r * 1000000L + (alltoall ? rank * count + i : i);
            if (out[r * count + i] != want) {
                CHECK(0, "%s count=%lld block %d i=%lld got %ld want %ld", alltoall ? "alltoall" : "allgather",
                      (long long)count, r, (long long)i, out[r * count + i], want);
                r = size;
                break;
            }
        }
    free(in), free(out);
}

/* The vector collectives' shapes from a base count n: what rank i sends rank
 * j (symmetric, as MPI asks of an in-place alltoallv; some pairs nothing),
 * and each rank's layout of p blocks: in reverse rank order (receive side)
 * or in rank order (send side), `gap` elements before each. */
static int64_t pair_count(int64_t n, int i, int j) { return n == 0 || (i + j) % 5 == 4 ? 0 : n + (i + j) % 3; }
static int64_t layout(const int64_t *counts, int reverse, int gap, int64_t *displs) {
    int64_t at = 0;
    for (int k = 0; k < size; ++k) {
        const int b = reverse ? size - 1 - k : k;
        at += gap;
        displs[b] = at;
        at += counts[b];
    }
    return at;
}

/* Rank r's send layout for the alltoallv below (in place: its receive layout). */
static int64_t send_layout(int64_t n, int r, int in_place, int64_t *counts, int64_t *displs) {
    for (int j = 0; j < size; ++j) counts[j] = pair_count(n, r, j);
    return layout(counts, in_place, in_place ? 1 : 2, displs);
}

static void run_alltoallv(loom_comm_t comm, int64_t n, int in_place, int nb) {
    int64_t *sc = malloc(sizeof(int64_t) * size), *sd = malloc(sizeof(int64_t) * size);
    int64_t *rc_ = malloc(sizeof(int64_t) * size), *rd = malloc(sizeof(int64_t) * size);
    int64_t *peer_c = malloc(sizeof(int64_t) * size), *peer_d = malloc(sizeof(int64_t) * size);
    const int64_t send_n = send_layout(n, rank, 0, sc, sd);
    for (int i = 0; i < size; ++i) rc_[i] = pair_count(n, i, rank);
    const int64_t recv_n = layout(rc_, 1, 1, rd);
    long *in = malloc(sizeof(long) * (send_n + 1)), *out = malloc(sizeof(long) * (recv_n + 1));
    for (int64_t k = 0; k < recv_n + 1; ++k) out[k] = -1;
    for (int64_t k = 0; k < send_n; ++k) in[k] = rank * 1000000L + k;
    if (in_place)
        for (int64_t k = 0; k < recv_n; ++k) out[k] = rank * 1000000L + k;
    loom_request_t req;
    const void *s = in_place ? LOOM_IN_PLACE : in;
    const int rc = nb == 2 ? loom_alltoallv_init(s, sc, sd, out, rc_, rd, LOOM_LONG, comm, &req)
                   : nb    ? loom_ialltoallv(s, sc, sd, out, rc_, rd, LOOM_LONG, comm, &req)
                           : loom_alltoallv(s, sc, sd, out, rc_, rd, LOOM_LONG, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    int bad = 0;
    for (int r = 0; r < size && !bad; ++r) {
        send_layout(n, r, in_place, peer_c, peer_d);
        for (int64_t e = 0; e < rc_[r]; ++e) {
            const long want = r * 1000000L + peer_d[rank] + e;
            if (out[rd[r] + e] != want) {
                CHECK(0, "alltoallv n=%lld%s from rank %d element %lld got %ld want %ld", (long long)n,
                      in_place ? " in place" : "", r, (long long)e, out[rd[r] + e], want);
                bad = 1;
                break;
            }
        }
    }
    CHECK(out[recv_n] == -1, "alltoallv n=%lld wrote past the receive buffer", (long long)n);
    free(sc), free(sd), free(rc_), free(rd), free(peer_c), free(peer_d), free(in), free(out);
}

static void run_allgatherv(loom_comm_t comm, int64_t n, int in_place, int nb) {
    int64_t *counts = calloc((size_t)size, sizeof(int64_t)), *displs = calloc((size_t)size, sizeof(int64_t));
    for (int i = 0; i < size; ++i) counts[i] = n == 0 || i % 4 == 3 ? 0 : n + i % 3;
    const int64_t total = layout(counts, rank % 2, 1 + rank % 2, displs);
    long *in = malloc(sizeof(long) * (counts[rank] + 1)), *out = malloc(sizeof(long) * (total + 1));
    for (int64_t k = 0; k < total + 1; ++k) out[k] = -1;
    for (int64_t k = 0; k < counts[rank]; ++k) in[k] = rank * 1000000L + k;
    if (in_place) memcpy(out + displs[rank], in, sizeof(long) * counts[rank]);
    loom_request_t req;
    const void *s = in_place ? LOOM_IN_PLACE : in;
    const int rc = nb == 2 ? loom_allgatherv_init(s, counts[rank], out, counts, displs, LOOM_LONG, comm, &req)
                   : nb    ? loom_iallgatherv(s, counts[rank], out, counts, displs, LOOM_LONG, comm, &req)
                           : loom_allgatherv(s, counts[rank], out, counts, displs, LOOM_LONG, comm);
    LOOM_OK(finish(rc, &req, nb, !in_place));
    int bad = 0;
    for (int r = 0; r < size && !bad; ++r)
        for (int64_t e = 0; e < counts[r]; ++e)
            if (out[displs[r] + e] != r * 1000000L + e) {
                CHECK(0, "allgatherv n=%lld%s block %d element %lld got %ld want %ld", (long long)n,
                      in_place ? " in place" : "", r, (long long)e, out[displs[r] + e], r * 1000000L + e);
                bad = 1;
                break;
            }
    CHECK(out[total] == -1, "allgatherv n=%lld wrote past the receive buffer", (long long)n);
    free(counts), free(displs), free(in), free(out);
}

/* Nonblocking alltoallvs on two communicators, started in opposite orders
 * on even and odd ranks (MPI orders collectives per communicator only),
 * with an iallreduce after the one on `first`, then waited for in one
 * order: no start may wait for the other ranks, although an alltoallv
 * across nodes learns their counts before it is planned. */
static void crossed_alltoallvs(loom_comm_t first, loom_comm_t second, int64_t n) {
    loom_comm_t comms[2] = {first, second};
    int64_t *sc = malloc(sizeof(int64_t) * size), *sd = malloc(sizeof(int64_t) * size);
    int64_t *rcounts = malloc(sizeof(int64_t) * size), *rd = malloc(sizeof(int64_t) * size);
    int64_t *peer_c = malloc(sizeof(int64_t) * size), *peer_d = malloc(sizeof(int64_t) * size);
    for (int j = 0; j < size; ++j) sc[j] = pair_count(n, rank, j), rcounts[j] = pair_count(n, j, rank);
    const int64_t send_n = layout(sc, 0, 0, sd), recv_n = layout(rcounts, 1, 1, rd);
    long *in[2], *out[2], sum = rank;
    loom_request_t alltoallv[2], allreduce;
    for (int k = 0; k < 2; ++k) {
        in[k] = malloc(sizeof(long) * (send_n + 1)), out[k] = malloc(sizeof(long) * (recv_n + 1));
        for (int64_t e = 0; e < send_n; ++e) in[k][e] = k * 100000000L + rank * 1000000L + e;
        for (int64_t e = 0; e < recv_n + 1; ++e) out[k][e] = -1;
    }
    for (int i = 0; i < 2; ++i) {
        const int k = rank % 2 ? 1 - i : i;
        LOOM_OK(loom_ialltoallv(in[k], sc, sd, out[k], rcounts, rd, LOOM_LONG, comms[k], &alltoallv[k]));
        if (k == 0) LOOM_OK(loom_iallreduce(LOOM_IN_PLACE, &sum, 1, LOOM_LONG, LOOM_SUM, first, &allreduce));
    }
    LOOM_OK(loom_wait(&allreduce));
    LOOM_OK(loom_wait(&alltoallv[1]));
    LOOM_OK(loom_wait(&alltoallv[0]));
    CHECK(sum == (long)size * (size - 1) / 2, "crossed alltoallvs n=%lld: the iallreduce between them gave %ld",
          (long long)n, sum);
    for (int k = 0; k < 2; ++k) {
        int bad = 0;
        for (int r = 0; r < size && !bad; ++r) {
            for (int j = 0; j < size; ++j) peer_c[j] = pair_count(n, r, j);
            layout(peer_c, 0, 0, peer_d);
            for (int64_t e = 0; e < rcounts[r] && !bad; ++e) {
                const long want = k * 100000000L + r * 1000000L + peer_d[rank] + e;
                bad = out[k][rd[r] + e] != want;
                CHECK(!bad, "crossed alltoallvs n=%lld on communicator %d: from rank %d element %lld got %ld want %ld",
                      (long long)n, k, r, (long long)e, out[k][rd[r] + e], want);
            }
        }
        CHECK(out[k][recv_n] == -1, "crossed alltoallvs n=%lld wrote past the receive buffer", (long long)n);
        free(in[k]), free(out[k]);
    }
    free(sc), free(sd), free(rcounts), free(rd), free(peer_c), free(peer_d);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--list-algorithms")) return list_algorithms();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loom_comm_t comm;
    LOOM_OK(loom_comm_create(MPI_COMM_WORLD, &comm));
    /* With LOOM_TOPOLOGY the ranks are spread over emulated nodes. */
    const char *topology = getenv("LOOM_TOPOLOGY");
    int *labels = calloc((size_t)size, sizeof(int)), rails = 1, my_node_ranks = size;
    if (topology && *topology) {
        LOOM_OK(loom_topology_parse(topology, size, labels, &rails));
        my_node_ranks = 0;
        for (int r = 0; r < size; ++r) my_node_ranks += labels[r] == labels[rank];
        const char *text = NULL;
        LOOM_OK(loom_comm_describe_nodes(comm, &text));
        if (rank == 0) printf("test_mpi_collectives: %s\n", text);
    }
    const int64_t counts[] = {0, 1, size > 1 ? size - 1 : 2, size + 1, 1001, 70001};
    int ran = 0;
    /* Every algorithm the registry has, forced in turn. Only one with
     * restrictions may be left out, where loom_comm_prepare says it cannot
     * run (recursive_doubling allgather on 3 ranks); the scripts check that
     * each one was forced in some run. */
    const int nalgorithms = loom_algorithm_count();
    int nforced = 0;
    size_t forced_size = 64 * (size_t)nalgorithms + 1, skipped_size = 512 * (size_t)nalgorithms + 1;
    char *forced = calloc(forced_size, 1), *skipped = calloc(skipped_size, 1);
    for (int i = 0; i < nalgorithms; ++i) {
        loom_algorithm_info_t algo;
        LOOM_OK(loom_algorithm_info(i, &algo));
        const char *name = algo.name;
        const int c = collective_index(algo.collective);
        CHECK(c >= 0, "the API reports collective '%s' (algorithm %s), which this test does not know", algo.collective,
              name);
        if (c < 0) continue;
        char param[64], why[400] = "";
        /* Device algorithms run device buffers only: tests/mpi/run_device_tests.sh forces them. */
        const char *memory = NULL;
        LOOM_OK(loom_algorithm_memory(i, &memory));
        if (memory && strcmp(memory, "host") != 0) continue;
        snprintf(param, sizeof param, "%s_algorithm", algo.collective);
        LOOM_OK(loom_comm_set_param(comm, param, name));
        if (!applies(comm, algo.collective, name, why, sizeof why)) {
            CHECK(strncmp(algo.restrictions, "none", 4) != 0, "%s %s has restrictions \"%s\" but cannot run: %s",
                  algo.collective, name, algo.restrictions, why);
            snprintf(skipped + strlen(skipped), skipped_size - strlen(skipped), "%s%s/%s (%s)", *skipped ? "; " : "",
                     algo.collective, name, why);
            LOOM_OK(loom_comm_set_param(comm, param, "auto"));
            continue;
        }
        ++nforced;
        snprintf(forced + strlen(forced), forced_size - strlen(forced), "%s%s/%s", *forced ? " " : "", algo.collective,
                 name);
        int counts_run = 0;
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
            const int64_t n = c >= 3 && counts[k] > 20000 ? counts[k] / size : counts[k];
            if (!takes_count(comm, algo.collective, n)) continue;
            ++counts_run;
            for (int in_place = 0; in_place < 2; ++in_place)
                for (int nb = 0; nb < 3; ++nb) {
                    if (c == 0) run_allreduce(comm, n, in_place, nb);
                    else if (c == 1 || c == 2) run_reduce_scatter(comm, n, in_place, nb, c == 2);
                    else if (c == 5) run_alltoallv(comm, n, in_place, nb);
                    else if (c == 6) run_allgatherv(comm, n, in_place, nb);
                    else run_gather_like(comm, n, in_place, nb, c == 4);
                    ++ran;
                }
        }
        CHECK(counts_run >= 4, "%s %s took only %d of the counts", algo.collective, name, counts_run);
        const char *used = NULL;
        LOOM_OK(loom_comm_last_algorithm(comm, collectives[c], &used));
        CHECK(used && !strcmp(used, name), "%s ran %s, not the forced %s", collectives[c], used ? used : "(none)",
              name);
        LOOM_OK(loom_comm_set_param(comm, param, "auto"));
    }
    if (rank == 0) {
        printf("test_mpi_collectives np=%d forced: %s\n", size, forced);
        if (*skipped) printf("test_mpi_collectives np=%d not applicable here: %s\n", size, skipped);
    }
    free(forced), free(skipped);
    /* Default selection over a sweep of sizes. */
    for (int64_t count = 1; count <= (1 << 18); count *= 8) {
        run_allreduce(comm, count, 0, 0);
        run_gather_like(comm, count / 4 + 1, 0, 1, 0);
        run_gather_like(comm, count / 8 + 1, 1, 0, 1);
        run_reduce_scatter(comm, count / 4, 0, 1, 1);
        run_alltoallv(comm, count / 8, (int)(count & 1), 0);
        run_allgatherv(comm, count / 4, 0, 1);
        ran += 6;
    }
    MPI_Comm twin;
    loom_comm_t second;
    MPI_Comm_dup(MPI_COMM_WORLD, &twin);
    LOOM_OK(loom_comm_create(twin, &second));
    for (int k = 0; k < 3; ++k, ++ran) crossed_alltoallvs(comm, second, k == 0 ? 0 : k == 1 ? 1 : 1001);
    LOOM_OK(loom_comm_free(&second));
    MPI_Comm_free(&twin);
    /* One machine: with shared memory on (the default), every rank shares
     * it with all the others, and both paths carried messages. */
    loom_transport_info_t info;
    info.version = LOOM_TRANSPORT_INFO_VERSION;
    LOOM_OK(loom_comm_transport_info(comm, &info));
    /* The per-transport counters add up to the summary: the rails first when
     * they came up (attached last, tried first), shared memory next when
     * attached, the transport that carries the rest last. */
    uint64_t per_transport_sends[2] = {0, 0};
    for (int i = 0; i < info.transports; ++i)
        for (int l = 0; l < info.transport[i].lanes; ++l)
            per_transport_sends[strcmp(info.transport[i].name, "shared_memory") != 0] +=
                info.transport[i].lane[l].sent_messages;
    /* LOOM_TEST_EXPECT_RAILS=R: the rails came up and every one of them carried bytes. */
    const char *expect_rails = getenv("LOOM_TEST_EXPECT_RAILS");
    const int want_rails = expect_rails ? atoi(expect_rails) : 0;
    if (want_rails > 0) {
        const loom_transport_counters_t *ucx = NULL;
        for (int i = 0; i < info.transports; ++i)
            if (!strcmp(info.transport[i].name, "ucx")) ucx = &info.transport[i];
        CHECK(ucx != NULL, "LOOM_TEST_EXPECT_RAILS=%d but the rails did not come up (%d transports)", want_rails,
              info.transports);
        for (int r = 0; ucx && r < want_rails; ++r) {
            char name[64];
            uint64_t sent = 0, received = 0;
            snprintf(name, sizeof name, "rail%d_sent_bytes", r);
            for (int e = 0; e < ucx->extras; ++e) {
                if (!strcmp(ucx->extra_name[e], name)) sent = ucx->extra_value[e];
                if (!strncmp(ucx->extra_name[e], name, 5) && strstr(ucx->extra_name[e], "received_bytes"))
                    received += ucx->extra_value[e];
            }
            CHECK(sent > 0 && received > 0, "rail %d carried %llu bytes out, %llu in; want both above 0", r,
                  (unsigned long long)sent, (unsigned long long)received);
        }
    }
    if (!strcmp(info.name, "shared_memory"))
        CHECK(info.transports == 2 + (want_rails > 0) &&
                  !strcmp(info.transport[want_rails > 0].name, "shared_memory") &&
                  per_transport_sends[0] == info.shared_memory_sends &&
                  per_transport_sends[1] == info.point_to_point_sends,
              "per-transport counters (%d transports, %llu + %llu sends) disagree with the summary (%llu + %llu)",
              info.transports, (unsigned long long)per_transport_sends[0], (unsigned long long)per_transport_sends[1],
              (unsigned long long)info.shared_memory_sends, (unsigned long long)info.point_to_point_sends);
    else
        CHECK(info.transports == 1 + (want_rails > 0) && !strcmp(info.transport[info.transports - 1].name, info.name),
              "%d transports, the first %s; want %s alone", info.transports,
              info.transports ? info.transport[0].name : "-", info.name);
    const char *shm_env = getenv("LOOM_SHARED_MEMORY");
    if (my_node_ranks > 1 && !(shm_env && !strcmp(shm_env, "0"))) {
        CHECK(!strcmp(info.name, "shared_memory") && info.node_ranks == my_node_ranks && info.shared_memory_sends > 0 &&
                  info.point_to_point_sends > 0,
              "transport %s node_ranks=%d shm sends=%llu p2p sends=%llu; want shared_memory among %d ranks, both used",
              info.name, info.node_ranks, (unsigned long long)info.shared_memory_sends,
              (unsigned long long)info.point_to_point_sends, my_node_ranks);
        /* Forced single copy: the other ranks read this one's buffers. */
        const char *single_copy = getenv("LOOM_SINGLE_COPY");
        if (single_copy && !strcmp(single_copy, "2"))
            CHECK(info.single_copy_sends > 0, "LOOM_SINGLE_COPY=2 but no send went by single copy (of %llu)",
                  (unsigned long long)info.shared_memory_sends);
    } else {
        CHECK(!strcmp(info.name, "mpi") && info.node_ranks == 1, "transport %s node_ranks=%d; want mpi alone",
              info.name, info.node_ranks);
    }
    free(labels);
    LOOM_OK(loom_comm_free(&comm));
    int total_failures = 0;
    MPI_Allreduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_collectives np=%d: %d of %d algorithms forced, %d cases per rank, %d failures\n", size,
               nforced, nalgorithms, ran, total_failures);
    MPI_Finalize();
    return total_failures ? 1 : 0;
}
