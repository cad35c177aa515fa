/* coll/loom through plain MPI calls: run under
 *   mpirun --mca coll_loom_priority 100 --mca coll_loom_stats 1 ...
 * Blocking, nonblocking and persistent forms of Allreduce, Reduce_scatter,
 * Reduce_scatter_block, Allgather(v) and Alltoall(v) on MPI_COMM_WORLD, a dup, an
 * odd/even split with reversed order and size-1 communicators; many
 * outstanding nonblocking collectives on several communicators completed in
 * random order; MPI_Cancel refused; calls Loom must hand back (user-defined
 * op, derived datatype) still correct. Every result is checked against
 * values computed locally. Exits nonzero on any mismatch. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "persistent_init.h"

/* MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1, which GCC 12 takes for an
 * array of no elements. */
#if defined(MPICH) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

static int world_rank, failures;

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (!(cond) && failures++ < 10) {                    \
            fprintf(stderr, "[rank %d] FAIL: ", world_rank); \
            fprintf(stderr, __VA_ARGS__);                    \
            fprintf(stderr, "\n");                           \
        }                                                    \
    } while (0)

enum { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *mode_name[] = {"blocking", "nonblocking", "persistent"};

/* Completes `req` by the mode's rules: MPI_Test loop then MPI_Wait. */
static void complete(MPI_Request *req, int mode) {
    if (mode == BLOCKING) return;
    int flag = 0;
    for (int i = 0; i < 5 && !flag; ++i) MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (!flag) MPI_Wait(req, MPI_STATUS_IGNORE);
    if (mode == PERSISTENT) MPI_Request_free(req);
}

static void allreduce_case(MPI_Comm comm, int count, int in_place, int mode) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *in = malloc(sizeof(int) * (count + 1)), *out = malloc(sizeof(int) * (count + 1));
    for (int i = 0; i < count; ++i) out[i] = in[i] = rank * 7 + i % 13;
    const void *s = in_place ? MPI_IN_PLACE : in;
    MPI_Request req;
    if (mode == BLOCKING) MPI_Allreduce(s, out, count, MPI_INT, MPI_SUM, comm);
    else if (mode == NONBLOCKING) MPI_Iallreduce(s, out, count, MPI_INT, MPI_SUM, comm, &req);
    else {
        PERSISTENT_INIT(Allreduce)(s, out, count, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < count; ++i) out[i] = in[i]; /* restart: the same call again */
        MPI_Start(&req);
    }
    complete(&req, mode);
    for (int i = 0; i < count; ++i)
        if (out[i] != 7 * size * (size - 1) / 2 + size * (i % 13)) {
            CHECK(0, "%s allreduce p=%d count=%d in_place=%d i=%d got %d", mode_name[mode], size, count, in_place, i,
                  out[i]);
            break;
        }
    /* MINLOC on pairs, ties by lowest rank */
    struct {
        double v;
        int i;
    } *p = malloc(16 * (count + 1)), *q = malloc(16 * (count + 1));
    for (int i = 0; i < count; ++i) q[i].v = p[i].v = (rank + i) % 3, q[i].i = p[i].i = rank;
    s = in_place ? MPI_IN_PLACE : (const void *)p;
    if (mode == BLOCKING) MPI_Allreduce(s, q, count, MPI_DOUBLE_INT, MPI_MINLOC, comm);
    else if (mode == NONBLOCKING) MPI_Iallreduce(s, q, count, MPI_DOUBLE_INT, MPI_MINLOC, comm, &req);
    else {
        PERSISTENT_INIT(Allreduce)(s, q, count, MPI_DOUBLE_INT, MPI_MINLOC, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
    }
    complete(&req, mode);
    for (int i = 0; i < count; ++i) {
        int best = 9, at = -1;
        for (int r = 0; r < size; ++r)
            if ((r + i) % 3 < best) best = (r + i) % 3, at = r;
        if (q[i].v != best || q[i].i != at) {
            CHECK(0, "%s allreduce minloc p=%d count=%d i=%d", mode_name[mode], size, count, i);
            break;
        }
    }
    free(in), free(out), free(p), free(q);
}

/* More (datatype, op) pairs through allreduce: small integer values so every
 * order of reduction gives the same exact result. */
static long value_at(int rank, int i) { return (rank * 3 + i) % 5 + 1; }

static long combine(long a, long b, MPI_Op op) {
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_BOR) return a | b;
    if (op == MPI_BXOR) return a ^ b;
    if (op == MPI_LAND) return (a && b) ? 1 : 0;
    return (a || b) ? 1 : 0; /* MPI_LOR */
}

#define TYPED_CASE(CTYPE, MPITYPE, OP, MAP)                                                                        \
    do {                                                                                                           \
        CTYPE *buf = malloc(sizeof(CTYPE) * (count + 1)), *res = malloc(sizeof(CTYPE) * (count + 1));              \
        for (int i = 0; i < count; ++i) res[i] = buf[i] = (CTYPE)MAP(value_at(rank, i));                           \
        MPI_Request r_;                                                                                            \
        const void *s_ = in_place ? MPI_IN_PLACE : (const void *)buf;                                              \
        if (mode == BLOCKING) MPI_Allreduce(s_, res, count, MPITYPE, OP, comm);                                    \
        else if (mode == NONBLOCKING) MPI_Iallreduce(s_, res, count, MPITYPE, OP, comm, &r_);                      \
        else {                                                                                                     \
            PERSISTENT_INIT(Allreduce)(s_, res, count, MPITYPE, OP, comm, MPI_INFO_NULL, &r_);                     \
            MPI_Start(&r_);                                                                                        \
        }                                                                                                          \
        complete(&r_, mode);                                                                                       \
        for (int i = 0; i < count; ++i) {                                                                          \
            long want = MAP(value_at(0, i));                                                                       \
            for (int r = 1; r < size; ++r) want = combine(want, MAP(value_at(r, i)), OP);                          \
            if (res[i] != (CTYPE)want) {                                                                           \
                CHECK(0, "%s allreduce %s %s p=%d count=%d i=%d", mode_name[mode], #MPITYPE, #OP, size, count, i); \
                break;                                                                                             \
            }                                                                                                      \
        }                                                                                                          \
        free(buf), free(res);                                                                                      \
    } while (0)

#define IDENTITY(x) (x)
#define PARITY(x) ((x) % 2)

static void typed_allreduce_cases(MPI_Comm comm, int count, int in_place, int mode) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    TYPED_CASE(float, MPI_FLOAT, MPI_SUM, IDENTITY);
    TYPED_CASE(int64_t, MPI_INT64_T, MPI_PROD, IDENTITY);
    TYPED_CASE(unsigned, MPI_UNSIGNED, MPI_BOR, IDENTITY);
    TYPED_CASE(short, MPI_SHORT, MPI_MAX, IDENTITY);
    TYPED_CASE(long double, MPI_LONG_DOUBLE, MPI_MIN, IDENTITY);
    TYPED_CASE(uint16_t, MPI_UINT16_T, MPI_BXOR, IDENTITY);
    TYPED_CASE(_Bool, MPI_C_BOOL, MPI_LAND, PARITY);
    TYPED_CASE(signed char, MPI_SIGNED_CHAR, MPI_LOR, PARITY);
}

static void reduce_scatter_case(MPI_Comm comm, int count, int in_place, int mode, int block) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *counts = malloc(sizeof(int) * size), total = 0, offset = 0;
    for (int r = 0; r < size; ++r) {
        counts[r] = block ? count : (r % 3 == 2 ? 0 : count + r % 2);
        if (r < rank) offset += counts[r];
        total += counts[r];
    }
    uint8_t *in = malloc(total + 1), *out = malloc(total + 1);
    for (int i = 0; i < total; ++i) in[i] = (uint8_t)(rank * 60 + i);
    if (in_place) memcpy(out, in, total);
    const void *s = in_place ? MPI_IN_PLACE : in;
    MPI_Request req;
    if (block) {
        if (mode == BLOCKING) MPI_Reduce_scatter_block(s, out, count, MPI_UINT8_T, MPI_SUM, comm);
        else if (mode == NONBLOCKING) MPI_Ireduce_scatter_block(s, out, count, MPI_UINT8_T, MPI_SUM, comm, &req);
        else {
            PERSISTENT_INIT(Reduce_scatter_block)(s, out, count, MPI_UINT8_T, MPI_SUM, comm, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
    } else {
        if (mode == BLOCKING) MPI_Reduce_scatter(s, out, counts, MPI_UINT8_T, MPI_SUM, comm);
        else if (mode == NONBLOCKING) MPI_Ireduce_scatter(s, out, counts, MPI_UINT8_T, MPI_SUM, comm, &req);
        else {
            PERSISTENT_INIT(Reduce_scatter)(s, out, counts, MPI_UINT8_T, MPI_SUM, comm, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
    }
    complete(&req, mode);
    for (int i = 0; i < counts[rank]; ++i) {
        uint8_t want = 0; /* wraps */
        for (int r = 0; r < size; ++r) want = (uint8_t)(want + (uint8_t)(r * 60 + offset + i));
        if (out[i] != want) {
            CHECK(0, "%s reduce_scatter%s p=%d count=%d i=%d got %u want %u", mode_name[mode], block ? "_block" : "",
                  size, count, i, out[i], want);
            break;
        }
    }
    free(counts), free(in), free(out);
}

static void movement_case(MPI_Comm comm, int count, int in_place, int mode, int alltoall) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int n = count * size;
    double *in = malloc(sizeof(double) * (n + 1)), *out = malloc(sizeof(double) * (n + 1));
    for (int i = 0; i < n; ++i) in[i] = rank * 100000.0 + i;
    if (in_place) {
        if (alltoall) memcpy(out, in, sizeof(double) * n);
        else memcpy(out + rank * count, in, sizeof(double) * count);
    }
    const void *s = in_place ? MPI_IN_PLACE : in;
    MPI_Request req;
    if (alltoall) {
        if (mode == BLOCKING) MPI_Alltoall(s, count, MPI_DOUBLE, out, count, MPI_DOUBLE, comm);
        else if (mode == NONBLOCKING) MPI_Ialltoall(s, count, MPI_DOUBLE, out, count, MPI_DOUBLE, comm, &req);
        else {
            PERSISTENT_INIT(Alltoall)(s, count, MPI_DOUBLE, out, count, MPI_DOUBLE, comm, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
    } else {
        if (mode == BLOCKING) MPI_Allgather(s, count, MPI_DOUBLE, out, count, MPI_DOUBLE, comm);
        else if (mode == NONBLOCKING) MPI_Iallgather(s, count, MPI_DOUBLE, out, count, MPI_DOUBLE, comm, &req);
        else {
            PERSISTENT_INIT(Allgather)(s, count, MPI_DOUBLE, out, count, MPI_DOUBLE, comm, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
    }
    complete(&req, mode);
    for (int r = 0; r < size; ++r)
        for (int i = 0; i < count; ++i) {
            double want = r * 100000.0 + (alltoall ? rank * count + i : i);
            if (out[r * count + i] != want) {
                CHECK(0, "%s %s p=%d count=%d block %d i=%d", mode_name[mode], alltoall ? "alltoall" : "allgather",
                      size, count, r, i);
                r = size;
                break;
            }
        }
    free(in), free(out);
}

/* Alltoallv and allgatherv: uneven blocks (some empty) in scattered
 * layouts; what rank i sends rank j is symmetric, as an in-place alltoallv needs. */
static int pair_count(int n, int i, int j) { return n == 0 || (i + j) % 5 == 4 ? 0 : n + (i + j) % 3; }
static int place(const int *counts, int size, int reverse, int gap, int *displs) {
    int at = 0;
    for (int k = 0; k < size; ++k) {
        const int b = reverse ? size - 1 - k : k;
        at += gap;
        displs[b] = at;
        at += counts[b];
    }
    return at;
}

static void vector_case(MPI_Comm comm, int n, int in_place, int mode, int alltoallv) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *sc = calloc((size_t)size, sizeof(int)), *sd = calloc((size_t)size, sizeof(int));
    int *rc = calloc((size_t)size, sizeof(int)), *rd = calloc((size_t)size, sizeof(int));
    int *peer_c = calloc((size_t)size, sizeof(int)), *peer_d = calloc((size_t)size, sizeof(int));
    for (int i = 0; i < size; ++i) {
        sc[i] = alltoallv ? pair_count(n, rank, i) : 0;
        rc[i] = alltoallv ? pair_count(n, i, rank) : (i % 4 == 3 ? 0 : n + i % 3);
    }
    const int sends = alltoallv ? place(sc, size, 0, 2, sd) : rc[rank];
    const int receives = place(rc, size, 1, 1, rd);
    double *in = malloc(sizeof(double) * (sends + 1)), *out = malloc(sizeof(double) * (receives + 1));
    for (int i = 0; i < sends; ++i) in[i] = rank * 100000.0 + i;
    for (int i = 0; i <= receives; ++i) out[i] = -1;
    if (in_place && alltoallv)
        for (int i = 0; i < receives; ++i) out[i] = rank * 100000.0 + i;
    if (in_place && !alltoallv) memcpy(out + rd[rank], in, sizeof(double) * rc[rank]);
    const void *s = in_place ? MPI_IN_PLACE : in;
    MPI_Request req;
    if (alltoallv) {
        if (mode == BLOCKING) MPI_Alltoallv(s, sc, sd, MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, comm);
        else if (mode == NONBLOCKING) MPI_Ialltoallv(s, sc, sd, MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, comm, &req);
        else {
            PERSISTENT_INIT(Alltoallv)(s, sc, sd, MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, comm, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
    } else {
        if (mode == BLOCKING) MPI_Allgatherv(s, rc[rank], MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, comm);
        else if (mode == NONBLOCKING) MPI_Iallgatherv(s, rc[rank], MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, comm, &req);
        else {
            PERSISTENT_INIT(Allgatherv)(s, rc[rank], MPI_DOUBLE, out, rc, rd, MPI_DOUBLE, comm, MPI_INFO_NULL, &req);
            MPI_Start(&req);
        }
    }
    complete(&req, mode);
    for (int r = 0; r < size; ++r) {
        /* Where rank r read the block it sent here. */
        int from = 0;
        if (alltoallv) {
            for (int j = 0; j < size; ++j) peer_c[j] = pair_count(n, r, j);
            if (in_place) {
                for (int i = 0; i < size; ++i) peer_c[i] = pair_count(n, i, r);
                place(peer_c, size, 1, 1, peer_d);
            } else {
                place(peer_c, size, 0, 2, peer_d);
            }
            from = peer_d[rank];
        }
        for (int i = 0; i < rc[r]; ++i)
            if (out[rd[r] + i] != r * 100000.0 + from + i) {
                CHECK(0, "%s %s%s p=%d n=%d from rank %d element %d: %g, want %g", mode_name[mode],
                      alltoallv ? "alltoallv" : "allgatherv", in_place ? " in place" : "", size, n, r, i,
                      out[rd[r] + i], r * 100000.0 + from + i);
                r = size;
                break;
            }
    }
    CHECK(out[receives] == -1, "%s %s wrote past the receive buffer", mode_name[mode],
          alltoallv ? "alltoallv" : "allgatherv");
    free(sc), free(sd), free(rc), free(rd), free(peer_c), free(peer_d), free(in), free(out);
}

static void all_cases(MPI_Comm comm) {
    int size;
    MPI_Comm_size(comm, &size);
    const int counts[] = {0, 1, size + 1, 1001, 40001};
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k)
        for (int in_place = 0; in_place < 2; ++in_place)
            for (int mode = 0; mode < 3; ++mode) {
                allreduce_case(comm, counts[k], in_place, mode);
                if (counts[k] <= 1001) typed_allreduce_cases(comm, counts[k], in_place, mode);
                reduce_scatter_case(comm, counts[k] / size + 1, in_place, mode, 0);
                reduce_scatter_case(comm, counts[k] / size, in_place, mode, 1);
                movement_case(comm, counts[k] / size, in_place, mode, 0);
                movement_case(comm, counts[k] / size / 2, in_place, mode, 1);
                vector_case(comm, counts[k] / size / 2, in_place, mode, 1);
                vector_case(comm, counts[k] / size, in_place, mode, 0);
            }
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    for (int i = 0; i < *len; ++i) ((int *)inout)[i] += ((int *)in)[i];
}

/* Nonblocking collectives as the very first calls on a communicator (before
 * any blocking one): every rank must take the same path for them. */
static void nonblocking_first(MPI_Comm comm) {
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    enum { B = 16 };
    int *send = malloc(sizeof(int) * B * p), *recv = malloc(sizeof(int) * B * p), sum[B];
    for (int i = 0; i < B * p; ++i) send[i] = me * 1000 + i;
    for (int i = 0; i < B; ++i) sum[i] = me + i;
    MPI_Request reqs[2];
    MPI_Ialltoall(send, B, MPI_INT, recv, B, MPI_INT, comm, &reqs[0]);
    MPI_Iallreduce(MPI_IN_PLACE, sum, B, MPI_INT, MPI_SUM, comm, &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    for (int r = 0; r < p; ++r)
        for (int i = 0; i < B; ++i)
            if (recv[r * B + i] != r * 1000 + me * B + i && failures++ < 10)
                fprintf(stderr, "rank %d: nonblocking-first ialltoall block %d element %d wrong\n", world_rank, r, i);
    for (int i = 0; i < B; ++i)
        if (sum[i] != p * (p - 1) / 2 + p * i && failures++ < 10)
            fprintf(stderr, "rank %d: nonblocking-first iallreduce element %d wrong\n", world_rank, i);
    free(send);
    free(recv);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc > 1 && !strcmp(argv[1], "--abort-after-init")) {
        /* A job that dies before any collective: rank 0 aborts, the others
         * are killed while they sleep. Nothing runs Loom's clean-up. */
        if (world_rank == 0) MPI_Abort(MPI_COMM_WORLD, 3);
        sleep(60);
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "--kill-in-collective")) {
        /* The last rank is killed while the others are in an allreduce on a
         * new communicator, before it has mapped their inboxes. */
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        enum { n = 1 << 18 };
        float *x = calloc(n, sizeof(float)), *y = calloc(n, sizeof(float));
        if (world_rank == size - 1) {
            usleep(200000);
            raise(SIGKILL);
        }
        MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, comm);
        return 1;
    }

    nonblocking_first(MPI_COMM_WORLD);
    MPI_Comm fresh;
    MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
    nonblocking_first(fresh);
    MPI_Comm_free(&fresh);

    all_cases(MPI_COMM_WORLD);
    /* Blocks of 200004 bytes: above one ring message, within a ring, so one
     * node's scattered alltoall sends them through shared memory in pieces. */
    for (int in_place = 0; in_place < 2; ++in_place)
        for (int mode = 0; mode < 3; ++mode) movement_case(MPI_COMM_WORLD, 50001, in_place, mode, 1);
    MPI_Comm dup, parity, self_sized;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    all_cases(dup);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, size - world_rank, &parity); /* reversed order */
    all_cases(parity);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &self_sized); /* size 1 */
    all_cases(self_sized);

    /* Many outstanding nonblocking collectives on several communicators,
     * completed in an order that differs per rank. */
    enum { K = 24 };
    MPI_Comm comms[3] = {MPI_COMM_WORLD, dup, parity};
    MPI_Request reqs[K];
    int *bufs[K], order[K];
    for (int k = 0; k < K; ++k) {
        bufs[k] = malloc(sizeof(int) * 64);
        for (int i = 0; i < 64; ++i) bufs[k][i] = world_rank + k;
        MPI_Iallreduce(MPI_IN_PLACE, bufs[k], 64, MPI_INT, MPI_MAX, comms[k % 3], &reqs[k]);
        order[k] = k;
    }
    srand(world_rank + 1);
    for (int k = K - 1; k > 0; --k) {
        int j = rand() % (k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < K / 2; ++k) MPI_Wait(&reqs[order[k]], MPI_STATUS_IGNORE);
    MPI_Waitall(K, reqs, MPI_STATUSES_IGNORE); /* the rest; completed ones are MPI_REQUEST_NULL */
    for (int k = 0; k < K; ++k) {
        int psize, prank, max_rank = 0;
        MPI_Comm_size(comms[k % 3], &psize);
        MPI_Comm_rank(comms[k % 3], &prank);
        /* the largest world rank in the communicator */
        MPI_Allreduce(&world_rank, &max_rank, 1, MPI_INT, MPI_MAX, comms[k % 3]);
        CHECK(bufs[k][63] == max_rank + k, "outstanding #%d got %d want %d", k, bufs[k][63], max_rank + k);
        free(bufs[k]);
    }

    /* Collectives cannot be cancelled: an error, not a crash. */
    int x = 1, y = 0;
    MPI_Request req;
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
    int rc = MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(y == size, "allreduce after cancel got %d", y);
    CHECK(rc != MPI_SUCCESS, "MPI_Cancel on a collective request returned MPI_SUCCESS");

    /* What Loom hands back must still be right: a user-defined op and a
     * derived datatype. */
    MPI_Op op;
    MPI_Op_create(user_sum, 1, &op);
    int u = world_rank + 1, v = 0;
    MPI_Allreduce(&u, &v, 1, MPI_INT, op, MPI_COMM_WORLD);
    CHECK(v == size * (size + 1) / 2, "user op allreduce got %d", v);
    MPI_Op_free(&op);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int two[2] = {world_rank, -world_rank}, gathered[2 * 64];
    MPI_Allgather(two, 1, pair, gathered, 1, pair, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) CHECK(gathered[2 * r] == r && gathered[2 * r + 1] == -r, "derived allgather");
    MPI_Type_free(&pair);

    MPI_Comm_free(&self_sized);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&dup);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) printf("test_component np=%d: %d failures\n", size, total);
    MPI_Finalize();
    return total ? 1 : 0;
}
