// Shared slots: collectives among the ranks of one node without messages.
// Every rank owns, at the end of its inbox, two slot lines and two slot
// buffers. A call of generation g (the communicator's g-th shared-slots
// call, the same on every rank) writes the rank's contribution into its
// line g % 2, right after that line's generation word, when it fits there
// (48 bytes), else into its buffer g % 2, and then publishes g in the
// line; a peer reads it in place once it sees g there. A small
// contribution thus travels in the cache line that carries its generation.
// A rank publishes g only after it has read every peer's g-1, so a peer
// that sees g has finished reading what g-2 left in the same line and
// buffer: no matching, no acknowledgement and no lock.
// A rank's area lives in its inbox, which peers map by name; the name goes
// when the rank frees its communicator. So no call finishes before every
// peer has mapped the rank's inbox (mapped_by_every_peer): a rank that left
// its last call and freed the communicator cannot take with it what a slow
// peer has yet to read.
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

    // `ranks` ranks of one node, this one at local index `rank`;
    // `inbox_of(i)` is local rank i's inbox, or null while it does not
    // exist yet; `own_inbox_mapped_by_all()` whether every peer has mapped
    // this rank's inbox.
    SharedSlots(int rank, int ranks, size_t capacity, size_t area_offset,
                unsigned char *(*inbox_of)(void *context, size_t i), bool (*own_inbox_mapped_by_all)(void *context),
                void *context);

    int rank() const { return rank_; }
    int size() const { return size_; }
    // The most bytes a rank publishes in one call.
    size_t capacity() const { return capacity_; }

    // Contributions of up to this many bytes travel in the generation's
    // line, from its 16th byte (aligned for every type Loom reduces).
    static constexpr size_t kInlineOffset = 16;
    static constexpr size_t kInlineBytes = 48;
    // Where this rank writes `bytes` for generation g.
    unsigned char *own_buffer(uint64_t g, size_t bytes) { return place(own_, g, bytes); }
    void publish(uint64_t g) { generation(own_, g)->store(g, std::memory_order_release); }
    // A word published with generation g (bytes 8-15 of its line): set it
    // before publish(g); read a peer's once peer_buffer(i, g) is not null.
    void set_note(uint64_t g, uint64_t value) { note(own_, g)->store(value, std::memory_order_relaxed); }
    uint64_t peer_note(int i, uint64_t g) const { return note(areas_[i], g)->load(std::memory_order_relaxed); }
    // Rank i's `bytes` of generation g once i has published them, else null.
    const unsigned char *peer_buffer(int i, uint64_t g, size_t bytes) {
        unsigned char *area = areas_[i];
        if (!area && !(area = map(i))) return nullptr;
        const uint64_t seen = generation(area, g)->load(std::memory_order_acquire);
        if (ignore_generation_for_test ? seen == 0 : seen < g) return nullptr;
        return place(area, g, bytes);
    }
    // Maps every peer's area, then tells whether every peer has mapped
    // this rank's. Once true it stays true; until then a call must not
    // finish. Each rank maps all the others here, so the ranks of a call
    // that all wait for it all get there.
    bool mapped_by_every_peer() {
        if (mapped_by_all_) return true;
        for (int i = 0; i < size_; ++i)
            if (!areas_[i] && !map(i)) return false;
        return mapped_by_all_ = own_inbox_mapped_by_all_(context_);
    }

    // How many collective calls this rank has entered on the communicator
    // (its inbox's header), and how many local rank i has: false while i's
    // inbox does not exist yet (it has entered none).
    void set_calls_entered(uint64_t calls) { own_calls_entered_->store(calls, std::memory_order_relaxed); }
    bool peer_calls_entered(int i, uint64_t *calls) const;

  private:
    // Line g % 2: the generation word, then the inline bytes.
    static std::atomic<uint64_t> *generation(unsigned char *area, uint64_t g) {
        return reinterpret_cast<std::atomic<uint64_t> *>(area + (g & 1) * kLineBytes);
    }
    static std::atomic<uint64_t> *note(unsigned char *area, uint64_t g) {
        return reinterpret_cast<std::atomic<uint64_t> *>(area + (g & 1) * kLineBytes + sizeof(uint64_t));
    }
    unsigned char *place(unsigned char *area, uint64_t g, size_t bytes) const {
        if (bytes <= kInlineBytes) return area + (g & 1) * kLineBytes + kInlineOffset;
        return area + kHeaderBytes + (g & 1) * capacity_;
    }
    unsigned char *map(int i);

  public:
    static constexpr size_t kLineBytes = 64;
    static constexpr size_t kHeaderBytes = 2 * kLineBytes;  // the two lines (layout.hpp)

  private:
    int rank_, size_;
    size_t capacity_, area_offset_;
    unsigned char *(*inbox_of_)(void *, size_t);
    bool (*own_inbox_mapped_by_all_)(void *);
    void *context_;
    bool mapped_by_all_ = false;
    unsigned char *own_ = nullptr;
    std::atomic<uint64_t> *own_calls_entered_ = nullptr;
    std::vector<unsigned char *> areas_;  // by rank: each one's slot area, once mapped
};

// The shared slots of a shared-memory transport's node group
// (make_shared_memory_transport), indexed by local rank: the whole
// communicator's when the node holds every rank. Null for another
// transport. The transport must outlive them.
std::unique_ptr<SharedSlots> make_shared_slots(Transport &shared_memory);

}  // namespace loom
