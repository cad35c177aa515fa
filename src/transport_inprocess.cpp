#include "transport_inprocess.hpp"

#include <cstring>
#include <string>
#include <thread>

namespace loom {

class InProcessTransport final : public Transport {
  public:
    InProcessTransport(InProcessFabric &fabric, int rank) : fabric_(fabric), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return fabric_.size(); }
    const char *name() const override { return "inprocess"; }
    uint32_t max_tag() const override { return 0x7fffffff; }

    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, int, TransportHandle *h) override {
        if (peer < 0 || peer >= size()) return fail(LOOM_ERR_INTERNAL, "inprocess send to rank " + std::to_string(peer));
        auto &box = fabric_.boxes_[peer];
        std::lock_guard<std::mutex> lock(box.mutex);
        // Deliver straight into the oldest matching posted receive, else queue.
        for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
            InProcessFabric::PendingRecv &r = **it;
            if (r.src == rank_ && r.tag == tag) {
                r.truncated = bytes > r.bytes;
                std::memcpy(r.buf, buf, std::min(bytes, r.bytes));
                r.done = true;
                box.posted.erase(it);
                std::memset(h->bytes, 0, sizeof(h->bytes));
                return LOOM_SUCCESS;
            }
        }
        InProcessFabric::Message m{rank_, tag, {}};
        m.payload.assign(static_cast<const unsigned char *>(buf), static_cast<const unsigned char *>(buf) + bytes);
        box.unexpected.push_back(std::move(m));
        std::memset(h->bytes, 0, sizeof(h->bytes));  // a null handle means "complete"
        return LOOM_SUCCESS;
    }

    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, TransportHandle *h) override {
        if (peer < 0 || peer >= size()) return fail(LOOM_ERR_INTERNAL, "inprocess recv from rank " + std::to_string(peer));
        auto &box = fabric_.boxes_[rank_];
        std::lock_guard<std::mutex> lock(box.mutex);
        for (auto it = box.unexpected.begin(); it != box.unexpected.end(); ++it) {
            if (it->src == peer && it->tag == tag) {
                if (it->payload.size() > bytes)
                    return fail(LOOM_ERR_INTERNAL, "inprocess message truncated: " + std::to_string(it->payload.size()) +
                                                       " bytes into " + std::to_string(bytes));
                std::memcpy(buf, it->payload.data(), it->payload.size());
                box.unexpected.erase(it);
                std::memset(h->bytes, 0, sizeof(h->bytes));
                return LOOM_SUCCESS;
            }
        }
        auto pending = new std::shared_ptr<InProcessFabric::PendingRecv>(
            std::make_shared<InProcessFabric::PendingRecv>(InProcessFabric::PendingRecv{peer, tag, buf, bytes}));
        box.posted.push_back(*pending);
        std::memcpy(h->bytes, &pending, sizeof(pending));
        return LOOM_SUCCESS;
    }

    Status test(TransportHandle *h, bool *done) override {
        std::shared_ptr<InProcessFabric::PendingRecv> *pending;
        std::memcpy(&pending, h->bytes, sizeof(pending));
        if (!pending) {
            *done = true;
            return LOOM_SUCCESS;
        }
        auto &box = fabric_.boxes_[rank_];
        std::lock_guard<std::mutex> lock(box.mutex);
        *done = (*pending)->done;
        if (*done) {
            const bool truncated = (*pending)->truncated;
            delete pending;
            std::memset(h->bytes, 0, sizeof(h->bytes));
            if (truncated) return fail(LOOM_ERR_INTERNAL, "inprocess message truncated");
        }
        return LOOM_SUCCESS;
    }

    void progress() override { std::this_thread::yield(); }

  private:
    InProcessFabric &fabric_;
    int rank_;
};

InProcessFabric::InProcessFabric(int nranks) : nranks_(nranks), boxes_(nranks) {}

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
