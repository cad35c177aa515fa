/* Ranks that call one collective with different arguments: rank 0 passes
 * twice the others' count, the last rank half of it, or rank 0 another
 * datatype. Every rank's call fails with LOOM_ERR_MISMATCH within seconds
 * instead of one of them waiting for ever: the rank that finds a message of
 * another size than its receive (or shared slots that differ) revokes the
 * communicator and tells its peers, as ULFM's revoke. The next call on it
 * fails at once and loom_comm_state says so; a communicator made afterwards
 * computes exactly, seeing nothing of the mismatched call.
 * A rank whose messages all happened to have the sizes it expected may
 * finish the call before the notice reaches it (between nodes, where
 * messages are cut in pieces of a fixed size): its next call fails. With
 * -s (one node: shared memory checks every message's size, and the
 * node's ranks are told in their own inboxes) every rank fails on the
 * mismatched call itself.
 * Usage: test_mismatch [-s] [-m [-f | -o]]
 * -m: through MPI_Allreduce, MPI_Alltoall and MPI_Iallreduce (coll/loom) on
 * communicators with MPI_ERRORS_RETURN: every rank gets MPI_ERR_TRUNCATE,
 * as Open MPI's own receives report it; none hands the call to Open MPI's
 * module, where the others are not. -f: with MPI_ERRORS_ARE_FATAL left on,
 * so the first mismatched call ends the job, as Open MPI alone would.
 * -m -o: rank 0's MPI_Alltoallv receive blocks overlap (wrong arguments
 * of one rank that only Loom checks), under MPI_ERRORS_ARE_FATAL: the job
 * ends with Loom's message, where rank 0 once handed the call to Open MPI's
 * module while its peers waited in Loom for ever.
 * Then every rank passes a null buffer with elements to read or write:
 * MPI_ERR_BUFFER (Open MPI's own modules crash on it), and the
 * communicator stays usable.
 * Prints "test_mismatch np=N: C cases, F failures". */
#include <loom.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures, cases;

static void check(int ok, const char *what, const char *detail) {
    ++cases;
    if (!ok) {
        ++failures;
        fprintf(stderr, "[rank %d] FAIL %s: %s\n", rank, what, detail ? detail : "");
    }
}

enum shape { MORE_ON_FIRST, FEWER_ON_LAST, WIDER_TYPE_ON_FIRST };
struct mismatch {
    const char *name;
    const char *collective; /* allreduce, iallreduce, alltoall */
    int64_t count;          /* the others' count (alltoall: per rank) */
    enum shape shape;
    const char *algorithm; /* forced on every rank, or NULL: Loom's choice */
};

static const struct mismatch cases_table[] = {
    {"allreduce, 65536 floats on rank 0 and 32768 on the others", "allreduce", 32768, MORE_ON_FIRST, NULL},
    {"allreduce, 6 on rank 0 and 3 on the others", "allreduce", 3, MORE_ON_FIRST, NULL},
    {"allreduce, fewer on the last rank, ring", "allreduce", 20000, FEWER_ON_LAST, "ring"},
    {"allreduce, 64-bit integers on rank 0, 32-bit on the others", "allreduce", 4096, WIDER_TYPE_ON_FIRST, NULL},
    {"iallreduce, 65536 floats on rank 0 and 32768 on the others", "iallreduce", 32768, MORE_ON_FIRST, NULL},
    {"alltoall, 2048 per rank on rank 0 and 1024 on the others", "alltoall", 1024, MORE_ON_FIRST, NULL},
};

static int64_t my_count(const struct mismatch *m) {
    if (m->shape == MORE_ON_FIRST && rank == 0) return 2 * m->count;
    if (m->shape == FEWER_ON_LAST && rank == size - 1) return m->count / 2;
    return m->count;
}

static loom_comm_t make_comm(void) {
    loom_comm_t comm = NULL;
    if (loom_comm_create(MPI_COMM_WORLD, &comm) != LOOM_SUCCESS) {
        fprintf(stderr, "[rank %d] loom_comm_create: %s\n", rank, loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return comm;
}

/* One mismatched call through libloom; its status. */
static int call_libloom(const struct mismatch *m, loom_comm_t comm, void *in, void *out) {
    const int64_t n = my_count(m);
    const loom_datatype_t type = m->shape == WIDER_TYPE_ON_FIRST && rank == 0 ? LOOM_INT64 : LOOM_INT32;
    if (!strcmp(m->collective, "alltoall")) return loom_alltoall(in, out, n, type, comm);
    if (!strcmp(m->collective, "allreduce")) return loom_allreduce(in, out, n, type, LOOM_SUM, comm);
    loom_request_t req = NULL;
    int rc = loom_iallreduce(in, out, n, type, LOOM_SUM, comm, &req);
    if (rc == LOOM_SUCCESS) rc = loom_wait(&req);
    if (req) loom_request_free(&req);
    return rc;
}

static int call_mpi(const struct mismatch *m, MPI_Comm comm, void *in, void *out) {
    const int n = (int)my_count(m);
    const MPI_Datatype type = m->shape == WIDER_TYPE_ON_FIRST && rank == 0 ? MPI_INT64_T : MPI_INT32_T;
    if (!strcmp(m->collective, "alltoall")) return MPI_Alltoall(in, n, type, out, n, type, comm);
    if (!strcmp(m->collective, "allreduce")) return MPI_Allreduce(in, out, n, type, MPI_SUM, comm);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(in, out, n, type, MPI_SUM, comm, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc;
}

static int error_class(int rc) {
    int c = rc;
    MPI_Error_class(rc, &c);
    return c;
}

/* A fresh communicator's allreduce is exact: nothing of the mismatched call reaches it. */
static void check_fresh(int through_mpi, const char *name) {
    enum { n = 40000 };
    static int32_t in[n], out[n];
    for (int i = 0; i < n; ++i) in[i] = rank + i % 7;
    int rc;
    if (through_mpi) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        rc = MPI_Allreduce(in, out, n, MPI_INT32_T, MPI_SUM, c);
        MPI_Comm_free(&c);
    } else {
        loom_comm_t c = make_comm();
        rc = loom_allreduce(in, out, n, LOOM_INT32, LOOM_SUM, c);
        loom_comm_free(&c);
    }
    int wrong = -1;
    for (int i = 0; i < n && wrong < 0; ++i)
        if (out[i] != size * (size - 1) / 2 + size * (i % 7)) wrong = i;
    char detail[512];
    snprintf(detail, sizeof detail, "after %s: status %d, first wrong element %d (%d)", name, rc, wrong,
             wrong >= 0 ? (int)out[wrong] : 0);
    check(rc == 0 && wrong < 0, "a communicator made afterwards computes exactly", detail);
}

/* Null buffers with a count above 0, the same on every rank. */
static void null_buffers(void *in, void *out) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int counts[64];
    for (int i = 0; i < size && i < 64; ++i) counts[i] = 5;
    MPI_Request req = MPI_REQUEST_NULL;
    check(error_class(MPI_Allreduce(NULL, out, 5, MPI_INT32_T, MPI_SUM, comm)) == MPI_ERR_BUFFER,
          "MPI_Allreduce from a null buffer is MPI_ERR_BUFFER", NULL);
    check(error_class(MPI_Allreduce(in, NULL, 5, MPI_INT32_T, MPI_SUM, comm)) == MPI_ERR_BUFFER,
          "MPI_Allreduce into a null buffer is MPI_ERR_BUFFER", NULL);
    check(error_class(MPI_Iallreduce(NULL, out, 5, MPI_INT32_T, MPI_SUM, comm, &req)) == MPI_ERR_BUFFER,
          "MPI_Iallreduce from a null buffer is MPI_ERR_BUFFER", NULL);
    check(error_class(MPI_Allgather(in, 5, MPI_INT32_T, NULL, 5, MPI_INT32_T, comm)) == MPI_ERR_BUFFER,
          "MPI_Allgather into a null buffer is MPI_ERR_BUFFER", NULL);
    check(error_class(MPI_Reduce_scatter(NULL, out, counts, MPI_INT32_T, MPI_SUM, comm)) == MPI_ERR_BUFFER,
          "MPI_Reduce_scatter from a null buffer is MPI_ERR_BUFFER", NULL);
    int32_t one = 1, sum = 0;
    check(MPI_Allreduce(&one, &sum, 1, MPI_INT32_T, MPI_SUM, comm) == MPI_SUCCESS && sum == size,
          "the communicator works after the null buffers", NULL);
    MPI_Comm_free(&comm);
}

/* At least one rank found the mismatch on the call itself. */
static void check_someone_failed(int failed, const char *name) {
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    check(any, "some rank finds the mismatch on the call itself", name);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int strict = 0, through_mpi = 0, fatal = 0, overlap = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-s")) strict = 1;
        if (!strcmp(argv[i], "-m")) through_mpi = 1;
        if (!strcmp(argv[i], "-f")) fatal = 1;
        if (!strcmp(argv[i], "-o")) overlap = 1;
    }
    if (through_mpi && overlap) {
        enum { block = 4, most = 64 };
        int32_t in[block * most] = {0}, out[block * most] = {0};
        int counts[most], sdispls[most], rdispls[most];
        for (int i = 0; i < size && i < most; ++i) {
            counts[i] = block;
            sdispls[i] = block * i;
            rdispls[i] = rank == 0 ? 0 : block * i; /* rank 0: every block at the same place */
        }
        MPI_Alltoallv(in, counts, sdispls, MPI_INT32_T, out, counts, rdispls, MPI_INT32_T, MPI_COMM_WORLD);
        printf("test_mismatch np=%d: rank %d's alltoallv with overlapping receive blocks returned\n", size, rank);
        MPI_Finalize();
        return 1;
    }
    /* Open MPI reports a failed collective request's error through
     * MPI_COMM_WORLD's handler, whatever its communicator's. */
    if (through_mpi && !fatal) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const size_t room = (size_t)4 * 32768 * 8 * (size_t)(size > 1 ? size : 1);
    char *in = calloc(room, 1), *out = calloc(room, 1);
    const int ncases = (int)(sizeof cases_table / sizeof cases_table[0]);
    for (int k = 0; k < ncases; ++k) {
        const struct mismatch *m = &cases_table[k];
        if (size == 1) break; /* one rank cannot disagree with itself */
        char detail[1024];
        const double t0 = MPI_Wtime();
        if (through_mpi) {
            MPI_Comm comm;
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            if (!fatal) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
            const int rc = call_mpi(m, comm, in, out);
            const double waited = MPI_Wtime() - t0;
            snprintf(detail, sizeof detail, "%s: error class %d after %.1f s", m->name, error_class(rc), waited);
            const int failed = error_class(rc) == MPI_ERR_TRUNCATE;
            check((failed || (!strict && rc == MPI_SUCCESS)) && waited < 30, "every rank gets MPI_ERR_TRUNCATE",
                  detail);
            check_someone_failed(failed, m->name);
            const int again = call_mpi(m, comm, in, out);
            snprintf(detail, sizeof detail, "%s: error class %d", m->name, error_class(again));
            check(error_class(again) == MPI_ERR_TRUNCATE, "the next call on the communicator fails", detail);
            MPI_Comm_free(&comm);
        } else {
            loom_comm_t comm = make_comm();
            if (m->algorithm) loom_comm_set_param(comm, "allreduce_algorithm", m->algorithm);
            const int rc = call_libloom(m, comm, in, out);
            const double waited = MPI_Wtime() - t0;
            snprintf(detail, sizeof detail, "%s: status %d after %.1f s: %s", m->name, rc,
                     waited, rc ? loom_last_error() : "");
            const int failed = rc == LOOM_ERR_MISMATCH && strstr(loom_last_error(), "revoked") != NULL;
            check((failed || (!strict && rc == LOOM_SUCCESS)) && waited < 30,
                  "every rank's call fails with LOOM_ERR_MISMATCH", detail);
            check_someone_failed(failed, m->name);
            const int again = call_libloom(m, comm, in, out);
            snprintf(detail, sizeof detail, "%s: status %d: %s", m->name, again, loom_last_error());
            check(again == LOOM_ERR_MISMATCH && strstr(loom_last_error(), "revoked") != NULL,
                  "the next call on the communicator fails at once", detail);
            const char *state = NULL;
            loom_comm_state(comm, &state);
            check(state && strstr(state, "revoked") != NULL, "loom_comm_state says the communicator is revoked",
                  state);
            loom_comm_free(&comm);
        }
        check_fresh(through_mpi, m->name);
    }
    if (through_mpi && size > 1) null_buffers(in, out);
    int total[2] = {cases, failures}, sum[2];
    MPI_Reduce(total, sum, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("test_mismatch np=%d: %d cases, %d failures\n", size, sum[0], sum[1]);
    free(in);
    free(out);
    MPI_Finalize();
    return sum[1] != 0 && rank == 0;
}
