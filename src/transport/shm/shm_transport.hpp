// The shared-memory transport's class, internal (not installed): what
// make_shared_memory_transport returns. Its member functions live in
// shm.cpp (the rings: posting, polling, matching, plan policy) and
// single_copy.cpp (messages the receiver reads from the sender's memory);
// the small ones every message runs are defined here, so that they stay
// inlined into both.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fifo.hpp"
#include "transport/shm/copy_path_chooser.hpp"
#include "transport/shm/layout.hpp"
#include "transport/shm/shm.hpp"
#include "transport/transport.hpp"

namespace loom {
namespace shm_detail {
#pragma GCC visibility push(hidden)  // as in layout.hpp

// The address and value a receiver reads from its sender's memory to learn
// whether it may copy out of it (single_copy.cpp).
extern const uint64_t kSingleCopyProbe;

struct ShmOp {
    bool done = false;
    // The message's size (a send's: its own). Both sides of a message run
    // one plan, so a receive's other size means the ranks' calls differ.
    size_t arrived_bytes = 0;
    size_t peer = 0;  // local index
    uint32_t tag = 0;
    unsigned char *buf = nullptr;
    size_t bytes = 0;
    size_t moved = 0;             // sends: bytes written to the ring so far
    bool header_written = false;  // sends
    bool single_copy = false;     // sends: by single copy if the receiver may read us and it is large enough
    int copy_errno = 0;           // a failed single copy (on both sides)
};

// A message taken out of its ring before its receive was posted.
struct Unexpected {
    uint32_t tag = 0;
    // Not a vector: reusing a buffer must not zero it first.
    std::unique_ptr<unsigned char[]> data;
    size_t size = 0, capacity = 0;
    bool complete = false;
    int copy_errno = 0;
    ShmOp *claimed = nullptr;  // a receive posted while it was still arriving
};

struct PeerState {
    Fifo<ShmOp *> sends;     // in posting order; the front may be partly written
    uint64_t send_next = 0;  // next cell to write in the peer's inbox
    // Single-copy sends handed over, with their cell, until the peer has read them.
    Fifo<std::pair<ShmOp *, uint64_t>> reading;
    // As a receiver: whether we may read this peer's memory (0: not tried,
    // kSingleCopyAllowed, kSingleCopyRefused).
    uint8_t single_copy = 0;
    Fifo<ShmOp *> recvs;     // posted, not yet matched, in posting order
    uint64_t recv_next = 0;  // next cell to read in our inbox
    // The message being read: straight into a receive, or into `unexpected`.
    ShmOp *in_op = nullptr;
    Unexpected *in_unexpected = nullptr;
    size_t in_total = 0, in_pos = 0;
    std::deque<std::unique_ptr<Unexpected>> unexpected;
};

class SharedMemoryTransport final : public Transport {
    // Marks a handle whose operation was reported done and released.
    static inline ShmOp *const kReleased = reinterpret_cast<ShmOp *>(alignof(ShmOp));

  public:
    SharedMemoryTransport(int rank, int size, SharedMemoryNode node, const ShmOptions &options);
    ~SharedMemoryTransport() override = default;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char *name() const override { return "shared_memory"; }
    uint32_t max_tag() const override { return UINT32_MAX; }  // a cell carries any tag

    int carries(int peer, size_t bytes, const Route &route) const override { return local_peer(peer, bytes, route); }

    uint64_t data_movements() const override { return cells_moved_; }
    void extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const override;

    // Per plan: the ring limit of its collective, and for plans whose
    // messages may be large enough, the copy path chosen from timed calls.
    bool follows_plans() const override { return true; }
    void plan_added(uint32_t id, uint32_t key, const CollArgs &args, bool for_progress_thread) override;
    void plan_removed(uint32_t id) override;
    bool call_starts(uint32_t plan, bool blocking) override;
    void call_ends(uint32_t plan, uint64_t elapsed_ns) override;

    bool progress_thread_safe() const override { return true; }
    Doorbell doorbell() override { return doorbell_of(node_.own->data()); }
    void ring_peers() override { ring_peers_ = true; }

    // For the shared slots (slots.cpp): the node's ranks, the geometry, and
    // local rank li's inbox (this rank's own, or a peer's, mapped on first
    // use; null while the peer's does not exist yet).
    const SharedMemoryNode &node() const { return node_; }
    size_t own_index() const { return my_index_; }
    unsigned char *inbox_of(size_t li);
    // Whether every peer has mapped this rank's inbox; its name, no longer
    // needed then, is removed.
    bool mapped_by_every_peer();

    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override;
    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h) override;
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) override;
    bool withdraw(TransportHandle *h, bool receive) override;
    void revoke(uint64_t call) override;
    bool revoked_by_peer(uint64_t *call, int *peer) override;

  private:
    struct PlanPolicy {
        size_t ring_limit = SIZE_MAX;
        bool chooses_copy_path = false;
        uint32_t copy_path_slot = 0;
        CopyPathChooser copy_path;
        CopyPathChooser::Path timed_path = CopyPathChooser::ring;
        // A plan the progress thread drives: messages of any size go through
        // shared memory (single copy where allowed), so that none waits on
        // the caller's PML.
        bool threaded = false;
    };
    // Consecutive messages mostly belong to one plan: the last lookup is kept.
    PlanPolicy *policy_of(uint32_t plan) const {
        if (plan == Route::kNoPlan) return nullptr;
        if (plan != last_plan_) {
            auto it = plans_.find(plan);
            last_policy_ = it == plans_.end() ? nullptr : &it->second;
            last_plan_ = plan;
        }
        return last_policy_;
    }

    bool threaded_plan(uint32_t plan) const {
        const PlanPolicy *policy = plan == Route::kNoPlan ? nullptr : policy_of(plan);
        return policy && policy->threaded;
    }

    static ShmOp *op_of(const TransportHandle *h) {
        ShmOp *op;
        std::memcpy(&op, h->bytes, sizeof op);
        return op;
    }
    static void set_op(TransportHandle *h, ShmOp *op) { std::memcpy(h->bytes, &op, sizeof op); }

    // Local index of `peer` when this message goes through shared memory, else -1.
    // Whether `li` is `peer`'s local index (the router's channel is
    // carries()'s answer for it).
    bool is_channel_of(int peer, int li) const {
        return peer >= 0 && peer < size_ && li >= 0 && local_index_[peer] == li && static_cast<size_t>(li) != my_index_;
    }
    int local_peer(int peer, size_t bytes, const Route &route) const {
        if (peer < 0 || peer >= static_cast<int>(local_index_.size())) return -1;
        // A plan's limit replaces the transport's (plan_added folds max_bytes_ in).
        const PlanPolicy *policy = route.plan != Route::kNoPlan ? policy_of(route.plan) : nullptr;
        if (bytes > (policy ? policy->ring_limit : max_bytes_)) return -1;
        const int li = local_index_[peer];
        return static_cast<size_t>(li) == my_index_ ? -1 : li;
    }

    // Operations and queue slots for `operations` at once, made now.
    void reserve(size_t operations, int lanes) override {
        while (owned_ops_.size() < operations) {
            owned_ops_.push_back(std::make_unique<ShmOp>());
            free_ops_.push_back(owned_ops_.back().get());
        }
        free_ops_.reserve(owned_ops_.size());
        const size_t per_peer = std::min<size_t>(operations, 1024);
        for (PeerState &ps : peers_) {
            ps.sends.reserve(per_peer);
            ps.recvs.reserve(per_peer);
            ps.reading.reserve(per_peer);
        }
    }

    ShmOp *take_op() {
        if (free_ops_.empty()) {
            owned_ops_.push_back(std::make_unique<ShmOp>());
            return owned_ops_.back().get();
        }
        ShmOp *op = free_ops_.back();
        free_ops_.pop_back();
        return op;
    }
    void release_op(ShmOp *op) {
        *op = ShmOp{};
        free_ops_.push_back(op);
    }

    unsigned char *cell(unsigned char *inbox, size_t sender_index, uint64_t seq) const {
        // The rings follow the header area, one per sender.
        return inbox + rings_offset_ + (sender_index * node_.geometry.cells + seq % node_.geometry.cells) * stride_;
    }

    void write_first_header(CellHeader *ch, const ShmOp *op, uint64_t source) const {
        ch->tag = op->tag;
        ch->message_bytes = op->bytes;
        ch->sender_pid = pid_;
        ch->copy_errno = 0;
        ch->source = source;
        ch->probe = reinterpret_cast<uint64_t>(&kSingleCopyProbe);
        ch->probe_value = kSingleCopyProbe;
    }

    // Defined in shm.cpp, the only file that calls them, and inline, so that
    // GCC weighs inlining them into their callers: not inline, it called most
    // of them out of line, which made a small message dearer (docs/design.md,
    // "Measurements behind code choices").
    inline void publish_copy_path(uint32_t slot, int path);
    inline int shared_copy_path(uint32_t slot) const;
    inline Status not_carried(int peer, size_t bytes) const;
    inline Status collect(TransportHandle *const *hs, size_t n, unsigned char *done);
    inline void poll();
    inline void push_sends(size_t li);
    inline void push_sends_to(PeerState &ps);
    inline void ring_peer(size_t li);
    inline unsigned char *peer_inbox(size_t li);
    inline bool push_whole(PeerState &ps, ShmOp *op, unsigned char *inbox);
    inline void pull_messages(size_t li);
    inline bool begin_message(PeerState &ps, size_t li, uint32_t tag, uint64_t bytes);
    inline bool ring_full(const PeerState &ps, size_t li) const;
    inline void finish_message(PeerState &ps);
    inline void recycle(PeerState &ps, std::deque<std::unique_ptr<Unexpected>>::iterator it);
    static constexpr size_t kSpareUnexpected = 64;
    inline void deliver(const Unexpected &u, ShmOp *op);

    // single_copy.cpp: called from shm.cpp only while single copy is on,
    // out of line: the calls cost little beside a message's process_vm_readv
    // (docs/design.md, "Measurements behind code choices").
    bool push_single_copy(PeerState &ps, ShmOp *op, unsigned char *inbox);
    // Every send looks for single-copy sends that have been read, before
    // and after finding cells free: the test for none stays inline, so that
    // sends without single copy pay no call for it.
    void finish_read_sends(PeerState &ps) {
        if (!ps.reading.empty()) finish_read_sends_from(ps);
    }
    void finish_read_sends_from(PeerState &ps);
    void try_single_copy(PeerState &ps, size_t li, const CellHeader *ch);
    void read_single_copy(PeerState &ps, size_t li, CellHeader *ch);

    int rank_, size_;
    SharedMemoryNode node_;
    size_t max_bytes_;
    size_t alltoall_max_bytes_;
    mutable std::unordered_map<uint32_t, PlanPolicy> plans_;  // mutable: looked up from carries()
    mutable uint32_t last_plan_ = Route::kNoPlan;
    mutable PlanPolicy *last_policy_ = nullptr;
    SingleCopyPolicy::Mode single_copy_mode_;
    size_t single_copy_min_;   // SIZE_MAX: single copy off
    bool prefer_single_copy_;  // for sends posted from now on (mode measured: the caller's choice)
    int32_t pid_ = static_cast<int32_t>(getpid());
    size_t stride_ = 0;
    size_t rings_offset_ = 0;       // header_area_bytes of this node: fixed, and needed for every cell
    std::vector<int> local_index_;  // by communicator rank; -1 off-node
    size_t my_index_ = 0;
    std::deque<PeerState> peers_;  // by local index (a deque: PeerState does not move)
    std::vector<std::unique_ptr<ShmOp>> owned_ops_;
    std::vector<std::unique_ptr<Unexpected>> spare_;
    std::vector<ShmOp *> free_ops_;
    uint64_t cells_moved_ = 0;
    uint64_t unexpected_messages_ = 0;  // taken out of a ring before their receive was posted
    uint64_t single_copy_sends_ = 0;
    std::string map_error_;    // a peer's inbox that belongs to someone else
    bool ring_peers_ = false;  // ring_peers(): a progress thread drives this communicator
};

#pragma GCC visibility pop
}  // namespace shm_detail
}  // namespace loom
