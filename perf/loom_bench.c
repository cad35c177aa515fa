/*
 * loom-bench: OSU-style latency benchmark for Allreduce, Reduce_scatter,
 * Reduce_scatter_block, Allgather(v), Alltoall(v) and their nonblocking
 * forms; the vector collectives carry token-routing traffic (moe_traffic.h).
 * It calls plain MPI functions (measuring whichever coll component Open MPI
 * selected, coll/loom included) or, with --api loom, libloom directly.
 * Flags, headers, columns and the overlap formula follow the OSU
 * micro-benchmarks 7.x, so the numbers can sit beside OSU's; extra columns
 * on request (algbw/busbw as nccl-tests computes them, % of a bandwidth
 * bound), and machine-readable CSV or JSON alongside. See loom-bench(1).
 */
#include <loom.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_loom_priority.h"
#include "moe_traffic.h"

enum coll { ALLREDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, ALLGATHER, ALLTOALL, ALLTOALLV, ALLGATHERV, NCOLL };
static const char *coll_names[] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall",
                                   "alltoallv", "allgatherv"};
static const char *coll_titles[] = {"Allreduce",
                                    "Reduce_scatter",
                                    "Reduce_scatter_block",
                                    "Allgather",
                                    "All-to-All Personalized Exchange",
                                    "All-to-Allv Personalized Exchange",
                                    "Allgatherv"};
static int is_vector(enum coll c) { return c == ALLTOALLV || c == ALLGATHERV; }

struct type_case {
    const char *flag, *mpi_name;
    MPI_Datatype mpi;
    loom_datatype_t loom;
    int size;
};

struct options {
    enum coll coll;
    int nonblocking, full, validate, loom_api, bw;
    int device;             /* -d cuda: buffers in device memory (loom_device_alloc) */
    int interleave_default; /* both sides in this process: Open MPI's default and coll/loom */
    int windows;            /* --interleave-default: windows per side and size */
    double window_us;       /* --interleave-default: about this long each */
    long min_bytes, max_bytes;
    int iters, iters_large, warmup, warmup_large, test_calls;
    double link_gbit; /* per-node network bandwidth for the % of bound column; 0: none */
    int nodes;        /* for the bound: nodes the ranks are spread over */
    const char *csv, *json, *types;
    const char *adapt_rules; /* --adapt-rules: where rank 0 writes what adapt learnt */
    traffic_t traffic; /* alltoallv, allgatherv: --traffic, --seed */
};

static int rank, size;
static loom_comm_t lc;
/* The communicator MPI calls go to: MPI_COMM_WORLD, or with
 * --interleave-default one of the two below in turn. */
static MPI_Comm bench_comm;
static MPI_Comm default_comm = MPI_COMM_NULL, loom_side_comm = MPI_COMM_NULL;
static int64_t *counts64; /* reduce_scatter's counts for libloom: allocated once, not in the timed loop */
/* Each rank's node for the vector collectives' bound: the nodes MPI sees
 * (MPI_COMM_TYPE_SHARED) when there are --nodes of them, else --nodes of
 * consecutive ranks (one machine standing for several). */
static int *node_of;
/* The vector collectives' call at the current size, made before it is
 * timed: the whole traffic matrix (allgatherv: the shards in row 0), this
 * rank's arrays for MPI and for libloom, in rank order without gaps. */
static struct {
    int64_t *matrix;
    int *sc, *sd, *rc, *rd;
    int64_t *sc64, *sd64, *rc64, *rd64;
    size_t send, recv;    /* this rank's elements */
    double largest, mean; /* blocks (shards), for the header */
    int hottest;          /* the rank the largest block goes to (whose shard is largest) */
} vc;
static FILE *csv, *json;
static int json_first = 1;

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom-bench COLLECTIVE [options]\n"
            "  COLLECTIVE  allreduce reduce_scatter reduce_scatter_block allgather alltoall alltoallv\n"
            "              allgatherv, or the nonblocking form with an i in front (iallreduce ...)\n"
            "  -m [MIN:]MAX  message sizes in bytes (default 1:1048576; per rank, per block for alltoall,\n"
            "                the mean block for alltoallv, the mean shard for allgatherv)\n"
            "  --traffic T   alltoallv/allgatherv: uniform (default), zipf:S (expert popularity 1/r^S),\n"
            "                skew:R (every other rank R times the rest) or, alltoallv, topk:K[:CF[:S]]\n"
            "                (512 tokens per rank routed to K experts, capacity factor CF, gate bias S)\n"
            "  --seed N      the traffic's seed (default 1), printed with it\n"
            "  -i ITERS      timed iterations (default 1000; 100 above 8 KiB)\n"
            "  -x WARMUP     warm-up iterations (default 200; 10 above 8 KiB)\n"
            "  -f            full output: min, max latency and iterations\n"
            "  -c            validate results (adds a Validation column; exits 1 on a wrong result)\n"
            "  -T TYPE       mpi_char (default), mpi_int, mpi_float or all\n"
            "  -d cuda|host  where the buffers live (OSU's flag): cuda allocates them in device memory\n"
            "                through libloom (loom_device_alloc; the first GPU's primary context)\n"
            "  -t CALLS      MPI_Test calls during compute (nonblocking forms; default 0)\n"
            "  --api mpi|loom   plain MPI calls (default) or libloom's C API\n"
            "  --bw          algbw and busbw columns (GB/s, nccl-tests factors)\n"
            "  --link-bw GBIT  per-node network bandwidth in Gbit/s: adds the %% of the bandwidth bound\n"
            "  --nodes N     nodes the ranks span, for the bound (default 1: the bound uses the whole size)\n"
            "  --csv FILE / --json FILE   machine-readable results alongside\n"
            "  --adapt-rules FILE  (--api loom, parameter adapt on) write what adapt learnt as a rules file\n"
            "  --interleave-default  (blocking MPI calls, run with coll_loom_priority > 0) time Open MPI's\n"
            "                default collectives and coll/loom in this one process, in alternating\n"
            "                windows; prints one table per side (\"# Side: default\", \"# Side: loom\")\n"
            "  --windows N   windows per side and size (default 20)\n"
            "  --window-us US  about how long a window lasts (default 2000; at most -i calls)\n");
}

static int parse_args(int argc, char **argv, struct options *o) {
    memset(o, 0, sizeof *o);
    o->min_bytes = 1;
    o->max_bytes = 1 << 20;
    o->iters = 1000;
    o->iters_large = 100;
    o->warmup = 200;
    o->warmup_large = 10;
    o->nodes = 1;
    o->types = "mpi_char";
    o->windows = 20;
    o->window_us = 2000;
    const char *traffic_text = "uniform";
    uint64_t seed = 1;
    if (argc < 2) return 0;
    const char *c = argv[1];
    if (c[0] == 'i') {
        o->nonblocking = 1;
        ++c;
    }
    int found = 0;
    for (int k = 0; k < NCOLL; ++k)
        if (!strcmp(c, coll_names[k])) {
            o->coll = (enum coll)k;
            found = 1;
        }
    if (!found) return 0;
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-m") && v) {
            char *colon = strchr(v, ':');
            if (colon) {
                o->min_bytes = atol(v);
                o->max_bytes = atol(colon + 1);
            } else {
                o->max_bytes = atol(v);
            }
            ++i;
        } else if (!strcmp(a, "-i") && v) {
            o->iters = o->iters_large = atoi(v);
            ++i;
        } else if (!strcmp(a, "-x") && v) {
            o->warmup = o->warmup_large = atoi(v);
            ++i;
        } else if (!strcmp(a, "-f")) {
            o->full = 1;
        } else if (!strcmp(a, "-c")) {
            o->validate = 1;
        } else if (!strcmp(a, "-d") && v) {
            if (strcmp(v, "cuda") && strcmp(v, "host")) return 0;
            o->device = !strcmp(v, "cuda");
            ++i;
        } else if (!strcmp(a, "-T") && v) {
            o->types = v;
            ++i;
        } else if (!strcmp(a, "-t") && v) {
            o->test_calls = atoi(v);
            ++i;
        } else if (!strcmp(a, "--api") && v) {
            if (strcmp(v, "mpi") && strcmp(v, "loom")) return 0;
            o->loom_api = !strcmp(v, "loom");
            ++i;
        } else if (!strcmp(a, "--bw")) {
            o->bw = 1;
        } else if (!strcmp(a, "--link-bw") && v) {
            o->link_gbit = atof(v);
            ++i;
        } else if (!strcmp(a, "--nodes") && v) {
            o->nodes = atoi(v);
            ++i;
        } else if (!strcmp(a, "--csv") && v) {
            o->csv = v;
            ++i;
        } else if (!strcmp(a, "--json") && v) {
            o->json = v;
            ++i;
        } else if (!strcmp(a, "--adapt-rules") && v) {
            o->adapt_rules = v;
            ++i;
        } else if (!strcmp(a, "--traffic") && v) {
            traffic_text = v;
            ++i;
        } else if (!strcmp(a, "--seed") && v) {
            seed = strtoull(v, NULL, 10);
            ++i;
        } else if (!strcmp(a, "--interleave-default")) {
            o->interleave_default = 1;
        } else if (!strcmp(a, "--windows") && v) {
            o->windows = atoi(v);
            ++i;
        } else if (!strcmp(a, "--window-us") && v) {
            o->window_us = atof(v);
            ++i;
        } else {
            return 0;
        }
    }
    if (o->min_bytes < 1 || o->max_bytes < o->min_bytes || o->iters < 1 || o->warmup < 0 || o->nodes < 1 ||
        o->test_calls < 0 || o->windows < 1 || !(o->window_us > 0))
        return 0;
    char why[512];
    if (!traffic_parse(traffic_text, seed, &o->traffic, why, sizeof why) ||
        (o->coll == ALLGATHERV && o->traffic.kind == TRAFFIC_TOPK)) {
        if (rank == 0)
            fprintf(stderr, "loom-bench: %s\n",
                    o->traffic.kind == TRAFFIC_TOPK ? "allgatherv has shards, not routed tokens: no topk" : why);
        return 0;
    }
    return 1;
}

/* Elements per call for a message of `bytes` (OSU's meaning of size). */
static int count_for(const struct options *o, long bytes, int type_size) {
    long n = bytes / type_size;
    if (o->coll == REDUCE_SCATTER || o->coll == REDUCE_SCATTER_BLOCK) n /= size; /* size is the whole input */
    return (int)(n > 0 ? n : 0);
}

static size_t send_elems(const struct options *o, int count) {
    if (is_vector(o->coll)) return vc.send;
    switch (o->coll) {
        case REDUCE_SCATTER:
        case REDUCE_SCATTER_BLOCK:
        case ALLTOALL: return (size_t)count * size;
        default: return (size_t)count;
    }
}

static size_t recv_elems(const struct options *o, int count) {
    if (is_vector(o->coll)) return vc.recv;
    switch (o->coll) {
        case ALLGATHER:
        case ALLTOALL: return (size_t)count * size;
        default: return (size_t)count;
    }
}

/* Starts (nonblocking) or runs one call. */
static int start(const struct options *o, const struct type_case *t, void *sb, void *rb, int count, int *counts,
                 MPI_Request *req, loom_request_t *lreq) {
    if (o->loom_api) {
        int64_t c64 = count;
        if (o->coll == REDUCE_SCATTER)
            for (int r = 0; r < size; ++r) counts64[r] = counts[r];
        int rc = 0;
        if (o->nonblocking) {
            switch (o->coll) {
                case ALLREDUCE: rc = loom_iallreduce(sb, rb, c64, t->loom, LOOM_SUM, lc, lreq); break;
                case REDUCE_SCATTER: rc = loom_ireduce_scatter(sb, rb, counts64, t->loom, LOOM_SUM, lc, lreq); break;
                case REDUCE_SCATTER_BLOCK:
                    rc = loom_ireduce_scatter_block(sb, rb, c64, t->loom, LOOM_SUM, lc, lreq);
                    break;
                case ALLGATHER: rc = loom_iallgather(sb, rb, c64, t->loom, lc, lreq); break;
                case ALLTOALLV:
                    rc = loom_ialltoallv(sb, vc.sc64, vc.sd64, rb, vc.rc64, vc.rd64, t->loom, lc, lreq);
                    break;
                case ALLGATHERV:
                    rc = loom_iallgatherv(sb, vc.rc64[rank], rb, vc.rc64, vc.rd64, t->loom, lc, lreq);
                    break;
                default: rc = loom_ialltoall(sb, rb, c64, t->loom, lc, lreq); break;
            }
        } else {
            switch (o->coll) {
                case ALLREDUCE: rc = loom_allreduce(sb, rb, c64, t->loom, LOOM_SUM, lc); break;
                case REDUCE_SCATTER: rc = loom_reduce_scatter(sb, rb, counts64, t->loom, LOOM_SUM, lc); break;
                case REDUCE_SCATTER_BLOCK: rc = loom_reduce_scatter_block(sb, rb, c64, t->loom, LOOM_SUM, lc); break;
                case ALLGATHER: rc = loom_allgather(sb, rb, c64, t->loom, lc); break;
                case ALLTOALLV: rc = loom_alltoallv(sb, vc.sc64, vc.sd64, rb, vc.rc64, vc.rd64, t->loom, lc); break;
                case ALLGATHERV: rc = loom_allgatherv(sb, vc.rc64[rank], rb, vc.rc64, vc.rd64, t->loom, lc); break;
                default: rc = loom_alltoall(sb, rb, c64, t->loom, lc); break;
            }
        }
        if (rc != LOOM_SUCCESS) {
            fprintf(stderr, "loom-bench: rank %d: %s: %s\n", rank, loom_strerror(rc), loom_last_error());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        return 0;
    }
    MPI_Comm w = bench_comm;
    if (o->nonblocking) {
        switch (o->coll) {
            case ALLREDUCE: return MPI_Iallreduce(sb, rb, count, t->mpi, MPI_SUM, w, req);
            case REDUCE_SCATTER: return MPI_Ireduce_scatter(sb, rb, counts, t->mpi, MPI_SUM, w, req);
            case REDUCE_SCATTER_BLOCK: return MPI_Ireduce_scatter_block(sb, rb, count, t->mpi, MPI_SUM, w, req);
            case ALLGATHER: return MPI_Iallgather(sb, count, t->mpi, rb, count, t->mpi, w, req);
            case ALLTOALLV: return MPI_Ialltoallv(sb, vc.sc, vc.sd, t->mpi, rb, vc.rc, vc.rd, t->mpi, w, req);
            case ALLGATHERV: return MPI_Iallgatherv(sb, vc.rc[rank], t->mpi, rb, vc.rc, vc.rd, t->mpi, w, req);
            default: return MPI_Ialltoall(sb, count, t->mpi, rb, count, t->mpi, w, req);
        }
    }
    switch (o->coll) {
        case ALLREDUCE: return MPI_Allreduce(sb, rb, count, t->mpi, MPI_SUM, w);
        case REDUCE_SCATTER: return MPI_Reduce_scatter(sb, rb, counts, t->mpi, MPI_SUM, w);
        case REDUCE_SCATTER_BLOCK: return MPI_Reduce_scatter_block(sb, rb, count, t->mpi, MPI_SUM, w);
        case ALLGATHER: return MPI_Allgather(sb, count, t->mpi, rb, count, t->mpi, w);
        case ALLTOALLV: return MPI_Alltoallv(sb, vc.sc, vc.sd, t->mpi, rb, vc.rc, vc.rd, t->mpi, w);
        case ALLGATHERV: return MPI_Allgatherv(sb, vc.rc[rank], t->mpi, rb, vc.rc, vc.rd, t->mpi, w);
        default: return MPI_Alltoall(sb, count, t->mpi, rb, count, t->mpi, w);
    }
}

static void test_once(const struct options *o, MPI_Request *req, loom_request_t *lreq) {
    int done = 0;
    if (o->loom_api) {
        if (*lreq) loom_test(lreq, &done);
        if (done) *lreq = NULL;
    } else {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
    }
}

static void wait_done(const struct options *o, MPI_Request *req, loom_request_t *lreq) {
    if (o->loom_api) {
        if (*lreq) loom_wait(lreq);
        *lreq = NULL;
    } else {
        MPI_Wait(req, MPI_STATUS_IGNORE);
    }
}

/* One call, blocking or started and waited for. */
static void one_call(const struct options *o, const struct type_case *t, void *sb, void *rb, int count, int *counts) {
    MPI_Request req = MPI_REQUEST_NULL;
    loom_request_t lreq = NULL;
    start(o, t, sb, rb, count, counts, &req, &lreq);
    if (o->nonblocking) wait_done(o, &req, &lreq);
}

/* Busy compute of about `us` microseconds with `calls` tests spread over it (OSU's dummy_compute). */
static double compute(const struct options *o, double us, MPI_Request *req, loom_request_t *lreq) {
    const double t0 = MPI_Wtime();
    const int slices = o->test_calls > 0 ? o->test_calls : 1;
    for (int s = 0; s < slices; ++s) {
        const double until = t0 + us * 1e-6 * (s + 1) / slices;
        volatile double x = 0;
        while (MPI_Wtime() < until) x += 1.0;
        if (o->test_calls > 0) test_once(o, req, lreq);
    }
    return (MPI_Wtime() - t0) * 1e6;
}

/* Element i of rank r's input for iteration-independent validation: small
 * values so sums over any size stay exact in every type. */
static int pattern(int r, size_t i) { return (int)((r + 3 * (i % 7)) % 5); }

static void fill(const struct type_case *t, void *buf, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const int v = pattern(rank, i);
        if (t->mpi == MPI_CHAR) ((char *)buf)[i] = (char)v;
        else if (t->mpi == MPI_INT) ((int *)buf)[i] = v;
        else ((float *)buf)[i] = (float)v;
    }
}

static double value_at(const struct type_case *t, const void *buf, size_t i) {
    if (t->mpi == MPI_CHAR) return ((const char *)buf)[i];
    if (t->mpi == MPI_INT) return ((const int *)buf)[i];
    return ((const float *)buf)[i];
}

/* Where rank r's block for rank j starts in r's send buffer (the layout is
 * in rank order without gaps, so every rank can tell). */
static size_t sent_from(int r, int j) {
    size_t at = 0;
    for (int k = 0; k < j; ++k) at += (size_t)vc.matrix[(size_t)r * size + k];
    return at;
}

/* Expected element i of this rank's output (not the vector collectives':
 * check() compares those block by block). */
static double expected(const struct options *o, int count, size_t i) {
    double sum = 0;
    switch (o->coll) {
        case ALLREDUCE:
            for (int r = 0; r < size; ++r) sum += pattern(r, i);
            return sum;
        case REDUCE_SCATTER:
        case REDUCE_SCATTER_BLOCK:
            for (int r = 0; r < size; ++r) sum += pattern(r, (size_t)rank * count + i);
            return sum;
        case ALLGATHER: return pattern((int)(i / (size_t)count), i % (size_t)count);
        default: return pattern((int)(i / (size_t)count), (size_t)rank * count + i % (size_t)count);
    }
}

/* -d cuda: the buffers are device memory, written and read through host copies. */
static void *host_copy;
static size_t host_copy_bytes;
static void *host_view(size_t bytes) {
    if (bytes > host_copy_bytes) {
        free(host_copy);
        host_copy = malloc(bytes ? bytes : 1);
        host_copy_bytes = bytes;
        if (!host_copy) {
            fprintf(stderr, "loom-bench: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    return host_copy;
}
static void copy_or_die(void *dst, const void *src, size_t bytes) {
    if (loom_memory_copy(dst, src, bytes) != LOOM_SUCCESS) {
        fprintf(stderr, "loom-bench: copying to or from device memory: %s\n", loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}
static void fill_buffer(const struct options *o, const struct type_case *t, void *buf, size_t n) {
    if (!o->device) {
        fill(t, buf, n);
        return;
    }
    void *h = host_view(n * t->size);
    fill(t, h, n);
    copy_or_die(buf, h, n * t->size);
}

static int check(const struct options *o, const struct type_case *t, void *sb, void *rb, int count, int *counts) {
    const size_t out_bytes = recv_elems(o, count) * t->size;
    fill_buffer(o, t, sb, send_elems(o, count));
    void *out = o->device ? host_view(out_bytes) : rb;
    memset(out, 0, out_bytes);
    if (o->device) copy_or_die(rb, out, out_bytes);
    one_call(o, t, sb, rb, count, counts);
    if (o->device) copy_or_die(out, rb, out_bytes);
    int bad = 0;
    if (is_vector(o->coll)) { /* block by block: expected() would search for each element's */
        for (int r = 0; r < size && !bad; ++r) {
            const size_t from = o->coll == ALLTOALLV ? sent_from(r, rank) : 0;
            for (int e = 0; e < vc.rc[r] && !bad; ++e)
                bad = value_at(t, out, (size_t)vc.rd[r] + e) != pattern(r, from + (size_t)e);
        }
    }
    for (size_t i = 0; i < recv_elems(o, count) && !bad && !is_vector(o->coll); ++i)
        bad = value_at(t, out, i) != expected(o, count, i);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return !any;
}

/* nccl-tests' bus bandwidth factor for the collective. */
static double bus_factor(const struct options *o) {
    return o->coll == ALLREDUCE ? 2.0 * (size - 1) / size : (double)(size - 1) / size;
}

/* The least time the bytes need on a network of link_gbit per node (all
 * its rails): with N nodes, each node must move (N-1)/N of S through its
 * links, twice for allreduce (S as nccl-tests counts it: the vector, the
 * whole input, the whole output): 2(N-1)/N S / (R B) for allreduce; for
 * alltoall, the node-egress bound, ppn (N-1)/N S / (R B). */
static double bound_us(const struct options *o, double total_bytes) {
    if (o->link_gbit <= 0 || o->nodes < 2) return 0;
    double factor = (o->coll == ALLREDUCE ? 2.0 : 1.0) * (o->nodes - 1) / o->nodes;
    /* Alltoall's blocks cannot be combined on the way: every rank of a
     * node sends its own (N-1)/N of S, so a node moves ppn times that. */
    if (o->coll == ALLTOALL) factor *= (double)size / o->nodes;
    return factor * total_bytes * 8 / (o->link_gbit * 1e3);
}

/* The least time the vector collectives' traffic needs on a network of
 * link_gbit per node (node_of says which rank is where): every node's
 * bytes leaving it and entering it each over its links; the slowest node
 * decides. An allgatherv shard must leave its node at least once and enter
 * every other. */
static double vector_bound_us(const struct options *o, size_t type_size) {
    if (o->link_gbit <= 0 || o->nodes < 2) return 0;
    double worst = 0;
    for (int n = 0; n < o->nodes; ++n) {
        double out = 0, in = 0;
        for (int i = 0; i < size; ++i) {
            const int from = node_of[i];
            for (int j = 0; j < size; ++j) {
                const int to = node_of[j];
                const double b = (double)vc.matrix[(size_t)i * size + j];
                if (o->coll == ALLGATHERV) {
                    if (j == 0 && from == n) out += b;
                    if (j == 0 && from != n) in += b;
                } else if (from != to) {
                    if (from == n) out += b;
                    if (to == n) in += b;
                }
            }
        }
        if (out > worst) worst = out;
        if (in > worst) worst = in;
    }
    return worst * (double)type_size * 8 / (o->link_gbit * 1e3);
}

/* The call at `count` elements (the vector collectives: this rank's arrays
 * for the traffic at a mean block of `count`), made before it is timed;
 * 0 when a displacement would not fit MPI's int. */
static int prepare_vector_call(const struct options *o, long count) {
    const size_t p = (size_t)size;
    if (o->coll == ALLTOALLV) {
        traffic_matrix(&o->traffic, size, count, vc.matrix);
    } else {
        traffic_shards(&o->traffic, size, count, vc.matrix);
        for (size_t i = p; i-- > 0;) /* every rank sends its shard to every rank */
            for (size_t j = 0; j < p; ++j) vc.matrix[i * p + j] = vc.matrix[i];
    }
    int64_t sent = 0, received = 0, largest = 0, total = 0;
    for (size_t j = 0; j < p; ++j) {
        const int64_t out = vc.matrix[(size_t)rank * p + j], in = vc.matrix[j * p + (size_t)rank];
        if (sent > INT32_MAX - out || received > INT32_MAX - in) return 0;
        vc.sc[j] = (int)out;
        vc.sd[j] = (int)sent;
        vc.rc[j] = (int)in;
        vc.rd[j] = (int)received;
        vc.sc64[j] = out, vc.sd64[j] = sent, vc.rc64[j] = in, vc.rd64[j] = received;
        sent += out;
        received += in;
    }
    for (size_t k = 0; k < p * p; ++k) {
        if (o->coll == ALLGATHERV && k % p) continue;
        total += vc.matrix[k];
        if (vc.matrix[k] > largest) {
            largest = vc.matrix[k];
            vc.hottest = (int)(o->coll == ALLGATHERV ? k / p : k % p);
        }
    }
    vc.send = o->coll == ALLGATHERV ? (size_t)vc.rc[rank] : (size_t)sent;
    vc.recv = (size_t)received;
    vc.largest = (double)largest;
    vc.mean = (double)total / (double)(o->coll == ALLGATHERV ? p : p * p);
    return 1;
}

/* One row of results: latencies in us averaged over the ranks. */
struct row {
    long bytes;
    double avg, mn, mx, comp, pure;
    double total_bytes, bound_us; /* S as nccl-tests counts it, and the time the network needs for it */
    int iters, valid;
};

static void print_header(const struct options *o) {
    if (o->nonblocking) {
        printf("# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait\n\n");
        printf("# %-10s %17s %17s %17s %17s", "Size", "Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)");
    } else {
        printf("# %-10s %17s", "Size", "Avg Latency(us)");
    }
    if (o->full) printf(" %17s %17s %12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
    if (o->validate) printf(" %12s", "Validation");
    if (o->bw) printf(" %14s %14s", "algbw(GB/s)", "busbw(GB/s)");
    if (o->link_gbit > 0) printf(" %10s", "%bound");
    printf("\n");
}

/* Prints a row (rank 0) and writes it to the CSV and JSON files; `api`
 * names the side measured. */
static void emit(const struct options *o, const struct type_case *t, const struct row *r, const char *api) {
    const double avg = r->avg;
    const double algbw = r->total_bytes / (avg * 1e-6) / 1e9, busbw = algbw * bus_factor(o);
    const double bound = r->bound_us;
    /* OSU's overlap: max(0, 100 - 100 (overall - compute) / pure). */
    double overlap = o->nonblocking && r->pure > 0 ? 100 - 100 * (avg - r->comp) / r->pure : 0;
    if (overlap < 0) overlap = 0;
    if (o->nonblocking) printf("%-12ld %17.2f %17.2f %17.2f %17.2f", r->bytes, avg, r->comp, r->pure, overlap);
    else printf("%-12ld %17.2f", r->bytes, avg);
    if (o->full) printf(" %17.2f %17.2f %12d", r->mn, r->mx, r->iters);
    if (o->validate) printf(" %12s", r->valid ? "Pass" : "Fail");
    if (o->bw) printf(" %14.3f %14.3f", algbw, busbw);
    if (o->link_gbit > 0) printf(" %10.1f", bound > 0 ? 100 * bound / avg : 0);
    printf("\n");
    fflush(stdout);
    if (csv)
        fprintf(csv, "%s%s,%s,%s,%d,%ld,%.3f,%.3f,%.3f,%d,%.4f,%.4f,%.1f,%.2f,%.2f,%.2f,%s\n",
                o->nonblocking ? "i" : "", coll_names[o->coll], api, t->mpi_name, size, r->bytes, avg, r->mn, r->mx,
                r->iters, algbw, busbw, bound > 0 ? 100 * bound / avg : 0, r->comp, r->pure, overlap,
                o->validate ? (r->valid ? "pass" : "fail") : "");
    if (json) {
        fprintf(json,
                "%s\n  {\"collective\": \"%s%s\", \"api\": \"%s\", \"datatype\": \"%s\", \"ranks\": %d, \"size\": %ld, "
                "\"avg_us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"iterations\": %d, \"algbw_gbs\": %.4f, "
                "\"busbw_gbs\": %.4f, \"bound_pct\": %.1f, \"compute_us\": %.2f, \"pure_comm_us\": %.2f, "
                "\"overlap_pct\": %.2f, \"validation\": \"%s\"}",
                json_first ? "" : ",", o->nonblocking ? "i" : "", coll_names[o->coll], api, t->mpi_name, size, r->bytes,
                avg, r->mn, r->mx, r->iters, algbw, busbw, bound > 0 ? 100 * bound / avg : 0, r->comp, r->pure, overlap,
                o->validate ? (r->valid ? "pass" : "fail") : "");
        json_first = 0;
    }
}

/* OSU's measurement of one size on bench_comm: `iters` calls timed as one
 * block (then, nonblocking, as many again with compute in between). */
static void measure_osu(const struct options *o, const struct type_case *t, void *sb, void *rb, int count, int *counts,
                        int iters, int warmup, struct row *out) {
    for (int w = 0; w < warmup; ++w) one_call(o, t, sb, rb, count, counts);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < iters; ++k) one_call(o, t, sb, rb, count, counts);
    double pure = (MPI_Wtime() - t0) / iters * 1e6;
    double overall = pure, computed = 0;
    if (o->nonblocking) {
        /* OSU: compute as long as the pure communication took, testing
         * -t times, then wait; overall includes everything. */
        double pure_avg = 0;
        MPI_Allreduce(&pure, &pure_avg, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double ov = 0, cp = 0;
        for (int k = 0; k < iters; ++k) {
            MPI_Request req = MPI_REQUEST_NULL;
            loom_request_t lreq = NULL;
            const double s = MPI_Wtime();
            start(o, t, sb, rb, count, counts, &req, &lreq);
            cp += compute(o, pure_avg, &req, &lreq);
            wait_done(o, &req, &lreq);
            ov += (MPI_Wtime() - s) * 1e6;
        }
        overall = ov / iters;
        computed = cp / iters;
    }
    double sum = 0, sum_pure = 0, sum_comp = 0;
    MPI_Reduce(&overall, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&overall, &out->mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&overall, &out->mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&pure, &sum_pure, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&computed, &sum_comp, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    out->avg = sum / size;
    out->pure = sum_pure / size;
    out->comp = sum_comp / size;
    out->iters = iters;
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --interleave-default: the same size on Open MPI's default communicator
 * and on coll/loom's, in alternating windows of the same number of calls
 * (which side goes first alternates too), so that both meet the same
 * machine: on a shared machine the speed drifts by 25 % over a second,
 * which separate launches turn into noise between the two sides. Each
 * window is timed per rank and averaged over the ranks; a side's latency
 * is its median window, min and max the extreme windows. */
static void measure_interleaved(const struct options *o, const struct type_case *t, void *sb, void *rb, int count,
                                int *counts, int iters, int warmup, struct row out[2]) {
    MPI_Comm comms[2] = {default_comm, loom_side_comm};
    /* Calls per window: about --window-us of the default side's time (its
     * warm-up timed, the slowest rank's figure so all ranks agree), at
     * most the iteration count. */
    double took = 0;
    for (int side = 0; side < 2; ++side) {
        bench_comm = comms[side];
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        const int n = warmup > 0 ? warmup : 1;
        for (int w = 0; w < n; ++w) one_call(o, t, sb, rb, count, counts);
        if (side == 0) took = (MPI_Wtime() - t0) * 1e6 / n;
    }
    double per_call = 0;
    MPI_Allreduce(&took, &per_call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int calls = per_call > 0 ? (int)(o->window_us / per_call) : iters;
    if (calls > iters) calls = iters;
    if (calls < 1) calls = 1;
    const int nw = o->windows;
    double *mine = malloc(sizeof(double) * 2 * nw), *sums = malloc(sizeof(double) * 2 * nw);
    if (!mine || !sums) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int w = 0; w < nw; ++w)
        for (int j = 0; j < 2; ++j) {
            const int side = (w & 1) ? 1 - j : j;
            bench_comm = comms[side];
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (int k = 0; k < calls; ++k) one_call(o, t, sb, rb, count, counts);
            mine[side * nw + w] = (MPI_Wtime() - t0) / calls * 1e6;
        }
    MPI_Reduce(mine, sums, 2 * nw, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int side = 0; side < 2; ++side) {
        double *v = sums + side * nw;
        for (int w = 0; w < nw; ++w) v[w] /= size;
        qsort(v, (size_t)nw, sizeof(double), compare_doubles);
        out[side].avg = nw % 2 ? v[nw / 2] : (v[nw / 2 - 1] + v[nw / 2]) / 2;
        out[side].mn = v[0];
        out[side].mx = v[nw - 1];
        out[side].comp = out[side].pure = 0;
        out[side].iters = calls * nw;
    }
    free(mine);
    free(sums);
}

static void run_type(const struct options *o, const struct type_case *t) {
    size_t cap_elems = (size_t)(o->max_bytes / t->size + 1) * size + 16;
    /* The vector collectives' traffic grows with the size: the largest's decides. */
    if (is_vector(o->coll) && prepare_vector_call(o, count_for(o, o->max_bytes, t->size))) {
        const size_t need = (vc.send > vc.recv ? vc.send : vc.recv) + 16;
        if (need > cap_elems) cap_elems = need;
    }
    void *sb = NULL, *rb = NULL;
    if (o->device) {
        if (loom_device_alloc(cap_elems * t->size, &sb) != LOOM_SUCCESS ||
            loom_device_alloc(cap_elems * t->size, &rb) != LOOM_SUCCESS) {
            fprintf(stderr, "loom-bench: -d cuda: %s (%s)\n", loom_last_error(), loom_cuda_state());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        sb = malloc(cap_elems * t->size);
        rb = malloc(cap_elems * t->size);
    }
    int *counts = malloc(sizeof(int) * size);
    /* --interleave-default: rows kept until the end, one table per side. */
    const int sides = o->interleave_default ? 2 : 1;
    int nrows = 0;
    struct row *rows = malloc(sizeof(struct row) * 2 * 64);
    if (!sb || !rb || !counts || !rows) {
        fprintf(stderr, "loom-bench: out of memory for %ld-byte messages\n", o->max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fill_buffer(o, t, sb, cap_elems);
    if (rank == 0) {
        printf("# Loom loom-bench %s%s Latency Test (OSU 7.2 format, %s)\n", o->nonblocking ? "Non-blocking " : "",
               coll_titles[o->coll], o->loom_api ? "libloom API" : "MPI calls");
        printf("# Datatype: %s.\n", t->mpi_name);
        if (is_vector(o->coll)) {
            char text[256];
            traffic_describe(&o->traffic, text, sizeof text);
            printf("# Traffic: %s; at the largest size the largest %s (%s rank %d) is %.2f x the mean.\n", text,
                   o->coll == ALLTOALLV ? "block" : "shard", o->coll == ALLTOALLV ? "to" : "of", vc.hottest,
                   vc.mean > 0 ? vc.largest / vc.mean : 0);
        }
        if (o->device) printf("# Buffers: device memory (-d cuda; %s).\n", loom_cuda_state());
        if (o->interleave_default)
            printf(
                "# Interleaved in this process: Open MPI's default collectives (a communicator with the info "
                "ompi_comm_coll_preference=^loom) and coll/loom, %d alternating windows of about %.0f us per size; "
                "latency = median window, min/max = extreme windows.\n",
                o->windows, o->window_us);
        else print_header(o);
        fflush(stdout);
    }
    int failed = 0;
    for (long bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= 2) {
        const int count = count_for(o, bytes, t->size);
        if (count == 0) continue;
        for (int r = 0; r < size; ++r) counts[r] = count;
        if (is_vector(o->coll) && !prepare_vector_call(o, count)) {
            if (rank == 0) fprintf(stderr, "loom-bench: %ld bytes: a displacement would not fit MPI's int\n", bytes);
            break;
        }
        const int large = bytes > 8192;
        const int iters = large ? o->iters_large : o->iters, warmup = large ? o->warmup_large : o->warmup;
        struct row *r = rows + 2 * nrows;
        if (o->interleave_default) {
            measure_interleaved(o, t, sb, rb, count, counts, iters, warmup, r);
        } else {
            measure_osu(o, t, sb, rb, count, counts, iters, warmup, r);
        }
        for (int side = 0; side < sides; ++side) {
            r[side].bytes = bytes;
            r[side].valid = 1;
            /* S as nccl-tests counts it: the whole vector (allreduce), the
             * whole input (reduce-scatter) or the whole output (allgather,
             * alltoall); for alltoallv what a rank sends on average. */
            if (is_vector(o->coll)) {
                r[side].total_bytes = vc.mean * size * t->size;
                r[side].bound_us = vector_bound_us(o, (size_t)t->size);
            } else {
                r[side].total_bytes = (double)bytes * (o->coll == ALLGATHER || o->coll == ALLTOALL ? size : 1);
                r[side].bound_us = bound_us(o, r[side].total_bytes);
            }
            if (o->validate) {
                if (o->interleave_default) bench_comm = side == 0 ? default_comm : loom_side_comm;
                r[side].valid = check(o, t, sb, rb, count, counts);
                fill_buffer(o, t, sb, cap_elems);
            }
            failed |= !r[side].valid;
        }
        if (o->interleave_default) {
            if (++nrows == 64) break; /* sizes double: 64 rows span every long */
        } else if (rank == 0) {
            emit(o, t, r, o->loom_api ? "loom" : "mpi");
        }
    }
    if (rank == 0 && o->interleave_default)
        for (int side = 0; side < 2; ++side) {
            /* loom-compare splits the output at these lines. */
            printf("# Side: %s\n", side == 0 ? "default" : "loom");
            print_header(o);
            for (int k = 0; k < nrows; ++k) emit(o, t, rows + 2 * k + side, side == 0 ? "default" : "loom");
            if (side == 0) printf("\n");
        }
    if (rank == 0) printf("\n");
    if (o->device) {
        loom_device_free(sb);
        loom_device_free(rb);
    } else {
        free(sb);
        free(rb);
    }
    free(counts);
    free(rows);
    if (failed) {
        if (rank == 0) printf("DATA VALIDATION ERROR: %s %s\n", coll_names[o->coll], t->mpi_name);
        MPI_Finalize();
        exit(1);
    }
}

/* --interleave-default: a communicator coll/loom takes, and one made with
 * Open MPI's info key ompi_comm_coll_preference = "^loom", which Open MPI
 * gives to the modules it would pick without Loom. Returns NULL, or what
 * is wrong. */
static const char *make_interleave_comms(const struct options *o, char *why, size_t cap) {
    if (o->nonblocking || o->loom_api)
        return "--interleave-default times blocking MPI calls only (no i prefix, no --api loom)";
    /* coll/loom must be loaded and on, or both sides would be the default. */
    int priority = 0;
    if (!read_coll_loom_priority(&priority))
        return "--interleave-default needs coll/loom loaded (no MPI_T control variable coll_loom_priority; "
               "add its folder to --mca mca_base_component_path)";
    if (priority <= 0) {
        snprintf(why, cap,
                 "--interleave-default: coll_loom_priority is %d, so coll/loom takes no communicator "
                 "(run with --mca coll_loom_priority 100)",
                 priority);
        return why;
    }
    dup_loom_and_default(&loom_side_comm, &default_comm);
    return NULL;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct options o;
    if (!parse_args(argc, argv, &o)) {
        if (rank == 0) usage(stderr);
        MPI_Finalize();
        return 2;
    }
    const struct type_case types[] = {
        {"mpi_char", "MPI_CHAR", MPI_CHAR, LOOM_CHAR, 1},
        {"mpi_int", "MPI_INT", MPI_INT, LOOM_INT, (int)sizeof(int)},
        {"mpi_float", "MPI_FLOAT", MPI_FLOAT, LOOM_FLOAT, (int)sizeof(float)},
    };
    int any = 0;
    for (int k = 0; k < 3; ++k) any |= !strcmp(o.types, "all") || !strcmp(o.types, types[k].flag);
    if (!any) {
        if (rank == 0)
            fprintf(stderr, "loom-bench: unknown datatype '%s' (mpi_char, mpi_int, mpi_float, all)\n", o.types);
        MPI_Finalize();
        return 2;
    }
    if (o.device && o.interleave_default) {
        if (rank == 0)
            fprintf(stderr,
                    "loom-bench: -d cuda with --interleave-default: Open MPI's default collectives are not "
                    "CUDA-aware here and would be handed device memory; compare with --api loom instead\n");
        MPI_Finalize();
        return 2;
    }
    bench_comm = MPI_COMM_WORLD;
    if (o.interleave_default) {
        char why[256];
        const char *error = make_interleave_comms(&o, why, sizeof why);
        if (error) {
            if (rank == 0) fprintf(stderr, "loom-bench: %s\n", error);
            MPI_Finalize();
            return 2;
        }
    }
    /* One blocking collective before anything is timed: coll/loom brings a
     * communicator's rails up at its first blocking call, and the
     * nonblocking forms' warm-up and pure communication must already use them. */
    if (!o.interleave_default) {
        int one = 1, ranks = 0;
        MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, bench_comm);
    }
    counts64 = malloc(sizeof(int64_t) * size);
    vc.matrix = malloc(sizeof(int64_t) * (size_t)size * size);
    vc.sc = malloc(sizeof(int) * 4 * (size_t)size);
    vc.sc64 = malloc(sizeof(int64_t) * 4 * (size_t)size);
    if (!counts64 || !vc.matrix || !vc.sc || !vc.sc64) {
        fprintf(stderr, "loom-bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    vc.sd = vc.sc + size, vc.rc = vc.sd + size, vc.rd = vc.rc + size;
    node_of = malloc(sizeof(int) * (size_t)size);
    if (!node_of) MPI_Abort(MPI_COMM_WORLD, 2);
    {
        /* A node is named by its lowest world rank; then numbered in order. */
        MPI_Comm local;
        int leader = rank, distinct = 0;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
        MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, local);
        MPI_Comm_free(&local);
        int *leaders = malloc(sizeof(int) * (size_t)size);
        if (!leaders) MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
        for (int r = 0; r < size; ++r) distinct += leaders[r] == r;
        for (int r = 0; r < size; ++r) {
            int number = 0;
            for (int q = 0; q < leaders[r]; ++q) number += leaders[q] == q;
            node_of[r] = distinct == o.nodes ? number : (int)((long)r * o.nodes / size);
        }
        free(leaders);
    }
    vc.sd64 = vc.sc64 + size, vc.rc64 = vc.sd64 + size, vc.rd64 = vc.rc64 + size;
    if (o.loom_api && loom_comm_create(MPI_COMM_WORLD, &lc) != LOOM_SUCCESS) {
        fprintf(stderr, "loom-bench: %s\n", loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0 && o.csv) {
        csv = fopen(o.csv, "w");
        if (csv)
            fprintf(csv,
                    "collective,api,datatype,ranks,size,avg_us,min_us,max_us,iterations,algbw_gbs,busbw_gbs,"
                    "bound_pct,compute_us,pure_comm_us,overlap_pct,validation\n");
    }
    if (rank == 0 && o.json) {
        json = fopen(o.json, "w");
        if (json) fprintf(json, "[");
    }
    for (int k = 0; k < 3; ++k)
        if (!strcmp(o.types, "all") || !strcmp(o.types, types[k].flag)) run_type(&o, &types[k]);
    if (csv) fclose(csv);
    if (json) {
        fprintf(json, "\n]\n");
        fclose(json);
    }
    /* What parameter adapt learnt (through coll/loom, its stats say it). */
    const char *adapt = NULL;
    if (lc && rank == 0 && loom_comm_adapt_state(lc, &adapt) == LOOM_SUCCESS && strcmp(adapt, "off") != 0)
        for (const char *line = adapt; *line;) {
            const char *end = strchr(line, '\n');
            const int len = end ? (int)(end - line) : (int)strlen(line);
            printf("# adapt: %.*s\n", len, line);
            line += len + (end ? 1 : 0);
        }
    if (o.adapt_rules && rank == 0) {
        const char *rules = NULL;
        FILE *f = NULL;
        if (!lc || loom_comm_adapt_rules(lc, &rules) != LOOM_SUCCESS)
            fprintf(stderr, "loom-bench: --adapt-rules: %s\n",
                    lc ? loom_last_error() : "needs --api loom (through coll/loom, the stats say what was learnt)");
        else if (!(f = fopen(o.adapt_rules, "w")) || fputs(rules, f) < 0)
            fprintf(stderr, "loom-bench: --adapt-rules: cannot write %s\n", o.adapt_rules);
        if (f) fclose(f);
    }
    if (lc) loom_comm_free(&lc);
    if (default_comm != MPI_COMM_NULL) MPI_Comm_free(&default_comm);
    if (loom_side_comm != MPI_COMM_NULL) MPI_Comm_free(&loom_side_comm);
    free(counts64);
    free(vc.matrix);
    free(node_of);
    free(vc.sc);
    free(vc.sc64);
    MPI_Finalize();
    return 0;
}
