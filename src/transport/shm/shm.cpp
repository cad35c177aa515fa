#include "transport/shm/shm.hpp"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <deque>
#include <unordered_map>

#include "core/plan.hpp"

namespace loom {
namespace {

constexpr uint64_t kInboxMagic = 0x6c6f6f6d2d736d32ULL;  // "loom-sm2"
// The previous layout's (no single copy); its header is the same.
constexpr uint64_t kInboxMagicV1 = 0x6c6f6f6d2d736d31ULL;  // "loom-sm1"
constexpr size_t kHeaderBytes = 64;
// Read by a receiver from its sender's memory to learn whether it may copy
// straight out of that process (CMA: process_vm_readv). Different in every
// process, and sent along, so that a pid naming another process (another
// pid namespace sharing /dev/shm) fails the check.
const uint64_t kSingleCopyProbe = [] {
    uint64_t v = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ULL;
    v ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    v ^= reinterpret_cast<uintptr_t>(&v);
    return v | 1;
}();
constexpr size_t kCellHeaderBytes = 64;  // keeps payloads cache-line aligned

struct InboxHeader {
    uint64_t magic;
    uint64_t identity;
    uint32_t nlocal;
    uint32_t cells;
    uint32_t cell_payload;
    std::atomic<uint32_t> attached;  // peers that have mapped this inbox
    int32_t owner_pid;               // lets a later run remove it if its owner died
};
static_assert(sizeof(InboxHeader) <= kHeaderBytes, "inbox header fits its line");

// One cell: `full` is set by the sender after the payload (release) and
// cleared by the receiver after reading it (release). The first cell of a
// message carries its tag and size; the following ones only payload. A
// single-copy message is one cell without payload: `source` is the send
// buffer in the sender's memory, which the receiver reads with
// process_vm_readv; it writes `copy_errno` before clearing `full`, and the
// send completes when the sender sees the cell empty.
struct CellHeader {
    std::atomic<uint32_t> full;
    uint32_t tag;
    uint64_t message_bytes;
    int32_t sender_pid;
    int32_t copy_errno;  // single copy: 0, or why the receiver's read failed
    uint64_t source;     // single copy: the send buffer's address; 0 for payload in cells
    uint64_t probe;      // the address of kSingleCopyProbe in the sender
    uint64_t probe_value;  // and its value
};
static_assert(sizeof(CellHeader) <= 64, "cell header fits its line");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "cells need lock-free flags across processes");

size_t cell_stride(const ShmGeometry &g) { return kCellHeaderBytes + g.cell_payload; }

InboxHeader *header_of(unsigned char *inbox) { return reinterpret_cast<InboxHeader *>(inbox); }

// After the header line: one byte per sender, the inbox owner's verdict on
// reading that sender's memory: 0 before it has tried, kSingleCopyAllowed
// or kSingleCopyRefused; the rings start on the next line.
constexpr uint8_t kSingleCopyAllowed = 1, kSingleCopyRefused = 2;
// Then, in the inbox of the node's first rank only, a line of
// kCopyPathSlots bytes: its choice of path for the calls of each plan
// (0: none yet, else 1 + CopyPathChooser::Path) that the others follow.
constexpr size_t kCopyPathSlots = 64;
size_t header_area_bytes(size_t nlocal) { return kHeaderBytes + (nlocal + 63) / 64 * 64 + kCopyPathSlots; }
std::atomic<uint8_t> *single_copy_flag(unsigned char *inbox, size_t sender_index) {
    return reinterpret_cast<std::atomic<uint8_t> *>(inbox + kHeaderBytes + sender_index);
}
std::atomic<uint8_t> *copy_path_slot(unsigned char *inbox, size_t nlocal, uint32_t slot) {
    return reinterpret_cast<std::atomic<uint8_t> *>(inbox + header_area_bytes(nlocal) - kCopyPathSlots +
                                                    slot % kCopyPathSlots);
}
static_assert(sizeof(std::atomic<uint8_t>) == 1 && std::atomic<uint8_t>::is_always_lock_free, "flag bytes");

// Reads `bytes` at `source` in process `pid` into `dest`: 0, or the errno.
int read_from_process(int pid, uint64_t source, unsigned char *dest, size_t bytes) {
    size_t done = 0;
    while (done < bytes) {
        struct iovec local = {dest + done, bytes - done};
        struct iovec remote = {reinterpret_cast<void *>(source + done), bytes - done};
        const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EFAULT;
        done += static_cast<size_t>(n);
    }
    return 0;
}

struct ShmOp {
    bool done = false;
    bool truncated = false;  // receives: the message was larger
    size_t peer = 0;         // local index
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
    std::deque<ShmOp *> sends;  // in posting order; the front may be partly written
    uint64_t send_next = 0;     // next cell to write in the peer's inbox
    // Single-copy sends handed over, with their cell, until the peer has read them.
    std::deque<std::pair<ShmOp *, uint64_t>> reading;
    // As a receiver: whether we may read this peer's memory (0: not tried,
    // kSingleCopyAllowed, kSingleCopyRefused).
    uint8_t single_copy = 0;
    std::deque<ShmOp *> recvs;  // posted, not yet matched, in posting order
    uint64_t recv_next = 0;     // next cell to read in our inbox
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
    SharedMemoryTransport(int rank, int size, SharedMemoryNode node, const ShmOptions &options)
        : rank_(rank),
          size_(size),
          node_(std::move(node)),
          max_bytes_(options.max_bytes),
          alltoall_max_bytes_(options.alltoall_max_bytes),
          single_copy_mode_(options.single_copy.mode),
          single_copy_min_(options.single_copy.mode == SingleCopyPolicy::never
                               ? SIZE_MAX
                               : std::max<size_t>(options.single_copy.min_bytes, 1)),
          prefer_single_copy_(options.single_copy.mode == SingleCopyPolicy::always) {
        local_index_.assign(size, -1);
        for (size_t i = 0; i < node_.local_ranks.size(); ++i) local_index_[node_.local_ranks[i]] = static_cast<int>(i);
        my_index_ = static_cast<size_t>(local_index_[rank]);
        peers_.resize(node_.local_ranks.size());
        stride_ = cell_stride(node_.geometry);
        rings_offset_ = header_area_bytes(node_.local_ranks.size());
    }
    ~SharedMemoryTransport() override = default;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char *name() const override { return "shared_memory"; }
    uint32_t max_tag() const override { return UINT32_MAX; }  // a cell carries any tag

    bool carries(int peer, size_t bytes, const Route &route) const override {
        return local_peer(peer, bytes, route) >= 0;
    }

    uint64_t data_movements() const override { return cells_moved_; }

    void extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const override {
        out->emplace_back("node_ranks", node_.local_ranks.size());
        out->emplace_back("cells_moved", cells_moved_);
        out->emplace_back("unexpected_messages", unexpected_messages_);
        out->emplace_back("single_copy_sends", single_copy_sends_);
    }

    // Per plan: the ring limit of its collective, and for plans whose
    // messages may be large enough, the copy path chosen from timed calls.
    bool follows_plans() const override { return true; }
    void plan_added(uint32_t id, uint32_t key, const CollArgs &args) override {
        PlanPolicy &policy = plans_[id];
        policy = PlanPolicy{};
        policy.ring_limit = args.collective == Collective::alltoall ? alltoall_max_bytes_ : SIZE_MAX;
        policy.chooses_copy_path = single_copy_mode_ == SingleCopyPolicy::measured &&
                                   args.input_count() * args.elem_size >= single_copy_min_;
        policy.copy_path_slot = key;
        last_plan_ = Route::kNoPlan;
    }
    void plan_removed(uint32_t id) override {
        plans_.erase(id);
        last_plan_ = Route::kNoPlan;
    }
    // Blocking calls take the plan's next path and are timed, nonblocking
    // ones (whose time includes the caller's work) its best. Every rank
    // tries the other path on the same calls (they make the same calls in
    // the same order); otherwise all follow the node's first rank.
    bool call_starts(uint32_t plan, bool blocking) override {
        PlanPolicy *policy = policy_of(plan);
        if (!policy || !policy->chooses_copy_path) return false;
        if (my_index_ != 0) {
            const int shared = shared_copy_path(policy->copy_path_slot);
            if (shared >= 0) policy->copy_path.adopt(static_cast<CopyPathChooser::Path>(shared));
        }
        const CopyPathChooser::Path path = blocking ? policy->copy_path.next() : policy->copy_path.best();
        prefer_single_copy_ = path == CopyPathChooser::single_copy;
        policy->timed_path = path;
        return blocking;
    }
    void call_ends(uint32_t plan, uint64_t elapsed_ns) override {
        PlanPolicy *policy = policy_of(plan);
        if (!policy || !policy->chooses_copy_path) return;
        policy->copy_path.record(policy->timed_path, elapsed_ns);
        publish_copy_path(policy->copy_path_slot, policy->copy_path.best());
    }

  private:
    struct PlanPolicy {
        size_t ring_limit = SIZE_MAX;
        bool chooses_copy_path = false;
        uint32_t copy_path_slot = 0;
        CopyPathChooser copy_path;
        CopyPathChooser::Path timed_path = CopyPathChooser::ring;
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

    // The node's first rank chooses for all (a choice only pays when every
    // sender follows it: ranks deciding alone stayed mixed, and a node half
    // on each path was as slow as the slower one).
    void publish_copy_path(uint32_t slot, int path) {
        if (my_index_ != 0) return;
        // Written only when it changes: the others read this line every call.
        std::atomic<uint8_t> *word = copy_path_slot(node_.own->data(), node_.local_ranks.size(), slot);
        const auto value = static_cast<uint8_t>(path + 1);
        if (word->load(std::memory_order_relaxed) != value) word->store(value, std::memory_order_relaxed);
    }
    int shared_copy_path(uint32_t slot) const {
        const SharedSegment *seg = my_index_ == 0 ? node_.own.get() : node_.peers[0].get();
        if (!seg) return -1;  // not mapped yet: no sends to it so far
        return copy_path_slot(seg->data(), node_.local_ranks.size(), slot)->load(std::memory_order_relaxed) - 1;
    }

  public:
    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override {
        const int li = local_peer(peer, bytes, route);
        if (li < 0) return not_carried(peer, bytes);
        ShmOp *op = take_op();
        op->peer = static_cast<size_t>(li);
        op->tag = tag;
        op->buf = static_cast<unsigned char *>(const_cast<void *>(buf));
        op->bytes = bytes;
        op->single_copy = bytes >= single_copy_min_ && prefer_single_copy_;
        set_op(h, op);
        peers_[li].sends.push_back(op);
        push_sends(peers_[li]);  // small messages complete here, like an eager send
        return LOOM_SUCCESS;
    }

    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override {
        const int li = local_peer(peer, bytes, route);
        if (li < 0) return not_carried(peer, bytes);
        ShmOp *op = take_op();
        op->peer = static_cast<size_t>(li);
        op->tag = tag;
        op->buf = static_cast<unsigned char *>(buf);
        op->bytes = bytes;
        set_op(h, op);
        PeerState &ps = peers_[li];
        for (auto it = ps.unexpected.begin(); it != ps.unexpected.end(); ++it) {
            Unexpected &u = **it;
            if (u.tag != tag || u.claimed) continue;
            if (!u.complete) {
                u.claimed = op;  // finished by pull_messages
            } else {
                deliver(u, op);
                recycle(ps, it);
            }
            return LOOM_SUCCESS;
        }
        ps.recvs.push_back(op);
        return LOOM_SUCCESS;
    }

    // A poll moves every peer's messages, tested here or not; *moved says
    // whether a cell moved.
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) override {
        const uint64_t before = cells_moved_;
        poll();
        if (moved) *moved = cells_moved_ != before;
        if (!map_error_.empty()) return fail(LOOM_ERR_TRANSPORT, map_error_);
        return collect(hs, n, done);
    }

  private:
    static ShmOp *op_of(const TransportHandle *h) {
        ShmOp *op;
        std::memcpy(&op, h->bytes, sizeof op);
        return op;
    }
    static void set_op(TransportHandle *h, ShmOp *op) { std::memcpy(h->bytes, &op, sizeof op); }
    Status not_carried(int peer, size_t bytes) const {
        return fail(LOOM_ERR_INTERNAL, "shared memory was given a " + std::to_string(bytes) + "-byte message for rank " +
                                           std::to_string(peer) + ", which it does not carry");
    }

    // Reports the shared-memory operations among `hs` that are done, and
    // releases them (their handles are cleared, so a second call skips them).
    Status collect(TransportHandle *const *hs, size_t n, unsigned char *done) {
        Status st = LOOM_SUCCESS;
        for (size_t i = 0; i < n; ++i) {
            ShmOp *op = op_of(hs[i]);
            if (op == kReleased) {
                done[i] = 1;
                continue;
            }
            done[i] = op->done;
            if (!op->done) continue;
            if (op->truncated)
                st = fail(LOOM_ERR_TRANSPORT, "shared-memory message from rank " +
                                                  std::to_string(node_.local_ranks[op->peer]) + " is larger than the " +
                                                  std::to_string(op->bytes) + "-byte receive");
            if (op->copy_errno)
                st = fail(LOOM_ERR_TRANSPORT, "single-copy transfer between this rank and rank " +
                                                  std::to_string(node_.local_ranks[op->peer]) +
                                                  " failed (process_vm_readv: " + std::strerror(op->copy_errno) + ")");
            release_op(op);
            set_op(hs[i], kReleased);
        }
        return st;
    }

    // Local index of `peer` when this message goes through shared memory, else -1.
    int local_peer(int peer, size_t bytes, const Route &route) const {
        if (bytes > max_bytes_ || peer < 0 || peer >= static_cast<int>(local_index_.size())) return -1;
        if (route.plan != Route::kNoPlan) {
            const PlanPolicy *policy = policy_of(route.plan);
            if (policy && bytes > policy->ring_limit) return -1;
        }
        const int li = local_index_[peer];
        return static_cast<size_t>(li) == my_index_ ? -1 : li;
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

    void poll() {
        for (size_t li = 0; li < peers_.size(); ++li) {
            if (li == my_index_) continue;
            if (!peers_[li].sends.empty() || !peers_[li].reading.empty()) push_sends(peers_[li]);
            pull_messages(li);
        }
        // Once every peer has mapped our inbox its name is no longer needed.
        if (node_.own && node_.own->named() &&
            header_of(node_.own->data())->attached.load(std::memory_order_acquire) + 1 >= node_.local_ranks.size())
            node_.own->unlink();
    }

    // Writes queued sends to the peer's ring while it has free cells. A
    // peer whose inbox is not mapped yet is looked up first; until it
    // exists the sends wait.
    void push_sends(PeerState &ps) {
        const size_t payload = node_.geometry.cell_payload;
        for (;;) {
            // A single-copy cell that is empty again has been read; it must
            // be seen before it is reused (each write path looks again after
            // finding its cells empty, as the receiver may empty them between).
            finish_read_sends(ps);
            if (ps.sends.empty()) return;
            ShmOp *op = ps.sends.front();
            if (!node_.peers[op->peer]) {
                bool mapped = false;
                if (shm_open_peer(node_.key, op->peer, &node_, &mapped) != LOOM_SUCCESS) {
                    map_error_ = last_error_message();
                    return;
                }
                if (!mapped) return;
            }
            unsigned char *inbox = node_.peers[op->peer]->data();
            if (!op->header_written && op->single_copy &&
                single_copy_flag(inbox, my_index_)->load(std::memory_order_relaxed) == kSingleCopyAllowed) {
                if (!push_single_copy(ps, op, inbox)) return;
                continue;
            }
            if (!op->header_written && push_whole(ps, op, inbox)) continue;
            unsigned char *c = cell(inbox, my_index_, ps.send_next);
            auto *ch = reinterpret_cast<CellHeader *>(c);
            if (ch->full.load(std::memory_order_acquire)) return;  // ring full: the receiver has not caught up
            finish_read_sends(ps);  // the cell may be a single-copy one read since the last look
            const size_t n = std::min(payload, op->bytes - op->moved);
            if (n) std::memcpy(c + kCellHeaderBytes, op->buf + op->moved, n);
            if (!op->header_written) {
                write_first_header(ch, op, 0);
                op->header_written = true;
            }
            op->moved += n;
            ch->full.store(1, std::memory_order_release);
            ++ps.send_next;
            ++cells_moved_;
            if (op->moved == op->bytes) {
                op->done = true;
                ps.sends.pop_front();
            }
        }
    }

    // Writes a whole message when the ring has room for all its cells, and
    // flags its first cell last: the receiver then finds it complete and
    // copies it in one go instead of reading the cells as they are written
    // and waiting (and giving its core away) between them. False when the
    // ring lacks room; the message is then written cell by cell.
    bool push_whole(PeerState &ps, ShmOp *op, unsigned char *inbox) {
        const size_t payload = node_.geometry.cell_payload;
        const uint64_t ncells = op->bytes == 0 ? 1 : (op->bytes + payload - 1) / payload;
        if (ncells < 2 || ncells > node_.geometry.cells) return false;
        // Cells are emptied in order: if the last one is free, all are.
        const auto *last = reinterpret_cast<const CellHeader *>(cell(inbox, my_index_, ps.send_next + ncells - 1));
        if (last->full.load(std::memory_order_acquire)) return false;
        finish_read_sends(ps);  // one of the cells may be a single-copy one read since the last look
        auto *first = reinterpret_cast<CellHeader *>(cell(inbox, my_index_, ps.send_next));
        write_first_header(first, op, 0);
        for (uint64_t k = 0; k < ncells; ++k) {
            unsigned char *c = cell(inbox, my_index_, ps.send_next + k);
            const size_t n = std::min(payload, op->bytes - op->moved);
            std::memcpy(c + kCellHeaderBytes, op->buf + op->moved, n);
            op->moved += n;
            if (k > 0) reinterpret_cast<CellHeader *>(c)->full.store(1, std::memory_order_release);
        }
        first->full.store(1, std::memory_order_release);
        op->header_written = true;
        ps.send_next += ncells;
        cells_moved_ += ncells;
        op->done = true;
        ps.sends.pop_front();
        return true;
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

    // Hands a message over by single copy: one cell naming the send buffer,
    // which the receiver reads straight into its receive buffer. The send
    // completes once the cell is empty again (finish_read_sends). False
    // while the ring is full.
    bool push_single_copy(PeerState &ps, ShmOp *op, unsigned char *inbox) {
        auto *ch = reinterpret_cast<CellHeader *>(cell(inbox, my_index_, ps.send_next));
        if (ch->full.load(std::memory_order_acquire)) return false;
        finish_read_sends(ps);  // the cell may be a single-copy one read since the last look
        write_first_header(ch, op, reinterpret_cast<uint64_t>(op->buf));
        op->header_written = true;
        ch->full.store(1, std::memory_order_release);
        ps.reading.emplace_back(op, ps.send_next);
        ++ps.send_next;
        ++cells_moved_;
        ++single_copy_sends_;
        ps.sends.pop_front();
        return true;
    }

    // Completes the single-copy sends whose cells the receiver has emptied,
    // in order, with the receiver's verdict.
    void finish_read_sends(PeerState &ps) {
        while (!ps.reading.empty()) {
            ShmOp *op = ps.reading.front().first;
            const auto *ch = reinterpret_cast<const CellHeader *>(
                cell(node_.peers[op->peer]->data(), my_index_, ps.reading.front().second));
            if (ch->full.load(std::memory_order_acquire)) return;
            op->copy_errno = ch->copy_errno;
            op->done = true;
            ps.reading.pop_front();
        }
    }

    // Decides once per sender whether this rank may read its memory: a
    // process may forbid it (ptrace rules: Yama, seccomp, other users).
    // The sender finds the verdict in our inbox and sends single-copy cells
    // only after a yes.
    void try_single_copy(PeerState &ps, size_t li, const CellHeader *ch) {
        uint64_t probe = 0;
        const int err = read_from_process(ch->sender_pid, ch->probe, reinterpret_cast<unsigned char *>(&probe),
                                          sizeof probe);
        ps.single_copy = err == 0 && probe == ch->probe_value ? kSingleCopyAllowed : kSingleCopyRefused;
        single_copy_flag(node_.own->data(), li)->store(ps.single_copy, std::memory_order_relaxed);
    }

    // Copies a single-copy message out of its sender's memory into the
    // receive (what fits) or the unexpected buffer, then empties its cell,
    // which completes the send.
    void read_single_copy(PeerState &ps, size_t li, CellHeader *ch) {
        int err = 0;
        if (ps.in_op) {
            const size_t fit = std::min<size_t>(ps.in_total, ps.in_op->bytes);
            err = read_from_process(ch->sender_pid, ch->source, ps.in_op->buf, fit);
            ps.in_op->copy_errno = err;
        } else {
            err = read_from_process(ch->sender_pid, ch->source, ps.in_unexpected->data.get(), ps.in_total);
            ps.in_unexpected->copy_errno = err;
        }
        // Refused now though allowed at first (the sender made itself
        // undumpable, say): this message fails, later ones take the cells.
        if (err == EPERM || err == EACCES) {
            ps.single_copy = kSingleCopyRefused;
            single_copy_flag(node_.own->data(), li)->store(kSingleCopyRefused, std::memory_order_relaxed);
        }
        ch->copy_errno = err;
        ch->full.store(0, std::memory_order_release);
        ps.in_pos = ps.in_total;
        ++ps.recv_next;
        ++cells_moved_;
        finish_message(ps);
    }

    // Reads the cells that have arrived from one peer, matching each new
    // message to the first posted receive with its tag (MPI's order).
    void pull_messages(size_t li) {
        PeerState &ps = peers_[li];
        const size_t payload = node_.geometry.cell_payload;
        unsigned char *inbox = node_.own->data();
        for (;;) {
            unsigned char *c = cell(inbox, li, ps.recv_next);
            auto *ch = reinterpret_cast<CellHeader *>(c);
            if (!ch->full.load(std::memory_order_acquire)) return;
            if (!ps.in_op && !ps.in_unexpected) {
                if (!ps.single_copy && single_copy_min_ != SIZE_MAX) try_single_copy(ps, li, ch);
                if (!begin_message(ps, li, ch->tag, ch->message_bytes)) return;
                if (ch->source) {
                    read_single_copy(ps, li, ch);
                    continue;
                }
            }
            const size_t n = std::min(payload, ps.in_total - ps.in_pos);
            if (n) {
                if (ps.in_op) {
                    // A too-small receive keeps what fits and reports the truncation.
                    const size_t fit = ps.in_pos < ps.in_op->bytes ? std::min(n, ps.in_op->bytes - ps.in_pos) : 0;
                    if (fit) std::memcpy(ps.in_op->buf + ps.in_pos, c + kCellHeaderBytes, fit);
                } else {
                    std::memcpy(ps.in_unexpected->data.get() + ps.in_pos, c + kCellHeaderBytes, n);
                }
            }
            ps.in_pos += n;
            ch->full.store(0, std::memory_order_release);
            ++ps.recv_next;
            ++cells_moved_;
            if (ps.in_pos == ps.in_total) finish_message(ps);
        }
    }

    // Starts reading the message at the head of peer li's ring: into its
    // posted receive, or into an unexpected buffer when something needs the
    // ring emptied. Otherwise it stays in the ring (false): its send is
    // complete anyway (a single-copy one completes when its receive comes,
    // as through the PML), and a receive posted later takes it with one copy
    // instead of two. Ranks a loop iteration ahead send early all the time
    // on shared cores; copying those messages out twice made alltoall of
    // 16-128 KiB blocks 1.2-2.9x slower than the PML.
    bool begin_message(PeerState &ps, size_t li, uint32_t tag, uint64_t bytes) {
        for (auto it = ps.recvs.begin(); it != ps.recvs.end(); ++it) {
            if ((*it)->tag != tag) continue;
            ps.in_total = bytes;
            ps.in_pos = 0;
            ps.in_op = *it;
            ps.recvs.erase(it);
            ps.in_op->truncated = bytes > ps.in_op->bytes;
            return true;
        }
        // Taken out when a posted receive waits behind it, or when the ring is
        // full (its sender may be waiting for room to send what we wait for).
        if (ps.recvs.empty() && !ring_full(ps, li)) return false;
        std::unique_ptr<Unexpected> u;
        if (spare_.empty()) {
            u = std::make_unique<Unexpected>();
        } else {
            u = std::move(spare_.back());
            spare_.pop_back();
            u->complete = false;
            u->copy_errno = 0;
            u->claimed = nullptr;
        }
        u->tag = tag;
        if (u->capacity < bytes) {
            u->data.reset(new unsigned char[bytes]);
            u->capacity = bytes;
        }
        u->size = bytes;
        ++unexpected_messages_;
        ps.in_total = bytes;
        ps.in_pos = 0;
        ps.in_unexpected = u.get();
        ps.unexpected.push_back(std::move(u));
        return true;
    }

    // Every cell of peer li's ring in our inbox holds data (the cell before
    // the next one to read is the last the sender can fill).
    bool ring_full(const PeerState &ps, size_t li) const {
        const auto *last = reinterpret_cast<const CellHeader *>(
            cell(node_.own->data(), li, ps.recv_next + node_.geometry.cells - 1));
        return last->full.load(std::memory_order_acquire) != 0;
    }

    void finish_message(PeerState &ps) {
        if (ps.in_op) {
            ps.in_op->done = true;
        } else {
            Unexpected *u = ps.in_unexpected;
            u->complete = true;
            if (u->claimed) {
                deliver(*u, u->claimed);
                for (auto it = ps.unexpected.begin(); it != ps.unexpected.end(); ++it)
                    if (it->get() == u) {
                        recycle(ps, it);
                        break;
                    }
            }
        }
        ps.in_op = nullptr;
        ps.in_unexpected = nullptr;
    }

    // Unexpected buffers are kept for reuse: early arrivals are the common
    // case when ranks share cores, and this keeps allocation off that path.
    void recycle(PeerState &ps, std::deque<std::unique_ptr<Unexpected>>::iterator it) {
        if (spare_.size() < kSpareUnexpected) spare_.push_back(std::move(*it));
        ps.unexpected.erase(it);
    }
    static constexpr size_t kSpareUnexpected = 64;

    void deliver(const Unexpected &u, ShmOp *op) {
        op->truncated = u.size > op->bytes;
        op->copy_errno = u.copy_errno;
        const size_t n = std::min(u.size, op->bytes);
        if (n) std::memcpy(op->buf, u.data.get(), n);
        op->done = true;
    }

    int rank_, size_;
    SharedMemoryNode node_;
    size_t max_bytes_;
    size_t alltoall_max_bytes_;
    mutable std::unordered_map<uint32_t, PlanPolicy> plans_;  // mutable: looked up from carries()
    mutable uint32_t last_plan_ = Route::kNoPlan;
    mutable PlanPolicy *last_policy_ = nullptr;
    SingleCopyPolicy::Mode single_copy_mode_;
    size_t single_copy_min_;  // SIZE_MAX: single copy off
    bool prefer_single_copy_;  // for sends posted from now on (mode measured: the caller's choice)
    int32_t pid_ = static_cast<int32_t>(getpid());
    size_t stride_ = 0;
    size_t rings_offset_ = 0;  // header_area_bytes of this node: fixed, and needed for every cell
    std::vector<int> local_index_;  // by communicator rank; -1 off-node
    size_t my_index_ = 0;
    std::deque<PeerState> peers_;  // by local index (a deque: PeerState does not move)
    std::vector<std::unique_ptr<ShmOp>> owned_ops_;
    std::vector<std::unique_ptr<Unexpected>> spare_;
    std::vector<ShmOp *> free_ops_;
    uint64_t cells_moved_ = 0;
    uint64_t unexpected_messages_ = 0;  // taken out of a ring before their receive was posted
    uint64_t single_copy_sends_ = 0;
    std::string map_error_;  // a peer's inbox that belongs to someone else
};

}  // namespace

size_t shm_inbox_bytes(size_t nlocal, const ShmGeometry &g) {
    return header_area_bytes(nlocal) + nlocal * g.cells * cell_stride(g);
}

std::string shm_inbox_name(const std::string &key, int rank) {
    return "/loom-" + std::to_string(getuid()) + "-" + key + "-" + std::to_string(rank);
}

void shm_inbox_init(unsigned char *inbox, size_t nlocal, const ShmGeometry &g, uint64_t identity) {
    InboxHeader *h = header_of(inbox);
    h->identity = identity;
    h->nlocal = static_cast<uint32_t>(nlocal);
    h->cells = g.cells;
    h->cell_payload = g.cell_payload;
    h->attached.store(0, std::memory_order_relaxed);
    h->owner_pid = static_cast<int32_t>(getpid());
    // Cells are zero (empty) in a fresh segment; the magic goes last.
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kInboxMagic;
}

namespace {
// Exited, or exited and not yet reaped (a zombie holds no mappings).
bool process_gone(int pid) {
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64], state = 0;
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (FILE *f = std::fopen(path, "r")) {
        // "pid (comm) state ...": the state follows the last ')'.
        char line[512];
        if (std::fgets(line, sizeof line, f))
            if (const char *close = std::strrchr(line, ')')) state = close[1] == ' ' ? close[2] : 0;
        std::fclose(f);
    }
    return state == 'Z' || state == 'X';
}
}  // namespace

size_t shm_remove_stale_inboxes() {
    const std::string prefix = "loom-" + std::to_string(getuid()) + "-";
    DIR *dir = opendir("/dev/shm");
    if (!dir) return 0;
    size_t removed = 0;
    while (struct dirent *e = readdir(dir)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        std::unique_ptr<SharedSegment> seg;
        if (SharedSegment::open("/" + name, &seg) != LOOM_SUCCESS || seg->size() < kHeaderBytes) continue;
        const InboxHeader *h = header_of(seg->data());
        // Only inboxes whose owner is gone: a live owner's (even another
        // job's) is in use, and one without its magic yet is being made.
        if ((h->magic == kInboxMagic || h->magic == kInboxMagicV1) && h->owner_pid > 0 && process_gone(h->owner_pid)) {
            shm_unlink(("/" + name).c_str());
            ++removed;
        }
    }
    closedir(dir);
    return removed;
}

ShmGeometry shm_geometry_for(size_t nlocal) {
    constexpr size_t kInboxBudget = 4u << 20;
    ShmGeometry g;
    while (g.cells > 8 && nlocal * g.ring_bytes() > kInboxBudget) g.cells /= 2;
    return g;
}

size_t shm_ring_message_limit(const ShmGeometry &g, size_t requested) {
    return std::min(requested, g.ring_bytes() / 2);
}

Status shm_create_inbox(const std::string &key, int rank, SharedMemoryNode *node) {
    static std::once_flag swept;
    std::call_once(swept, [] { shm_remove_stale_inboxes(); });
    node->geometry = shm_geometry_for(node->local_ranks.size());
    const size_t bytes = shm_inbox_bytes(node->local_ranks.size(), node->geometry);
    LOOM_RETURN_IF_ERROR(SharedSegment::create(shm_inbox_name(key, rank), bytes, &node->own));
    shm_inbox_init(node->own->data(), node->local_ranks.size(), node->geometry, node->identity);
    return LOOM_SUCCESS;
}

Status shm_open_peer(const std::string &key, size_t i, SharedMemoryNode *node, bool *mapped) {
    *mapped = false;
    const int peer = node->local_ranks[i];
    const std::string name = shm_inbox_name(key, peer);
    std::unique_ptr<SharedSegment> seg;
    if (SharedSegment::open(name, &seg) != LOOM_SUCCESS) return LOOM_SUCCESS;  // not created yet
    const InboxHeader *h = header_of(seg->data());
    // Sized, but the magic (written last) not there yet: still being made.
    if (seg->size() < kHeaderBytes) return LOOM_SUCCESS;
    const uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (magic == kInboxMagicV1)
        return fail(LOOM_ERR_TRANSPORT, "shared-memory inbox " + name + " of rank " + std::to_string(peer) +
                                            " was made by an older Loom version");
    if (magic != kInboxMagic) return LOOM_SUCCESS;
    if (seg->size() != shm_inbox_bytes(node->local_ranks.size(), node->geometry) || h->identity != node->identity ||
        h->nlocal != node->local_ranks.size())
        return fail(LOOM_ERR_TRANSPORT, "shared-memory inbox " + name + " of rank " + std::to_string(peer) +
                                            " belongs to another communicator or Loom version");
    header_of(seg->data())->attached.fetch_add(1, std::memory_order_acq_rel);
    node->peers[i] = std::move(seg);
    *mapped = true;
    return LOOM_SUCCESS;
}

Status shm_open_peers(const std::string &key, int rank, SharedMemoryNode *node) {
    node->peers.clear();
    node->peers.resize(node->local_ranks.size());
    for (size_t i = 0; i < node->local_ranks.size(); ++i) {
        if (node->local_ranks[i] == rank) continue;
        bool mapped = false;
        LOOM_RETURN_IF_ERROR(shm_open_peer(key, i, node, &mapped));
        if (!mapped)
            return fail(LOOM_ERR_TRANSPORT, "shared-memory inbox " + shm_inbox_name(key, node->local_ranks[i]) +
                                                " of rank " + std::to_string(node->local_ranks[i]) + " is missing");
    }
    return LOOM_SUCCESS;
}

std::string node_group_problem(const std::vector<int> &local_ranks, int rank, int size) {
    for (size_t i = 0; i < local_ranks.size(); ++i)
        if (local_ranks[i] < 0 || local_ranks[i] >= size || (i > 0 && local_ranks[i] <= local_ranks[i - 1]))
            return "the node group must list distinct communicator ranks in ascending order";
    if (std::find(local_ranks.begin(), local_ranks.end(), rank) == local_ranks.end())
        return "the node group must include rank " + std::to_string(rank);
    return {};
}

Status make_shared_memory_transport(int rank, int size, SharedMemoryNode node, const ShmOptions &options,
                                    std::unique_ptr<Transport> *out) {
    const auto &lr = node.local_ranks;
    const std::string bad = node_group_problem(lr, rank, size);
    if (!bad.empty()) return fail(LOOM_ERR_INVALID_ARGUMENT, "shared-memory transport: " + bad);
    if (node.peers.empty()) node.peers.resize(lr.size());
    if (!node.own || node.peers.size() != lr.size())
        return fail(LOOM_ERR_INTERNAL, "shared-memory transport: this rank's inboxes are missing");
    for (size_t i = 0; i < lr.size(); ++i) {
        if (lr[i] != rank && !node.peers[i] && node.key.empty())
            return fail(LOOM_ERR_INTERNAL, "shared-memory inbox of rank " + std::to_string(lr[i]) + " is not mapped");
    }
    *out = std::make_unique<SharedMemoryTransport>(rank, size, std::move(node), options);
    return LOOM_SUCCESS;
}

}  // namespace loom
