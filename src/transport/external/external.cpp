// A transport whose operations the caller supplies through the C API
// (loom_transport_t): how the coll/loom component reaches Open MPI's PML.
#include <cstring>
#include <string>
#include <vector>

#include "transport/external/external.hpp"
#include "transport/transport.hpp"

namespace loom {
namespace {

class ExternalTransport final : public Transport {
  public:
    explicit ExternalTransport(const loom_transport_t &ops) : ops_(ops) {
        if (ops_.version < 3) ops_.withdraw = nullptr;
        if (ops_.version < 4 || !ops_.notify || !ops_.probe) {
            ops_.notify = nullptr;
            ops_.probe = nullptr;
        }
    }
    int rank() const override { return ops_.rank; }
    int size() const override { return ops_.size; }
    const char *name() const override { return ops_.name ? ops_.name : "external"; }
    uint32_t max_tag() const override { return ops_.max_tag; }
    // The caller's progress engine decides about yielding.
    bool oversubscribed() const override { return false; }

    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override {
        void *handle = nullptr;
        const int rc = ops_.isend(ops_.context, buf, bytes, peer, tag, route.lane, &handle);
        return keep(rc, handle, h, "send", bytes, "to", peer);
    }
    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h) override {
        void *handle = nullptr;
        const int rc = ops_.irecv(ops_.context, buf, bytes, peer, tag, route.lane, &handle);
        return keep(rc, handle, h, "receive", bytes, "from", peer);
    }
    bool drives_progress_engine() const override { return true; }
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *) override {
        handles_.resize(n);
        for (size_t i = 0; i < n; ++i) std::memcpy(&handles_[i], hs[i]->bytes, sizeof(void *));
        const int rc = ops_.test_many(ops_.context, handles_.data(), n, done);
        if (rc == LOOM_ERR_MISMATCH)
            return fail(LOOM_ERR_MISMATCH, "a message was larger than its receive in the caller's transport (did "
                                           "every rank pass the same count, type and op?)");
        if (rc != 0) return fail(LOOM_ERR_TRANSPORT, "a send or receive failed in the caller's transport");
        return LOOM_SUCCESS;
    }

    bool withdraw(TransportHandle *h, bool receive) override {
        if (!ops_.withdraw) return false;
        void *handle = nullptr;
        std::memcpy(&handle, h->bytes, sizeof(void *));
        return ops_.withdraw(ops_.context, handle, receive ? 1 : 0) == 1;
    }

    void reserve(size_t operations, int) override { handles_.reserve(operations); }

    // Revoke notices through the caller's transport (version 4), never
    // from the progress thread: the communicator tells again from the caller's.
    void revoke(uint64_t call) override {
        if (!ops_.notify || t_on_progress_thread) return;
        for (int peer = 0; peer < ops_.size; ++peer)
            if (peer != ops_.rank) ops_.notify(ops_.context, peer, call);
    }
    bool revoked_by_peer(uint64_t *call, int *peer) override {
        int from = -1;
        uint64_t c = 0;
        while (ops_.probe && !t_on_progress_thread && ops_.probe(ops_.context, &from, &c) == 1)
            if (c && (!revoked_call_ || c < revoked_call_)) {
                revoked_call_ = c;
                revoked_by_ = from;
            }
        *call = revoked_call_;
        *peer = revoked_by_;
        return revoked_call_ != 0;
    }

    Status idle() override {
        if (ops_.test_many(ops_.context, nullptr, 0, nullptr) != 0)
            return fail(LOOM_ERR_TRANSPORT, "the caller's transport failed while progressing");
        return LOOM_SUCCESS;
    }

  private:
    // Stores the caller's handle of a posted operation, or says which failed
    // (the message is built only then: every message passes here).
    static Status keep(int rc, void *handle, TransportHandle *h, const char *what, size_t bytes, const char *to,
                       int peer) {
        if (rc != 0)
            return fail(LOOM_ERR_TRANSPORT, std::string(what) + " of " + std::to_string(bytes) + " bytes " + to +
                                                " rank " + std::to_string(peer) + " failed in the caller's transport");
        std::memcpy(h->bytes, &handle, sizeof(handle));
        return LOOM_SUCCESS;
    }

    loom_transport_t ops_;
    std::vector<void *> handles_;
    uint64_t revoked_call_ = 0;  // the earliest call a peer's notice revoked (0: none)
    int revoked_by_ = -1;
};

}  // namespace

Status make_external_transport(const loom_transport_t &ops, std::unique_ptr<Transport> *out) {
    if (ops.version < 2 || ops.version > LOOM_TRANSPORT_VERSION)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_transport_t.version is " + std::to_string(ops.version) +
                                                   ": set it to LOOM_TRANSPORT_VERSION (" +
                                                   std::to_string(LOOM_TRANSPORT_VERSION) +
                                                   "); since version 2 isend and irecv take a lane");
    if (!ops.isend || !ops.irecv || !ops.test_many)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_transport_t needs isend, irecv and test_many");
    if (ops.size < 1 || ops.rank < 0 || ops.rank >= ops.size)
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom_transport_t: rank " + std::to_string(ops.rank) +
                                                   " is not in [0, size=" + std::to_string(ops.size) + ")");
    *out = std::make_unique<ExternalTransport>(ops);
    return LOOM_SUCCESS;
}

}  // namespace loom
