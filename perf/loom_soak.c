/* loom-soak: a long mixed run of libloom's collectives, every result checked.
 *
 * Every rank draws the same pseudo-random sequence from one seed (rank 0's,
 * broadcast), so all ranks make the same choices: which communicator
 * (MPI_COMM_WORLD duplicated, split in halves, reversed, and now and then one
 * freed and made again), which collective, blocking, nonblocking (up to
 * three outstanding, waited in any order) or persistent (started twice),
 * count, datatype, op, in place or not, an algorithm forced or the
 * selector's choice, and the progress thread on or off per communicator.
 * Inputs are small integers each rank can compute for every other rank, so
 * every output element is checked exactly. Resident memory is sampled after
 * the warm-up and at the end.
 *
 * Usage: loom-soak [-n CALLS] [-t SECONDS] [-s SEED] [-m MAX_COUNT] [-w WARMUP]
 *   -n  calls per rank (default 2000); -t stops earlier after SECONDS
 *   -s  the seed to replay (printed by every run)
 *   -m  the largest count drawn (default 65536 elements)
 *   -w  calls before resident memory is first sampled (default a tenth)
 * Prints "loom-soak np=N seed=S: C calls, F failures, ..." and exits 1 on
 * any failure. */
#include <loom.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int wrank, wsize, failures;

#define FAIL(...)                                                   \
    do {                                                            \
        if (failures++ < 10) {                                      \
            fprintf(stderr, "loom-soak[%d] call %llu: ", wrank, (unsigned long long)call_no); \
            fprintf(stderr, __VA_ARGS__);                           \
            fprintf(stderr, "\n");                                  \
        }                                                           \
    } while (0)

static unsigned long long call_no;
static long long elements_checked;

/* splitmix64: one stream every rank steps alike. */
static uint64_t rng_state;
static uint64_t next_u64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* Always one step, whatever n: ranks whose communicators differ in size
 * (the halves) must stay in step. */
static uint64_t below(uint64_t n) {
    const uint64_t v = next_u64();
    return n ? v % n : 0;
}

/* A value that depends on (call, rank, element) only. */
static uint64_t mix(uint64_t call, int rank, int64_t i) {
    uint64_t z = call * 0x9e3779b97f4a7c15ULL ^ (uint64_t)rank * 0xc2b2ae3d27d4eb4fULL ^ (uint64_t)i * 0x165667b19e3779f9ULL;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return z ^ (z >> 29);
}

static const loom_datatype_t types[] = {LOOM_INT8, LOOM_UINT16, LOOM_INT32, LOOM_UINT32, LOOM_INT64,
                                        LOOM_UINT64, LOOM_FLOAT, LOOM_DOUBLE};
static const char *type_names[] = {"int8", "uint16", "int32", "uint32", "int64", "uint64", "float", "double"};
enum { NTYPES = sizeof(types) / sizeof(types[0]) };
static const loom_op_t ops[] = {LOOM_SUM, LOOM_PROD, LOOM_MIN, LOOM_MAX, LOOM_BAND,
                                LOOM_BOR, LOOM_BXOR, LOOM_LAND, LOOM_LOR};
static const char *op_names[] = {"sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor"};
enum { NOPS = sizeof(ops) / sizeof(ops[0]) };
static const char *collectives[] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall"};
enum { NCOLL = 5 };

/* Rank r's input element i of a call under op o: small enough that every
 * result is exact in every type (sums of at most 17 values of 0..3; products
 * with at most three factors of 2). */
static int64_t input_value(uint64_t call, int r, int64_t i, int o) {
    const uint64_t h = mix(call, r, i);
    switch (o) {
        case 1: return r < 3 && (h & 1) ? 2 : 1;            /* prod */
        case 2: case 3: return (int64_t)(h % 100);           /* min, max */
        case 4: case 5: case 6: return (int64_t)(h % 128);   /* bitwise */
        case 7: case 8: return (int64_t)(h % 3 == 0 ? 0 : 1); /* logical */
        default: return (int64_t)(h % 4);                    /* sum; and the data of allgather, alltoall */
    }
}

static int64_t combine(int o, int64_t a, int64_t b) {
    switch (o) {
        case 1: return a * b;
        case 2: return a < b ? a : b;
        case 3: return a > b ? a : b;
        case 4: return a & b;
        case 5: return a | b;
        case 6: return a ^ b;
        case 7: return (a != 0) && (b != 0);
        case 8: return (a != 0) || (b != 0);
        default: return a + b;
    }
}

static void put(int t, void *buf, int64_t i, int64_t v) {
    switch (t) {
        case 0: ((int8_t *)buf)[i] = (int8_t)v; break;
        case 1: ((uint16_t *)buf)[i] = (uint16_t)v; break;
        case 2: ((int32_t *)buf)[i] = (int32_t)v; break;
        case 3: ((uint32_t *)buf)[i] = (uint32_t)v; break;
        case 4: ((int64_t *)buf)[i] = v; break;
        case 5: ((uint64_t *)buf)[i] = (uint64_t)v; break;
        case 6: ((float *)buf)[i] = (float)v; break;
        default: ((double *)buf)[i] = (double)v; break;
    }
}

static int64_t get(int t, const void *buf, int64_t i) {
    switch (t) {
        case 0: return ((const int8_t *)buf)[i];
        case 1: return ((const uint16_t *)buf)[i];
        case 2: return ((const int32_t *)buf)[i];
        case 3: return ((const uint32_t *)buf)[i];
        case 4: return ((const int64_t *)buf)[i];
        case 5: return (int64_t)((const uint64_t *)buf)[i];
        case 6: return (int64_t)((const float *)buf)[i];
        default: return (int64_t)((const double *)buf)[i];
    }
}

/* A communicator of the pool: how it was made, its rank order in world terms. */
enum { KIND_DUP, KIND_HALVES, KIND_REVERSED, NKINDS };
static const char *kind_names[] = {"dup", "halves", "reversed"};
struct slot {
    MPI_Comm mpi;
    loom_comm_t comm;
    int kind, rank, size;
    int *world_of; /* world rank of each rank of the communicator */
    int thread;
};

static void make_slot(struct slot *s, int kind, int thread) {
    s->kind = kind;
    s->thread = thread;
    if (kind == KIND_DUP) MPI_Comm_dup(MPI_COMM_WORLD, &s->mpi);
    else if (kind == KIND_HALVES) MPI_Comm_split(MPI_COMM_WORLD, wrank < (wsize + 1) / 2, wrank, &s->mpi);
    else MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &s->mpi);
    MPI_Comm_rank(s->mpi, &s->rank);
    MPI_Comm_size(s->mpi, &s->size);
    s->world_of = malloc(sizeof(int) * (size_t)s->size);
    MPI_Allgather(&wrank, 1, MPI_INT, s->world_of, 1, MPI_INT, s->mpi);
    int rc = loom_comm_create(s->mpi, &s->comm);
    if (rc != LOOM_SUCCESS) {
        fprintf(stderr, "loom-soak[%d]: loom_comm_create: %s\n", wrank, loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    loom_comm_set_param(s->comm, "progress_thread", thread ? "on" : "off");
}

static void free_slot(struct slot *s) {
    loom_comm_free(&s->comm);
    MPI_Comm_free(&s->mpi);
    free(s->world_of);
}

/* One call as drawn: its buffers and how to check them. */
struct call {
    uint64_t id;
    struct slot *s;
    int coll, type, op, in_place, mode; /* mode: 0 blocking, 1 nonblocking, 2 persistent */
    int64_t count;                      /* per rank (allgather, alltoall block, reduce_scatter_block) */
    int64_t *counts;                    /* reduce_scatter's, per rank */
    size_t es;
    void *send, *recv;
    loom_request_t req;
    char algorithm[64];
};

static int64_t total_in(const struct call *c) {
    const int p = c->s->size;
    if (c->coll == 0) return c->count;
    if (c->coll == 1) {
        int64_t t = 0;
        for (int r = 0; r < p; ++r) t += c->counts[r];
        return t;
    }
    if (c->coll == 2 || c->coll == 4) return c->count * p;
    return c->count; /* allgather: its own block */
}
static int64_t total_out(const struct call *c) {
    const int p = c->s->size;
    if (c->coll == 0) return c->count;
    if (c->coll == 1) return c->counts[c->s->rank];
    if (c->coll == 2) return c->count;
    return c->count * p;
}

/* Fills the input (or, in place, the receive buffer's input part) for this call's id. */
static void fill(struct call *c, uint64_t id) {
    const int me = c->s->world_of[c->s->rank];
    const int64_t n = total_in(c);
    const int o = c->coll <= 2 ? c->op : 2; /* data: 0..99 */
    if (!c->in_place) {
        for (int64_t i = 0; i < n; ++i) put(c->type, c->send, i, input_value(id, me, i, o));
        for (int64_t i = 0; i < total_out(c); ++i) put(c->type, c->recv, i, 77);
        return;
    }
    if (c->coll == 3) { /* allgather: own block at its place */
        for (int64_t i = 0; i < total_out(c); ++i) put(c->type, c->recv, i, 77);
        for (int64_t i = 0; i < c->count; ++i)
            put(c->type, c->recv, c->s->rank * c->count + i, input_value(id, me, i, o));
        return;
    }
    for (int64_t i = 0; i < n; ++i) put(c->type, c->recv, i, input_value(id, me, i, o));
}

static void check(struct call *c, uint64_t id) {
    const int p = c->s->size, me = c->s->rank;
    int64_t first = 0; /* of the full reduction, for reduce_scatter */
    if (c->coll == 1)
        for (int r = 0; r < me; ++r) first += c->counts[r];
    if (c->coll == 2) first = me * c->count;
    const int64_t n = total_out(c);
    int64_t bad = 0, where = -1, got = 0, want = 0;
    for (int64_t i = 0; i < n; ++i) {
        int64_t expect;
        if (c->coll <= 2) {
            expect = input_value(id, c->s->world_of[0], first + i, c->op);
            for (int r = 1; r < p; ++r) expect = combine(c->op, expect, input_value(id, c->s->world_of[r], first + i, c->op));
        } else if (c->coll == 3) {
            expect = input_value(id, c->s->world_of[i / c->count], i % c->count, 2);
        } else { /* alltoall: block j comes from rank j, its block `me` */
            const int64_t j = i / c->count;
            expect = input_value(id, c->s->world_of[j], me * c->count + i % c->count, 2);
        }
        /* In the type, as the library stores it. */
        int64_t scratch[1];
        put(c->type, scratch, 0, expect);
        expect = get(c->type, scratch, 0);
        const int64_t v = get(c->type, c->recv, i);
        ++elements_checked;
        if (v != expect) {
            if (!bad) where = i, got = v, want = expect;
            ++bad;
        }
    }
    if (bad)
        FAIL("%s %s on %s (%d ranks, progress thread %s) count %lld %s %s%s, algorithm %s: %lld of %lld elements wrong, "
             "first at %lld: %lld, expected %lld",
             c->mode == 0 ? "blocking" : c->mode == 1 ? "nonblocking" : "persistent", collectives[c->coll],
             kind_names[c->s->kind], p, c->s->thread ? "on" : "off", (long long)c->count, type_names[c->type],
             c->coll <= 2 ? op_names[c->op] : "-", c->in_place ? " in place" : "", c->algorithm, (long long)bad,
             (long long)n, (long long)where, (long long)got, (long long)want);
}

/* Makes the call: blocking, started (nonblocking), or initialized (persistent). */
static int start_call(struct call *c) {
    const void *in = c->in_place ? LOOM_IN_PLACE : c->send;
    const loom_datatype_t t = types[c->type];
    const loom_op_t o = ops[c->op];
    loom_comm_t comm = c->s->comm;
    if (c->mode == 0) {
        switch (c->coll) {
            case 0: return loom_allreduce(in, c->recv, c->count, t, o, comm);
            case 1: return loom_reduce_scatter(in, c->recv, c->counts, t, o, comm);
            case 2: return loom_reduce_scatter_block(in, c->recv, c->count, t, o, comm);
            case 3: return loom_allgather(in, c->recv, c->count, t, comm);
            default: return loom_alltoall(in, c->recv, c->count, t, comm);
        }
    }
    if (c->mode == 1) {
        switch (c->coll) {
            case 0: return loom_iallreduce(in, c->recv, c->count, t, o, comm, &c->req);
            case 1: return loom_ireduce_scatter(in, c->recv, c->counts, t, o, comm, &c->req);
            case 2: return loom_ireduce_scatter_block(in, c->recv, c->count, t, o, comm, &c->req);
            case 3: return loom_iallgather(in, c->recv, c->count, t, comm, &c->req);
            default: return loom_ialltoall(in, c->recv, c->count, t, comm, &c->req);
        }
    }
    switch (c->coll) {
        case 0: return loom_allreduce_init(in, c->recv, c->count, t, o, comm, &c->req);
        case 1: return loom_reduce_scatter_init(in, c->recv, c->counts, t, o, comm, &c->req);
        case 2: return loom_reduce_scatter_block_init(in, c->recv, c->count, t, o, comm, &c->req);
        case 3: return loom_allgather_init(in, c->recv, c->count, t, comm, &c->req);
        default: return loom_alltoall_init(in, c->recv, c->count, t, comm, &c->req);
    }
}

static void release(struct call *c) {
    free(c->send);
    free(c->recv);
    free(c->counts);
    free(c);
}

static long resident_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kib = atol(line + 6);
    fclose(f);
    return kib;
}

/* The count drawn for a call: the edge counts around the communicator's
 * size often, else spread over 0..max_count on a log scale. */
static int64_t draw_count(int p, int64_t max_count) {
    const int64_t edges[] = {0, 1, p - 1, p, p + 1};
    if (below(3) == 0) return edges[below(5)];
    int64_t n = 1;
    const uint64_t bits = below(64);
    for (uint64_t b = 0; b < bits % 17 && n < max_count; ++b) n *= 2;
    n += (int64_t)below((uint64_t)n);
    return n > max_count ? max_count : n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    long long calls = 2000, warmup = -1;
    double seconds = 0;
    int64_t max_count = 65536;
    unsigned long long seed = 0;
    int seeded = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n")) calls = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-t")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-s")) seed = strtoull(argv[i + 1], NULL, 0), seeded = 1;
        else if (!strcmp(argv[i], "-m")) max_count = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "-w")) warmup = atoll(argv[i + 1]);
        else {
            if (wrank == 0) fprintf(stderr, "loom-soak: unknown option '%s' (see the usage in perf/loom_soak.c)\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (calls < 1 || max_count < 1) {
        if (wrank == 0) fprintf(stderr, "loom-soak: -n and -m must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (warmup < 0) warmup = calls / 10;
    if (!seeded) seed = (unsigned long long)MPI_Wtime() * 1000003ULL ^ (unsigned long long)getpid();
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    rng_state = seed;
    if (wrank == 0) {
        printf("loom-soak np=%d seed=%llu (replay: -s %llu -n %lld -m %lld)\n", wsize, seed, seed, calls,
               (long long)max_count);
        fflush(stdout);
    }

    /* The host algorithms of each collective, for forcing. */
    const int nalg = loom_algorithm_count();
    int *algorithms_of[NCOLL], nalgorithms_of[NCOLL];
    for (int k = 0; k < NCOLL; ++k) {
        algorithms_of[k] = malloc(sizeof(int) * (size_t)(nalg + 1));
        nalgorithms_of[k] = 0;
        for (int a = 0; a < nalg; ++a) {
            loom_algorithm_info_t info;
            const char *memory = NULL;
            if (loom_algorithm_info(a, &info) == LOOM_SUCCESS && !strcmp(info.collective, collectives[k]) &&
                loom_algorithm_memory(a, &memory) == LOOM_SUCCESS && !strcmp(memory, "host"))
                algorithms_of[k][nalgorithms_of[k]++] = a;
        }
    }
    enum { POOL = 3, OUTSTANDING = 3 };
    struct slot pool[POOL];
    for (int k = 0; k < POOL; ++k) make_slot(&pool[k], k % NKINDS, (int)below(2));
    struct call *pending[OUTSTANDING];
    int npending = 0;
    long long made = POOL, forced = 0, not_applicable = 0;
    long rss_warm = -1, rss_max = 0;
    long samples[10];
    int nsamples = 0;
    const double t0 = MPI_Wtime();
    long long done_calls = 0;
    for (call_no = 0; call_no < (unsigned long long)calls; ++call_no) {
        /* Every rank stops on the same call: rank 0's clock decides, now and then. */
        if (seconds > 0 && call_no % 64 == 0) {
            int stop = MPI_Wtime() - t0 > seconds;
            MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (stop) break;
        }
        /* Now and then a communicator is freed and made again (after its calls finish). */
        if (below(100) == 0) {
            const int k = (int)below(POOL);
            for (int i = 0; i < npending; ++i) {
                if (pending[i]->s != &pool[k]) continue;
                if (loom_wait(&pending[i]->req) != LOOM_SUCCESS) FAIL("wait: %s", loom_last_error());
                check(pending[i], pending[i]->id);
                release(pending[i]);
                pending[i--] = pending[--npending];
            }
            free_slot(&pool[k]);
            make_slot(&pool[k], (int)below(NKINDS), (int)below(2));
            ++made;
        }
        struct call *c = calloc(1, sizeof *c);
        c->id = call_no;
        c->s = &pool[below(POOL)];
        c->coll = (int)below(NCOLL);
        c->type = (int)below(NTYPES);
        c->op = (int)below(NOPS);
        c->mode = (int)below(3);
        c->in_place = (int)below(2);
        const int p = c->s->size;
        c->count = draw_count(p, c->coll >= 2 ? max_count / p + 1 : max_count);
        /* As many draws on every rank, whatever its communicator's size. */
        c->counts = malloc(sizeof(int64_t) * (size_t)wsize);
        for (int r = 0; r < wsize; ++r) c->counts[r] = (int64_t)below((uint64_t)(c->count / p + 2));
        /* An op the type takes (the draw goes on the same way on every rank). */
        while (c->coll <= 2 && !loom_op_supported(types[c->type], ops[c->op])) c->op = (int)below(NOPS);
        loom_datatype_size(types[c->type], &c->es);
        const int64_t nin = total_in(c), nout = total_out(c);
        c->send = malloc((size_t)(nin + 1) * c->es);
        c->recv = malloc((size_t)((nin > nout ? nin : nout) + 1) * c->es);
        /* A third of the calls force an algorithm of the collective, where it applies. */
        char param[64];
        snprintf(param, sizeof param, "%s_algorithm", collectives[c->coll]);
        strcpy(c->algorithm, "auto");
        if (below(3) == 0 && nalgorithms_of[c->coll] > 0) {
            loom_algorithm_info_t info;
            const int a = algorithms_of[c->coll][below((uint64_t)nalgorithms_of[c->coll])];
            if (loom_algorithm_info(a, &info) == LOOM_SUCCESS) {
                loom_comm_set_param(c->s->comm, param, info.name);
                const char *chosen = NULL;
                const int rc = loom_comm_prepare(c->s->comm, collectives[c->coll], c->coll == 1 ? total_in(c) : c->count,
                                                 c->counts, types[c->type], c->in_place, &chosen);
                if (rc == LOOM_SUCCESS) {
                    snprintf(c->algorithm, sizeof c->algorithm, "%s", info.name);
                    ++forced;
                } else {
                    loom_comm_set_param(c->s->comm, param, "auto");
                    ++not_applicable;
                }
            }
        }
        fill(c, c->id);
        int rc = start_call(c);
        /* Forced for this call only (a persistent request keeps its plan). */
        if (strcmp(c->algorithm, "auto")) loom_comm_set_param(c->s->comm, param, "auto");
        if (c->mode == 2 && rc == LOOM_SUCCESS) {
            /* Persistent: started twice, the input changed in between. */
            rc = loom_start(c->req);
            if (rc == LOOM_SUCCESS) rc = loom_wait(&c->req);
            if (rc == LOOM_SUCCESS) check(c, c->id);
            fill(c, c->id + (1ULL << 40));
            if (rc == LOOM_SUCCESS) rc = loom_start(c->req);
            if (rc == LOOM_SUCCESS) rc = loom_wait(&c->req);
            if (rc == LOOM_SUCCESS) check(c, c->id + (1ULL << 40));
            if (c->req) loom_request_free(&c->req);
        } else if (c->mode == 1 && rc == LOOM_SUCCESS) {
            pending[npending++] = c;
            c = NULL;
        } else if (rc == LOOM_SUCCESS) {
            check(c, c->id);
        }
        if (rc != LOOM_SUCCESS) {
            FAIL("%s %s count %lld %s, algorithm %s: %s", collectives[c->coll],
                 c->mode == 0 ? "blocking" : c->mode == 1 ? "nonblocking" : "persistent", (long long)c->count,
                 type_names[c->type], c->algorithm, loom_last_error());
        }
        if (c) release(c);
        /* The oldest-but-any pending call finishes when three are out, or by chance. */
        while (npending == OUTSTANDING || (npending && below(4) == 0)) {
            const int i = (int)below((uint64_t)npending);
            struct call *w = pending[i];
            int done = 0;
            for (int polls = (int)below(4); polls > 0 && !done; --polls)
                if (loom_test(&w->req, &done) != LOOM_SUCCESS) break;
            if (!done && loom_wait(&w->req) != LOOM_SUCCESS) FAIL("wait: %s", loom_last_error());
            check(w, w->id);
            release(w);
            pending[i] = pending[--npending];
        }
        ++done_calls;
        if (done_calls == warmup) rss_warm = resident_kib();
        if (done_calls % (calls / 10 > 0 ? calls / 10 : 1) == 0 && nsamples < 10) {
            samples[nsamples++] = resident_kib();
            if (wrank == 0) {
                printf("loom-soak: %lld calls, %d failures on rank 0, %.1f s\n", done_calls, failures, MPI_Wtime() - t0);
                fflush(stdout);
            }
        }
        if (done_calls > warmup && done_calls % 64 == 0) {
            const long r = resident_kib();
            if (r > rss_max) rss_max = r;
        }
    }
    while (npending) {
        struct call *w = pending[--npending];
        if (loom_wait(&w->req) != LOOM_SUCCESS) FAIL("wait: %s", loom_last_error());
        check(w, w->id);
        release(w);
    }
    const long rss_end = resident_kib();
    if (rss_end > rss_max) rss_max = rss_end;
    for (int k = 0; k < POOL; ++k) free_slot(&pool[k]);
    long growth = rss_warm >= 0 ? rss_max - rss_warm : 0, worst = 0;
    for (int k = 0; k < NCOLL; ++k) free(algorithms_of[k]);
    long long all_failures = 0, mine = failures, all_checked = 0;
    MPI_Reduce(&elements_checked, &all_checked, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&growth, &worst, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &all_failures, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (wrank == 0) {
        printf("loom-soak np=%d seed=%llu: %lld calls, %lld failures, %lld elements checked, %lld forced (%lld not "
               "applicable), %lld communicators made, %.1f s; ",
               wsize, seed, done_calls, all_failures, all_checked, forced, not_applicable, made, MPI_Wtime() - t0);
        if (rss_warm < 0) printf("resident memory not sampled (the run ended within its %lld calls of warm-up)\n", warmup);
        else
            printf("resident memory after %lld calls of warm-up %ld KiB, most growth after it on any rank %ld KiB\n",
                   warmup, rss_warm, worst);
    }
    if (wrank == 0) {
        printf("loom-soak: rank 0's resident memory (KiB) every tenth of the calls:");
        for (int k = 0; k < nsamples; ++k) printf(" %ld", samples[k]);
        printf("\n");
    }
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
