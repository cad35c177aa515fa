/* Bad input through MPI calls, as a new user would make them: prints, per
 * case, the MPI error class every rank got and rank 0's error string
 * (docs/reliability.md has the table, with and without coll/loom).
 * run_component_tests.sh compares it with tests/mpi/bad_input.expected. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static void report(const char *what, int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int l = 0, cls = rc;
    if (rc) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(cls, s, &l);
    }
    s[l] = 0;
    int all[64] = {0};
    MPI_Gather(&cls, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%-58s", what);
        for (int i = 0; i < size; ++i) printf(" %d", all[i]);
        printf("  (%s)\n", rc ? s : "success");
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    enum { n = 4096 };
    float *a = calloc(n * 64, sizeof(float)), *b = calloc(n * 64, sizeof(float));
    for (int i = 0; i < n * 64; ++i) a[i] = 1;
    MPI_Comm c;
    int rc;

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    rc = MPI_Allreduce(a, b, -1, MPI_FLOAT, MPI_SUM, c);
    report("allreduce, count -1", rc);
    rc = MPI_Allreduce(a, a, n, MPI_FLOAT, MPI_SUM, c);
    report("allreduce, sendbuf == recvbuf (not MPI_IN_PLACE)", rc);
    rc = MPI_Allreduce(a, a + 1, n, MPI_FLOAT, MPI_SUM, c);
    b[0] = a[1];
    report("allreduce, buffers overlapping by all but one element", rc);
    rc = MPI_Allreduce(a, MPI_IN_PLACE, n, MPI_FLOAT, MPI_SUM, c);
    report("allreduce, MPI_IN_PLACE as recvbuf (forbidden)", rc);
    rc = MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_OP_NULL, c);
    report("allreduce, MPI_OP_NULL", rc);
    rc = MPI_Allreduce(a, b, n, MPI_DATATYPE_NULL, MPI_SUM, c);
    report("allreduce, MPI_DATATYPE_NULL", rc);
    /* Open MPI's own modules crash on this one: only with coll/loom. */
    if (argc > 1 && !strcmp(argv[1], "--null-buffer")) {
        rc = MPI_Allreduce(NULL, b, n, MPI_FLOAT, MPI_SUM, c);
        report("allreduce, sendbuf NULL with count > 0", rc);
    }
    rc = MPI_Alltoall(a, -5, MPI_FLOAT, b, -5, MPI_FLOAT, c);
    report("alltoall, count -5", rc);
    rc = MPI_Allgather(a, n, MPI_FLOAT, b, n / 2, MPI_FLOAT, c);
    report("allgather, recvcount half the sendcount", rc);
    /* Same size, other type on one rank: undetectable by size. */
    rc = MPI_Allreduce(a, b, n, rank == 0 ? MPI_INT : MPI_FLOAT, MPI_SUM, c);
    report("allreduce, MPI_INT on rank 0, MPI_FLOAT elsewhere", rc);
    MPI_Comm_free(&c);

    rc = MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF);
    report("allreduce on MPI_COMM_SELF", rc);
    if (rc == MPI_SUCCESS && b[0] != 1) printf("rank %d: MPI_COMM_SELF result %g, not 1\n", rank, b[0]);

    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    rc = MPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, inter);
    report("allreduce on an intercommunicator", rc);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Request req;
    rc = MPI_Iallreduce(a, b, n, MPI_FLOAT, MPI_SUM, c, &req);
    MPI_Comm_free(&c);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    report("iallreduce, communicator freed before the wait", rc);
    if (rc == MPI_SUCCESS && b[0] != size) printf("rank %d: freed-communicator result %g, not %d\n", rank, b[0], size);

    MPI_Finalize();
    return 0;
}
