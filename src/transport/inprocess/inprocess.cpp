#include "transport/inprocess/inprocess.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

namespace loom {
namespace {

using Pending = InProcessFabric::Pending;

// Handles hold a heap-allocated shared_ptr<Pending>, or null for "complete".
void set_handle(TransportHandle *h, std::shared_ptr<Pending> p) {
    std::memset(h->bytes, 0, sizeof(h->bytes));
    if (!p) return;
    auto *holder = new std::shared_ptr<Pending>(std::move(p));
    std::memcpy(h->bytes, &holder, sizeof(holder));
}

std::shared_ptr<Pending> *get_handle(TransportHandle *h) {
    std::shared_ptr<Pending> *holder;
    std::memcpy(&holder, h->bytes, sizeof(holder));
    return holder;
}

Status truncation(size_t sent, size_t room) {
    return fail(LOOM_ERR_INTERNAL, "inprocess message of " + std::to_string(sent) + " bytes does not fit a " +
                                       std::to_string(room) + "-byte receive (plan mismatch)");
}

}  // namespace

class InProcessTransport final : public Transport {
  public:
    // hardware_concurrency() reads /sys on every call: ask once.
    InProcessTransport(InProcessFabric &fabric, int rank)
        : fabric_(fabric),
          rank_(rank),
          oversubscribed_(static_cast<unsigned>(fabric.size()) > std::max(1u, std::thread::hardware_concurrency())) {}
    int rank() const override { return rank_; }
    int size() const override { return fabric_.size(); }
    const char *name() const override { return "inprocess"; }
    uint32_t max_tag() const override { return 0x7fffffff; }
    // Mailboxes have their own locks; the rest is the communicator's.
    bool progress_thread_safe() const override { return true; }

    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &,
                     TransportHandle *h) override {
        if (peer < 0 || peer >= size())
            return fail(LOOM_ERR_INTERNAL, "inprocess send to rank " + std::to_string(peer));
        auto &box = fabric_.mailbox(peer);
        std::lock_guard<std::mutex> lock(box.mutex);
        for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
            if (it->src != rank_ || it->tag != tag) continue;
            // The oldest matching receive is waiting: deliver now.
            it->receiver->truncated = bytes > it->bytes;
            std::memcpy(it->buf, buf, std::min(bytes, it->bytes));
            it->receiver->done.store(true, std::memory_order_release);
            box.posted.erase(it);
            set_handle(h, nullptr);
            return LOOM_SUCCESS;
        }
        InProcessFabric::Message m;
        m.src = rank_;
        m.tag = tag;
        m.bytes = bytes;
        if (fabric_.protocol() == InProcessProtocol::eager) {
            m.payload.assign(static_cast<const unsigned char *>(buf), static_cast<const unsigned char *>(buf) + bytes);
            set_handle(h, nullptr);
        } else {
            m.sender_buffer = buf;
            m.sender = std::make_shared<Pending>();
            set_handle(h, m.sender);
        }
        box.unexpected.push_back(std::move(m));
        return LOOM_SUCCESS;
    }

    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &, TransportHandle *h) override {
        if (peer < 0 || peer >= size())
            return fail(LOOM_ERR_INTERNAL, "inprocess recv from rank " + std::to_string(peer));
        auto &box = fabric_.mailbox(rank_);
        std::lock_guard<std::mutex> lock(box.mutex);
        for (auto it = box.unexpected.begin(); it != box.unexpected.end(); ++it) {
            if (it->src != peer || it->tag != tag) continue;
            if (it->bytes > bytes) return truncation(it->bytes, bytes);
            if (it->sender) {
                std::memcpy(buf, it->sender_buffer, it->bytes);
                it->sender->done.store(true, std::memory_order_release);
            } else {
                std::memcpy(buf, it->payload.data(), it->bytes);
            }
            box.unexpected.erase(it);
            set_handle(h, nullptr);
            return LOOM_SUCCESS;
        }
        auto pending = std::make_shared<Pending>();
        box.posted.push_back(InProcessFabric::PostedRecv{peer, tag, buf, bytes, pending});
        set_handle(h, pending);
        return LOOM_SUCCESS;
    }

    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *) override {
        for (size_t i = 0; i < n; ++i) {
            bool d = false;
            LOOM_RETURN_IF_ERROR(test_one(hs[i], &d));
            done[i] = d;
        }
        return LOOM_SUCCESS;
    }
    // Stands in for the PML under the shared-memory transport in tests.
    bool drives_progress_engine() const override { return true; }

    Status test_one(TransportHandle *h, bool *done) {
        std::shared_ptr<Pending> *holder = get_handle(h);
        if (!holder) {
            *done = true;
            return LOOM_SUCCESS;
        }
        // Either side may be completed by the other rank's thread.
        const bool finished = (*holder)->done.load(std::memory_order_acquire);
        const bool truncated = finished && (*holder)->truncated;
        *done = finished;
        if (finished) {
            delete holder;
            set_handle(h, nullptr);
            if (truncated) return fail(LOOM_ERR_INTERNAL, "inprocess message truncated (plan mismatch)");
        }
        return LOOM_SUCCESS;
    }

    bool oversubscribed() const override { return oversubscribed_; }

  private:
    InProcessFabric &fabric_;
    int rank_;
    bool oversubscribed_;
};

InProcessFabric::InProcessFabric(int nranks, InProcessProtocol protocol)
    : nranks_(nranks), protocol_(protocol), boxes_(nranks) {}

std::unique_ptr<Transport> InProcessFabric::endpoint(int rank) {
    return std::make_unique<InProcessTransport>(*this, rank);
}

size_t InProcessFabric::undelivered() const {
    size_t n = 0;
    for (const auto &b : boxes_) {
        std::lock_guard<std::mutex> lock(b.mutex);
        n += b.unexpected.size() + b.posted.size();
    }
    return n;
}

}  // namespace loom
