/*
 * loom-train-step: one data-parallel training step, as PyTorch DDP runs it.
 * Backward runs layer by layer from the last (a real kernel: SGEMMs,
 * calibrated to a compute time per layer); each layer's gradients join the
 * current bucket, and a full bucket is all-reduced at once (in place,
 * MPI_SUM of floats); the optimizer step (SGD) waits for every bucket.
 *
 * In one process and interleaved step by step (medians, load average
 * printed), it times six things:
 *   compute only           the backward pass and the optimizer, no communication
 *   comm only, default     the buckets' blocking allreduces on Open MPI's own modules
 *   comm only, loom        the same through coll/loom
 *   blocking, default      backward, then a blocking allreduce per bucket (Open MPI)
 *   nonblocking, libnbc    an MPI_Iallreduce per bucket as soon as it is full (Open MPI's libnbc)
 *   nonblocking, loom      the same through coll/loom (its progress thread, if on)
 * The Open MPI side is a communicator made with the info key
 * ompi_comm_coll_preference "^loom"; run with coll/loom loaded
 * (--mca coll_loom_priority 100, --mca coll_loom_progress_thread on).
 * Without coll/loom both sides are Open MPI's (it says so).
 */
#include <malloc.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../perf/coll_loom_priority.h"

enum mode { COMPUTE_ONLY, COMM_DEFAULT, COMM_LOOM, BLOCKING_DEFAULT, NONBLOCKING_DEFAULT, NONBLOCKING_LOOM, MODES };
static const char *mode_name[MODES] = {"compute only",      "comm only, default",  "comm only, loom",
                                       "blocking, default", "nonblocking, libnbc", "nonblocking, loom"};

struct options {
    int layers;
    size_t layer_floats;
    size_t bucket_bytes;
    double compute_ms; /* per layer */
    int gemm;          /* matrix dimension of the compute kernel */
    int steps, warmup;
    int check;
    const char *csv;
};

static int rank, size;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void usage(void) {
    fprintf(stderr,
            "usage: loom-train-step [options]\n"
            "  --layers N          layers (default 16)\n"
            "  --layer-mib M       gradient MiB per layer (default 4)\n"
            "  --bucket-mib M      bucket size, as DDP's bucket_cap_mb (default 25)\n"
            "  --compute-ms T      backward compute per layer, in milliseconds (default 2)\n"
            "  --gemm N            SGEMM dimension of the compute kernel (default 96)\n"
            "  --steps S           timed steps per mode (default 20), after --warmup W (default 3)\n"
            "  -c                  check every gradient after every step\n"
            "  --csv FILE          one row per mode (examples/plot-train-step.sh FILE plots it)\n");
}

static int parse(int argc, char **argv, struct options *o) {
    o->layers = 16;
    o->layer_floats = (4u << 20) / sizeof(float);
    o->bucket_bytes = 25u << 20;
    o->compute_ms = 2;
    o->gemm = 96;
    o->steps = 20;
    o->warmup = 3;
    o->check = 0;
    o->csv = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-c")) o->check = 1;
        else if (!v) return 0;
        else if (!strcmp(a, "--layers")) o->layers = atoi(v), ++i;
        else if (!strcmp(a, "--layer-mib")) o->layer_floats = (size_t)(atof(v) * (1 << 20)) / sizeof(float), ++i;
        else if (!strcmp(a, "--bucket-mib")) o->bucket_bytes = (size_t)(atof(v) * (1 << 20)), ++i;
        else if (!strcmp(a, "--compute-ms")) o->compute_ms = atof(v), ++i;
        else if (!strcmp(a, "--gemm")) o->gemm = atoi(v), ++i;
        else if (!strcmp(a, "--steps")) o->steps = atoi(v), ++i;
        else if (!strcmp(a, "--warmup")) o->warmup = atoi(v), ++i;
        else if (!strcmp(a, "--csv")) o->csv = v, ++i;
        else return 0;
    }
    return o->layers > 0 && o->layer_floats > 0 && o->bucket_bytes > 0 && o->compute_ms >= 0 && o->gemm > 0 &&
           o->steps > 0 && o->warmup >= 0;
}

/* The compute kernel: C += A B, n x n floats. */
static float *ga, *gb, *gc;
static void sgemm(int n) {
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < n; ++k) {
            const float aik = ga[i * n + k];
            for (int j = 0; j < n; ++j) gc[i * n + j] += aik * gb[k * n + j];
        }
}

/* SGEMMs per layer for the asked compute time, timed on rank 0 and shared,
 * so that every rank computes the same. */
static int calibrate(const struct options *o) {
    int reps = 0;
    if (rank == 0) {
        sgemm(o->gemm);
        int n = 1;
        double t = 0;
        for (;;) {
            const double t0 = now_ms();
            for (int i = 0; i < n; ++i) sgemm(o->gemm);
            t = now_ms() - t0;
            if (t > 50 || n > (1 << 20)) break;
            n *= 2;
        }
        reps = (int)lround(o->compute_ms / (t / n));
    }
    MPI_Bcast(&reps, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return reps;
}

struct bucket {
    size_t offset, count; /* floats of the gradient buffer */
};

/* Buckets in backward order: the gradient buffer holds the last layer
 * first, so each bucket is one contiguous slice. */
static int make_buckets(const struct options *o, struct bucket *b) {
    int n = 0;
    size_t begin = 0, bytes = 0;
    for (int l = 0; l < o->layers; ++l) {
        bytes += o->layer_floats * sizeof(float);
        if (bytes >= o->bucket_bytes || l == o->layers - 1) {
            const size_t end = (size_t)(l + 1) * o->layer_floats;
            b[n].offset = begin;
            b[n].count = end - begin;
            ++n;
            begin = end;
            bytes = 0;
        }
    }
    return n;
}

static int cmp_double(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
    /* Memory stays with the process once freed, as a framework's caching
     * allocator keeps it: otherwise every step pays a page fault per 4 KiB
     * of the libraries' temporary buffers (glibc hands large blocks back
     * to the system), and which side pays them depends on the heap's layout. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct options o;
    if (!parse(argc, argv, &o)) {
        if (rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    /* Open MPI's own modules, and a communicator coll/loom takes if loaded. */
    MPI_Comm loom_comm, default_comm;
    dup_loom_and_default(&loom_comm, &default_comm);
    int priority = 0;
    read_coll_loom_priority(&priority);

    const size_t total = (size_t)o.layers * o.layer_floats;
    float *grad = malloc(total * sizeof(float)), *weights = calloc(total, sizeof(float));
    struct bucket *buckets = malloc(sizeof(struct bucket) * (size_t)o.layers);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)o.layers);
    ga = malloc(sizeof(float) * o.gemm * o.gemm);
    gb = malloc(sizeof(float) * o.gemm * o.gemm);
    gc = calloc((size_t)o.gemm * o.gemm, sizeof(float));
    if (!grad || !weights || !buckets || !reqs || !ga || !gb || !gc) {
        fprintf(stderr, "loom-train-step: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < o.gemm * o.gemm; ++i) ga[i] = gb[i] = 1.0f / (float)(1 + i % 7);
    const int nb = make_buckets(&o, buckets);
    const int reps = calibrate(&o);

    double *times = malloc(sizeof(double) * MODES * (size_t)o.steps);
    long wrong = 0;
    for (int step = 0; step < o.warmup + o.steps; ++step)
        for (int m = 0; m < MODES; ++m) {
            MPI_Comm comm = m == COMM_LOOM || m == NONBLOCKING_LOOM ? loom_comm : default_comm;
            const int communicates = m != COMPUTE_ONLY, computes = m != COMM_DEFAULT && m != COMM_LOOM;
            const int nonblocking = m == NONBLOCKING_DEFAULT || m == NONBLOCKING_LOOM;
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now_ms();
            int next_bucket = 0;
            for (int l = 0; l < o.layers; ++l) {
                /* Backward of the l-th layer from the end: compute, then its gradients. */
                float *g = grad + (size_t)l * o.layer_floats;
                if (computes)
                    for (int r = 0; r < reps; ++r) sgemm(o.gemm);
                for (size_t i = 0; i < o.layer_floats; ++i) g[i] = (float)(rank + 1) * (float)((l + i) % 3 + 1);
                const struct bucket *b = &buckets[next_bucket];
                if (next_bucket < nb && (size_t)(l + 1) * o.layer_floats == b->offset + b->count) {
                    if (communicates && nonblocking)
                        MPI_Iallreduce(MPI_IN_PLACE, grad + b->offset, (int)b->count, MPI_FLOAT, MPI_SUM, comm,
                                       &reqs[next_bucket]);
                    ++next_bucket;
                }
            }
            if (communicates && !nonblocking)
                for (int k = 0; k < nb; ++k)
                    MPI_Allreduce(MPI_IN_PLACE, grad + buckets[k].offset, (int)buckets[k].count, MPI_FLOAT, MPI_SUM,
                                  comm);
            if (communicates && nonblocking) MPI_Waitall(nb, reqs, MPI_STATUSES_IGNORE);
            if (computes) /* the optimizer step */
                for (size_t i = 0; i < total; ++i) weights[i] -= 1e-6f * grad[i];
            const double elapsed = now_ms() - t0;
            if (step >= o.warmup) times[m * o.steps + (step - o.warmup)] = elapsed;
            if (o.check && communicates) {
                const float ranks = (float)size * (float)(size + 1) / 2;
                for (int l = 0; l < o.layers; ++l)
                    for (size_t i = 0; i < o.layer_floats; ++i)
                        if (grad[(size_t)l * o.layer_floats + i] != ranks * (float)((l + i) % 3 + 1)) ++wrong;
            }
        }

    /* The slowest rank's time per step, then the median over steps. */
    double *slowest = malloc(sizeof(double) * MODES * (size_t)o.steps);
    MPI_Reduce(times, slowest, MODES * o.steps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double median[MODES];
        for (int m = 0; m < MODES; ++m) {
            qsort(slowest + m * o.steps, (size_t)o.steps, sizeof(double), cmp_double);
            median[m] = slowest[m * o.steps + o.steps / 2];
        }
        double load = -1;
        FILE *f = fopen("/proc/loadavg", "r");
        if (f) {
            if (fscanf(f, "%lf", &load) != 1) load = -1;
            fclose(f);
        }
        printf("# loom-train-step: %d ranks, %d layers x %.2f MiB of gradients (%.1f MiB), %d buckets of up to "
               "%.1f MiB, backward compute %.2f ms per layer (%d SGEMMs of %d), %d steps after %d warm-up, "
               "interleaved; load average %.2f\n",
               size, o.layers, o.layer_floats * 4.0 / (1 << 20), total * 4.0 / (1 << 20), nb,
               o.bucket_bytes / (double)(1 << 20), o.compute_ms, reps, o.gemm, o.steps, o.warmup, load);
        if (priority <= 0)
            printf("# coll/loom is not loaded or not on (coll_loom_priority %d): the loom rows are Open MPI's too\n",
                   priority);
        const double compute = median[COMPUTE_ONLY];
        printf("# %-22s %12s %12s %12s\n", "mode", "step_ms", "vs_bound", "speedup");
        FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
        if (csv) fprintf(csv, "mode,step_ms,bound_ms,vs_bound\n");
        for (int m = 0; m < MODES; ++m) {
            /* The bound of a step: max(compute, its library's communication). */
            const double comm = m == COMM_LOOM || m == NONBLOCKING_LOOM ? median[COMM_LOOM] : median[COMM_DEFAULT];
            const double bound = m == COMPUTE_ONLY ? compute : m <= COMM_LOOM ? comm : fmax(compute, comm);
            printf("  %-22s %12.2f %12.2f %12.2f\n", mode_name[m], median[m], median[m] / bound,
                   median[BLOCKING_DEFAULT] / median[m]);
            if (csv) fprintf(csv, "\"%s\",%.4f,%.4f,%.4f\n", mode_name[m], median[m], bound, median[m] / bound);
        }
        if (csv) fclose(csv);
        printf("# vs_bound: step time / max(compute only, comm only of the same library); speedup: blocking, "
               "default / this mode\n");
        if (o.check) printf("# check: %ld wrong gradients\n", all_wrong);
    }
    MPI_Comm_free(&loom_comm);
    MPI_Comm_free(&default_comm);
    free(times);
    free(slowest);
    free(grad);
    free(weights);
    free(buckets);
    free(reqs);
    free(ga);
    free(gb);
    free(gc);
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
