/* Loom through Open MPI (coll/loom) against Open MPI's default modules, in
 * one job: MPI_COMM_WORLD gets coll/loom (run with --mca coll_loom_priority
 * 100), and a duplicate made with the info key ompi_comm_coll_preference =
 * "^loom" gets whatever Open MPI would pick without Loom. Per size the two
 * are measured alternately (default, Loom, default, Loom ...) and the
 * medians of the repetitions are compared. Results are validated: both
 * communicators must produce the same bytes.
 *
 * usage: mpirun -np 4 --mca coll_loom_priority 100 coll_compare [-n MIN] [-m MAX] [-r REPS] [-c COLLECTIVE]...
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, ALLGATHER, ALLTOALL, NCOLL };
static const char *names[] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall"};
static const char *titles[] = {"Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Allgather",
                               "All-to-All Personalized Exchange"};
static int size;
static int *counts; /* MPI_Reduce_scatter's counts, every rank the same block as OSU does; set per size */

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void call(int c, MPI_Comm comm, char *in, char *out, int bytes) {
    const int block = bytes / size > 0 ? bytes / size : 1;
    switch (c) {
        case ALLREDUCE: MPI_Allreduce(in, out, bytes, MPI_INT8_T, MPI_SUM, comm); break;
        case REDUCE_SCATTER: MPI_Reduce_scatter(in, out, counts, MPI_INT8_T, MPI_SUM, comm); break;
        case REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(in, out, block, MPI_INT8_T, MPI_SUM, comm); break;
        case ALLGATHER: MPI_Allgather(in, bytes, MPI_CHAR, out, bytes, MPI_CHAR, comm); break;
        default: MPI_Alltoall(in, bytes, MPI_CHAR, out, bytes, MPI_CHAR, comm); break;
    }
}

static size_t out_bytes(int c, int bytes) {
    const int block = bytes / size > 0 ? bytes / size : 1;
    return c == REDUCE_SCATTER || c == REDUCE_SCATTER_BLOCK ? (size_t)block : c == ALLREDUCE ? (size_t)bytes : (size_t)bytes * size;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int min_bytes = 1, max_bytes = 1 << 20, reps = 9, chosen = 0;  /* bit per collective; 0 = all */
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) max_bytes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) min_bytes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            ++i;
            int known = 0;
            for (int c = 0; c < NCOLL; ++c)
                if (!strcmp(argv[i], names[c])) chosen |= 1 << c, known = 1;
            if (!known) {
                if (rank == 0) fprintf(stderr, "coll_compare: unknown collective '%s'\n", argv[i]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: coll_compare [-n MIN_BYTES] [-m MAX_BYTES] [-r REPS] [-c COLLECTIVE]\n"
                                "  COLLECTIVE: allreduce reduce_scatter reduce_scatter_block allgather alltoall\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "ompi_comm_coll_preference", "^loom");
    MPI_Comm plain;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &plain);
    MPI_Info_free(&info);
    MPI_Comm comms[2] = {plain, MPI_COMM_WORLD};

    counts = malloc(sizeof(int) * size);
    size_t cap = (size_t)max_bytes * size + 64;
    char *in = malloc(cap), *out = malloc(cap), *check = malloc(cap);
    for (size_t i = 0; i < cap; ++i) in[i] = (char)((rank + i) % 3);
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(f);
    }
    double *t[2] = {malloc(sizeof(double) * reps), malloc(sizeof(double) * reps)};
    int bad = 0;
    for (int c = 0; c < NCOLL; ++c) {
        if (chosen && !(chosen & (1 << c))) continue;
        if (rank == 0) {
            printf("# %s latency, %d ranks: Open MPI default vs coll/loom, medians of %d alternating repetitions\n",
                   titles[c], size, reps);
            printf("# load average %.2f %.2f %.2f\n", load[0], load[1], load[2]);
            printf("%-10s %14s %14s %10s\n", "# Size", "Default(us)", "Loom(us)", "Loom/Def");
        }
        for (int bytes = (c == REDUCE_SCATTER || c == REDUCE_SCATTER_BLOCK ? 4 : 1); bytes <= max_bytes; bytes *= 2) {
            if (bytes < min_bytes) continue;
            for (int r = 0; r < size; ++r) counts[r] = (int)out_bytes(REDUCE_SCATTER, bytes);
            memset(check, 1, out_bytes(c, bytes));
            memset(out, 0, out_bytes(c, bytes));
            call(c, plain, in, check, bytes);
            call(c, MPI_COMM_WORLD, in, out, bytes);
            if (memcmp(out, check, out_bytes(c, bytes))) bad = 1;
            const int n = bytes <= 8192 ? 500 : bytes <= (1 << 17) ? 100 : 20;
            for (int w = 0; w < n / 10 + 2; ++w) {
                call(c, plain, in, out, bytes);
                call(c, MPI_COMM_WORLD, in, out, bytes);
            }
            for (int r = 0; r < reps; ++r)
                for (int v = 0; v < 2; ++v) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    for (int k = 0; k < n; ++k) call(c, comms[v], in, out, bytes);
                    double dt = (MPI_Wtime() - t0) / n * 1e6, sum = 0;
                    MPI_Reduce(&dt, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                    t[v][r] = sum / size;
                }
            int any = 0;
            MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, plain);
            bad = any;
            if (rank == 0) {
                qsort(t[0], reps, sizeof(double), cmp);
                qsort(t[1], reps, sizeof(double), cmp);
                printf("%-10d %14.2f %14.2f %10.2f%s\n", bytes, t[0][reps / 2], t[1][reps / 2],
                       t[1][reps / 2] / t[0][reps / 2], bad ? "  DATA VALIDATION ERROR" : "");
                fflush(stdout);
            }
        }
        if (rank == 0) printf("\n");
    }
    MPI_Comm_free(&plain);
    free(in), free(out), free(check), free(t[0]), free(t[1]), free(counts);
    MPI_Finalize();
    return bad;
}
