// In-process transport: ranks are threads (or cooperative loops) of one
// process. Sends are eager: the payload is copied into the destination's
// mailbox at post time, so a send completes at once and no schedule of ranks
// can deadlock. Used by the unit tests and the executor benchmark; no MPI.
#pragma once
#include <deque>
#include <mutex>
#include <vector>

#include "transport.hpp"

namespace loom {

class InProcessFabric {
  public:
    explicit InProcessFabric(int nranks);
    int size() const { return nranks_; }
    std::unique_ptr<Transport> endpoint(int rank);
    // Messages posted but not yet received, over all ranks (tests check it is 0).
    size_t undelivered() const;

  private:
    friend class InProcessTransport;
    struct Message {
        int src;
        uint32_t tag;
        std::vector<unsigned char> payload;
    };
    struct PendingRecv {
        int src;
        uint32_t tag;
        void *buf;
        size_t bytes;
        bool done = false;
        bool truncated = false;
    };
    struct Mailbox {
        mutable std::mutex mutex;
        std::deque<Message> unexpected;                  // arrived before a matching receive
        std::deque<std::shared_ptr<PendingRecv>> posted;  // receives waiting for a message
    };
    int nranks_;
    std::vector<Mailbox> boxes_;
};

}  // namespace loom
