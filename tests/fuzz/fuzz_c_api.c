/* Fuzz target: the C API's argument checks, called as a C program calls
 * them. The input picks a collective and its form (blocking, nonblocking,
 * persistent, stream-ordered, or loom_comm_prepare), a communicator (one
 * rank, three ranks, or NULL), the datatype and op (out-of-range values
 * included), the counts (negative, too large to address, or backed by
 * memory) and the buffers (NULL, the same for both, in place). Every buffer
 * is allocated at exactly the size the call may touch, so AddressSanitizer
 * reports a byte read or written outside it.
 *
 * The checks: a call with something wrong fails with a code that names one
 * of its faults and a message; a call with nothing wrong succeeds and, on
 * one rank, leaves the input in the output. On three ranks the peers are a
 * transport that completes every send and receive at once (no data
 * arrives): what is checked there is that the call stays inside its
 * buffers. Counts that memory does not back are only passed with another
 * fault, which must stop the call first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom.h"

/* The input, read a byte at a time; zeros once it runs out. */
typedef struct {
    const uint8_t *at, *end;
} input_t;

static unsigned byte_of(input_t *in) { return in->at < in->end ? *in->at++ : 0; }

static uint64_t u64_of(input_t *in) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte_of(in);
    return v;
}

/* ---- the communicators ---- */

static int posted; /* sends and receives the communicators posted */

static int post(void *context, void **handle) {
    (void)context;
    ++posted;
    *handle = &posted;
    return 0;
}
static int fake_isend(void *context, const void *buf, size_t bytes, int peer, uint32_t tag, int lane, void **handle) {
    (void)buf, (void)bytes, (void)peer, (void)tag, (void)lane;
    return post(context, handle);
}
static int fake_irecv(void *context, void *buf, size_t bytes, int peer, uint32_t tag, int lane, void **handle) {
    (void)buf, (void)bytes, (void)peer, (void)tag, (void)lane;
    return post(context, handle);
}
static int all_done(void *context, void *const *handles, size_t n, unsigned char *done) {
    (void)context, (void)handles;
    for (size_t i = 0; i < n; ++i) done[i] = 1;
    return 0;
}

static loom_comm_t make_comm(int rank, int size) {
    loom_transport_t t;
    memset(&t, 0, sizeof t);
    t.version = LOOM_TRANSPORT_VERSION;
    t.name = "fuzz";
    t.rank = rank;
    t.size = size;
    t.max_tag = 1u << 30;
    t.isend = fake_isend;
    t.irecv = fake_irecv;
    t.test_many = all_done;
    loom_comm_t comm = NULL;
    if (loom_comm_create_with_transport(&t, &comm) != LOOM_SUCCESS) {
        fprintf(stderr, "fuzz_c_api: %s\n", loom_last_error());
        abort();
    }
    return comm;
}

/* ---- one call ---- */

enum { ALLREDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, ALLGATHER, ALLTOALL, COLLECTIVES };
enum { BLOCKING, NONBLOCKING, PERSISTENT, ON_STREAM, PREPARE, FORMS };
static const char *const names[] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall"};

#define MAX_BACKED 64          /* elements per count that memory backs */
#define TOO_LARGE (1ULL << 60) /* bytes of a buffer the API must refuse above */
#define FAULT(code) (faults |= 1u << (code))

typedef struct {
    int collective, form, p, rank;
    loom_comm_t comm;
    int type, op, in_place;
    size_t elem; /* 1 for an invalid type, as the count check takes it */
    int64_t count, counts[3];
    int null_counts, null_request;
} call_t;

/* A count: mostly small and backed, sometimes negative, too large to
 * address, or large but addressable (not backed). */
static int64_t count_of(input_t *in) {
    const unsigned mode = byte_of(in) % 8;
    if (mode == 5) return -(int64_t)(1 + u64_of(in) % INT64_MAX);
    if (mode == 6) return (int64_t)(TOO_LARGE + u64_of(in) % (INT64_MAX - TOO_LARGE));
    if (mode == 7) return (int64_t)(MAX_BACKED + 1 + u64_of(in) % TOO_LARGE);
    return byte_of(in) % (MAX_BACKED + 1);
}

/* Whether a count the call reads is larger than memory backs. */
static int unbacked(const call_t *c) {
    if (c->collective != REDUCE_SCATTER) return c->count > MAX_BACKED;
    for (int i = 0; !c->null_counts && i < c->p; ++i)
        if (c->counts[i] > MAX_BACKED) return 1;
    return 0;
}

static int reduces(int collective) { return collective <= REDUCE_SCATTER_BLOCK; }

/* Elements the input and the output buffer hold (the output holds the
 * input too in place), from counts already known to be valid. */
static void buffer_elems(const call_t *c, size_t *send, size_t *recv) {
    const size_t p = (size_t)c->p, n = (size_t)c->count;
    size_t sum = 0;
    switch (c->collective) {
        case ALLREDUCE: *send = n, *recv = n; break;
        case REDUCE_SCATTER:
            for (int i = 0; i < c->p; ++i) sum += (size_t)c->counts[i];
            *send = sum, *recv = c->in_place ? sum : (size_t)c->counts[c->rank];
            return;
        case REDUCE_SCATTER_BLOCK: *send = n * p, *recv = c->in_place ? n * p : n; break;
        case ALLGATHER: *send = n, *recv = n * p; break;
        default: *send = n * p, *recv = n * p; break;
    }
}

/* The faults of the counts, by the call's rules (loom_comm_prepare "fails
 * exactly as the call would"): LOOM_ERR_INVALID_COUNT, or none. */
static unsigned count_faults(const call_t *c) {
    unsigned faults = 0;
    if (c->null_counts) return 0;
    if (c->collective == REDUCE_SCATTER) {
        unsigned __int128 sum = 0;
        for (int i = 0; i < c->p; ++i) {
            if (c->counts[i] < 0 || (unsigned __int128)c->counts[i] * c->elem > TOO_LARGE)
                FAULT(LOOM_ERR_INVALID_COUNT);
            else sum += (unsigned __int128)c->counts[i] * c->elem;
        }
        if (sum > TOO_LARGE) FAULT(LOOM_ERR_INVALID_COUNT);
        return faults;
    }
    /* Allreduce's vector is one buffer; the others have p blocks. */
    const unsigned __int128 blocks = c->collective == ALLREDUCE ? 1 : (unsigned)c->p;
    if (c->count < 0 || (unsigned __int128)c->count * c->elem * blocks > TOO_LARGE) FAULT(LOOM_ERR_INVALID_COUNT);
    return faults;
}

static uint8_t *alloc_filled(size_t bytes, uint8_t fill) {
    uint8_t *b = malloc(bytes ? bytes : 1);
    if (!b) abort();
    memset(b, fill, bytes);
    return b;
}

static int start(const call_t *c, const void *s, void *r, loom_request_t *req) {
    loom_request_t *q = c->null_request ? NULL : req;
    const int64_t *counts = c->null_counts ? NULL : c->counts;
    const loom_datatype_t t = (loom_datatype_t)c->type;
    const loom_op_t op = (loom_op_t)c->op;
    const int persistent = c->form == PERSISTENT;
    switch (c->collective) {
        case ALLREDUCE:
            return persistent ? loom_allreduce_init(s, r, c->count, t, op, c->comm, q)
                              : loom_iallreduce(s, r, c->count, t, op, c->comm, q);
        case REDUCE_SCATTER:
            return persistent ? loom_reduce_scatter_init(s, r, counts, t, op, c->comm, q)
                              : loom_ireduce_scatter(s, r, counts, t, op, c->comm, q);
        case REDUCE_SCATTER_BLOCK:
            return persistent ? loom_reduce_scatter_block_init(s, r, c->count, t, op, c->comm, q)
                              : loom_ireduce_scatter_block(s, r, c->count, t, op, c->comm, q);
        case ALLGATHER:
            return persistent ? loom_allgather_init(s, r, c->count, t, c->comm, q)
                              : loom_iallgather(s, r, c->count, t, c->comm, q);
        default:
            return persistent ? loom_alltoall_init(s, r, c->count, t, c->comm, q)
                              : loom_ialltoall(s, r, c->count, t, c->comm, q);
    }
}

static int run(const call_t *c, const void *s, void *r) {
    const int64_t *counts = c->null_counts ? NULL : c->counts;
    const loom_datatype_t t = (loom_datatype_t)c->type;
    const loom_op_t op = (loom_op_t)c->op;
    if (c->form == BLOCKING || c->form == ON_STREAM) {
        const int st = c->form == ON_STREAM;
        switch (c->collective) {
            case ALLREDUCE:
                return st ? loom_allreduce_on_stream(s, r, c->count, t, op, c->comm, NULL)
                          : loom_allreduce(s, r, c->count, t, op, c->comm);
            case REDUCE_SCATTER:
                return st ? loom_reduce_scatter_on_stream(s, r, counts, t, op, c->comm, NULL)
                          : loom_reduce_scatter(s, r, counts, t, op, c->comm);
            case REDUCE_SCATTER_BLOCK:
                return st ? loom_reduce_scatter_block_on_stream(s, r, c->count, t, op, c->comm, NULL)
                          : loom_reduce_scatter_block(s, r, c->count, t, op, c->comm);
            case ALLGATHER:
                return st ? loom_allgather_on_stream(s, r, c->count, t, c->comm, NULL)
                          : loom_allgather(s, r, c->count, t, c->comm);
            default:
                return st ? loom_alltoall_on_stream(s, r, c->count, t, c->comm, NULL)
                          : loom_alltoall(s, r, c->count, t, c->comm);
        }
    }
    loom_request_t req = NULL;
    int rc = start(c, s, r, &req);
    if (rc != LOOM_SUCCESS) {
        if (req != NULL) abort(); /* a failed call hands back no request */
        return rc;
    }
    if (c->form == PERSISTENT) {
        if (loom_start(req) != LOOM_SUCCESS) abort();
        if (loom_start(req) != LOOM_ERR_INVALID_ARGUMENT) abort(); /* already active */
        if (loom_wait(&req) != LOOM_SUCCESS || req == NULL) abort();
        if (loom_request_free(&req) != LOOM_SUCCESS || req != NULL) abort();
        return LOOM_SUCCESS;
    }
    rc = loom_wait(&req);
    if (req != NULL) abort();
    return rc;
}

static void check_failure(int rc, unsigned faults) {
    if (rc == LOOM_SUCCESS || rc < 0 || rc >= 32 || !(faults & (1u << rc)) || loom_last_error()[0] == '\0') {
        fprintf(stderr, "fuzz_c_api: returned %d (%s: %s) for faults 0x%x\n", rc, loom_strerror(rc), loom_last_error(),
                faults);
        abort();
    }
}

static void call(input_t *in, loom_comm_t one_rank, loom_comm_t three_ranks) {
    call_t c;
    memset(&c, 0, sizeof c);
    c.collective = (int)(byte_of(in) % COLLECTIVES);
    c.form = (int)(byte_of(in) % FORMS);
    const unsigned which = byte_of(in) % 8;
    c.comm = which == 7 ? NULL : which >= 5 ? three_ranks : one_rank;
    c.p = c.comm == three_ranks ? 3 : 1;
    c.rank = c.comm == three_ranks ? 1 : 0;
    /* Out-of-range values from the byte past the last valid one, or any int. */
    const unsigned tb = byte_of(in), ob = byte_of(in);
    c.type = tb < 240 ? (int)(tb % (LOOM_DATATYPE_COUNT + 2)) : (int)(uint32_t)u64_of(in);
    c.op = ob < 240 ? (int)(ob % (LOOM_OP_COUNT + 2)) : (int)(uint32_t)u64_of(in);
    size_t elem = 0;
    const int valid_type = loom_datatype_size((loom_datatype_t)c.type, &elem) == LOOM_SUCCESS;
    c.elem = valid_type ? elem : 1;
    c.count = count_of(in);
    for (int i = 0; i < 3; ++i) c.counts[i] = count_of(in);
    const unsigned bm = byte_of(in);
    c.null_counts = c.collective == REDUCE_SCATTER && bm >= 250;
    c.null_request = (c.form == NONBLOCKING || c.form == PERSISTENT) && bm % 16 == 15;
    const unsigned buffers =
        bm % 8; /* 0-2 separate, 3 no send, 4 no recv, 5 the same, 6 in place, 7 in place, no recv */
    c.in_place = buffers >= 6;

    unsigned faults = 0;
    if (c.null_request) FAULT(LOOM_ERR_INVALID_ARGUMENT);
    if (c.comm == NULL) FAULT(LOOM_ERR_INVALID_ARGUMENT);
    if (!valid_type) FAULT(LOOM_ERR_INVALID_DATATYPE);
    if (c.form != PREPARE && reduces(c.collective) && valid_type &&
        !loom_op_supported((loom_datatype_t)c.type, (loom_op_t)c.op))
        FAULT(LOOM_ERR_INVALID_OP);
    if (c.null_counts) FAULT(LOOM_ERR_INVALID_ARGUMENT);
    faults |= count_faults(&c);
    const char *name = NULL;
    if (c.form == PREPARE) {
        const unsigned nb = byte_of(in) % 8; /* mostly the call's own collective */
        name = nb == 5 ? "allscatter" : nb == 6 ? NULL : names[c.collective];
        if (nb == 5 || nb == 6) FAULT(LOOM_ERR_INVALID_ARGUMENT);
    }
    size_t send_elems = 0, recv_elems = 0;
    if (!(faults & (1u << LOOM_ERR_INVALID_COUNT)) && !c.null_counts) {
        buffer_elems(&c, &send_elems, &recv_elems);
        if (c.form != PREPARE &&
            (((buffers == 3 || buffers == 5) && send_elems > 0) || ((buffers == 4 || buffers == 7) && recv_elems > 0)))
            FAULT(LOOM_ERR_INVALID_ARGUMENT);
    }
    /* Unbacked counts only where something else must stop the call first. */
    if (unbacked(&c)) {
        if (faults == 0) return;
        send_elems = recv_elems = 0;
    }

    if (getenv("FUZZ_C_API_VERBOSE")) /* to read what a finding's input calls */
        fprintf(stderr,
                "fuzz_c_api: %s form %d on %d rank(s), type %d, op %d, count %lld, counts %lld %lld %lld%s, "
                "buffers %u, faults 0x%x\n",
                names[c.collective], c.form, c.comm ? c.p : 0, c.type, c.op, (long long)c.count, (long long)c.counts[0],
                (long long)c.counts[1], (long long)c.counts[2], c.null_counts ? " (NULL)" : "", buffers, faults);

    if (c.form == PREPARE) {
        const char *algorithm = NULL;
        const int rc = loom_comm_prepare(c.comm, name, c.count, c.null_counts ? NULL : c.counts,
                                         (loom_datatype_t)c.type, c.in_place, &algorithm);
        if (faults) check_failure(rc, faults);
        else if (rc != LOOM_SUCCESS || algorithm == NULL) check_failure(rc, 0);
        return;
    }

    /* Exactly the bytes the call may touch; the same buffer when asked. */
    const size_t send_bytes = send_elems * c.elem, recv_bytes = recv_elems * c.elem;
    uint8_t *send = buffers <= 5 && buffers != 3 ? alloc_filled(send_bytes, 0) : NULL;
    const size_t recv_room = buffers == 5 && send_bytes > recv_bytes ? send_bytes : recv_bytes;
    uint8_t *recv = buffers != 4 && buffers != 7 ? alloc_filled(recv_room, 0xA5) : NULL;
    for (size_t i = 0; send && i < send_bytes; ++i) send[i] = (uint8_t)byte_of(in);
    if (buffers == 5) {
        free(send);
        send = recv;
    }
    const void *s = c.in_place ? LOOM_IN_PLACE : send;
    const int before = posted;
    const int rc = run(&c, s, recv);
    /* A refused call posts nothing; one rank has nobody to post to. */
    if ((faults || c.p == 1) && posted != before) abort();
    if (faults) {
        check_failure(rc, faults);
    } else {
        if (rc != LOOM_SUCCESS) check_failure(rc, 0);
        /* One rank: the output is the input (in place: left as it was). */
        if (c.p == 1 && !c.in_place && recv_bytes > 0 && memcmp(recv, send, recv_bytes) != 0) abort();
        for (size_t i = 0; c.p == 1 && c.in_place && i < recv_bytes; ++i)
            if (recv[i] != 0xA5) abort();
    }
    if (send != recv) free(send);
    free(recv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static loom_comm_t one_rank, three_ranks;
    if (!one_rank) {
        one_rank = make_comm(0, 1);
        three_ranks = make_comm(1, 3);
    }
    input_t in = {data, data + size};
    /* A few calls in a row, as a program makes them (plans are cached). */
    for (int i = 0; i < 4 && in.at < in.end; ++i) call(&in, one_rank, three_ranks);
    return 0;
}
