/* coll/loom's priority as MPI_T reads it: whether the component is loaded
 * (it registers the control variable) and, if so, its priority. For the
 * benchmarks that time Open MPI's default and coll/loom in one process. */
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
#endif
