// The public C API (loom.h): argument checking with clear messages, then the
// Communicator does the work.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <numeric>

#include "algorithms/algorithm.hpp"
#include "algorithms/compose.hpp"
#include "runtime/communicator.hpp"
#include "runtime/device_call.hpp"
#include "runtime/setup_mpi.hpp"
#include "transport/external/external.hpp"
#include "transport/mpi/mpi.hpp"
#include "transport/registry.hpp"
#include "transport/shm/params.hpp"

struct loom_comm {
    std::unique_ptr<loom::Communicator> impl;
    // What loom_comm_transport_info last handed out (its arrays point here).
    struct TransportReport {
        std::vector<loom::TransportCounters> counters;
        std::vector<loom_transport_counters_t> transports;
        std::vector<std::vector<loom_lane_counters_t>> lanes;
        std::vector<std::vector<const char *>> extra_names;
        std::vector<std::vector<uint64_t>> extra_values;
    } report;
    loom::DeviceCalls device;  // calls on device buffers (runtime/device_call.hpp)
    loom::ReproducibleCall reproducible;  // the blocking reproducible sums' exact sums, reused
    // The per-peer arrays of its blocking vector calls, lent to each call
    // and given back (LentArrays): a loop of calls allocates none.
    std::vector<size_t> spare_arrays[4];
};
struct loom_shm_inbox {
    loom::SharedMemoryNode node;
    std::string key;
    int rank = 0;
};
struct loom_request {
    std::unique_ptr<loom::Request> impl;
    // Device buffers: the host stand-ins the call runs on; copied out once
    // the call finished (copy_pending).
    std::unique_ptr<loom::StagedCall> staged;
    bool copy_pending = false;
    // A reproducible sum: its result decoded into recvbuf once, when it is
    // done (decode_pending).
    std::unique_ptr<loom::ReproducibleCall> exact;
    bool decode_pending = false;
};

namespace loom {
namespace {

// Above this many bytes per buffer the arithmetic of offsets could overflow.
constexpr unsigned __int128 kMaxBufferBytes = 1ULL << 60;

Status check_comm(loom_comm_t comm) {
    if (!comm || !comm->impl)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "communicator is NULL (create it with loom_comm_create)");
    return LOOM_SUCCESS;
}

Status check_count(int64_t count, const char *what, size_t elem_size, int nranks) {
    if (count < 0)
        return fail(LOOM_ERR_INVALID_COUNT, std::string(what) + " is negative (" + std::to_string(count) + ")");
    // Integer arithmetic: a long double product cost more than the rest of
    // a one-rank call's checks. count * elem_size < 2^127; once it is at
    // most 2^60, times nranks < 2^31 still fits.
    const unsigned __int128 per_rank = static_cast<unsigned __int128>(count) * elem_size;
    if (per_rank > kMaxBufferBytes || per_rank * static_cast<unsigned>(nranks) > kMaxBufferBytes)
        return fail(LOOM_ERR_INVALID_COUNT, std::string(what) + " = " + std::to_string(count) + " elements of " +
                                                std::to_string(elem_size) + " bytes on " + std::to_string(nranks) +
                                                " ranks is too large to address");
    return LOOM_SUCCESS;
}

Status check_buffers(const void *sendbuf, void *recvbuf, size_t send_elems, size_t recv_elems) {
    if (sendbuf == nullptr && send_elems > 0)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "sendbuf is NULL with a nonzero count (use LOOM_IN_PLACE for in-place)");
    if (recvbuf == nullptr && recv_elems > 0)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "recvbuf is NULL with a nonzero count");
    if (sendbuf != nullptr && sendbuf != MPI_IN_PLACE && sendbuf == recvbuf && send_elems > 0)
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    "sendbuf and recvbuf are the same buffer; pass LOOM_IN_PLACE as sendbuf instead");
    return LOOM_SUCCESS;
}

bool is_in_place(const void *sendbuf) { return sendbuf == MPI_IN_PLACE; }

// Common front half of every collective: checks, then start.

Status learn_node_counts(Communicator &c, CollArgs &a);
CountExchange count_exchange(const Communicator &c, const CollArgs &a);

// A sum under the reproducible parameter: run on exact sums, decoded into
// recvbuf when done (at once for a blocking call).
Status start_reproducible(loom_comm_t comm, const CollArgs &full, const CallData &call, Started *req, Launch launch) {
    Communicator &c = *comm->impl;
    if (cuda_driver_loaded()) {
        CollArgs sized = full;
        sized.elem_size = datatype_info(call.type)->size;
        if (staging_need(sized, c.rank(), call).any())
            return fail(LOOM_ERR_INVALID_ARGUMENT,
                        "reproducible: sums of device buffers are not made reproducible yet (" + full.describe() +
                            "); pass host buffers, or set reproducible to 0");
    }
    if (launch == Launch::blocking) {
        ReproducibleCall &r = comm->reproducible;
        LOOM_RETURN_IF_ERROR(r.prepare(full, c.rank(), call));
        r.encode_input();
        CollArgs inner = r.inner_args();
        LOOM_RETURN_IF_ERROR(c.run(inner, r.inner_call()));
        r.decode_output();
        return LOOM_SUCCESS;
    }
    auto r = std::make_unique<ReproducibleCall>();
    LOOM_RETURN_IF_ERROR(r->prepare(full, c.rank(), call));
    CollArgs inner = r->inner_args();
    if (launch == Launch::nonblocking) {
        r->encode_input();
        LOOM_RETURN_IF_ERROR(c.start(std::move(inner), r->inner_call(), &req->request));
    } else {
        LOOM_RETURN_IF_ERROR(c.init(std::move(inner), r->inner_call(), &req->request));
    }
    req->exact = std::move(r);
    return LOOM_SUCCESS;
}

// `learn_counts`: an alltoallv that learns the other ranks' counts before it
// is planned; a nonblocking one on host buffers learns them in its request.
Status start_call(loom_comm_t comm, CollArgs &full, const void *sendbuf, void *recvbuf, loom_datatype_t type,
                  loom_op_t op, bool reduces, Started *req, Launch launch, bool learn_counts = false) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (reduces) {
        LOOM_RETURN_IF_ERROR(check_reduction(type, op));
    } else {
        LOOM_RETURN_IF_ERROR(check_datatype(type));
    }
    Communicator &c = *comm->impl;
    full.nranks = c.size();
    const bool in_place = is_in_place(sendbuf);
    full.in_place = in_place;
    const size_t send_elems = in_place ? 0 : full.input_count();
    const size_t recv_elems = full.output_count(c.rank());
    LOOM_RETURN_IF_ERROR(check_buffers(in_place ? nullptr : sendbuf, recvbuf, send_elems, recv_elems));
    if (in_place && recvbuf == nullptr && full.input_count() > 0)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "in-place call with a NULL recvbuf and a nonzero count");
    const CallData call = CallData::of(sendbuf, in_place, recvbuf, type, op);
    if (reduces && c.config().integer(kParamReproducible)) {
        std::string why;
        switch (reproducible_need(c.config(), type, op, c.size(), &why)) {
            case ReproducibleNeed::none: break;
            case ReproducibleNeed::refused: return fail(LOOM_ERR_INVALID_OP, why);
            case ReproducibleNeed::exact_sums: return start_reproducible(comm, full, call, req, launch);
        }
    }
    // Without a driver, device buffers cannot exist: one check.
    if (cuda_driver_loaded()) {
        full.elem_size = datatype_info(type)->size;  // the copies' sizes; the communicator sets the rest
        const StagingNeed need = staging_need(full, c.rank(), call);
        if (need.any()) {
            if (learn_counts) LOOM_RETURN_IF_ERROR(learn_node_counts(c, full));
            return start_device_call(c, comm->device, std::move(full), call, need, req, launch);
        }
    }
    if (learn_counts) {
        if (launch == Launch::nonblocking) {
            CountExchange exchange = count_exchange(c, full);  // before `full` is moved away
            return c.start_after_counts(std::move(full), call, std::move(exchange), &req->request);
        }
        LOOM_RETURN_IF_ERROR(learn_node_counts(c, full));
    }
    // A blocking call runs on the communicator's reusable request.
    switch (launch) {
        case Launch::blocking: return c.run(full, call);
        case Launch::nonblocking: return c.start(std::move(full), call, &req->request);
        default: return c.init(std::move(full), call, &req->request);
    }
}

// A finished staged call's output, copied to the device once.
Status copied_out(loom_request &r, Status finished) {
    if (r.decode_pending) {
        r.decode_pending = false;
        if (finished == LOOM_SUCCESS) r.exact->decode_output();
    }
    if (!r.copy_pending) return finished;
    r.copy_pending = false;
    const Status st = r.staged->copy_out();
    return finished != LOOM_SUCCESS ? finished : st;
}

int nonblocking(Status st, Started &req, loom_request_t *out) {
    if (st != LOOM_SUCCESS) return st;
    auto *r = new (std::nothrow) loom_request;
    if (!r) {
        req.request->wait();  // never leave user buffers half written
        if (req.staged && !req.request->persistent()) (void)req.staged->copy_out();
        if (req.exact && !req.request->persistent()) req.exact->decode_output();
        return fail(LOOM_ERR_NO_MEMORY, "cannot allocate a request");
    }
    r->impl = std::move(req.request);
    r->copy_pending = req.staged && !r->impl->persistent();
    r->staged = std::move(req.staged);
    r->decode_pending = req.exact && !r->impl->persistent();
    r->exact = std::move(req.exact);
    *out = r;
    return LOOM_SUCCESS;
}

// A call that returns a request (nonblocking or persistent): `make` builds
// and, for a nonblocking one, starts it.
template <typename Make>
int with_request(loom_request_t *out, Make make) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "request pointer is NULL");
    Started req;
    return nonblocking(make(&req), req, out);
}

// A user's type: Loom's own (past the public ones) is as unknown as any other.
size_t elem_size_or_one(loom_datatype_t t) {
    return static_cast<unsigned>(t) < LOOM_DATATYPE_COUNT ? datatype_info(t)->size : 1;
}

int comm_size_or_one(loom_comm_t comm) { return comm && comm->impl ? comm->impl->size() : 1; }

// The per-peer arrays of a blocking vector call, lent by its communicator
// for the call and given back after it, so that they keep their capacity:
// a loop of calls allocates none. The first `arrays` of recv_counts,
// recv_displs, send_counts and send_displs (those the collective fills).
// Calls that return a request keep arrays of their own.
class LentArrays {
  public:
    LentArrays(loom_comm_t comm, CollArgs &a, Launch launch, int arrays)
        : comm_(launch == Launch::blocking ? comm : nullptr), a_(a), arrays_(arrays) {
        swap();
    }
    ~LentArrays() { swap(); }
    LentArrays(const LentArrays &) = delete;
    LentArrays &operator=(const LentArrays &) = delete;

  private:
    void swap() {
        if (!comm_) return;
        std::vector<size_t> *const mine[4] = {&a_.recv_counts, &a_.recv_displs, &a_.send_counts, &a_.send_displs};
        for (int i = 0; i < arrays_; ++i) mine[i]->swap(comm_->spare_arrays[i]);
    }
    loom_comm_t comm_;
    CollArgs &a_;
    int arrays_;
};

// Inlined into each entry point (as the compiler chose before for some):
// a call through another function costs the one-rank calls measurably
// (perf/callgrind-per-call.sh).
[[gnu::always_inline]] inline Status make_allreduce(const void *s, void *r, int64_t count, loom_datatype_t t,
                                                    loom_op_t op, loom_comm_t comm, Started *req, Launch launch) {
    LOOM_RETURN_IF_ERROR(check_count(count, "count", elem_size_or_one(t), 1));
    CollArgs a;
    a.collective = Collective::allreduce;
    a.count = static_cast<size_t>(count);
    return start_call(comm, a, s, r, t, op, true, req, launch);
}

Status make_reduce_scatter(const void *s, void *r, const int64_t *counts, loom_datatype_t t, loom_op_t op,
                           loom_comm_t comm, Started *req, Launch launch) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!counts) return fail(LOOM_ERR_INVALID_ARGUMENT, "recvcounts is NULL");
    CollArgs a;
    const LentArrays lent(comm, a, launch, 1);
    a.collective = Collective::reduce_scatter;
    const int p = comm->impl->size();
    const size_t elem_size = elem_size_or_one(t);
    unsigned __int128 total_bytes = 0;  // at most p * 2^60: no overflow
    a.recv_counts.resize(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) {
        // The message naming the entry is built only when it is bad: this loop runs on every call.
        const unsigned __int128 bytes = static_cast<unsigned __int128>(counts[i] < 0 ? 0 : counts[i]) * elem_size;
        if (counts[i] < 0 || bytes > kMaxBufferBytes)
            return check_count(counts[i], ("recvcounts[" + std::to_string(i) + "]").c_str(), elem_size, 1);
        total_bytes += bytes;
        a.recv_counts[static_cast<size_t>(i)] = static_cast<size_t>(counts[i]);
    }
    if (total_bytes > kMaxBufferBytes)
        return fail(LOOM_ERR_INVALID_COUNT, "the sum of recvcounts is too large to address");
    return start_call(comm, a, s, r, t, op, true, req, launch);
}

[[gnu::always_inline]] inline Status make_reduce_scatter_block(const void *s, void *r, int64_t count, loom_datatype_t t,
                                                               loom_op_t op, loom_comm_t comm, Started *req,
                                                               Launch launch) {
    LOOM_RETURN_IF_ERROR(check_count(count, "recvcount", elem_size_or_one(t), comm_size_or_one(comm)));
    CollArgs a;
    a.collective = Collective::reduce_scatter_block;
    a.count = static_cast<size_t>(count);
    return start_call(comm, a, s, r, t, op, true, req, launch);
}

[[gnu::always_inline]] inline Status make_gather_like(Collective c, const void *s, void *r, int64_t count,
                                                      loom_datatype_t t, loom_comm_t comm, Started *req,
                                                      Launch launch) {
    LOOM_RETURN_IF_ERROR(check_count(count, "count", elem_size_or_one(t), comm_size_or_one(comm)));
    CollArgs a;
    a.collective = c;
    a.count = static_cast<size_t>(count);
    return start_call(comm, a, s, r, t, LOOM_SUM, false, req, launch);
}

// One rank's blocks of a vector collective: counts and displacements checked
// (named `counts_name`[i] and `displs_name`[i] in errors) and copied.
Status vector_side(const int64_t *counts, const int64_t *displs, const char *counts_name, const char *displs_name,
                   int p, size_t elem_size, std::vector<size_t> *counts_out, std::vector<size_t> *displs_out) {
    if (!counts) return fail(LOOM_ERR_INVALID_ARGUMENT, std::string(counts_name) + " is NULL");
    if (!displs) return fail(LOOM_ERR_INVALID_ARGUMENT, std::string(displs_name) + " is NULL");
    counts_out->resize(static_cast<size_t>(p));
    displs_out->resize(static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) {
        const int64_t c = counts[i], d = displs[i];
        // The end of the block in bytes: at most 2^63 * 2 * 2^6, no overflow in 128 bits.
        const unsigned __int128 end =
            (static_cast<unsigned __int128>(c < 0 ? 0 : c) + static_cast<unsigned __int128>(d < 0 ? 0 : d)) * elem_size;
        if (c < 0 || d < 0 || end > kMaxBufferBytes) {
            const std::string at = "[" + std::to_string(i) + "]";
            if (c < 0) return check_count(c, (counts_name + at).c_str(), elem_size, 1);
            if (d < 0)
                return fail(LOOM_ERR_INVALID_ARGUMENT,
                            std::string(displs_name) + at + " is negative (" + std::to_string(d) + ")");
            return fail(LOOM_ERR_INVALID_COUNT,
                        std::string(displs_name) + at + " + " + counts_name + at + " is too large to address");
        }
        (*counts_out)[static_cast<size_t>(i)] = static_cast<size_t>(c);
        (*displs_out)[static_cast<size_t>(i)] = static_cast<size_t>(d);
    }
    return LOOM_SUCCESS;
}

// Received blocks that overlap would be written by two peers: an error naming both.
Status check_no_overlap(const std::vector<size_t> &counts, const std::vector<size_t> &displs, int me,
                        const char *counts_name, const char *displs_name) {
    std::vector<int> order;
    for (size_t i = 0; i < counts.size(); ++i)
        if (counts[i]) order.push_back(static_cast<int>(i));
    std::sort(order.begin(), order.end(), [&](int x, int y) { return displs[x] < displs[y]; });
    for (size_t k = 1; k < order.size(); ++k) {
        const int before = order[k - 1], after = order[k];
        if (displs[before] + counts[before] > displs[after])
            return fail(LOOM_ERR_INVALID_ARGUMENT,
                        "rank " + std::to_string(me) + ": the blocks from ranks " + std::to_string(before) + " and " +
                            std::to_string(after) + " overlap in recvbuf (" + displs_name + " " +
                            std::to_string(displs[before]) + " + " + counts_name + " " +
                            std::to_string(counts[before]) + " > " + std::to_string(displs[after]) + ")");
    }
    return LOOM_SUCCESS;
}

const ParamId kParamCheckVectorCounts = declare_param(
    ParamSection::diagnostics,
    {"check_vector_counts", ParamType::integer, "0", 3,
     "1: before each alltoallv the ranks exchange their counts (an alltoall of one count per peer), before each "
     "allgatherv they compare their recvcounts (two allreduces), and where counts disagree every rank fails with "
     "LOOM_ERR_MISMATCH naming the first rank and peer at fault; 0: counts are trusted, as MPI does (a "
     "disagreement ends in a truncation error, a short block or a wait that hang_timeout reports)",
     0, 1, Collective::alltoallv});

// The arguments of an alltoallv as this rank passed them, checked.
Status alltoallv_args(loom_comm_t comm, const void *s, const int64_t *scounts, const int64_t *sdispls,
                      const int64_t *rcounts, const int64_t *rdispls, loom_datatype_t t, CollArgs *a) {
    const int p = comm->impl->size(), me = comm->impl->rank();
    const size_t elem_size = elem_size_or_one(t);
    a->collective = Collective::alltoallv;
    LOOM_RETURN_IF_ERROR(
        vector_side(rcounts, rdispls, "recvcounts", "rdispls", p, elem_size, &a->recv_counts, &a->recv_displs));
    LOOM_RETURN_IF_ERROR(check_no_overlap(a->recv_counts, a->recv_displs, me, "recvcounts", "rdispls"));
    if (is_in_place(s)) {
        a->send_counts = a->recv_counts;
        a->send_displs = a->recv_displs;
        return LOOM_SUCCESS;
    }
    LOOM_RETURN_IF_ERROR(
        vector_side(scounts, sdispls, "sendcounts", "sdispls", p, elem_size, &a->send_counts, &a->send_displs));
    if (a->send_counts[me] != a->recv_counts[me])
        return fail(LOOM_ERR_INVALID_COUNT, "rank " + std::to_string(me) + " sends itself sendcounts[" +
                                                std::to_string(me) + "] = " + std::to_string(a->send_counts[me]) +
                                                " elements but expects recvcounts[" + std::to_string(me) +
                                                "] = " + std::to_string(a->recv_counts[me]));
    return LOOM_SUCCESS;
}

// The arguments of an allgatherv as this rank passed them, checked.
Status allgatherv_args(loom_comm_t comm, const void *s, int64_t count, const int64_t *rcounts, const int64_t *displs,
                       loom_datatype_t t, CollArgs *a) {
    const int p = comm->impl->size(), me = comm->impl->rank();
    const size_t elem_size = elem_size_or_one(t);
    a->collective = Collective::allgatherv;
    LOOM_RETURN_IF_ERROR(
        vector_side(rcounts, displs, "recvcounts", "displs", p, elem_size, &a->recv_counts, &a->recv_displs));
    LOOM_RETURN_IF_ERROR(check_no_overlap(a->recv_counts, a->recv_displs, me, "recvcounts", "displs"));
    if (is_in_place(s)) {
        a->count = a->recv_counts[me];
        return LOOM_SUCCESS;
    }
    LOOM_RETURN_IF_ERROR(check_count(count, "sendcount", elem_size, 1));
    if (static_cast<size_t>(count) != a->recv_counts[me])
        return fail(LOOM_ERR_INVALID_COUNT,
                    "rank " + std::to_string(me) + " sends sendcount = " + std::to_string(count) +
                        " elements but recvcounts[" + std::to_string(me) + "] = " + std::to_string(a->recv_counts[me]));
    a->count = static_cast<size_t>(count);
    return LOOM_SUCCESS;
}

// check_vector_counts: the ranks agree on the first fault any of them found
// and all fail alike. A rank whose own arguments are bad (`local`) comes
// first, as its rank; then disagreements, as p + rank * p + index. `what`
// describes a disagreement at (rank, index) with this rank's knowledge.
template <typename Describe>
Status agree_on_faults(loom_comm_t comm, Status local, int64_t mine, Describe what) {
    const int p = comm->impl->size(), me = comm->impl->rank();
    const std::string local_message = local != LOOM_SUCCESS ? last_error_message() : "";
    if (local != LOOM_SUCCESS) mine = me;
    int64_t first = mine;
    LOOM_RETURN_IF_ERROR(comm->impl->allreduce_int64(&first, 1, LOOM_MIN));
    if (first == INT64_MAX) return LOOM_SUCCESS;
    if (local != LOOM_SUCCESS) return fail(local, local_message);
    if (first < p)
        return fail(LOOM_ERR_MISMATCH, "rank " + std::to_string(first) +
                                           " passed invalid arguments (its own error names them; check_vector_counts)");
    first -= p;
    return fail(LOOM_ERR_MISMATCH, what(static_cast<int>(first / p), static_cast<int>(first % p)));
}

// A disagreement's code for agree_on_faults.
int64_t disagreement(int p, int rank, int index) { return p + static_cast<int64_t>(rank) * p + index; }

// check_vector_counts for alltoallv: what each peer sends this rank against
// what this rank expects from it.
Status check_alltoallv_counts(loom_comm_t comm, Status local, CollArgs &a) {
    const int p = comm->impl->size(), me = comm->impl->rank();
    a.send_counts.resize(static_cast<size_t>(p));  // a rank with bad arguments says it sends nothing
    std::vector<int64_t> sends(static_cast<size_t>(p), 0), sent_to_me(static_cast<size_t>(p));
    if (local == LOOM_SUCCESS) std::copy(a.send_counts.begin(), a.send_counts.end(), sends.begin());
    const std::string local_message = local != LOOM_SUCCESS ? last_error_message() : "";
    LOOM_RETURN_IF_ERROR(comm->impl->alltoall_int64(sends.data(), sent_to_me.data(), 1));
    if (local != LOOM_SUCCESS) (void)fail(local, local_message);
    int64_t mine = INT64_MAX;
    for (int i = 0; local == LOOM_SUCCESS && i < p && mine == INT64_MAX; ++i)
        if (static_cast<size_t>(sent_to_me[i]) != a.recv_counts[i]) mine = disagreement(p, me, i);
    return agree_on_faults(comm, local, mine, [&](int at, int peer) {
        std::string why = "alltoallv counts disagree (check_vector_counts): rank " + std::to_string(at) +
                          " expects recvcounts[" + std::to_string(peer) + "]";
        if (at == me)
            return why + " = " + std::to_string(a.recv_counts[peer]) + " elements from rank " + std::to_string(peer) +
                   ", which sends it " + std::to_string(sent_to_me[peer]);
        return why + " elements from rank " + std::to_string(peer) + ", which sends it another count";
    });
}

// check_vector_counts for allgatherv: every rank's recvcounts alike.
Status check_allgatherv_counts(loom_comm_t comm, Status local, const CollArgs &a) {
    const int p = comm->impl->size(), me = comm->impl->rank();
    std::vector<int64_t> mine(static_cast<size_t>(p), 0);
    if (local == LOOM_SUCCESS) std::copy(a.recv_counts.begin(), a.recv_counts.end(), mine.begin());
    const std::string local_message = local != LOOM_SUCCESS ? last_error_message() : "";
    std::vector<int64_t> largest = mine;
    LOOM_RETURN_IF_ERROR(comm->impl->allreduce_int64(largest.data(), largest.size(), LOOM_MAX));
    if (local != LOOM_SUCCESS) (void)fail(local, local_message);
    int64_t flagged = INT64_MAX;
    for (int i = 0; local == LOOM_SUCCESS && i < p && flagged == INT64_MAX; ++i)
        if (mine[i] != largest[i]) flagged = disagreement(p, me, i);
    return agree_on_faults(comm, local, flagged, [&](int at, int index) {
        std::string why = "allgatherv counts disagree (check_vector_counts): rank " + std::to_string(at) +
                          " has recvcounts[" + std::to_string(index) + "]";
        if (at == me) why += " = " + std::to_string(mine[index]);
        return why + " where another rank has " + std::to_string(largest[index]);
    });
}

bool checks_vector_counts(loom_comm_t comm) { return comm->impl->config().integer(kParamCheckVectorCounts) != 0; }

const ParamId kParamAlltoallvGatherCounts = declare_param(
    ParamSection::algorithms,
    {"alltoallv_gather_counts", ParamType::choice, "auto", 4,
     "Whether an alltoallv first learns what the node-aware alltoallv (node_aggregation) needs to size what its "
     "agents forward, and what selection by size needs: the counts of its node's ranks (an alltoallv among them) "
     "and every rank's total and largest block (an allgather of two numbers per rank): auto, on communicators that "
     "span several nodes or where node_aggregation is forced; on, always; off, never (node_aggregation then cannot "
     "run)",
     0, 0, Collective::alltoallv, "auto,on,off"});

const ParamId kParamAlltoallvCountMatrixMaxRanks = declare_param(
    ParamSection::algorithms,
    {"alltoallv_count_matrix_max_ranks", ParamType::integer, "64", 5,
     "Up to this many ranks, an alltoallv that learns the others' counts (alltoallv_gather_counts) gathers every "
     "rank's in one allgather of p counts per rank; above it, in two calls, the counts of its node's ranks (an "
     "alltoallv among them) and every rank's total and largest block (an allgather of two numbers per rank), so "
     "that a rank holds ranks-per-node x p counts instead of p x p. The plans are the same either way",
     0, 1LL << 30, Collective::alltoallv});

// Whether an alltoallv on `comm` learns the others' counts first: as
// alltoallv_gather_counts says, and (unless off) where the algorithm that
// needs them is forced, which every rank does alike.
bool learns_others_counts(loom_comm_t comm) {
    const Config &config = comm->impl->config();
    const long long mode = config.integer(kParamAlltoallvGatherCounts);
    return mode == 1 || (mode == 0 && (comm->impl->nodes().nodes() >= 2 ||
                                       forced_algorithm(config, Collective::alltoallv) == "node_aggregation"));
}

// What an alltoallv across nodes learns before it runs
// (CollArgs::node_counts), where alltoallv_gather_counts asks for it (auto:
// across nodes): up to alltoallv_count_matrix_max_ranks ranks, every rank's
// counts; above, only what needs no p x p matrix (runtime/count_exchange.hpp).
CountExchange count_exchange(const Communicator &c, const CollArgs &a) {
    const bool whole_matrix = c.size() <= c.config().integer(kParamAlltoallvCountMatrixMaxRanks);
    return CountExchange(a, c.rank(), c.nodes(), whole_matrix);
}

// The exchange run to completion, before the alltoallv starts.
Status learn_node_counts(Communicator &c, CollArgs &a) {
    CountExchange exchange = count_exchange(c, a);
    for (CountExchange::Call &call : exchange.calls())
        LOOM_RETURN_IF_ERROR(c.run_internal(std::move(call.args), call.in, call.out, call.type));
    a.node_counts = exchange.result();
    return LOOM_SUCCESS;
}

Status make_alltoallv(const void *s, const int64_t *scounts, const int64_t *sdispls, void *r, const int64_t *rcounts,
                      const int64_t *rdispls, loom_datatype_t t, loom_comm_t comm, Started *req, Launch launch) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    CollArgs a;
    const LentArrays lent(comm, a, launch, 4);
    const Status local = alltoallv_args(comm, s, scounts, sdispls, rcounts, rdispls, t, &a);
    if (checks_vector_counts(comm)) LOOM_RETURN_IF_ERROR(check_alltoallv_counts(comm, local, a));
    LOOM_RETURN_IF_ERROR(local);
    return start_call(comm, a, s, r, t, LOOM_SUM, false, req, launch, learns_others_counts(comm));
}

Status make_allgatherv(const void *s, int64_t count, void *r, const int64_t *rcounts, const int64_t *displs,
                       loom_datatype_t t, loom_comm_t comm, Started *req, Launch launch) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    CollArgs a;
    const LentArrays lent(comm, a, launch, 2);
    const Status local = allgatherv_args(comm, s, count, rcounts, displs, t, &a);
    if (checks_vector_counts(comm)) LOOM_RETURN_IF_ERROR(check_allgatherv_counts(comm, local, a));
    LOOM_RETURN_IF_ERROR(local);
    return start_call(comm, a, s, r, t, LOOM_SUM, false, req, launch);
}

// A blocking call shaped like its communicator's last shared-slots call
// runs straight away (Communicator::repeat_slots); true then, with *rc.
bool repeated(loom_comm_t comm, Collective c, const void *s, void *r, int64_t count, const int64_t *counts,
              loom_datatype_t t, loom_op_t op, int *rc) {
    if (!comm || !comm->impl || count < 0) return false;
    Status st = LOOM_SUCCESS;
    if (!comm->impl->repeat_slots(c, s == MPI_IN_PLACE, s, r, static_cast<size_t>(count), counts, t, op, &st))
        return false;
    *rc = st;
    return true;
}

// Wraps a transport into a public communicator with `config`.
Status new_communicator(Config config, std::unique_ptr<Transport> transport, loom_comm_t *out) {
    auto *c = new (std::nothrow) loom_comm;
    if (!c) return fail(LOOM_ERR_NO_MEMORY, "cannot allocate a communicator");
    c->impl = std::make_unique<Communicator>(std::move(transport), std::move(config));
    *out = c;
    return LOOM_SUCCESS;
}

// Fortran's predefined types, whose sizes are the Fortran compiler's
// (MPI_INTEGER is 8 bytes where the MPI was built with 8-byte integers):
// each maps to the C type of the size the MPI reports for it. LOGICAL is
// not among them: its true value is the compiler's own; nor are 2REAL and
// 2DOUBLE_PRECISION, pairs of reals that Loom has no type for.
bool fortran_datatype(MPI_Datatype t, loom_datatype_t *out) {
    enum class Kind { integer, real, complex, character, integer_pair };
    const struct {
        MPI_Datatype mpi;
        Kind kind;
    } fortran[] = {
        {MPI_INTEGER, Kind::integer},
        {MPI_INTEGER1, Kind::integer},
        {MPI_INTEGER2, Kind::integer},
        {MPI_INTEGER4, Kind::integer},
        {MPI_INTEGER8, Kind::integer},
        {MPI_REAL, Kind::real},
        {MPI_REAL4, Kind::real},
        {MPI_REAL8, Kind::real},
        {MPI_DOUBLE_PRECISION, Kind::real},
        {MPI_COMPLEX, Kind::complex},
        {MPI_DOUBLE_COMPLEX, Kind::complex},
        {MPI_COMPLEX8, Kind::complex},
        {MPI_COMPLEX16, Kind::complex},
        {MPI_CHARACTER, Kind::character},
        {MPI_2INTEGER, Kind::integer_pair},
    };
    // An MPI without a Fortran type defines it as MPI_DATATYPE_NULL.
    if (t == MPI_DATATYPE_NULL) return false;
    for (const auto &f : fortran) {
        if (f.mpi != t) continue;
        int initialized = 0, size = 0;
        if (MPI_Initialized(&initialized) != MPI_SUCCESS || !initialized || MPI_Type_size(t, &size) != MPI_SUCCESS)
            return false;
        loom_datatype_t c = LOOM_DATATYPE_COUNT;
        switch (f.kind) {
            case Kind::integer:
                c = size == 1   ? LOOM_INT8
                    : size == 2 ? LOOM_INT16
                    : size == 4 ? LOOM_INT32
                    : size == 8 ? LOOM_INT64
                                : c;
                break;
            case Kind::real: c = size == 4 ? LOOM_FLOAT : size == 8 ? LOOM_DOUBLE : c; break;
            case Kind::complex: c = size == 8 ? LOOM_C_FLOAT_COMPLEX : size == 16 ? LOOM_C_DOUBLE_COMPLEX : c; break;
            case Kind::character: c = size == 1 ? LOOM_CHAR : c; break;
            case Kind::integer_pair: c = size == 2 * static_cast<int>(sizeof(int)) ? LOOM_2INT : c; break;
        }
        if (c == LOOM_DATATYPE_COUNT) return false;
        *out = c;
        return true;
    }
    return false;
}

}  // namespace
}  // namespace loom

using namespace loom;

extern "C" {

void loom_get_version(int *major, int *minor, int *patch) {
    if (major) *major = LOOM_VERSION_MAJOR;
    if (minor) *minor = LOOM_VERSION_MINOR;
    if (patch) *patch = LOOM_VERSION_PATCH;
}

int loom_comm_create(MPI_Comm comm, loom_comm_t *out) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_create: out is NULL");
    *out = nullptr;
    Config config;
    LOOM_RETURN_IF_ERROR(config.load_environment());
    std::unique_ptr<Transport> transport;
    LOOM_RETURN_IF_ERROR(make_mpi_transport(comm, &transport));
    LOOM_RETURN_IF_ERROR(new_communicator(std::move(config), std::move(transport), out));
    Status st = setup_communicator_mpi(comm, *(*out)->impl);
    if (st != LOOM_SUCCESS) {
        delete *out;
        *out = nullptr;
    }
    return st;
}

int loom_shm_inbox_create(const char *key, uint64_t identity, int rank, const int *local_ranks, int nlocal,
                          loom_shm_inbox_t *out) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_create: out is NULL");
    *out = nullptr;
    if (!key || !*key || std::strchr(key, '/'))
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_create: key must be a non-empty name without '/'");
    if (!local_ranks || nlocal < 2)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_create: a node group needs at least 2 ranks");
    auto inbox = std::make_unique<loom_shm_inbox>();
    inbox->key = key;
    inbox->rank = rank;
    inbox->node.identity = identity;
    inbox->node.local_ranks.assign(local_ranks, local_ranks + nlocal);
    // The communicator's size is not known here: only the upper bound of the range goes unchecked.
    const std::string bad = node_group_problem(inbox->node.local_ranks, rank, INT_MAX);
    if (!bad.empty()) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_create: " + bad);
    LOOM_RETURN_IF_ERROR(shm_create_inbox(inbox->key, rank, &inbox->node));
    *out = inbox.release();
    return LOOM_SUCCESS;
}

int loom_shm_inbox_path(loom_shm_inbox_t inbox, char *path, size_t room) {
    if (!inbox || !path) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_path: NULL argument");
    if (!inbox->node.own) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_path: the inbox has no segment");
    const std::string file = "/dev/shm" + inbox->node.own->name();
    if (file.size() + 1 > room)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_path: " + std::to_string(room) +
                                                   " bytes cannot hold the " + std::to_string(file.size() + 1) +
                                                   "-byte path");
    std::memcpy(path, file.c_str(), file.size() + 1);
    return LOOM_SUCCESS;
}

int loom_shm_inbox_free(loom_shm_inbox_t *inbox) {
    if (!inbox) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_shm_inbox_free: NULL argument");
    delete *inbox;
    *inbox = nullptr;
    return LOOM_SUCCESS;
}

int loom_comm_attach_shared_memory(loom_comm_t comm, loom_shm_inbox_t *inbox) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!inbox || !*inbox) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_attach_shared_memory: inbox is NULL");
    std::unique_ptr<loom_shm_inbox> owned(*inbox);
    *inbox = nullptr;
    if (owned->rank != comm->impl->rank())
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_attach_shared_memory: the inbox was created for rank " +
                                                   std::to_string(owned->rank) + ", the communicator's rank is " +
                                                   std::to_string(comm->impl->rank()));
    if (comm->impl->config().integer(kParamSharedMemory) == 0) return LOOM_SUCCESS;
    owned->node.key = owned->key;  // peers are mapped when first sent to
    return comm->impl->attach_shared_memory(std::move(owned->node));
}

int loom_comm_create_with_transport(const loom_transport_t *transport, loom_comm_t *out) {
    if (!out || !transport) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_create_with_transport: NULL argument");
    *out = nullptr;
    Config config;
    LOOM_RETURN_IF_ERROR(config.load_environment());
    std::unique_ptr<Transport> t;
    LOOM_RETURN_IF_ERROR(make_external_transport(*transport, &t));
    LOOM_RETURN_IF_ERROR(new_communicator(std::move(config), std::move(t), out));
    for (auto set_up : deferred_transport_setups()) (*out)->impl->defer(set_up);
    return LOOM_SUCCESS;
}

int loom_param_count(void) { return static_cast<int>(param_table().size()); }

int loom_param_info(int index, const char **name, const char **default_value, const char **help, int *level) {
    if (index < 0 || index >= loom_param_count())
        return fail(LOOM_ERR_INVALID_ARGUMENT, "parameter index " + std::to_string(index) + " is out of range [0, " +
                                                   std::to_string(loom_param_count()) + ")");
    const ParamSpec &s = param_table()[index];
    if (name) *name = s.name;
    if (default_value) *default_value = s.default_value;
    if (help) *help = s.help;
    if (level) *level = s.level;
    return LOOM_SUCCESS;
}

int loom_algorithm_count(void) { return static_cast<int>(all_algorithms().size()); }

int loom_algorithm_info(int index, loom_algorithm_info_t *info) {
    const int n = loom_algorithm_count();
    if (index < 0 || index >= n)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_algorithm_info: index " + std::to_string(index) +
                                                   " is out of range [0, " + std::to_string(n) +
                                                   "); valid indices are 0 to loom_algorithm_count() - 1");
    if (!info) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_algorithm_info: info is NULL");
    const AlgorithmInfo &a = *all_algorithms()[static_cast<size_t>(index)];
    info->name = a.name;
    info->collective = collective_name(a.collective);
    info->description = a.description;
    info->restrictions = a.restrictions;
    return LOOM_SUCCESS;
}

int loom_algorithm_memory(int index, const char **memory) {
    if (index < 0 || index >= loom_algorithm_count())
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_algorithm_memory: index " + std::to_string(index) +
                                                   " is out of range [0, " + std::to_string(loom_algorithm_count()) +
                                                   ")");
    if (!memory) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_algorithm_memory: memory is NULL");
    *memory =
        traits_of(all_algorithms()[static_cast<size_t>(index)]->path).memory == MemoryType::cuda ? "device" : "host";
    return LOOM_SUCCESS;
}

int loom_comm_free(loom_comm_t *comm) {
    if (!comm || !*comm) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_free: communicator is NULL");
    delete *comm;
    *comm = nullptr;
    return LOOM_SUCCESS;
}

int loom_comm_rank(loom_comm_t comm, int *rank) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!rank) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_rank: rank is NULL");
    *rank = comm->impl->rank();
    return LOOM_SUCCESS;
}

int loom_comm_size(loom_comm_t comm, int *size) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!size) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_size: size is NULL");
    *size = comm->impl->size();
    return LOOM_SUCCESS;
}

int loom_comm_set_param(loom_comm_t comm, const char *name, const char *value) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!name || !value) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_set_param: name or value is NULL");
    auto lock = comm->impl->hold();
    return comm->impl->config().set(name, value);
}

int loom_comm_prepare(loom_comm_t comm, const char *collective, int64_t count, const int64_t *counts,
                      loom_datatype_t type, int in_place, const char **algorithm) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    LOOM_RETURN_IF_ERROR(check_datatype(type));
    Collective c;
    if (!collective || !collective_from_name(collective, &c))
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    std::string("unknown collective '") + (collective ? collective : "(null)") + "'");
    Communicator &impl = *comm->impl;
    CollArgs a;
    a.collective = c;
    const size_t elem_size = datatype_info(type)->size;
    // The calls' own checks, so that prepare fails exactly as the call would.
    if (c == Collective::reduce_scatter) {
        if (!counts) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_prepare: reduce_scatter needs counts");
        unsigned __int128 total_bytes = 0;  // at most p * 2^60: no overflow
        for (int i = 0; i < impl.size(); ++i) {
            LOOM_RETURN_IF_ERROR(check_count(counts[i], ("counts[" + std::to_string(i) + "]").c_str(), elem_size, 1));
            total_bytes += static_cast<unsigned __int128>(counts[i]) * elem_size;
            a.recv_counts.push_back(static_cast<size_t>(counts[i]));
        }
        if (total_bytes > kMaxBufferBytes)
            return fail(LOOM_ERR_INVALID_COUNT, "loom_comm_prepare: the sum of counts is too large to address");
    } else {
        // allreduce's vector is one buffer; the others hold a block per rank.
        LOOM_RETURN_IF_ERROR(check_count(count, "count", elem_size, c == Collective::allreduce ? 1 : impl.size()));
        a.count = static_cast<size_t>(count);
        a.nranks = impl.size();
        if (is_vector_collective(c)) set_uniform_blocks(a, a.count);
        if (c == Collective::alltoallv) {  // what the call learns, as it would
            if (learns_others_counts(comm))
                a.node_counts = node_counts_of(a.count_matrix.data(), a.nranks, &impl.nodes(), impl.rank());
            a.count_matrix.clear();
        }
    }
    return impl.prepare(a, type, in_place != 0, algorithm);
}

int loom_comm_last_algorithm(loom_comm_t comm, const char *collective, const char **name) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    Collective c;
    if (!collective || !collective_from_name(collective, &c))
        return fail(LOOM_ERR_INVALID_ARGUMENT,
                    std::string("unknown collective '") + (collective ? collective : "(null)") +
                        "' (allreduce, reduce_scatter, reduce_scatter_block, allgather, alltoall, alltoallv, "
                        "allgatherv)");
    if (!name) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_last_algorithm: name is NULL");
    *name = comm->impl->last_algorithm(c);
    return LOOM_SUCCESS;
}

int loom_comm_set_nodes(loom_comm_t comm, const int *labels, int nranks, int rails) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!labels || nranks < 1) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_set_nodes: labels is NULL or empty");
    if (rails < 1 || rails > 64) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_set_nodes: rails must be 1..64");
    NodeMap map = NodeMap::from_labels(std::vector<int>(labels, labels + nranks), rails);
    map.emulated = !comm->impl->config().raw(kParamTopology).empty();  // coll/loom passes its topology on
    return comm->impl->set_nodes(std::move(map));
}

int loom_topology_parse(const char *spec, int nranks, int *labels, int *rails) {
    if (!spec || !labels || !rails || nranks < 1)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_topology_parse: NULL argument or no ranks");
    NodeMap m;
    if (NodeMap::parse(spec, nranks, &m) != LOOM_SUCCESS)
        return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, last_error_message());
    std::copy(m.node_of.begin(), m.node_of.end(), labels);
    *rails = m.rails;
    return LOOM_SUCCESS;
}

int loom_comm_node_info(loom_comm_t comm, int *node, int *nodes, int *local, int *local_count, int *rails) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!node || !nodes || !local || !local_count || !rails)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_node_info: NULL argument");
    const NodeMap &m = comm->impl->nodes();
    const int r = comm->impl->rank();
    *node = m.node_of[r];
    *nodes = m.nodes();
    *local = m.local_index[r];
    *local_count = m.ranks_on(*node);
    *rails = m.rails;
    return LOOM_SUCCESS;
}

int loom_comm_describe_nodes(loom_comm_t comm, const char **text) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!text) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_describe_nodes: text is NULL");
    static thread_local std::string held;
    held = comm->impl->nodes().describe();
    *text = held.c_str();
    return LOOM_SUCCESS;
}

int loom_comm_rails_state(loom_comm_t comm, const char **state) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!state) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_rails_state: state is NULL");
    static thread_local std::string held;
    auto lock = comm->impl->hold();
    held = comm->impl->rails_state();
    *state = held.c_str();
    return LOOM_SUCCESS;
}

int loom_comm_progress_state(loom_comm_t comm, const char **state) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!state) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_progress_state: state is NULL");
    static thread_local std::string held;
    auto lock = comm->impl->hold();
    held = comm->impl->progress_state();
    *state = held.c_str();
    return LOOM_SUCCESS;
}

int loom_comm_adapt_state(loom_comm_t comm, const char **state) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!state) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_adapt_state: state is NULL");
    static thread_local std::string held;
    auto lock = comm->impl->hold();
    held = comm->impl->adapt_state();
    *state = held.c_str();
    return LOOM_SUCCESS;
}

int loom_comm_adapt_rules(loom_comm_t comm, const char **rules) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!rules) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_adapt_rules: rules is NULL");
    static thread_local std::string held;
    auto lock = comm->impl->hold();
    held = comm->impl->adapt_rules();
    if (held.empty())
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_adapt_rules: parameter adapt is off on this communicator");
    *rules = held.c_str();
    return LOOM_SUCCESS;
}

int loom_comm_state(loom_comm_t comm, const char **state) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!state) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_state: state is NULL");
    static thread_local std::string held;
    auto lock = comm->impl->hold();
    held = comm->impl->state();
    *state = held.c_str();
    return LOOM_SUCCESS;
}

int loom_comm_transport_info(loom_comm_t comm, loom_transport_info_t *info) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!info) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_transport_info: info is NULL");
    if (info->version != LOOM_TRANSPORT_INFO_VERSION)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_transport_info: info->version is " +
                                                   std::to_string(info->version) +
                                                   ": set it to LOOM_TRANSPORT_INFO_VERSION (" +
                                                   std::to_string(LOOM_TRANSPORT_INFO_VERSION) + ")");
    auto lock = comm->impl->hold();
    const Router &router = comm->impl->transport();
    auto &held = comm->report;
    std::vector<TransportCounters> &report = held.counters;
    router.report(&report);
    const size_t n = report.size();
    held.transports.assign(n, loom_transport_counters_t{});
    held.lanes.assign(n, {});
    held.extra_names.assign(n, {});
    held.extra_values.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
        for (const LaneCounters &l : report[i].lanes)
            held.lanes[i].push_back({l.sent_messages, l.sent_bytes, l.received_messages, l.received_bytes});
        for (const auto &e : report[i].extra) {
            held.extra_names[i].push_back(e.first.c_str());
            held.extra_values[i].push_back(e.second);
        }
        loom_transport_counters_t &t = held.transports[i];
        t.name = report[i].name.c_str();
        t.lanes = static_cast<int>(held.lanes[i].size());
        t.lane = held.lanes[i].data();
        t.extras = static_cast<int>(held.extra_names[i].size());
        t.extra_name = held.extra_names[i].data();
        t.extra_value = held.extra_values[i].data();
    }
    info->transports = static_cast<int>(n);
    info->transport = held.transports.data();
    const TransportCounters *shm = find_counters(report, "shared_memory");
    info->name = shm ? "shared_memory" : router.fallback().name();
    info->node_ranks = shm ? static_cast<int>(extra_counter(*shm, "node_ranks")) : 1;
    info->shared_memory_sends = shm ? shm->sent_messages() : 0;
    uint64_t others = 0;  // every transport but shared memory: the PML or MPI, the rails
    for (const TransportCounters &t : report)
        if (&t != shm) others += t.sent_messages();
    info->point_to_point_sends = shm ? others : 0;
    info->single_copy_sends = shm ? extra_counter(*shm, "single_copy_sends") : 0;
    return LOOM_SUCCESS;
}

int loom_datatype_size(loom_datatype_t type, size_t *size) {
    LOOM_RETURN_IF_ERROR(check_datatype(type));
    if (!size) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_datatype_size: size is NULL");
    *size = datatype_info(type)->size;
    return LOOM_SUCCESS;
}

int loom_op_supported(loom_datatype_t type, loom_op_t op) {
    return static_cast<unsigned>(type) < LOOM_DATATYPE_COUNT && reduction_kernel(type, op) != nullptr;
}

int loom_datatype_from_mpi(MPI_Datatype t, loom_datatype_t *out) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_datatype_from_mpi: out is NULL");
    const struct {
        MPI_Datatype mpi;
        loom_datatype_t loom;
    } map[] = {
        {MPI_INT8_T, LOOM_INT8},
        {MPI_UINT8_T, LOOM_UINT8},
        {MPI_INT16_T, LOOM_INT16},
        {MPI_UINT16_T, LOOM_UINT16},
        {MPI_INT32_T, LOOM_INT32},
        {MPI_UINT32_T, LOOM_UINT32},
        {MPI_INT64_T, LOOM_INT64},
        {MPI_UINT64_T, LOOM_UINT64},
        {MPI_CHAR, LOOM_CHAR},
        {MPI_SIGNED_CHAR, LOOM_SIGNED_CHAR},
        {MPI_UNSIGNED_CHAR, LOOM_UNSIGNED_CHAR},
        {MPI_WCHAR, LOOM_WCHAR},
        {MPI_SHORT, LOOM_SHORT},
        {MPI_UNSIGNED_SHORT, LOOM_UNSIGNED_SHORT},
        {MPI_INT, LOOM_INT},
        {MPI_UNSIGNED, LOOM_UNSIGNED},
        {MPI_LONG, LOOM_LONG},
        {MPI_UNSIGNED_LONG, LOOM_UNSIGNED_LONG},
        {MPI_LONG_LONG, LOOM_LONG_LONG},
        {MPI_LONG_LONG_INT, LOOM_LONG_LONG},
        {MPI_UNSIGNED_LONG_LONG, LOOM_UNSIGNED_LONG_LONG},
        {MPI_AINT, LOOM_INT64},
        {MPI_OFFSET, LOOM_INT64},
        {MPI_COUNT, LOOM_INT64},
        {MPI_BYTE, LOOM_BYTE},
        {MPI_C_BOOL, LOOM_BOOL},
        {MPI_FLOAT, LOOM_FLOAT},
        {MPI_DOUBLE, LOOM_DOUBLE},
        {MPI_LONG_DOUBLE, LOOM_LONG_DOUBLE},
        {MPI_C_FLOAT_COMPLEX, LOOM_C_FLOAT_COMPLEX},
        {MPI_C_COMPLEX, LOOM_C_FLOAT_COMPLEX},
        {MPI_C_DOUBLE_COMPLEX, LOOM_C_DOUBLE_COMPLEX},
        {MPI_C_LONG_DOUBLE_COMPLEX, LOOM_C_LONG_DOUBLE_COMPLEX},
        {MPI_FLOAT_INT, LOOM_FLOAT_INT},
        {MPI_DOUBLE_INT, LOOM_DOUBLE_INT},
        {MPI_LONG_INT, LOOM_LONG_INT},
        {MPI_2INT, LOOM_2INT},
        {MPI_SHORT_INT, LOOM_SHORT_INT},
        {MPI_LONG_DOUBLE_INT, LOOM_LONG_DOUBLE_INT},
    };
    for (const auto &m : map)
        if (m.mpi == t) {
            *out = m.loom;
            return LOOM_SUCCESS;
        }
    if (fortran_datatype(t, out)) return LOOM_SUCCESS;
    return fail(LOOM_ERR_INVALID_DATATYPE,
                "MPI datatype is not a predefined basic type Loom reduces (derived or unsupported); "
                "pack it, or use MPI's own collective");
}

int loom_op_from_mpi(MPI_Op op, loom_op_t *out) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_op_from_mpi: out is NULL");
    const struct {
        MPI_Op mpi;
        loom_op_t loom;
    } map[] = {{MPI_SUM, LOOM_SUM},   {MPI_PROD, LOOM_PROD}, {MPI_MIN, LOOM_MIN},       {MPI_MAX, LOOM_MAX},
               {MPI_LAND, LOOM_LAND}, {MPI_LOR, LOOM_LOR},   {MPI_LXOR, LOOM_LXOR},     {MPI_BAND, LOOM_BAND},
               {MPI_BOR, LOOM_BOR},   {MPI_BXOR, LOOM_BXOR}, {MPI_MINLOC, LOOM_MINLOC}, {MPI_MAXLOC, LOOM_MAXLOC}};
    for (const auto &m : map)
        if (m.mpi == op) {
            *out = m.loom;
            return LOOM_SUCCESS;
        }
    return fail(LOOM_ERR_INVALID_OP, "MPI op is user-defined or not supported by Loom (MPI_REPLACE, MPI_NO_OP, ...)");
}

int loom_mpi_error_class(int status) {
    switch (status) {
        case LOOM_ERR_INVALID_ARGUMENT: return MPI_ERR_ARG;
        case LOOM_ERR_INVALID_COUNT: return MPI_ERR_COUNT;
        case LOOM_ERR_MISMATCH: return MPI_ERR_TRUNCATE;
        case LOOM_ERR_TIMEOUT: return MPI_ERR_OTHER;
        default: return 0;
    }
}

int loom_allreduce(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op, loom_comm_t comm) {
    int rc;
    if (repeated(comm, Collective::allreduce, s, r, count, nullptr, t, op, &rc)) return rc;
    return make_allreduce(s, r, count, t, op, comm, nullptr, Launch::blocking);
}
int loom_iallreduce(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op, loom_comm_t comm,
                    loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_allreduce(s, r, count, t, op, comm, req, Launch::nonblocking); });
}
int loom_reduce_scatter(const void *s, void *r, const int64_t *counts, loom_datatype_t t, loom_op_t op,
                        loom_comm_t comm) {
    int rc;
    if (counts && repeated(comm, Collective::reduce_scatter, s, r, 0, counts, t, op, &rc)) return rc;
    return make_reduce_scatter(s, r, counts, t, op, comm, nullptr, Launch::blocking);
}
int loom_ireduce_scatter(const void *s, void *r, const int64_t *counts, loom_datatype_t t, loom_op_t op,
                         loom_comm_t comm, loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_reduce_scatter(s, r, counts, t, op, comm, req, Launch::nonblocking); });
}
int loom_reduce_scatter_block(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op,
                              loom_comm_t comm) {
    int rc;
    if (repeated(comm, Collective::reduce_scatter_block, s, r, count, nullptr, t, op, &rc)) return rc;
    return make_reduce_scatter_block(s, r, count, t, op, comm, nullptr, Launch::blocking);
}
int loom_ireduce_scatter_block(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op, loom_comm_t comm,
                               loom_request_t *out) {
    return with_request(out, [&](Started *req) {
        return make_reduce_scatter_block(s, r, count, t, op, comm, req, Launch::nonblocking);
    });
}
int loom_allgather(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm) {
    int rc;
    if (repeated(comm, Collective::allgather, s, r, count, nullptr, t, LOOM_SUM, &rc)) return rc;
    return make_gather_like(Collective::allgather, s, r, count, t, comm, nullptr, Launch::blocking);
}
int loom_iallgather(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm, loom_request_t *out) {
    return with_request(out, [&](Started *req) {
        return make_gather_like(Collective::allgather, s, r, count, t, comm, req, Launch::nonblocking);
    });
}
int loom_alltoall(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm) {
    int rc;
    if (repeated(comm, Collective::alltoall, s, r, count, nullptr, t, LOOM_SUM, &rc)) return rc;
    return make_gather_like(Collective::alltoall, s, r, count, t, comm, nullptr, Launch::blocking);
}
int loom_ialltoall(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm, loom_request_t *out) {
    return with_request(out, [&](Started *req) {
        return make_gather_like(Collective::alltoall, s, r, count, t, comm, req, Launch::nonblocking);
    });
}

int loom_alltoallv(const void *s, const int64_t *sc, const int64_t *sd, void *r, const int64_t *rc, const int64_t *rd,
                   loom_datatype_t t, loom_comm_t comm) {
    return make_alltoallv(s, sc, sd, r, rc, rd, t, comm, nullptr, Launch::blocking);
}
int loom_ialltoallv(const void *s, const int64_t *sc, const int64_t *sd, void *r, const int64_t *rc, const int64_t *rd,
                    loom_datatype_t t, loom_comm_t comm, loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_alltoallv(s, sc, sd, r, rc, rd, t, comm, req, Launch::nonblocking); });
}
int loom_alltoallv_init(const void *s, const int64_t *sc, const int64_t *sd, void *r, const int64_t *rc,
                        const int64_t *rd, loom_datatype_t t, loom_comm_t comm, loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_alltoallv(s, sc, sd, r, rc, rd, t, comm, req, Launch::persistent); });
}
int loom_allgatherv(const void *s, int64_t count, void *r, const int64_t *rc, const int64_t *displs, loom_datatype_t t,
                    loom_comm_t comm) {
    return make_allgatherv(s, count, r, rc, displs, t, comm, nullptr, Launch::blocking);
}
int loom_iallgatherv(const void *s, int64_t count, void *r, const int64_t *rc, const int64_t *displs, loom_datatype_t t,
                     loom_comm_t comm, loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_allgatherv(s, count, r, rc, displs, t, comm, req, Launch::nonblocking); });
}
int loom_allgatherv_init(const void *s, int64_t count, void *r, const int64_t *rc, const int64_t *displs,
                         loom_datatype_t t, loom_comm_t comm, loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_allgatherv(s, count, r, rc, displs, t, comm, req, Launch::persistent); });
}

// Stream-ordered: the stream's earlier work first, then the blocking call,
// whose device work is complete when it returns.
int loom_allreduce_on_stream(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op, loom_comm_t comm,
                             loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_allreduce(s, r, count, t, op, comm);
}
int loom_reduce_scatter_on_stream(const void *s, void *r, const int64_t *counts, loom_datatype_t t, loom_op_t op,
                                  loom_comm_t comm, loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_reduce_scatter(s, r, counts, t, op, comm);
}
int loom_reduce_scatter_block_on_stream(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op,
                                        loom_comm_t comm, loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_reduce_scatter_block(s, r, count, t, op, comm);
}
int loom_allgather_on_stream(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm,
                             loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_allgather(s, r, count, t, comm);
}
int loom_alltoall_on_stream(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm,
                            loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_alltoall(s, r, count, t, comm);
}
int loom_alltoallv_on_stream(const void *s, const int64_t *sc, const int64_t *sd, void *r, const int64_t *rc,
                             const int64_t *rd, loom_datatype_t t, loom_comm_t comm, loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_alltoallv(s, sc, sd, r, rc, rd, t, comm);
}
int loom_allgatherv_on_stream(const void *s, int64_t count, void *r, const int64_t *rc, const int64_t *displs,
                              loom_datatype_t t, loom_comm_t comm, loom_cuda_stream_t stream) {
    LOOM_RETURN_IF_ERROR(stream_synchronize(stream));
    return loom_allgatherv(s, count, r, rc, displs, t, comm);
}

int loom_allreduce_init(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op, loom_comm_t comm,
                        loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_allreduce(s, r, count, t, op, comm, req, Launch::persistent); });
}
int loom_reduce_scatter_init(const void *s, void *r, const int64_t *counts, loom_datatype_t t, loom_op_t op,
                             loom_comm_t comm, loom_request_t *out) {
    return with_request(
        out, [&](Started *req) { return make_reduce_scatter(s, r, counts, t, op, comm, req, Launch::persistent); });
}
int loom_reduce_scatter_block_init(const void *s, void *r, int64_t count, loom_datatype_t t, loom_op_t op,
                                   loom_comm_t comm, loom_request_t *out) {
    return with_request(out, [&](Started *req) {
        return make_reduce_scatter_block(s, r, count, t, op, comm, req, Launch::persistent);
    });
}
int loom_allgather_init(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm,
                        loom_request_t *out) {
    return with_request(out, [&](Started *req) {
        return make_gather_like(Collective::allgather, s, r, count, t, comm, req, Launch::persistent);
    });
}
int loom_alltoall_init(const void *s, void *r, int64_t count, loom_datatype_t t, loom_comm_t comm,
                       loom_request_t *out) {
    return with_request(out, [&](Started *req) {
        return make_gather_like(Collective::alltoall, s, r, count, t, comm, req, Launch::persistent);
    });
}

int loom_memory_type(const void *ptr, loom_memory_t *out) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_memory_type: out is NULL");
    *out = static_cast<loom_memory_t>(memory_type_of(ptr));
    return LOOM_SUCCESS;
}

const char *loom_cuda_state(void) {
    static const std::string state = cuda_driver_state();
    return state.c_str();
}

int loom_memory_copy(void *dst, const void *src, size_t bytes) {
    if (bytes && (!dst || !src)) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_memory_copy: a buffer is NULL");
    return memory_copy(dst, src, bytes);
}

int loom_device_alloc(size_t bytes, void **out) {
    if (!out) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_device_alloc: out is NULL");
    return device_alloc(bytes, out);
}

int loom_device_free(void *ptr) {
    if (!ptr) return LOOM_SUCCESS;
    return device_free(ptr);
}

int loom_comm_staging_info(loom_comm_t comm, loom_staging_info_t *info) {
    LOOM_RETURN_IF_ERROR(check_comm(comm));
    if (!info) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_comm_staging_info: info is NULL");
    info->staged_calls = comm->device.calls;
    info->pipelined_calls = comm->device.pipelined;
    info->staged_bytes = comm->device.bytes;
    info->device_calls = comm->device.device_calls;
    info->reason = comm->device.staging_reason();
    return LOOM_SUCCESS;
}

int loom_start(loom_request_t req) {
    if (!req) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_start: request is NULL");
    if (req->staged) {
        if (req->impl->running()) return req->impl->start();  // the request reports the misuse
        LOOM_RETURN_IF_ERROR(req->staged->copy_in());
        const Status st = req->impl->start();
        req->copy_pending = st == LOOM_SUCCESS;
        return st;
    }
    if (req->exact) {
        if (req->impl->running()) return req->impl->start();  // the request reports the misuse
        req->exact->encode_input();
        const Status st = req->impl->start();
        req->decode_pending = st == LOOM_SUCCESS;
        return st;
    }
    return req->impl->start();
}

// A finished request is freed, unless it is persistent: that one stays, inactive, for the next start.
int loom_test(loom_request_t *req, int *done) { return loom_test_algorithm(req, done, nullptr); }

int loom_test_algorithm(loom_request_t *req, int *done, const char **algorithm) {
    if (!req || !*req || !done) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_test: request or done is NULL");
    bool finished = false;
    Status st = (*req)->impl->test(&finished);
    if (finished) st = copied_out(**req, st);
    *done = finished ? 1 : 0;
    if (finished && algorithm) *algorithm = (*req)->impl->algorithm();
    if (finished && !(*req)->impl->persistent()) {
        delete *req;
        *req = nullptr;
    }
    return st;
}

int loom_wait(loom_request_t *req) { return loom_wait_algorithm(req, nullptr); }

int loom_wait_algorithm(loom_request_t *req, const char **algorithm) {
    if (!req || !*req) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_wait: request is NULL");
    Status st = copied_out(**req, (*req)->impl->wait());
    if (algorithm) *algorithm = (*req)->impl->algorithm();
    if (!(*req)->impl->persistent()) {
        delete *req;
        *req = nullptr;
    }
    return st;
}

int loom_request_free(loom_request_t *req) {
    if (!req || !*req) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_request_free: request is NULL");
    // An active request is finished first: Loom never leaves a user buffer half written.
    Status st = copied_out(**req, (*req)->impl->wait());
    delete *req;
    *req = nullptr;
    return st;
}

}  // extern "C"
