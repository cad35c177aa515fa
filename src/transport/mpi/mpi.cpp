#include "transport/mpi/mpi.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace loom {
namespace {

// MPI counts are ints: messages above INT_MAX bytes go as a run of 1 MiB
// units plus a remainder, two requests under one handle.
constexpr size_t kUnitBytes = size_t{1} << 20;

struct HandlePair {
    MPI_Request bulk;
    MPI_Request rest;
    // A receive's expected units and remainder bytes (a send's: -1): both
    // sides of a message run one plan, so another size means the ranks'
    // calls differ.
    int32_t units = -1, rest_bytes = -1;
};
static_assert(sizeof(HandlePair) <= sizeof(TransportHandle), "two MPI requests and their sizes fit a handle");

// Duplicates of communicators that abandoned a call (hang_abort): kept, so
// that their contexts go to no later communicator, until MPI_Finalize frees
// them (it deletes MPI_COMM_SELF's attributes first).
std::mutex kept_mutex;
std::vector<MPI_Comm> kept_communicators;
int free_kept_communicators(MPI_Comm, int, void *, void *) {
    std::lock_guard<std::mutex> lock(kept_mutex);
    for (MPI_Comm &c : kept_communicators) MPI_Comm_free(&c);
    kept_communicators.clear();
    return MPI_SUCCESS;
}
void keep_until_finalize(MPI_Comm comm) {
    std::lock_guard<std::mutex> lock(kept_mutex);
    if (kept_communicators.empty()) {
        int key = MPI_KEYVAL_INVALID;
        if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_kept_communicators, &key, nullptr) == MPI_SUCCESS) {
            MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
            MPI_Comm_free_keyval(&key);  // the attribute keeps it to MPI_Finalize
        }
    }
    kept_communicators.push_back(comm);
}

Status mpi_error(int rc, const char *what, int peer) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return fail(LOOM_ERR_TRANSPORT,
                std::string(what) + " with rank " + std::to_string(peer) + " failed: " + std::string(text, len));
}

class MpiTransport final : public Transport {
  public:
    MpiTransport(MPI_Comm comm, int rank, int size, uint32_t max_tag, MPI_Datatype unit, bool oversubscribed)
        : comm_(comm), rank_(rank), size_(size), max_tag_(max_tag), unit_(unit), oversubscribed_(oversubscribed) {}
    bool oversubscribed() const override { return oversubscribed_; }
    ~MpiTransport() override {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) {
            // Freed, the context could carry a later communicator, whose
            // receives would then match what an abandoned call sent.
            if (abandoned_) keep_until_finalize(comm_);
            else MPI_Comm_free(&comm_);
            MPI_Type_free(&unit_);
        }
    }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char *name() const override { return "mpi"; }
    uint32_t max_tag() const override { return max_tag_; }

    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &,
                     TransportHandle *h) override {
        return post_pair(const_cast<void *>(buf), bytes, "MPI_Isend", peer, h,
                         [&](void *b, int n, MPI_Datatype type, MPI_Request *req) {
                             return MPI_Isend(b, n, type, peer, static_cast<int>(tag), comm_, req);
                         });
    }

    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &, TransportHandle *h) override {
        const Status st =
            post_pair(buf, bytes, "MPI_Irecv", peer, h, [&](void *b, int n, MPI_Datatype type, MPI_Request *req) {
                return MPI_Irecv(b, n, type, peer, static_cast<int>(tag), comm_, req);
            });
        HandlePair pair;
        std::memcpy(&pair, h->bytes, sizeof(pair));
        const size_t units = bytes > INT_MAX ? bytes / kUnitBytes : 0;
        pair.units = static_cast<int32_t>(units);
        pair.rest_bytes = static_cast<int32_t>(bytes - units * kUnitBytes);
        std::memcpy(h->bytes, &pair, sizeof(pair));
        return st;
    }

    bool drives_progress_engine() const override { return true; }
    bool withdraw(TransportHandle *h, bool receive) override {
        // A cancelled receive completes at once, cancelled or, had a message
        // just matched it, received; either way MPI writes nothing more.
        // Sends are not recalled (MPI-4 deprecates cancelling them).
        if (!receive) return false;
        HandlePair pair;
        std::memcpy(&pair, h->bytes, sizeof(pair));
        for (MPI_Request *r : {&pair.bulk, &pair.rest})
            if (*r != MPI_REQUEST_NULL) {
                MPI_Cancel(r);
                MPI_Wait(r, MPI_STATUS_IGNORE);
            }
        std::memcpy(h->bytes, &pair, sizeof(pair));
        return true;
    }
    void call_abandoned() override { abandoned_ = true; }
    // The notice is one integer on a tag no plan uses, sent to every
    // peer; waiting ranks probe for it.
    void revoke(uint64_t call) override {
        if (t_on_progress_thread) return;  // the communicator tells again from the caller's thread
        const uint64_t *notice = kept_notice(call);
        for (int peer = 0; peer < size_; ++peer) {
            if (peer == rank_) continue;
            MPI_Request req;
            if (MPI_Isend(notice, 1, MPI_UINT64_T, peer, notice_tag(), comm_, &req) == MPI_SUCCESS)
                MPI_Request_free(&req);
        }
    }
    bool revoked_by_peer(uint64_t *call, int *peer) override {
        for (int flag = 1; flag && !t_on_progress_thread;) {
            MPI_Status status;
            MPI_Iprobe(MPI_ANY_SOURCE, notice_tag(), comm_, &flag, &status);
            if (!flag) break;
            uint64_t c = 0;
            MPI_Recv(&c, 1, MPI_UINT64_T, status.MPI_SOURCE, notice_tag(), comm_, MPI_STATUS_IGNORE);
            if (c && (!revoked_call_ || c < revoked_call_)) {
                revoked_call_ = c;
                revoked_by_ = status.MPI_SOURCE;
            }
        }
        *call = revoked_call_;
        *peer = revoked_by_;
        return revoked_call_ != 0;
    }
    void reserve(size_t operations, int) override {
        requests_.reserve(2 * operations);
        indices_.reserve(2 * operations);
        statuses_.reserve(2 * operations);
    }
    Status idle() override {
        // A probe that finds nothing runs MPI's progress engine once (Open
        // MPI's yields there when oversubscribed); it receives nothing.
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
        return LOOM_SUCCESS;
    }

    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *) override {
        // One MPI_Testall-style sweep: MPI_Testsome progresses the library once
        // for all requests instead of once per request.
        requests_.resize(2 * n);
        for (size_t i = 0; i < n; ++i) std::memcpy(&requests_[2 * i], hs[i]->bytes, 2 * sizeof(MPI_Request));
        indices_.resize(2 * n);
        int outcount = 0;
        statuses_.resize(2 * n);
        int rc = MPI_Testsome(static_cast<int>(2 * n), requests_.data(), &outcount, indices_.data(), statuses_.data());
        for (size_t i = 0; i < n; ++i) {  // on an error too: what completed is released
            std::memcpy(hs[i]->bytes, &requests_[2 * i], 2 * sizeof(MPI_Request));
            done[i] = requests_[2 * i] == MPI_REQUEST_NULL && requests_[2 * i + 1] == MPI_REQUEST_NULL;
        }
        if (rc != MPI_SUCCESS) return testsome_error(rc, outcount);
        for (int k = 0; k < outcount; ++k) {
            const size_t i = static_cast<size_t>(indices_[k]) / 2;
            const bool rest = indices_[k] % 2 == 1;
            HandlePair pair;
            std::memcpy(&pair, hs[i]->bytes, sizeof(pair));
            if (pair.rest_bytes < 0) continue;  // a send
            int got = 0;
            MPI_Get_count(&statuses_[static_cast<size_t>(k)], rest ? MPI_BYTE : unit_, &got);
            const int32_t want = rest ? pair.rest_bytes : pair.units;
            if (got != want)
                return fail(LOOM_ERR_MISMATCH, "an MPI message of " + std::to_string(got) + (rest ? " bytes" : " MiB") +
                                                   " from rank " + std::to_string(statuses_[k].MPI_SOURCE) +
                                                   " met a receive of " + std::to_string(want) +
                                                   " (did every rank pass the same count, type and op?)");
        }
        return LOOM_SUCCESS;
    }

  private:
    // Plans cycle tags up to max_tag(); the one above carries revoke notices.
    int notice_tag() const { return static_cast<int>(max_tag_) + 1; }
    // A notice's integer must outlive its send, which may never be received.
    static const uint64_t *kept_notice(uint64_t call) {
        static std::mutex lock;
        static std::deque<uint64_t> notices;  // a deque keeps its elements in place
        std::lock_guard<std::mutex> g(lock);
        notices.push_back(call);
        return &notices.back();
    }
    // A receive smaller than its message means the ranks called the
    // collective with different arguments.
    Status testsome_error(int rc, int outcount) {
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        if (cls == MPI_ERR_IN_STATUS)
            for (int k = 0; k < outcount && k < static_cast<int>(statuses_.size()); ++k) {
                int c = MPI_SUCCESS;
                MPI_Error_class(statuses_[k].MPI_ERROR, &c);
                if (c == MPI_ERR_TRUNCATE) cls = c;
            }
        if (cls != MPI_ERR_TRUNCATE) return mpi_error(rc, "MPI_Testsome", -1);
        return fail(LOOM_ERR_MISMATCH,
                    "an MPI message was larger than its receive (did every rank pass the same count, type and op?)");
    }

    // Posts `bytes` as whole 1 MiB units plus a byte remainder (two requests
    // under one handle) with `post(buf, count, type, request)`.
    template <typename Post>
    Status post_pair(void *buf, size_t bytes, const char *what, int peer, TransportHandle *h, Post post) {
        HandlePair pair{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        const size_t units = bytes > INT_MAX ? bytes / kUnitBytes : 0;
        const size_t rest = bytes - units * kUnitBytes;
        int rc = MPI_SUCCESS;
        if (units) rc = post(buf, static_cast<int>(units), unit_, &pair.bulk);
        if (rc == MPI_SUCCESS)
            rc = post(static_cast<char *>(buf) + units * kUnitBytes, static_cast<int>(rest), MPI_BYTE, &pair.rest);
        if (rc != MPI_SUCCESS) return mpi_error(rc, what, peer);
        std::memcpy(h->bytes, &pair, sizeof(pair));
        return LOOM_SUCCESS;
    }

    std::vector<MPI_Request> requests_;
    std::vector<int> indices_;
    std::vector<MPI_Status> statuses_;
    MPI_Comm comm_;
    int rank_, size_;
    uint32_t max_tag_;
    MPI_Datatype unit_;
    bool oversubscribed_;
    bool abandoned_ = false;
    uint64_t revoked_call_ = 0;  // the earliest call a peer's notice revoked (0: none)
    int revoked_by_ = -1;
};

// More ranks of this communicator on this node than the node has cores. (Ranks of other communicators are not counted:
// Open MPI's own mpi_yield_when_idle, on when mpirun oversubscribes, is honoured too.)
bool node_is_oversubscribed(MPI_Comm comm) {
#ifdef OPEN_MPI
    // Open MPI's progress engine, which every poll drives, yields by itself
    // when the job is oversubscribed; yielding again only adds switches
    // (docs/design.md, "Measurements behind code choices").
    (void)comm;
    return false;
#endif
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    // The node's cores, not this process's affinity mask: mpirun binds each
    // rank to its own core, which is not sharing.
    const int cores = std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
    const char *yield = std::getenv("OMPI_MCA_mpi_yield_when_idle");
    if (yield && std::strcmp(yield, "1") == 0) return true;
    return local > cores;
}

Status make_transport(MPI_Comm comm, bool oversubscribed, std::unique_ptr<Transport> *out) {
    int rank, size, flag = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *tag_ub = nullptr;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &flag);
    // The highest tag is kept for revoke notices.
    const uint32_t max_tag = (flag && tag_ub ? static_cast<uint32_t>(*tag_ub) : 32767u) - 1;
    MPI_Datatype unit;
    MPI_Type_contiguous(static_cast<int>(kUnitBytes), MPI_BYTE, &unit);
    MPI_Type_commit(&unit);
    *out = std::make_unique<MpiTransport>(comm, rank, size, max_tag, unit, oversubscribed);
    return LOOM_SUCCESS;
}

}  // namespace

Status make_mpi_transport(MPI_Comm user_comm, std::unique_ptr<Transport> *out) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "MPI is not initialized (call MPI_Init before loom_comm_create)");
    if (user_comm == MPI_COMM_NULL) return fail(LOOM_ERR_INVALID_ARGUMENT, "communicator is MPI_COMM_NULL");
    int inter = 0;
    if (MPI_Comm_test_inter(user_comm, &inter) != MPI_SUCCESS)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "communicator handle is not valid");
    if (inter) return fail(LOOM_ERR_INVALID_ARGUMENT, "intercommunicators are not supported; use an intracommunicator");
    MPI_Comm dup;
    int rc = MPI_Comm_dup(user_comm, &dup);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_dup", -1);
    // Loom reports errors as status codes; it must not abort the job.
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    return make_transport(dup, node_is_oversubscribed(dup), out);
}

}  // namespace loom
