/*
 * Communicators made, used and freed around Loom's collectives, in the
 * orders programs use them. Built twice: test_comm_lifecycle calls MPI's
 * collectives (run it with coll/loom loaded, or libloom-mpi), test_comm_lifecycle_libloom
 * calls libloom's on loom_comm_create'd communicators. Scenarios:
 *   table        the programs of issue 30 (dup, use, free, then the
 *                parent's next call; a reversed split freed before
 *                MPI_Finalize; a loop of dup, reversed split, half split);
 *   constructors dup, split with shuffled keys, a subset split with
 *                MPI_UNDEFINED, create_group (reversed even ranks),
 *                intercommunicator merge, split_type shared, MPI_COMM_SELF;
 *                each child and its parent called in six orders (frees
 *                before and after the parent's next call, calls pending
 *                on one while the other is made, used and freed); the
 *                parent is the world, then a reversed split of it;
 *   pending      nonblocking and persistent calls pending across another
 *                communicator's free, and a communicator freed with its
 *                own call pending (MPI completes it; the result must hold);
 *   many         24 communicators alive at once, nonblocking calls on all
 *                of them in flight, completed and freed in orders that
 *                differ by rank; a call pending on one while a blocking
 *                call runs on another, the order differing by rank;
 *   loop         LOOPS rounds of create, use (blocking, nonblocking,
 *                persistent) and free.
 * Every call's output is checked against the expected values (int32 sums
 * and movements, counts 0, 1, p-1, p, p+1, 1001 and 20001, in place and
 * not). With --table only issue 30's programs run, the last one's free
 * right before MPI_Finalize. With --rows the scenarios run once under the default selection,
 * then once per row of algorithms (row k forces each collective's k-th
 * host algorithm, shorter lists wrapping): through MPI_T control variables
 * in coll/loom, through loom_comm_set_param in libloom (a call the forced
 * algorithm cannot run is counted as not applicable). A call that takes
 * longer than the hang limit (-t, seconds) ends the program with the rank
 * and the call it was in. Prints "PROGRAM np=N: ... 0 failures" and exits 0
 * when every output was right.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom.h"

#ifdef LIFECYCLE_LIBLOOM
#define PROGRAM "test_comm_lifecycle_libloom"
typedef loom_request_t request_t;
#else
#include "persistent_init.h"
#define PROGRAM "test_comm_lifecycle"
typedef MPI_Request request_t;
#endif

enum { ALLREDUCE, REDUCE_SCATTER_BLOCK, ALLGATHER, ALLTOALL, NCOLL };
static const char *const coll_names[NCOLL] = {"allreduce", "reduce_scatter_block", "allgather", "alltoall"};
enum { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *const kind_names[] = {"blocking", "nonblocking", "persistent"};

static int world_rank, world_size;
static long checked, not_applicable, failures, communicators_made;
static int hang_seconds = 120;
static char where[512] = "start-up";
static char hang_prefix[96];

/* Async-signal-safe: the prefixes were formatted at start-up. */
static void say_where(const char *prefix, const char *tail) {
    if (write(2, prefix, strlen(prefix)) < 0 || write(2, where, strlen(where)) < 0 || write(2, tail, strlen(tail)) < 0)
        _exit(3);
}
static void on_alarm(int sig) {
    (void)sig;
    say_where(hang_prefix, " (the call above never finished: a hang)\n");
    _exit(3);
}
static char crash_prefix[96];
static void on_crash(int sig) {
    (void)sig;
    say_where(crash_prefix, "\n");
    _exit(4);
}

/* Names the call about to be made, and gives it hang_seconds. */
static void at(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where, sizeof where, fmt, ap);
    va_end(ap);
    alarm((unsigned)hang_seconds);
}

static void failed(const char *fmt, ...) {
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (failures < 20) fprintf(stderr, PROGRAM ": rank %d: FAILED: %s (in: %s)\n", world_rank, line, where);
    ++failures;
}

/* ---- the forced rows ---- */

#define MAX_ALGORITHMS 16
static const char *algorithms[NCOLL][MAX_ALGORITHMS];
static int algorithm_count[NCOLL];
static int row = -1; /* -1: the default selection */

static void list_algorithms(void) {
    for (int i = 0; i < loom_algorithm_count(); ++i) {
        loom_algorithm_info_t info;
        if (loom_algorithm_info(i, &info) != LOOM_SUCCESS || !strncmp(info.name, "cuda_ipc_", 9)) continue;
        for (int c = 0; c < NCOLL; ++c)
            if (!strcmp(info.collective, coll_names[c]) && algorithm_count[c] < MAX_ALGORITHMS)
                algorithms[c][algorithm_count[c]++] = info.name;
    }
}

static int row_count(void) {
    int rows = 0;
    for (int c = 0; c < NCOLL; ++c)
        if (algorithm_count[c] > rows) rows = algorithm_count[c];
    return rows;
}

static const char *row_algorithm(int c) {
    return row < 0 || !algorithm_count[c] ? "auto" : algorithms[c][row % algorithm_count[c]];
}

/* ---- communicators ---- */

typedef struct {
    MPI_Comm mpi; /* MPI_COMM_NULL: this rank is not a member */
    int owned;    /* made here, freed here */
#ifdef LIFECYCLE_LIBLOOM
    loom_comm_t loom;
#endif
    int rank, size;
    char name[96];
} comm_t;

static comm_t world;

#ifdef LIFECYCLE_LIBLOOM
static void force_row(loom_comm_t lc) {
    for (int c = 0; c < NCOLL; ++c) {
        char param[64];
        snprintf(param, sizeof param, "%s_algorithm", coll_names[c]);
        if (loom_comm_set_param(lc, param, row_algorithm(c)) != LOOM_SUCCESS)
            failed("loom_comm_set_param(%s, %s): %s", param, row_algorithm(c), loom_last_error());
    }
}
#else
static MPI_T_cvar_handle cvars[NCOLL];
static void open_cvars(void) {
    int provided = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    for (int c = 0; c < NCOLL; ++c) {
        char name[80];
        int index = -1, count = 0;
        snprintf(name, sizeof name, "coll_loom_%s_algorithm", coll_names[c]);
        if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
            MPI_T_cvar_handle_alloc(index, NULL, &cvars[c], &count) != MPI_SUCCESS) {
            failed("%s is not an MPI_T control variable (is coll/loom loaded?)", name);
            cvars[c] = MPI_T_CVAR_HANDLE_NULL;
        }
    }
}
/* Every rank writes the same values at the same point, between calls. */
static void force_row_everywhere(void) {
    for (int c = 0; c < NCOLL; ++c)
        if (cvars[c] != MPI_T_CVAR_HANDLE_NULL && MPI_T_cvar_write(cvars[c], (void *)row_algorithm(c)) != MPI_SUCCESS)
            failed("MPI_T_cvar_write(coll_loom_%s_algorithm, %s)", coll_names[c], row_algorithm(c));
}
#endif

/* Wraps `mpi` (MPI_COMM_NULL on ranks outside it). */
static void adopt(comm_t *c, MPI_Comm mpi, int owned, const char *name) {
    memset(c, 0, sizeof *c);
    c->mpi = mpi;
    c->owned = owned;
    snprintf(c->name, sizeof c->name, "%s", name);
    if (mpi == MPI_COMM_NULL) return;
    MPI_Comm_rank(mpi, &c->rank);
    MPI_Comm_size(mpi, &c->size);
    ++communicators_made;
#ifdef LIFECYCLE_LIBLOOM
    at("loom_comm_create(%s)", name);
    int rc = loom_comm_create(mpi, &c->loom);
    if (rc != LOOM_SUCCESS) {
        failed("loom_comm_create(%s): %s", name, loom_last_error());
        c->loom = NULL;
        return;
    }
    force_row(c->loom);
#endif
}

static void release(comm_t *c) {
    if (c->mpi == MPI_COMM_NULL) return;
    at("freeing %s", c->name);
#ifdef LIFECYCLE_LIBLOOM
    if (c->loom && loom_comm_free(&c->loom) != LOOM_SUCCESS)
        failed("loom_comm_free(%s): %s", c->name, loom_last_error());
#endif
    if (c->owned) MPI_Comm_free(&c->mpi);
    c->mpi = MPI_COMM_NULL;
}

/* The constructors, made from `parent` (collective over it). */
enum { DUP, SPLIT_SHUFFLED, SPLIT_SUBSET, CREATE_GROUP, INTERCOMM_MERGE, SPLIT_TYPE_SHARED, SELF, NCONSTRUCTORS };
static const char *const constructor_names[] = {
    "dup", "split_shuffled", "split_subset", "create_group", "intercomm_merge", "split_type_shared", "self"};

static void make_child(const comm_t *parent, int constructor, unsigned seed, comm_t *child) {
    const int p = parent->size, r = parent->rank;
    MPI_Comm out = MPI_COMM_NULL;
    char name[96];
    snprintf(name, sizeof name, "%s of %.60s", constructor_names[constructor], parent->name);
    at("making %s", name);
    switch (constructor) {
        case DUP: MPI_Comm_dup(parent->mpi, &out); break;
        case SPLIT_SHUFFLED: { /* the same permutation on every rank: keys from the seed */
            int key = (int)((r * 2654435761u + seed) % 1000003u);
            MPI_Comm_split(parent->mpi, 0, key, &out);
            break;
        }
        case SPLIT_SUBSET: MPI_Comm_split(parent->mpi, r % 3 == 1 ? MPI_UNDEFINED : r % 2, p - r, &out); break;
        case CREATE_GROUP: {
            MPI_Group all, evens;
            MPI_Comm_group(parent->mpi, &all);
            int n = 0, *ranks = malloc(sizeof(int) * (size_t)p);
            for (int q = (p - 1) / 2 * 2; q >= 0; q -= 2) ranks[n++] = q; /* reversed */
            MPI_Group_incl(all, n, ranks, &evens);
            if (r % 2 == 0) MPI_Comm_create_group(parent->mpi, evens, 77, &out);
            MPI_Group_free(&evens);
            MPI_Group_free(&all);
            free(ranks);
            break;
        }
        case INTERCOMM_MERGE: {
            if (p < 2) {
                MPI_Comm_dup(parent->mpi, &out);
                break;
            }
            const int low = r < p / 2;
            MPI_Comm half, inter;
            MPI_Comm_split(parent->mpi, low, r, &half);
            MPI_Intercomm_create(half, 0, parent->mpi, low ? p / 2 : 0, 78, &inter);
            MPI_Intercomm_merge(inter, low, &out); /* the high half first */
            MPI_Comm_free(&inter);
            MPI_Comm_free(&half);
            break;
        }
        case SPLIT_TYPE_SHARED:
            MPI_Comm_split_type(parent->mpi, MPI_COMM_TYPE_SHARED, p - r, MPI_INFO_NULL, &out);
            break;
        case SELF: adopt(child, MPI_COMM_SELF, 0, name); return;
    }
    adopt(child, out, 1, name);
}

/* ---- calls ---- */

/* A call keeps what it needs of its communicator: MPI lets a program free
 * the communicator while the call is pending. */
typedef struct {
    int member; /* this rank is in the communicator */
    int rank, size;
    char comm_name[96];
    int coll, kind, in_place, na;
    long count;
    unsigned seed;
    int *in, *out;
    request_t req;
} call_t;

static int value(int rank, long i, unsigned seed) { return (rank + 1) * 3 + (int)(i % 97) + (int)(seed % 13); }

static long count_for(unsigned seed, int p) {
    const long counts[] = {0, 1, p - 1, p, p + 1, 1001, 20001};
    return counts[seed % 7];
}

static long input_count(const call_t *k) {
    return k->coll == ALLREDUCE || k->coll == ALLGATHER ? k->count : k->count * k->size;
}
static long output_count(const call_t *k) {
    return k->coll == ALLREDUCE || k->coll == REDUCE_SCATTER_BLOCK ? k->count : k->count * k->size;
}

static int expected(const call_t *k, long j) {
    const int p = k->size, me = k->rank;
    long sum = 0;
    switch (k->coll) {
        case ALLREDUCE:
            for (int q = 0; q < p; ++q) sum += value(q, j, k->seed);
            return (int)sum;
        case REDUCE_SCATTER_BLOCK:
            for (int q = 0; q < p; ++q) sum += value(q, me * k->count + j, k->seed);
            return (int)sum;
        case ALLGATHER: return value((int)(j / k->count), j % k->count, k->seed);
        default: return value((int)(j / k->count), me * k->count + j % k->count, k->seed);
    }
}

#ifdef LIFECYCLE_LIBLOOM
static int issue(call_t *k, const comm_t *c, const void *send, void *recv) {
    const loom_comm_t lc = c->loom;
    const int64_t n = k->count;
    switch (k->kind * NCOLL + k->coll) {
        case BLOCKING *NCOLL + ALLREDUCE: return loom_allreduce(send, recv, n, LOOM_INT32, LOOM_SUM, lc);
        case BLOCKING *NCOLL + REDUCE_SCATTER_BLOCK:
            return loom_reduce_scatter_block(send, recv, n, LOOM_INT32, LOOM_SUM, lc);
        case BLOCKING *NCOLL + ALLGATHER: return loom_allgather(send, recv, n, LOOM_INT32, lc);
        case BLOCKING *NCOLL + ALLTOALL: return loom_alltoall(send, recv, n, LOOM_INT32, lc);
        case NONBLOCKING *NCOLL + ALLREDUCE: return loom_iallreduce(send, recv, n, LOOM_INT32, LOOM_SUM, lc, &k->req);
        case NONBLOCKING *NCOLL + REDUCE_SCATTER_BLOCK:
            return loom_ireduce_scatter_block(send, recv, n, LOOM_INT32, LOOM_SUM, lc, &k->req);
        case NONBLOCKING *NCOLL + ALLGATHER: return loom_iallgather(send, recv, n, LOOM_INT32, lc, &k->req);
        case NONBLOCKING *NCOLL + ALLTOALL: return loom_ialltoall(send, recv, n, LOOM_INT32, lc, &k->req);
        case PERSISTENT *NCOLL + ALLREDUCE:
            return loom_allreduce_init(send, recv, n, LOOM_INT32, LOOM_SUM, lc, &k->req);
        case PERSISTENT *NCOLL + REDUCE_SCATTER_BLOCK:
            return loom_reduce_scatter_block_init(send, recv, n, LOOM_INT32, LOOM_SUM, lc, &k->req);
        case PERSISTENT *NCOLL + ALLGATHER: return loom_allgather_init(send, recv, n, LOOM_INT32, lc, &k->req);
        default: return loom_alltoall_init(send, recv, n, LOOM_INT32, lc, &k->req);
    }
}
#else
static int issue(call_t *k, const comm_t *comm, const void *send, void *recv) {
    const MPI_Comm c = comm->mpi;
    const int n = (int)k->count;
    switch (k->kind * NCOLL + k->coll) {
        case BLOCKING *NCOLL + ALLREDUCE: return MPI_Allreduce(send, recv, n, MPI_INT, MPI_SUM, c);
        case BLOCKING *NCOLL + REDUCE_SCATTER_BLOCK:
            return MPI_Reduce_scatter_block(send, recv, n, MPI_INT, MPI_SUM, c);
        case BLOCKING *NCOLL + ALLGATHER: return MPI_Allgather(send, n, MPI_INT, recv, n, MPI_INT, c);
        case BLOCKING *NCOLL + ALLTOALL: return MPI_Alltoall(send, n, MPI_INT, recv, n, MPI_INT, c);
        case NONBLOCKING *NCOLL + ALLREDUCE: return MPI_Iallreduce(send, recv, n, MPI_INT, MPI_SUM, c, &k->req);
        case NONBLOCKING *NCOLL + REDUCE_SCATTER_BLOCK:
            return MPI_Ireduce_scatter_block(send, recv, n, MPI_INT, MPI_SUM, c, &k->req);
        case NONBLOCKING *NCOLL + ALLGATHER: return MPI_Iallgather(send, n, MPI_INT, recv, n, MPI_INT, c, &k->req);
        case NONBLOCKING *NCOLL + ALLTOALL: return MPI_Ialltoall(send, n, MPI_INT, recv, n, MPI_INT, c, &k->req);
        case PERSISTENT *NCOLL + ALLREDUCE:
            return PERSISTENT_INIT(Allreduce)(send, recv, n, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &k->req);
        case PERSISTENT *NCOLL + REDUCE_SCATTER_BLOCK:
            return PERSISTENT_INIT(Reduce_scatter_block)(send, recv, n, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &k->req);
        case PERSISTENT *NCOLL + ALLGATHER:
            return PERSISTENT_INIT(Allgather)(send, n, MPI_INT, recv, n, MPI_INT, c, MPI_INFO_NULL, &k->req);
        default: return PERSISTENT_INIT(Alltoall)(send, n, MPI_INT, recv, n, MPI_INT, c, MPI_INFO_NULL, &k->req);
    }
}
#endif

static const char *describe(const call_t *k) {
    static char text[200];
    snprintf(text, sizeof text, "%s %s of %ld on %s (%d ranks)%s", kind_names[k->kind], coll_names[k->coll], k->count,
             k->comm_name, k->size, k->in_place ? ", in place" : "");
    return text;
}

/* Starts collective `coll` (seed decides the count and placement) of
 * `kind` on `c`; blocking calls are finished here. */
static void start(call_t *k, const comm_t *c, int coll, int kind, unsigned seed) {
    memset(k, 0, sizeof *k);
    k->member = c->mpi != MPI_COMM_NULL;
    if (!k->member) return;
    k->rank = c->rank;
    k->size = c->size;
    snprintf(k->comm_name, sizeof k->comm_name, "%s", c->name);
    k->coll = coll;
    k->kind = kind;
    k->seed = seed;
    k->count = count_for(seed, c->size);
    /* In place where MPI allows it and the input sits in the output (allreduce, allgather). */
    k->in_place = (coll == ALLREDUCE || coll == ALLGATHER) && seed % 2 == 1;
    const long nin = input_count(k), nout = output_count(k);
    k->in = malloc(sizeof(int) * (size_t)(nin + 1));
    k->out = malloc(sizeof(int) * (size_t)(nout + 1));
    for (long i = 0; i < nin; ++i) k->in[i] = value(c->rank, i, seed);
    for (long i = 0; i < nout; ++i) k->out[i] = -7;
    const void *send = k->in;
    if (k->in_place) {
        const long at_ = coll == ALLGATHER ? c->rank * k->count : 0;
        memcpy(k->out + at_, k->in, sizeof(int) * (size_t)nin);
#ifdef LIFECYCLE_LIBLOOM
        send = LOOM_IN_PLACE;
#else
        send = MPI_IN_PLACE;
#endif
    }
    at("%s", describe(k));
    int rc = issue(k, c, send, k->out);
#ifdef LIFECYCLE_LIBLOOM
    if (rc == LOOM_ERR_ALGORITHM_NOT_APPLICABLE) { /* the forced algorithm cannot run it: said the same everywhere */
        k->na = 1;
        ++not_applicable;
        return;
    }
    if (rc == LOOM_SUCCESS && kind == PERSISTENT) rc = loom_start(k->req);
    if (rc != LOOM_SUCCESS) failed("%s: %s", describe(k), loom_last_error());
#else
    if (rc == MPI_SUCCESS && kind == PERSISTENT) rc = MPI_Start(&k->req);
    if (rc != MPI_SUCCESS) failed("%s returned %d", describe(k), rc);
#endif
    if (rc != 0) k->na = 1; /* nothing to wait for */
}

static void finish(call_t *k) {
    if (!k->member) return;
    if (!k->na && k->kind != BLOCKING) {
        at("waiting for %s", describe(k));
#ifdef LIFECYCLE_LIBLOOM
        if (loom_wait(&k->req) != LOOM_SUCCESS) failed("loom_wait for %s: %s", describe(k), loom_last_error());
        if (k->kind == PERSISTENT) loom_request_free(&k->req);
#else
        if (MPI_Wait(&k->req, MPI_STATUS_IGNORE) != MPI_SUCCESS) failed("MPI_Wait for %s", describe(k));
        if (k->kind == PERSISTENT) MPI_Request_free(&k->req);
#endif
    }
    if (!k->na) {
        const long n = output_count(k);
        for (long j = 0; j < n; ++j)
            if (k->out[j] != expected(k, j)) {
                failed("%s: element %ld is %d, not %d", describe(k), j, k->out[j], expected(k, j));
                break;
            }
        ++checked;
    }
    free(k->in);
    free(k->out);
    k->in = k->out = NULL;
}

/* One whole call. */
static void call(const comm_t *c, int kind, unsigned seed) {
    call_t k;
    start(&k, c, (int)(seed % NCOLL), kind, seed);
    finish(&k);
}

/* ---- scenarios ---- */

static void scenario_table(int loops) {
    comm_t d, e, f;
    /* dup, use, free, then the parent's next call */
    make_child(&world, DUP, 0, &d);
    call(&d, BLOCKING, 0);
    release(&d);
    call(&world, BLOCKING, 4);
    /* the same with the free after the parent's call */
    make_child(&world, DUP, 0, &d);
    call(&d, BLOCKING, 8);
    call(&world, BLOCKING, 12);
    release(&d);
    for (int i = 0; i < loops; ++i) {
        MPI_Comm m;
        make_child(&world, DUP, 0, &d);
        at("loop %d: reversed split", i);
        MPI_Comm_split(world.mpi, 0, world.size - world.rank, &m);
        adopt(&e, m, 1, "reversed split of world");
        at("loop %d: half split", i);
        MPI_Comm_split(world.mpi, world.rank < world.size / 2 ? 0 : MPI_UNDEFINED, world.rank, &m);
        adopt(&f, m, 1, "half split of world");
        call(&d, BLOCKING, (unsigned)(4 * i));
        call(&e, BLOCKING, (unsigned)(4 * i + 1));
        call(&f, BLOCKING, (unsigned)(4 * i + 2));
        release(&f);
        release(&d);
        release(&e);
    }
    /* a reversed split used and freed (with --table, MPI_Finalize follows) */
    {
        MPI_Comm rev;
        at("splitting the world reversed");
        MPI_Comm_split(world.mpi, 0, world.size - world.rank, &rev);
        adopt(&d, rev, 1, "reversed split of world");
    }
    call(&d, BLOCKING, 16);
    release(&d);
}

/* Child and parent in six orders. */
static void interleave(const comm_t *parent, int constructor, int order, unsigned seed) {
    comm_t child;
    call_t a, b;
    switch (order) {
        case 0: /* child, parent, free */
            make_child(parent, constructor, seed, &child);
            call(&child, BLOCKING, seed);
            call(parent, BLOCKING, seed + 1);
            release(&child);
            break;
        case 1: /* parent, child, free, parent */
            call(parent, BLOCKING, seed);
            make_child(parent, constructor, seed, &child);
            call(&child, BLOCKING, seed + 1);
            release(&child);
            call(parent, BLOCKING, seed + 2);
            break;
        case 2: /* child, free, parent */
            make_child(parent, constructor, seed, &child);
            call(&child, NONBLOCKING, seed);
            release(&child);
            call(parent, BLOCKING, seed + 1);
            break;
        case 3: /* made and freed unused, then the parent */
            make_child(parent, constructor, seed, &child);
            release(&child);
            call(parent, PERSISTENT, seed);
            break;
        case 4: /* the child's call pending across the parent's */
            make_child(parent, constructor, seed, &child);
            start(&a, &child, (int)(seed % NCOLL), NONBLOCKING, seed);
            call(parent, BLOCKING, seed + 1);
            finish(&a);
            release(&child);
            break;
        default: /* the parent's call pending while a child is made, used and freed */
            start(&b, parent, (int)(seed % NCOLL), order == 5 ? NONBLOCKING : PERSISTENT, seed);
            make_child(parent, constructor, seed, &child);
            call(&child, BLOCKING, seed + 1);
            release(&child);
            finish(&b);
            break;
    }
}

static void scenario_constructors(const comm_t *parent) {
    for (int k = 0; k < NCONSTRUCTORS; ++k)
        for (int order = 0; order < 7; ++order) interleave(parent, k, order, (unsigned)(k * 7 + order));
}

static void scenario_pending(void) {
    comm_t d;
    call_t w, p;
    /* persistent on the world, restarted around a dup made, used and freed */
    start(&p, &world, ALLREDUCE, PERSISTENT, 2);
    make_child(&world, DUP, 0, &d);
    call(&d, BLOCKING, 3);
    release(&d);
    finish(&p);
    /* nonblocking on the world across a split's life */
    start(&w, &world, ALLGATHER, NONBLOCKING, 6);
    make_child(&world, SPLIT_SHUFFLED, 5, &d);
    call(&d, NONBLOCKING, 7);
    release(&d);
    finish(&w);
    /* a communicator freed with its own call pending: MPI finishes the
     * call, whose output must be complete when the request completes.
     * Not in coll/loom's forced rows: a call the forced algorithm cannot
     * run goes to Open MPI's libnbc, which crashes or hangs on it (Open MPI
     * 4.1.4 alone does: docs/design.md, "Communicators"). */
#ifndef LIFECYCLE_LIBLOOM
    if (row >= 0) return;
#endif
    for (int coll = 0; coll < NCOLL; ++coll) {
        make_child(&world, coll % 2 ? DUP : SPLIT_SHUFFLED, (unsigned)coll, &d);
        start(&w, &d, coll, NONBLOCKING, (unsigned)(20 + coll));
        release(&d);
        finish(&w);
    }
}

#define MANY 24
static void scenario_many(void) {
    comm_t cs[MANY];
    call_t ks[MANY];
    for (int i = 0; i < MANY; ++i) make_child(&world, i % 3 == 2 ? SPLIT_SHUFFLED : DUP, (unsigned)i, &cs[i]);
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < MANY; ++i) start(&ks[i], &cs[i], (i + round) % NCOLL, NONBLOCKING, (unsigned)(i + round));
        for (int i = 0; i < MANY; ++i) finish(&ks[world_rank % 2 ? MANY - 1 - i : i]);
        for (int i = 0; i < MANY; ++i) call(&cs[(i * 7) % MANY], BLOCKING, (unsigned)(i * 3 + round));
    }
    /* A call pending on one communicator while a blocking one runs on
     * another, in orders that differ by rank: each rank's blocking call
     * must keep its pending one moving (MPI's progress rule). */
    for (int i = 0; i + 1 < MANY; i += 2) {
        call_t pending;
        start(&pending, &cs[i], i % NCOLL, NONBLOCKING, (unsigned)(40 + i));
        if (world_rank % 2) call(&cs[i + 1], BLOCKING, (unsigned)(41 + i));
        finish(&pending);
        if (!(world_rank % 2)) call(&cs[i + 1], BLOCKING, (unsigned)(41 + i));
    }
    for (int i = 0; i < MANY; ++i) release(&cs[(i + world_rank) % MANY]);
}

static void scenario_loop(int loops) {
    for (int i = 0; i < loops; ++i) {
        comm_t c;
        make_child(&world, i % NCONSTRUCTORS, (unsigned)i, &c);
        call(&c, i % 3, (unsigned)i);
        if (i % 4 == 0) call(&world, BLOCKING, (unsigned)i + 1);
        release(&c);
    }
}

static int verbose;
/* -v: each scenario's seconds on rank 0, to find a slow one. */
static void timed(const char *name, double *since) {
    const double now = MPI_Wtime();
    if (verbose && world_rank == 0) printf("  row %d: %-28s %.2f s\n", row, name, now - *since);
    *since = now;
}

static void run_all(int loops) {
    double t = MPI_Wtime();
    scenario_table(loops < 20 ? loops : 20);
    timed("table", &t);
    scenario_constructors(&world);
    timed("constructors (world)", &t);
    {
        comm_t reversed;
        MPI_Comm m;
        at("splitting the world reversed");
        MPI_Comm_split(world.mpi, 0, world.size - world.rank, &m);
        adopt(&reversed, m, 1, "reversed split of world");
        scenario_constructors(&reversed);
        release(&reversed);
    }
    timed("constructors (reversed)", &t);
    scenario_pending();
    timed("pending", &t);
    scenario_many();
    timed("many", &t);
    scenario_loop(loops);
    timed("loop", &t);
}

int main(int argc, char **argv) {
    int loops = 200, rows = 0, table_only = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--rows")) rows = 1;
        else if (!strcmp(argv[i], "--table")) table_only = 1;
        else if (!strcmp(argv[i], "-l") && i + 1 < argc) loops = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) hang_seconds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else {
            fprintf(stderr, "usage: %s [--rows | --table] [-l LOOPS] [-t HANG_SECONDS] [-v]\n", argv[0]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    snprintf(hang_prefix, sizeof hang_prefix, PROGRAM ": rank %d of %d: HUNG (over the limit) in: ", world_rank,
             world_size);
    snprintf(crash_prefix, sizeof crash_prefix, PROGRAM ": rank %d of %d: CRASHED in: ", world_rank, world_size);
    signal(SIGALRM, on_alarm);
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    list_algorithms();
#ifndef LIFECYCLE_LIBLOOM
    /* coll/loom's variables force the rows; without --rows the program runs under any Loom (or none). */
    if (rows) open_cvars();
#endif
    adopt(&world, MPI_COMM_WORLD, 0, "world");
    const int nrows = rows ? row_count() : 0;
    for (row = -1; row < nrows; ++row) {
#ifdef LIFECYCLE_LIBLOOM
        force_row(world.loom);
#else
        force_row_everywhere();
#endif
        if (table_only) scenario_table(loops < 20 ? loops : 20);
        else run_all(row < 0 ? loops : loops / 4);
    }
    row = -1;
    release(&world);
    at("MPI_Finalize");
    long all[4] = {checked, not_applicable, failures, communicators_made}, sum[4];
    MPI_Allreduce(all, sum, 4, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
#ifndef LIFECYCLE_LIBLOOM
    if (rows) {
        for (int c = 0; c < NCOLL; ++c)
            if (cvars[c] != MPI_T_CVAR_HANDLE_NULL) MPI_T_cvar_handle_free(&cvars[c]);
        MPI_T_finalize();
    }
#endif
    if (world_rank == 0)
        printf(PROGRAM " np=%d: %s, %ld communicators made, %ld calls checked, %ld not applicable, %ld failures\n",
               world_size,
               table_only ? "issue 30's programs"
               : rows     ? "default selection and every row of forced algorithms"
                          : "default selection",
               sum[3], sum[0], sum[1], sum[2]);
    MPI_Finalize();
    alarm(0);
    return sum[2] ? 1 : 0;
}
