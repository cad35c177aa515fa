// Shared slots: collectives among the ranks of one node without messages.
// Every rank owns, at the end of its inbox, a generation word and two slot
// buffers. A call of generation g (the communicator's g-th shared-slots
// call, the same on every rank) writes the rank's contribution into its
// buffer g % 2 and then publishes g; a peer reads that buffer in place once
// it sees a generation >= g. A rank publishes g only after it has read
// every peer's g-1, so a peer that sees g has finished reading the buffer
// of g-2 that g overwrites: two buffers and one word per rank suffice, with
// no matching, no acknowledgement and no lock.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/transport.hpp"

namespace loom {

class SharedSlots {
  public:
    // A test's mutation switch: readers take a peer's buffer once it has
    // published anything, not generation g (tests/unit/test_shared_slots.cpp
    // shows that the matrix catches it).
    static bool ignore_generation_for_test;

    // `ranks` communicator ranks, all on this node (local index = rank);
    // `inbox_of(i)` is rank i's inbox, or null while it does not exist yet.
    SharedSlots(int rank, int ranks, size_t capacity, size_t area_offset,
                unsigned char *(*inbox_of)(void *context, size_t i), void *context);

    int rank() const { return rank_; }
    int size() const { return size_; }
    // The most bytes a rank publishes in one call.
    size_t capacity() const { return capacity_; }

    // This rank's buffer for generation g.
    unsigned char *own_buffer(uint64_t g) { return buffer(own_, g); }
    void publish(uint64_t g) { generation(own_)->store(g, std::memory_order_release); }
    // Rank i's buffer of generation g once i has published it, else null.
    const unsigned char *peer_buffer(int i, uint64_t g) {
        unsigned char *area = areas_[i];
        if (!area && !(area = map(i))) return nullptr;
        const uint64_t seen = generation(area)->load(std::memory_order_acquire);
        if (ignore_generation_for_test ? seen == 0 : seen < g) return nullptr;
        return buffer(area, g);
    }

  private:
    static std::atomic<uint64_t> *generation(unsigned char *area) {
        return reinterpret_cast<std::atomic<uint64_t> *>(area);
    }
    unsigned char *buffer(unsigned char *area, uint64_t g) const {
        return area + kHeaderBytes + (g & 1) * capacity_;
    }
    unsigned char *map(int i);

  public:
    static constexpr size_t kHeaderBytes = 64;  // the generation's line (layout.hpp)

  private:
    int rank_, size_;
    size_t capacity_, area_offset_;
    unsigned char *(*inbox_of_)(void *, size_t);
    void *context_;
    unsigned char *own_ = nullptr;
    std::vector<unsigned char *> areas_;  // by rank: each one's slot area, once mapped
};

// The shared slots of a shared-memory transport (make_shared_memory_transport)
// whose node holds every rank of its communicator; null otherwise. The
// transport must outlive them.
std::unique_ptr<SharedSlots> make_shared_slots(Transport &shared_memory);

}  // namespace loom
