/* The reproducible parameter: every host allreduce, reduce_scatter and
 * reduce_scatter_block algorithm, forced in turn, at two segment sizes,
 * blocking, nonblocking and persistent, in place and out of place, on values
 * that cancel (1e18 against -1e18 beside values of 2^-30..2^30), in double,
 * float, double complex and bfloat16: every result must have the bits of the
 * first allreduce's, on every rank; and that result must be the sum within a
 * rounding of the type (a sum in the ranks' order loses the small values).
 * Prints a hash of the results, which run_mpi_tests.sh compares across runs
 * on emulated nodes, over rails and without them. Products and long double
 * sums are refused with the reason; integer sums run as they are. */
#include <loom.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_checks.h"

static int rank, size, failures;

enum { MAX_COUNT = 20001 };
static const loom_datatype_t types[] = {LOOM_DOUBLE, LOOM_FLOAT, LOOM_C_DOUBLE_COMPLEX, LOOM_BFLOAT16};
static const char *type_names[] = {"double", "float", "double_complex", "bfloat16"};
enum { NTYPES = sizeof(types) / sizeof(types[0]) };

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Rank r's j-th real value (a complex element holds two). */
static double value(int r, int64_t j) {
    const uint64_t h = mix((uint64_t)r * 1000003u + (uint64_t)j);
    double v = ldexp(1.0 + (double)(h >> 44) / 1048576.0, (int)(h % 61) - 30);
    if (h & 0x100) v = -v;
    /* Pairs of ranks cancel a large value; with an odd size the last rank has none. */
    if (j % 5 == 0 && !(size % 2 && r == size - 1)) v += r % 2 ? 1e18 : -1e18;
    return v;
}

static size_t elem_size(int t) { return t == 0 ? 8 : t == 1 ? 4 : t == 2 ? 16 : 2; }
static int reals(int t) { return t == 2 ? 2 : 1; }

static float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t float_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return (uint16_t)(bits >> 16); /* the value is then exact in bfloat16 */
}

/* Rank r's input of `count` elements of types[t]. */
static void fill(int t, int r, int64_t count, void *buf) {
    for (int64_t j = 0; j < count * reals(t); ++j) {
        const double v = value(r, j);
        if (t == 0 || t == 2) ((double *)buf)[j] = v;
        else if (t == 1) ((float *)buf)[j] = (float)v;
        else ((uint16_t *)buf)[j] = float_to_bf16((float)v);
    }
}

static double as_double(int t, const void *buf, int64_t j) {
    if (t == 0 || t == 2) return ((const double *)buf)[j];
    if (t == 1) return ((const float *)buf)[j];
    return bf16_to_float(((const uint16_t *)buf)[j]);
}

static void *reference[NTYPES]; /* the first allreduce's result, MAX_COUNT elements */

/* Runs one call of `collective` with `count` (allreduce: elements; the
 * reduce_scatters: `count` split over the ranks) in form `nb` (0 blocking,
 * 1 nonblocking, 2 persistent started twice), checks its bits against the
 * reference. Returns 0 where the forced algorithm cannot take the call (a
 * size limit: the exact sums are 32-byte elements), else 1. */
static int run(loom_comm_t comm, const char *collective, int t, int64_t count, int in_place, int nb, const char *how) {
    const size_t es = elem_size(t);
    const int c = !strcmp(collective, "allreduce") ? 0 : !strcmp(collective, "reduce_scatter") ? 1 : 2;
    int64_t *counts = malloc(sizeof(int64_t) * (size_t)size), first = 0, mine;
    int64_t total = count;
    if (c == 1) {
        total = 0;
        for (int r = 0; r < size; ++r) {
            counts[r] = count / size + (r < count % size);
            if (r < rank) first += counts[r];
            total += counts[r];
        }
        mine = counts[rank];
    } else if (c == 2) {
        total = (count / size) * size;
        first = (count / size) * rank;
        mine = count / size;
    } else {
        mine = count;
    }
    unsigned char *in = malloc(es * (size_t)(total + 1)), *out = malloc(es * (size_t)(total + 1));
    fill(t, rank, total, in);
    if (in_place) memcpy(out, in, es * (size_t)total);
    memset(out + (in_place ? es * (size_t)total : 0), 0xab, in_place ? es : es * (size_t)(total + 1));
    const void *send = in_place ? LOOM_IN_PLACE : in;
    loom_request_t req = NULL;
    int rc;
    if (nb == 0) {
        rc = c == 0   ? loom_allreduce(send, out, count, types[t], LOOM_SUM, comm)
             : c == 1 ? loom_reduce_scatter(send, out, counts, types[t], LOOM_SUM, comm)
                      : loom_reduce_scatter_block(send, out, mine, types[t], LOOM_SUM, comm);
    } else if (nb == 1) {
        rc = c == 0   ? loom_iallreduce(send, out, count, types[t], LOOM_SUM, comm, &req)
             : c == 1 ? loom_ireduce_scatter(send, out, counts, types[t], LOOM_SUM, comm, &req)
                      : loom_ireduce_scatter_block(send, out, mine, types[t], LOOM_SUM, comm, &req);
        if (rc == LOOM_SUCCESS) rc = loom_wait(&req);
    } else {
        rc = c == 0   ? loom_allreduce_init(send, out, count, types[t], LOOM_SUM, comm, &req)
             : c == 1 ? loom_reduce_scatter_init(send, out, counts, types[t], LOOM_SUM, comm, &req)
                      : loom_reduce_scatter_block_init(send, out, mine, types[t], LOOM_SUM, comm, &req);
        /* Twice, the input restored in place: each start encodes it anew. */
        for (int start = 0; start < 2 && rc == LOOM_SUCCESS; ++start) {
            if (in_place && start) memcpy(out, in, es * (size_t)total);
            rc = loom_start(req);
            if (rc == LOOM_SUCCESS) rc = loom_wait(&req);
        }
        if (req) loom_request_free(&req);
    }
    if (rc == LOOM_ERR_ALGORITHM_NOT_APPLICABLE && strcmp(how, "default") != 0) {
        free(counts), free(in), free(out);
        return 0;
    }
    CHECK(rc == LOOM_SUCCESS, "%s %s count %lld (%s, in place %d, form %d): %s: %s", collective, type_names[t],
          (long long)count, how, in_place, nb, loom_strerror(rc), loom_last_error());
    if (rc == LOOM_SUCCESS && !reference[t] && c == 0 && count == MAX_COUNT) {
        reference[t] = malloc(es * MAX_COUNT);
        memcpy(reference[t], out, es * (size_t)count);
    }
    if (rc == LOOM_SUCCESS && reference[t]) {
        const unsigned char *want = (const unsigned char *)reference[t] + es * (size_t)first;
        int64_t bad = -1;
        for (int64_t i = 0; i < mine && bad < 0; ++i)
            if (memcmp(out + es * (size_t)i, want + es * (size_t)i, es) != 0) bad = i;
        CHECK(bad < 0, "%s %s count %lld (%s, in place %d, form %d): element %lld is %.17g, not %.17g as before",
              collective, type_names[t], (long long)count, how, in_place, nb, (long long)(first + bad),
              bad < 0 ? 0 : as_double(t, out, bad * reals(t)), bad < 0 ? 0 : as_double(t, want, bad * reals(t)));
        CHECK(!memcmp(out + es * (size_t)(in_place ? total : mine), "\xab", 1), "%s wrote past its output", collective);
        /* In place, the input past the rank's block is the exact sums' to read, not to write. */
        if (in_place && c != 0 && nb != 2)
            CHECK(!memcmp(out + es * (size_t)mine, in + es * (size_t)mine, es * (size_t)(total - mine)),
                  "in-place %s %s count %lld (%s, form %d) changed recvbuf past the rank's block", collective,
                  type_names[t], (long long)count, how, nb);
    }
    free(counts), free(in), free(out);
    return 1;
}

/* The reference is the sum, within a rounding of the type: checked on a
 * long double sum of every rank's values, which each rank computes. */
static void check_accuracy(int t) {
    if (!reference[t]) return; /* the first call failed, and said so */
    const double eps = t == 0 || t == 2 ? 0x1p-52 : t == 1 ? 0x1p-23 : 0x1p-7;
    int64_t worst = -1;
    for (int64_t j = 0; j < MAX_COUNT * reals(t) && worst < 0; ++j) {
        long double exact = 0, magnitude = 0;
        for (int r = 0; r < size; ++r) {
            double v = value(r, j);
            if (t == 1) v = (float)v;
            if (t == 3) v = bf16_to_float(float_to_bf16((float)v));
            exact += v;
            magnitude += fabsl((long double)v);
        }
        const double got = as_double(t, reference[t], j);
        if (fabsl(got - exact) > eps * fabsl(exact) + 0x1p-60 * magnitude) worst = j;
    }
    CHECK(worst < 0, "reproducible %s sum of value %lld is off the exact sum by more than a rounding", type_names[t],
          (long long)worst);
}

static uint64_t hash_of(const void *buf, size_t bytes, uint64_t h) {
    for (size_t i = 0; i < bytes; ++i) h = (h ^ ((const unsigned char *)buf)[i]) * 0x100000001b3ULL;
    return h;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loom_comm_t comm;
    LOOM_OK(loom_comm_create(MPI_COMM_WORLD, &comm));
    LOOM_OK(loom_comm_set_param(comm, "reproducible", "1"));
    /* The reference: the default choice, blocking. */
    for (int t = 0; t < NTYPES; ++t) run(comm, "allreduce", t, MAX_COUNT, 0, 0, "default");
    const int64_t counts[] = {1, size + 1, 1001, MAX_COUNT};
    const char *segments[] = {"256KiB", "4KiB"};
    int forced = 0, calls = 0;
    char names[2048] = "";
    for (int i = 0; i < loom_algorithm_count(); ++i) {
        loom_algorithm_info_t algo;
        const char *memory = NULL;
        LOOM_OK(loom_algorithm_info(i, &algo));
        LOOM_OK(loom_algorithm_memory(i, &memory));
        if (strncmp(algo.collective, "allreduce", 9) && strncmp(algo.collective, "reduce_scatter", 14)) continue;
        if (memory && strcmp(memory, "host") != 0) continue;
        char param[64];
        snprintf(param, sizeof param, "%s_algorithm", algo.collective);
        LOOM_OK(loom_comm_set_param(comm, param, algo.name));
        int ran = 0;
        for (int s = 0; s < 2; ++s) {
            LOOM_OK(loom_comm_set_param(comm, "segment_size", segments[s]));
            for (int t = 0; t < NTYPES; ++t)
                for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k)
                    ran +=
                        run(comm, algo.collective, t, counts[k], (int)((k + s) % 2), (int)((k + t + s) % 3), algo.name);
        }
        calls += ran;
        if (ran) {
            ++forced;
            snprintf(names + strlen(names), sizeof names - strlen(names), " %s/%s", algo.collective, algo.name);
        }
        LOOM_OK(loom_comm_set_param(comm, "segment_size", "256KiB"));
        LOOM_OK(loom_comm_set_param(comm, param, "auto"));
    }
    for (int t = 0; t < NTYPES; ++t) check_accuracy(t);

    /* What has no order-free form is refused, naming why; integers run as they are. */
    double d[4] = {1, 2, 3, 4};
    long double ld[2] = {1, 2};
    int ints[3] = {rank, 1, -rank}, isum[3];
    CHECK(loom_allreduce(LOOM_IN_PLACE, d, 4, LOOM_DOUBLE, LOOM_PROD, comm) == LOOM_ERR_INVALID_OP &&
              strstr(loom_last_error(), "reproducible: a product of double"),
          "a reproducible double product: %s", loom_last_error());
    CHECK(loom_allreduce(LOOM_IN_PLACE, ld, 2, LOOM_LONG_DOUBLE, LOOM_SUM, comm) == LOOM_ERR_INVALID_OP &&
              strstr(loom_last_error(), "long_double"),
          "a reproducible long double sum: %s", loom_last_error());
    LOOM_OK(loom_allreduce(ints, isum, 3, LOOM_INT, LOOM_SUM, comm));
    /* Loom's own exact-sum type, just run by a blocking call of 4 doubles
     * (the shared slots' fast repeat keeps the last call's shape), is no
     * user's: the type past the public ones is refused. */
    double four[4] = {1, 2, 3, 4}, four_out[4];
    LOOM_OK(loom_allreduce(four, four_out, 4, LOOM_DOUBLE, LOOM_SUM, comm));
    CHECK(loom_allreduce(four, four_out, 4, (loom_datatype_t)LOOM_DATATYPE_COUNT, LOOM_SUM, comm) ==
              LOOM_ERR_INVALID_DATATYPE,
          "the type past the public ones was taken: %s", loom_last_error());
    CHECK(isum[0] == size * (size - 1) / 2 && isum[1] == size && isum[2] == -isum[0],
          "an integer sum under reproducible");

    /* The same bits on every rank, and the hash the script compares across runs. */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int t = 0; t < NTYPES; ++t)
        if (reference[t]) h = hash_of(reference[t], elem_size(t) * MAX_COUNT, h);
    uint64_t lowest = h, highest = h;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &highest, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lowest == highest, "the ranks' results differ");
    CHECK(forced >= 3, "only %d algorithms could be forced", forced);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("test_reproducible np=%d forced:%s\n", size, names);
        printf("test_reproducible np=%d: %d algorithms, %d calls per rank, results hash %016llx, %d failures\n", size,
               forced, calls, (unsigned long long)h, total);
    }
    for (int t = 0; t < NTYPES; ++t) free(reference[t]);
    loom_comm_free(&comm);
    MPI_Finalize();
    return total ? 1 : 0;
}
