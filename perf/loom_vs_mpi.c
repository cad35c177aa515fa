/* The main job: Loom (C API) against the MPI library's own collectives, in
 * one run, interleaved (MPI, Loom, MPI, Loom ... per size), medians of the
 * repetitions, OSU-style table. Every size is validated: Loom's result must
 * equal MPI's (exit 1 and "DATA VALIDATION ERROR" otherwise).
 *
 * usage: mpirun -np 4 loom_vs_mpi [-m MAX_BYTES] [-i ITERS] [-r REPS] [-c COLLECTIVE]
 *   COLLECTIVE: allreduce, reduce_scatter, allgather, alltoall or all (default)
 * Sizes are per-rank message bytes as OSU counts them, MPI_CHAR (reductions:
 * MPI_INT8_T SUM, which Loom and MPI both define; values stay small so Open
 * MPI's saturating 8-bit SUM and Loom's wrapping one agree). */
#include <loom.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, ALLTOALL, NCOLL };
static const char *names[] = {"allreduce", "reduce_scatter", "allgather", "alltoall"};
static const char *titles[] = {"Allreduce", "Reduce_scatter", "Allgather", "All-to-All Personalized Exchange"};

static int rank, size;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One call of collective `c` with `bytes` per rank; loom != 0 uses Loom. */
static int call(int c, int use_loom, loom_comm_t lc, char *in, char *out, int bytes) {
    const int block = bytes / size > 0 ? bytes / size : 1;
    switch (c) {
        case ALLREDUCE:
            return use_loom ? loom_allreduce(in, out, bytes, LOOM_INT8, LOOM_SUM, lc)
                            : MPI_Allreduce(in, out, bytes, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
        case REDUCE_SCATTER: /* OSU: `bytes` is the whole vector, block per rank */
            return use_loom ? loom_reduce_scatter_block(in, out, block, LOOM_INT8, LOOM_SUM, lc)
                            : MPI_Reduce_scatter_block(in, out, block, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
        case ALLGATHER:
            return use_loom ? loom_allgather(in, out, bytes, LOOM_CHAR, lc)
                            : MPI_Allgather(in, bytes, MPI_CHAR, out, bytes, MPI_CHAR, MPI_COMM_WORLD);
        default:
            return use_loom ? loom_alltoall(in, out, bytes, LOOM_CHAR, lc)
                            : MPI_Alltoall(in, bytes, MPI_CHAR, out, bytes, MPI_CHAR, MPI_COMM_WORLD);
    }
}

static size_t out_bytes(int c, int bytes) {
    const int block = bytes / size > 0 ? bytes / size : 1;
    return c == REDUCE_SCATTER ? (size_t)block : c == ALLREDUCE ? (size_t)bytes : (size_t)bytes * size;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int max_bytes = 1 << 20, iters = 0, reps = 7, only = -1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) max_bytes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            ++i;
            for (int c = 0; c < NCOLL; ++c)
                if (!strcmp(argv[i], names[c])) only = c;
            if (only < 0 && strcmp(argv[i], "all")) {
                if (rank == 0) fprintf(stderr, "loom_vs_mpi: unknown collective '%s'\n", argv[i]);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else {
            if (rank == 0)
                fprintf(stderr, "usage: loom_vs_mpi [-m MAX_BYTES] [-i ITERS] [-r REPS] [-c COLLECTIVE|all]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (max_bytes < 1 || reps < 1 || iters < 0) {
        if (rank == 0) fprintf(stderr, "loom_vs_mpi: -m, -r must be positive and -i non-negative\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    loom_comm_t lc;
    if (loom_comm_create(MPI_COMM_WORLD, &lc) != LOOM_SUCCESS) {
        fprintf(stderr, "loom_comm_create: %s\n", loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t cap = (size_t)max_bytes * size + 64;
    char *in = malloc(cap), *out = malloc(cap), *check = malloc(cap);
    for (size_t i = 0; i < cap; ++i) in[i] = (char)((rank + i) % 3);
    double load[3] = {0, 0, 0};
    if (rank == 0) {
        FILE *f = fopen("/proc/loadavg", "r");
        if (f) {
            if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
            fclose(f);
        }
    }
    int bad = 0;
    double *t_mpi = malloc(sizeof(double) * reps), *t_loom = malloc(sizeof(double) * reps);
    for (int c = 0; c < NCOLL; ++c) {
        if (only >= 0 && c != only) continue;
        if (rank == 0) {
            printf("# OSU-style %s Latency Test: Loom vs MPI's own (%d ranks)\n", titles[c], size);
            printf("# Datatype: %s. Medians of %d interleaved repetitions; load average %.2f %.2f %.2f\n",
                   c == ALLREDUCE || c == REDUCE_SCATTER ? "MPI_INT8_T (SUM)" : "MPI_CHAR", reps, load[0], load[1],
                   load[2]);
            printf("%-10s %16s %16s %10s  %s\n", "# Size", "MPI Avg(us)", "Loom Avg(us)", "Loom/MPI", "Loom algorithm");
        }
        for (int bytes = (c == REDUCE_SCATTER ? 4 : 1); bytes <= max_bytes; bytes *= 2) {
            /* Validation: same input, Loom and MPI must agree. */
            memset(out, 0, out_bytes(c, bytes));
            memset(check, 1, out_bytes(c, bytes));
            call(c, 0, lc, in, check, bytes);
            if (call(c, 1, lc, in, out, bytes) != LOOM_SUCCESS) {
                fprintf(stderr, "[rank %d] loom %s: %s\n", rank, names[c], loom_last_error());
                bad = 1;
            }
            if (memcmp(out, check, out_bytes(c, bytes))) bad = 1;
            const int n = iters ? iters : bytes <= 8192 ? 400 : bytes <= (1 << 17) ? 100 : 20;
            for (int w = 0; w < n / 10 + 2; ++w) { /* warm-up: plan caches, PML connections */
                call(c, 0, lc, in, out, bytes);
                call(c, 1, lc, in, out, bytes);
            }
            for (int r = 0; r < reps; ++r) {
                for (int v = 0; v < 2; ++v) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    double t0 = MPI_Wtime();
                    for (int k = 0; k < n; ++k) call(c, v, lc, in, out, bytes);
                    double dt = (MPI_Wtime() - t0) / n * 1e6, avg = 0;
                    MPI_Reduce(&dt, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
                    (v ? t_loom : t_mpi)[r] = avg / size;
                }
            }
            int any_bad = 0;
            MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            bad = any_bad;
            if (rank == 0) {
                qsort(t_mpi, reps, sizeof(double), cmp_double);
                qsort(t_loom, reps, sizeof(double), cmp_double);
                const char *algo = NULL;
                loom_comm_last_algorithm(lc, c == REDUCE_SCATTER ? "reduce_scatter_block" : names[c], &algo);
                printf("%-10d %16.2f %16.2f %10.2f  %s%s\n", bytes, t_mpi[reps / 2], t_loom[reps / 2],
                       t_loom[reps / 2] / t_mpi[reps / 2], algo ? algo : "?", bad ? "  DATA VALIDATION ERROR" : "");
                fflush(stdout);
            }
        }
        if (rank == 0) printf("\n");
    }
    loom_comm_free(&lc);
    free(in), free(out), free(check), free(t_mpi), free(t_loom);
    MPI_Finalize();
    return bad ? 1 : 0;
}
