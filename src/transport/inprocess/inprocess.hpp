// In-process transport: ranks are threads (or cooperative loops) of one
// process, no MPI. Two protocols:
// - eager: the payload is copied into the destination's mailbox at post time,
//   so a send completes at once;
// - rendezvous: a send completes only when the receiver has matched it, as
//   large MPI messages do. Plans that deadlock under MPI's rendezvous (a send
//   waiting, through a buffer, on a receive of the same exchange) deadlock
//   here too, so the unit tests run every algorithm under both.
#pragma once
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/transport.hpp"

namespace loom {

enum class InProcessProtocol { eager, rendezvous };

class InProcessFabric {
  public:
    explicit InProcessFabric(int nranks, InProcessProtocol protocol = InProcessProtocol::eager);
    int size() const { return nranks_; }
    InProcessProtocol protocol() const { return protocol_; }
    std::unique_ptr<Transport> endpoint(int rank);
    // Messages posted but not yet received, over all ranks (tests check it is 0).
    size_t undelivered() const;

    // One side of a message whose other side has not been matched yet.
    // `done` is published with release order after the data is in place.
    struct Pending {
        std::atomic<bool> done{false};
        bool truncated = false;
    };
    struct Message {
        int src;
        uint32_t tag;
        std::vector<unsigned char> payload;   // eager
        const void *sender_buffer = nullptr;  // rendezvous
        size_t bytes = 0;
        std::shared_ptr<Pending> sender;  // rendezvous: completed at match
    };
    struct PostedRecv {
        int src;
        uint32_t tag;
        void *buf;
        size_t bytes;
        std::shared_ptr<Pending> receiver;
    };
    struct Mailbox {
        mutable std::mutex mutex;
        std::deque<Message> unexpected;  // sent before a matching receive was posted
        std::deque<PostedRecv> posted;   // receives waiting for a message
    };
    Mailbox &mailbox(int rank) { return boxes_[rank]; }

  private:
    int nranks_;
    InProcessProtocol protocol_;
    std::vector<Mailbox> boxes_;
};

}  // namespace loom
