/* For the benchmarks that time Open MPI's default collectives and coll/loom
 * in one process: coll/loom's priority as MPI_T reads it, and the two
 * communicators. */
#ifndef LOOM_PERF_COLL_LOOM_PRIORITY_H
#define LOOM_PERF_COLL_LOOM_PRIORITY_H
#include <mpi.h>

/* 1 and *priority when coll/loom is loaded, else 0 (*priority 0). */
static int read_coll_loom_priority(int *priority) {
    int provided = 0, index = -1, n = 0;
    *priority = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 0;
    MPI_T_cvar_handle h;
    const int found = MPI_T_cvar_get_index("coll_loom_priority", &index) == MPI_SUCCESS &&
                      MPI_T_cvar_handle_alloc(index, NULL, &h, &n) == MPI_SUCCESS;
    if (found) {
        if (MPI_T_cvar_read(h, priority) != MPI_SUCCESS) *priority = 0;
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return found;
}
/* Two duplicates of MPI_COMM_WORLD: one coll/loom takes (when loaded and
 * on), and one made with Open MPI's info key ompi_comm_coll_preference =
 * "^loom", which gets the modules Open MPI would pick without Loom. */
static void dup_loom_and_default(MPI_Comm *loom_side, MPI_Comm *default_side) {
    MPI_Comm_dup(MPI_COMM_WORLD, loom_side);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", "^loom");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, default_side);
    MPI_Info_free(&info);
}
#endif
