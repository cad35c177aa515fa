/*
 * loom-moe-step: the token exchange of one mixture-of-experts layer, as
 * expert-parallel training runs it. One expert per rank. Per micro-batch
 * each rank routes its tokens to the top-k experts (seeded, biased by
 * expert popularity 1/r^s, at most capacity x the fair share per expert;
 * the rest are dropped), tells every rank how many tokens it sends
 * (MPI_Alltoall of the counts, for every micro-batch at once, as a router
 * running ahead does), dispatches them (MPI_Alltoallv), runs its expert (an
 * SGEMM of the tokens it received by its weights) and sends the results
 * back (MPI_Alltoallv), where each token sums its experts' outputs.
 *
 * In one process and interleaved step by step (medians, load average
 * printed), it times:
 *   compute only        the experts' SGEMMs alone, on the token counts of the step
 *   comm only, default  dispatch and combine of every micro-batch, Open MPI's own modules
 *   comm only, loom     the same through coll/loom
 *   blocking, default   per micro-batch: dispatch, compute, combine, each waited for
 *   blocking, loom
 *   overlapped, default the dispatch of micro-batch b+1 and the combine of b run
 *                       (MPI_Ialltoallv) while b computes; Open MPI's libnbc
 *   overlapped, loom    the same through coll/loom (its progress thread, if on)
 * The Open MPI side is a communicator made with the info key
 * ompi_comm_coll_preference "^loom"; run with coll/loom loaded
 * (--mca coll_loom_priority 100, --mca coll_loom_progress_thread on).
 * With -c every token's result is checked against the rank's own
 * computation (small integers: exact in float).
 */
#include <malloc.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../perf/coll_loom_priority.h"

enum mode {
    COMPUTE_ONLY,
    COMM_DEFAULT,
    COMM_LOOM,
    BLOCKING_DEFAULT,
    BLOCKING_LOOM,
    OVERLAP_DEFAULT,
    OVERLAP_LOOM,
    MODES
};
static const char *mode_name[MODES] = {"compute only",   "comm only, default",  "comm only, loom", "blocking, default",
                                       "blocking, loom", "overlapped, default", "overlapped, loom"};

struct options {
    int tokens, hidden, top_k, micro_batches, steps, warmup, check;
    double capacity, zipf;
    uint64_t seed;
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
            "usage: loom-moe-step [options]\n"
            "  --tokens T          tokens per rank per micro-batch (default 512)\n"
            "  --hidden H          floats per token, and the expert's H x H weights (default 128)\n"
            "  --top-k K           experts per token (default 2)\n"
            "  --capacity CF       an expert takes at most CF x its fair share of a rank's tokens (default 1.25)\n"
            "  --zipf S            routing bias: expert popularity 1/r^S (default 0: even)\n"
            "  --micro-batches M   micro-batches per step (default 4)\n"
            "  --steps S           timed steps per mode (default 10), after --warmup W (default 2)\n"
            "  --seed N            routing seed (default 1)\n"
            "  -c                  check every token's result after every step\n"
            "  --csv FILE          one row per mode\n");
}

static int parse(int argc, char **argv, struct options *o) {
    *o = (struct options){512, 128, 2, 4, 10, 2, 0, 1.25, 0, 1, NULL};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-c")) o->check = 1;
        else if (!v) return 0;
        else if (!strcmp(a, "--tokens")) o->tokens = atoi(v), ++i;
        else if (!strcmp(a, "--hidden")) o->hidden = atoi(v), ++i;
        else if (!strcmp(a, "--top-k")) o->top_k = atoi(v), ++i;
        else if (!strcmp(a, "--capacity")) o->capacity = atof(v), ++i;
        else if (!strcmp(a, "--zipf")) o->zipf = atof(v), ++i;
        else if (!strcmp(a, "--micro-batches")) o->micro_batches = atoi(v), ++i;
        else if (!strcmp(a, "--steps")) o->steps = atoi(v), ++i;
        else if (!strcmp(a, "--warmup")) o->warmup = atoi(v), ++i;
        else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10), ++i;
        else if (!strcmp(a, "--csv")) o->csv = v, ++i;
        else return 0;
    }
    return o->tokens > 0 && o->hidden > 0 && o->top_k >= 1 && o->top_k <= size && o->capacity > 0 && o->zipf >= 0 &&
           o->micro_batches > 0 && o->steps > 0 && o->warmup >= 0;
}

/* splitmix64: the same routing on every rank and every libc. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A token's input and an expert's weights: small integers, so every sum
 * is exact in float and a result can be checked bit for bit. */
static float token_value(int owner, int batch, int token, int i) {
    return (float)((owner * 7 + batch * 5 + token * 3 + i) % 5 - 2);
}
static float weight(int expert, int row, int col) { return (float)((expert + row * 3 + col) % 3 - 1); }

/* One micro-batch's routing on this rank: for each token its experts (-1:
 * dropped over capacity), the tokens sent to each rank in the order packed. */
struct route {
    int *expert;     /* tokens x top_k */
    int *send_count; /* tokens to each rank */
    int *recv_count; /* tokens from each rank (the counts' alltoall) */
};

static void route_batch(const struct options *o, const double *popularity, int batch, struct route *r) {
    const int cap = (int)ceil(o->capacity * o->tokens * o->top_k / size);
    uint64_t state = o->seed * 1000003ULL + (uint64_t)rank * 7919ULL + (uint64_t)batch;
    for (int e = 0; e < size; ++e) r->send_count[e] = 0;
    double *left = malloc(sizeof(double) * size);
    for (int t = 0; t < o->tokens; ++t) {
        memcpy(left, popularity, sizeof(double) * size);
        double mass = 1;
        for (int c = 0; c < o->top_k; ++c) {
            double x = (double)(next_random(&state) >> 11) / 9007199254740992.0 * mass;
            int e = 0;
            while (e < size - 1 && (left[e] == 0 || x >= left[e])) x -= left[e++];
            while (left[e] == 0) e = (e + 1) % size;
            mass -= left[e];
            left[e] = 0;
            const int kept = r->send_count[e] < cap;
            r->expert[t * o->top_k + c] = kept ? e : -1;
            r->send_count[e] += kept;
        }
    }
    free(left);
}

/* The expert: out (n x h) = in (n x h) . W (h x h). */
static void expert_forward(const float *w, const float *in, float *out, int n, int h) {
    memset(out, 0, sizeof(float) * (size_t)n * h);
    for (int t = 0; t < n; ++t)
        for (int k = 0; k < h; ++k) {
            const float x = in[(size_t)t * h + k];
            if (x == 0) continue;
            const float *wr = w + (size_t)k * h;
            float *o = out + (size_t)t * h;
            for (int j = 0; j < h; ++j) o[j] += x * wr[j];
        }
}

struct batch_buffers {
    float *send, *recv, *expert_out, *back; /* tokens packed by destination; received; computed; returned */
    int *sc, *sd, *rc, *rd;                 /* in floats, for the alltoallvs */
    MPI_Request dispatch, combine;
};

static int cmp_double(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
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
    MPI_Comm loom_comm, default_comm;
    dup_loom_and_default(&loom_comm, &default_comm);
    int priority = 0;
    read_coll_loom_priority(&priority);

    const int h = o.hidden, k = o.top_k, mb = o.micro_batches;
    /* Expert popularity, the experts' order shuffled by the seed. */
    double *popularity = malloc(sizeof(double) * size), total = 0;
    int *order = malloc(sizeof(int) * size);
    for (int e = 0; e < size; ++e) order[e] = e;
    uint64_t state = o.seed;
    for (int e = size - 1; e > 0; --e) {
        const int j = (int)(next_random(&state) % (uint64_t)(e + 1)), x = order[e];
        order[e] = order[j];
        order[j] = x;
    }
    for (int r = 0; r < size; ++r) total += popularity[order[r]] = 1.0 / pow(r + 1, o.zipf);
    for (int e = 0; e < size; ++e) popularity[e] /= total;

    float *w = malloc(sizeof(float) * (size_t)h * h);
    for (int r = 0; r < h; ++r)
        for (int c = 0; c < h; ++c) w[(size_t)r * h + c] = weight(rank, r, c);
    /* Routing for every micro-batch, then every rank's counts at once. */
    struct route *routes = calloc((size_t)mb, sizeof(struct route));
    struct batch_buffers *bufs = calloc((size_t)mb, sizeof(struct batch_buffers));
    int *all_send = malloc(sizeof(int) * (size_t)mb * size), *all_recv = malloc(sizeof(int) * (size_t)mb * size);
    const size_t token_slots = (size_t)o.tokens * k;
    size_t most_received = 0;
    for (int b = 0; b < mb; ++b) {
        routes[b].expert = malloc(sizeof(int) * token_slots);
        routes[b].send_count = all_send + (size_t)b * size;
        route_batch(&o, popularity, b, &routes[b]);
    }
    /* all_send is batch-major; the alltoall wants, per peer, its mb counts together. */
    int *by_peer = malloc(sizeof(int) * (size_t)mb * size), *from_peer = malloc(sizeof(int) * (size_t)mb * size);
    for (int b = 0; b < mb; ++b)
        for (int e = 0; e < size; ++e) by_peer[e * mb + b] = all_send[b * size + e];
    MPI_Alltoall(by_peer, mb, MPI_INT, from_peer, mb, MPI_INT, MPI_COMM_WORLD);
    for (int b = 0; b < mb; ++b) {
        struct batch_buffers *q = &bufs[b];
        routes[b].recv_count = all_recv + (size_t)b * size;
        q->sc = malloc(sizeof(int) * 4 * size);
        q->sd = q->sc + size, q->rc = q->sd + size, q->rd = q->rc + size;
        int sent = 0, received = 0;
        for (int e = 0; e < size; ++e) {
            routes[b].recv_count[e] = from_peer[e * mb + b];
            q->sc[e] = routes[b].send_count[e] * h;
            q->sd[e] = sent;
            q->rc[e] = routes[b].recv_count[e] * h;
            q->rd[e] = received;
            sent += q->sc[e];
            received += q->rc[e];
        }
        if ((size_t)received > most_received) most_received = (size_t)received;
        q->send = malloc(sizeof(float) * (sent + 1));
        q->back = malloc(sizeof(float) * (sent + 1));
        q->recv = malloc(sizeof(float) * (received + 1));
        q->expert_out = malloc(sizeof(float) * (received + 1));
        /* Pack: each destination's tokens in token order. */
        int *at = calloc((size_t)size, sizeof(int));
        for (int t = 0; t < o.tokens; ++t)
            for (int c = 0; c < k; ++c) {
                const int e = routes[b].expert[t * k + c];
                if (e < 0) continue;
                float *dst = q->send + q->sd[e] + (size_t)at[e]++ * h;
                for (int i = 0; i < h; ++i) dst[i] = token_value(rank, b, t, i);
            }
        free(at);
    }
    float *y = malloc(sizeof(float) * (size_t)mb * o.tokens * h);

    double *times = malloc(sizeof(double) * MODES * (size_t)o.steps);
    long wrong = 0, dropped = 0;
    for (int b = 0; b < mb; ++b)
        for (size_t s = 0; s < token_slots; ++s) dropped += routes[b].expert[s] < 0;
    for (int step = 0; step < o.warmup + o.steps; ++step)
        for (int m = 0; m < MODES; ++m) {
            MPI_Comm comm = m == COMM_LOOM || m == BLOCKING_LOOM || m == OVERLAP_LOOM ? loom_comm : default_comm;
            const int communicates = m != COMPUTE_ONLY, computes = m != COMM_DEFAULT && m != COMM_LOOM;
            const int overlapped = m == OVERLAP_DEFAULT || m == OVERLAP_LOOM;
            if (o.check) /* results must come from this step's calls */
                for (int b = 0; b < mb; ++b)
                    memset(bufs[b].back, 0, sizeof(float) * (size_t)(bufs[b].sd[size - 1] + bufs[b].sc[size - 1]));
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now_ms();
            if (overlapped)
                MPI_Ialltoallv(bufs[0].send, bufs[0].sc, bufs[0].sd, MPI_FLOAT, bufs[0].recv, bufs[0].rc, bufs[0].rd,
                               MPI_FLOAT, comm, &bufs[0].dispatch);
            for (int b = 0; b < mb; ++b) {
                struct batch_buffers *q = &bufs[b];
                const int n = q->rd[size - 1] / h + q->rc[size - 1] / h;
                if (overlapped) {
                    MPI_Wait(&q->dispatch, MPI_STATUS_IGNORE);
                    if (b + 1 < mb)
                        MPI_Ialltoallv(bufs[b + 1].send, bufs[b + 1].sc, bufs[b + 1].sd, MPI_FLOAT, bufs[b + 1].recv,
                                       bufs[b + 1].rc, bufs[b + 1].rd, MPI_FLOAT, comm, &bufs[b + 1].dispatch);
                } else if (communicates) {
                    MPI_Alltoallv(q->send, q->sc, q->sd, MPI_FLOAT, q->recv, q->rc, q->rd, MPI_FLOAT, comm);
                }
                if (computes) expert_forward(w, q->recv, q->expert_out, n, h);
                if (overlapped)
                    MPI_Ialltoallv(q->expert_out, q->rc, q->rd, MPI_FLOAT, q->back, q->sc, q->sd, MPI_FLOAT, comm,
                                   &q->combine);
                else if (communicates)
                    MPI_Alltoallv(q->expert_out, q->rc, q->rd, MPI_FLOAT, q->back, q->sc, q->sd, MPI_FLOAT, comm);
            }
            if (overlapped)
                for (int b = 0; b < mb; ++b) MPI_Wait(&bufs[b].combine, MPI_STATUS_IGNORE);
            const double elapsed = now_ms() - t0;
            if (step >= o.warmup) times[m * o.steps + (step - o.warmup)] = elapsed;
            if (!(o.check && communicates && computes)) continue;
            /* Combine: each token sums its experts' outputs, then is compared
             * with this rank's own computation of the same experts. */
            for (int b = 0; b < mb; ++b) {
                struct batch_buffers *q = &bufs[b];
                int *at = calloc((size_t)size, sizeof(int));
                float *mine = y + (size_t)b * o.tokens * h;
                memset(mine, 0, sizeof(float) * (size_t)o.tokens * h);
                for (int t = 0; t < o.tokens; ++t)
                    for (int c = 0; c < k; ++c) {
                        const int e = routes[b].expert[t * k + c];
                        if (e < 0) continue;
                        const float *got = q->back + q->sd[e] + (size_t)at[e]++ * h;
                        for (int i = 0; i < h; ++i) mine[(size_t)t * h + i] += got[i];
                    }
                free(at);
                for (int t = 0; t < o.tokens; ++t)
                    for (int j = 0; j < h; ++j) {
                        float want = 0;
                        for (int c = 0; c < k; ++c) {
                            const int e = routes[b].expert[t * k + c];
                            if (e < 0) continue;
                            float dot = 0;
                            for (int i = 0; i < h; ++i) dot += token_value(rank, b, t, i) * weight(e, i, j);
                            want += dot;
                        }
                        if (mine[(size_t)t * h + j] != want) {
                            ++wrong;
                            break;
                        }
                    }
            }
        }

    double *slowest = malloc(sizeof(double) * MODES * (size_t)o.steps);
    MPI_Reduce(times, slowest, MODES * o.steps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    long all_wrong = 0, all_dropped = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&dropped, &all_dropped, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    unsigned long long received_max = most_received, received_all = 0;
    MPI_Reduce(&received_max, &received_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
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
        const double mib = (double)o.tokens * k * h * sizeof(float) / (1 << 20);
        printf(
            "# loom-moe-step: %d ranks (one expert each), %d micro-batches of %d tokens x %d floats per rank, "
            "top-%d, capacity factor %.2f, popularity 1/r^%.2f, seed %llu: %.2f MiB dispatched per rank and "
            "micro-batch, the busiest expert receives %.2f MiB, %ld of %ld token slots dropped; %d steps after "
            "%d warm-up, interleaved; load average %.2f\n",
            size, mb, o.tokens, h, k, o.capacity, o.zipf, (unsigned long long)o.seed, mib,
            received_all * 4.0 / (1 << 20), all_dropped, (long)mb * o.tokens * k * size, o.steps, o.warmup, load);
        if (priority <= 0)
            printf("# coll/loom is not loaded or not on (coll_loom_priority %d): the loom rows are Open MPI's too\n",
                   priority);
        printf("# %-22s %12s %12s %12s\n", "mode", "step_ms", "vs_bound", "speedup");
        FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
        if (csv) fprintf(csv, "mode,step_ms,bound_ms,vs_bound\n");
        for (int m = 0; m < MODES; ++m) {
            const int loom = m == COMM_LOOM || m == BLOCKING_LOOM || m == OVERLAP_LOOM;
            const double comm = loom ? median[COMM_LOOM] : median[COMM_DEFAULT];
            const double bound = m == COMPUTE_ONLY ? median[COMPUTE_ONLY]
                                 : m <= COMM_LOOM  ? comm
                                                   : fmax(median[COMPUTE_ONLY], comm);
            printf("  %-22s %12.2f %12.2f %12.2f\n", mode_name[m], median[m], median[m] / bound,
                   median[BLOCKING_DEFAULT] / median[m]);
            if (csv) fprintf(csv, "\"%s\",%.4f,%.4f,%.4f\n", mode_name[m], median[m], bound, median[m] / bound);
        }
        if (csv) fclose(csv);
        printf(
            "# vs_bound: step time / max(compute only, comm only of the same library); speedup: blocking, "
            "default / this mode\n");
        if (o.check) printf("# check: %ld wrong tokens\n", all_wrong);
    }
    for (int b = 0; b < mb; ++b) {
        free(routes[b].expert);
        free(bufs[b].send), free(bufs[b].recv), free(bufs[b].expert_out), free(bufs[b].back), free(bufs[b].sc);
    }
    free(routes), free(bufs), free(all_send), free(all_recv), free(by_peer), free(from_peer), free(y), free(w);
    free(popularity), free(order), free(times), free(slowest);
    MPI_Comm_free(&loom_comm);
    MPI_Comm_free(&default_comm);
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
