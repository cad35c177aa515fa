#include "moe_traffic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: the same sequence on every rank and every libc. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double uniform01(uint64_t *state) { return (double)(next_random(state) >> 11) / 9007199254740992.0; }

int traffic_parse(const char *text, uint64_t seed, traffic_t *out, char *why, size_t why_cap) {
    memset(out, 0, sizeof *out);
    out->seed = seed;
    out->k = 2;
    out->capacity = 1.25;
    out->tokens = 512;
    char extra = 0;
    if (!strcmp(text, "uniform")) {
        out->kind = TRAFFIC_UNIFORM;
        return 1;
    }
    if (sscanf(text, "zipf:%lf%c", &out->s, &extra) == 1 && out->s >= 0) {
        out->kind = TRAFFIC_ZIPF;
        return 1;
    }
    if (sscanf(text, "skew:%lf%c", &out->ratio, &extra) == 1 && out->ratio >= 1) {
        out->kind = TRAFFIC_SKEW;
        return 1;
    }
    if (!strncmp(text, "topk:", 5)) {
        const int n = sscanf(text, "topk:%d:%lf:%lf%c", &out->k, &out->capacity, &out->s, &extra);
        if (n >= 1 && n <= 3 && out->k >= 1 && out->capacity > 0 && out->s >= 0) {
            out->kind = TRAFFIC_TOPK;
            return 1;
        }
    }
    snprintf(why, why_cap,
             "traffic '%s': want uniform, zipf:S (S >= 0), skew:R (R >= 1) or topk:K[:CF[:S]] (K >= 1 experts "
             "per token, capacity factor CF > 0, default 1.25, gate bias S >= 0, default 0)",
             text);
    return 0;
}

/* Popularity of each of p experts, summing to 1: 1/(r+1)^s for the r-th
 * most popular, the order of the experts shuffled by the seed. */
static void popularity(double s, int p, uint64_t seed, double *pop) {
    int *order = malloc(sizeof(int) * (size_t)p);
    for (int i = 0; i < p; ++i) order[i] = i;
    uint64_t state = seed;
    for (int i = p - 1; i > 0; --i) {
        const int j = (int)(next_random(&state) % (uint64_t)(i + 1));
        const int x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    double total = 0;
    for (int r = 0; r < p; ++r) total += pop[order[r]] = 1.0 / pow(r + 1, s);
    for (int i = 0; i < p; ++i) pop[i] /= total;
    free(order);
}

/* Weights summing to 1: the share of a rank's data each expert (or shard) gets. */
static void weights(const traffic_t *t, int p, double *w) {
    for (int j = 0; j < p; ++j) w[j] = 1.0 / p;
    if (t->kind == TRAFFIC_ZIPF) popularity(t->s, p, t->seed, w);
    if (t->kind == TRAFFIC_SKEW) {
        double total = 0;
        for (int j = 0; j < p; ++j) total += w[j] = j % 2 == 0 ? t->ratio : 1;
        for (int j = 0; j < p; ++j) w[j] /= total;
    }
}

/* Rounds shares of `total` elements so the row sums to it exactly. */
static void apportion(const double *w, int p, long total, int64_t *out) {
    int64_t given = 0;
    for (int j = 0; j < p; ++j) given += out[j] = (int64_t)floor(w[j] * (double)total);
    for (int j = 0; given < total; j = (j + 1) % p, ++given) ++out[j];
}

/* Top-k routing: each of `tokens` tokens on each rank picks k distinct
 * experts, by the gate's popularity; an expert takes at most capacity x
 * tokens x k / p of one rank's tokens (Switch Transformer's capacity), the
 * rest are dropped; a token is `token_elems` elements. */
static void route_tokens(const traffic_t *t, int p, long mean, int64_t *counts) {
    const int k = t->k < p ? t->k : p;
    const long token_elems = mean * p / ((long)t->tokens * k) > 0 ? mean * p / ((long)t->tokens * k) : 1;
    const int64_t cap = (int64_t)ceil(t->capacity * t->tokens * k / p);
    double *pop = malloc(sizeof(double) * (size_t)p), *left = malloc(sizeof(double) * (size_t)p);
    popularity(t->s, p, t->seed, pop);
    for (int i = 0; i < p; ++i) {
        uint64_t state = t->seed * 1000003ULL + (uint64_t)i;
        int64_t *row = counts + (size_t)i * p;
        for (int j = 0; j < p; ++j) row[j] = 0;
        for (int token = 0; token < t->tokens; ++token) {
            /* k draws without replacement from the popularity. */
            memcpy(left, pop, sizeof(double) * (size_t)p);
            double mass = 1;
            for (int c = 0; c < k; ++c) {
                double x = uniform01(&state) * mass;
                int e = 0;
                while (e < p - 1 && (left[e] == 0 || x >= left[e])) {
                    x -= left[e];
                    ++e;
                }
                while (left[e] == 0) e = (e + 1) % p; /* rounding at the end of the range */
                mass -= left[e];
                left[e] = 0;
                if (row[e] < cap) ++row[e];
            }
        }
        for (int j = 0; j < p; ++j) row[j] *= token_elems;
    }
    free(pop);
    free(left);
}

void traffic_matrix(const traffic_t *t, int p, long mean, int64_t *counts) {
    if (t->kind == TRAFFIC_TOPK) {
        route_tokens(t, p, mean, counts);
        return;
    }
    double *w = malloc(sizeof(double) * (size_t)p);
    weights(t, p, w);
    for (int i = 0; i < p; ++i) apportion(w, p, mean * p, counts + (size_t)i * p);
    free(w);
}

int traffic_shards(const traffic_t *t, int p, long mean, int64_t *shards) {
    if (t->kind == TRAFFIC_TOPK) return 0;
    double *w = malloc(sizeof(double) * (size_t)p);
    weights(t, p, w);
    apportion(w, p, mean * p, shards);
    free(w);
    return 1;
}

void traffic_describe(const traffic_t *t, char *buf, size_t cap) {
    switch (t->kind) {
        case TRAFFIC_UNIFORM: snprintf(buf, cap, "uniform"); break;
        case TRAFFIC_ZIPF: snprintf(buf, cap, "zipf s=%g, seed %llu", t->s, (unsigned long long)t->seed); break;
        case TRAFFIC_SKEW: snprintf(buf, cap, "skew %g:1 (every other rank)", t->ratio); break;
        case TRAFFIC_TOPK:
            snprintf(buf, cap, "top-%d routing of %d tokens per rank, capacity factor %g, gate bias s=%g, seed %llu",
                     t->k, t->tokens, t->capacity, t->s, (unsigned long long)t->seed);
            break;
    }
}
