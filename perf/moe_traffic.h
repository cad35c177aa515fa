/*
 * Traffic matrices for the vector collectives' benchmarks: how many elements
 * each rank sends each other rank in a mixture-of-experts exchange (one
 * expert per rank), and how large each rank's shard is in an allgatherv.
 * Every rank computes the same matrix from the same description and seed.
 */
#ifndef LOOM_MOE_TRAFFIC_H
#define LOOM_MOE_TRAFFIC_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TRAFFIC_UNIFORM, /* every block the mean */
    TRAFFIC_ZIPF,    /* expert popularity ~ 1/rank^s, the experts' order shuffled by the seed */
    TRAFFIC_TOPK,    /* tokens routed to k experts each, at most capacity x the fair share per expert */
    TRAFFIC_SKEW     /* every other expert (or shard) `ratio` times as large as the rest */
} traffic_kind_t;

typedef struct {
    traffic_kind_t kind;
    double s;        /* zipf exponent (zipf; topk's gate bias, 0: uniform gate) */
    int k;           /* topk: experts per token */
    double capacity; /* topk: capacity factor (tokens an expert takes from a rank, over the fair share) */
    double ratio;    /* skew */
    int tokens;      /* topk: tokens per rank */
    uint64_t seed;
} traffic_t;

/* "uniform", "zipf:S", "topk:K[:CF[:S]]" or "skew:R"; 0 and a message in
 * `why` when the text is not one of them. */
int traffic_parse(const char *text, uint64_t seed, traffic_t *out, char *why, size_t why_cap);

/* counts[i * p + j]: elements rank i sends rank j, for blocks of `mean`
 * elements on average (before topk drops tokens over capacity). */
void traffic_matrix(const traffic_t *t, int p, long mean, int64_t *counts);

/* shards[i]: rank i's allgatherv contribution, `mean` elements on average
 * (uniform, zipf and skew; topk has no shards: returns 0). */
int traffic_shards(const traffic_t *t, int p, long mean, int64_t *shards);

/* One line for the benchmark's header: the kind, its parameters, the seed. */
void traffic_describe(const traffic_t *t, char *buf, size_t cap);

#endif
