/* coll/loom's parameters through MPI_T: an algorithm written with
 * MPI_T_cvar_write applies from the next call; a bad value is reported and
 * the previous one kept (also for a parameter whose default is empty,
 * which Open MPI stores as NULL); a parameter read only at set-up refuses
 * writes.
 * Run under mpirun with coll/loom loaded and coll_loom_stats 1: the stats
 * must show allreduce under both the default choice and ring. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "test_mpi_t: FAILED: %s\n", what);
        ++failures;
    }
}

static void allreduce_rounds(int n, int size) {
    for (int i = 0; i < n; ++i) {
        int in = i + 1, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check(out == (i + 1) * size, "allreduce result");
    }
}

static int cvar(const char *name, MPI_T_cvar_handle *h) {
    int index = -1, count = 0;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return 0;
    return MPI_T_cvar_handle_alloc(index, NULL, h, &count) == MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread");
    MPI_T_cvar_handle algorithm, shared;
    check(cvar("coll_loom_allreduce_algorithm", &algorithm), "coll_loom_allreduce_algorithm is a control variable");
    check(cvar("coll_loom_shared_memory", &shared), "coll_loom_shared_memory is a control variable");

    allreduce_rounds(10, size); /* the default choice */
    int rc = MPI_T_cvar_write(algorithm, "ring");
    if (rc != MPI_SUCCESS && rank == 0) fprintf(stderr, "test_mpi_t: MPI_T_cvar_write returned %d\n", rc);
    check(rc == MPI_SUCCESS, "writing coll_loom_allreduce_algorithm");
    char value[256] = "";
    check(MPI_T_cvar_read(algorithm, value) == MPI_SUCCESS && !strcmp(value, "ring"), "reading it back");
    allreduce_rounds(10, size); /* ring from the first call after the write */
    check(MPI_T_cvar_write(algorithm, "no_such_algorithm") == MPI_SUCCESS, "writing a bad algorithm name");
    allreduce_rounds(10, size); /* reported once, ring kept */
    check(MPI_T_cvar_write(shared, "0") != MPI_SUCCESS, "coll_loom_shared_memory refuses writes");
    MPI_T_cvar_handle model;
    check(cvar("coll_loom_cost_model", &model), "coll_loom_cost_model is a control variable");
    check(MPI_T_cvar_write(model, "no_such_model") == MPI_SUCCESS, "writing a bad cost model");
    allreduce_rounds(2, size); /* reported once */
    MPI_T_cvar_handle_free(&model);

    MPI_T_cvar_handle_free(&algorithm);
    MPI_T_cvar_handle_free(&shared);
    MPI_T_finalize();
    int any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) printf("test_mpi_t: %s\n", any ? "FAILED" : "ok");
    MPI_Finalize();
    return any ? 1 : 0;
}
