// The shared-memory transport's rings: posting, polling, matching, the
// per-plan policy, and make_shared_memory_transport. The single-copy path
// is in single_copy.cpp, inboxes in inbox.cpp.
#include "transport/shm/shm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/plan.hpp"
#include "transport/shm/shm_transport.hpp"

namespace loom {
namespace shm_detail {

SharedMemoryTransport::SharedMemoryTransport(int rank, int size, SharedMemoryNode node, const ShmOptions &options)
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

void SharedMemoryTransport::extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const {
    out->emplace_back("node_ranks", node_.local_ranks.size());
    out->emplace_back("cells_moved", cells_moved_);
    out->emplace_back("unexpected_messages", unexpected_messages_);
    out->emplace_back("single_copy_sends", single_copy_sends_);
}

void SharedMemoryTransport::plan_added(uint32_t id, uint32_t key, const CollArgs &args, bool for_progress_thread) {
    PlanPolicy &policy = plans_[id];
    policy = PlanPolicy{};
    policy.threaded = for_progress_thread;
    policy.ring_limit = for_progress_thread                       ? SIZE_MAX
                        : args.collective == Collective::alltoall ? std::min(max_bytes_, alltoall_max_bytes_)
                                                                  : max_bytes_;
    // A thread-driven plan's large messages always go by single copy where
    // allowed (post_send): one read by the receiver moves a whole message.
    policy.chooses_copy_path = !policy.threaded && single_copy_mode_ == SingleCopyPolicy::measured &&
                               args.input_count() * args.elem_size >= single_copy_min_;
    policy.copy_path_slot = key;
    last_plan_ = Route::kNoPlan;
}

void SharedMemoryTransport::plan_removed(uint32_t id) {
    plans_.erase(id);
    last_plan_ = Route::kNoPlan;
}

// Blocking calls take the plan's next path and are timed, nonblocking
// ones (whose time includes the caller's work) its best. Every rank
// tries the other path on the same calls (they make the same calls in
// the same order); otherwise all follow the node's first rank.
bool SharedMemoryTransport::call_starts(uint32_t plan, bool blocking) {
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

void SharedMemoryTransport::call_ends(uint32_t plan, uint64_t elapsed_ns) {
    PlanPolicy *policy = policy_of(plan);
    if (!policy || !policy->chooses_copy_path) return;
    policy->copy_path.record(policy->timed_path, elapsed_ns);
    publish_copy_path(policy->copy_path_slot, policy->copy_path.best());
}

// The node's first rank chooses for all (a choice only pays when every
// sender follows it: ranks deciding alone stayed mixed, and a node half
// on each path was as slow as the slower one).
inline void SharedMemoryTransport::publish_copy_path(uint32_t slot, int path) {
    if (my_index_ != 0) return;
    // Written only when it changes: the others read this line every call.
    std::atomic<uint8_t> *word = copy_path_slot(node_.own->data(), node_.local_ranks.size(), slot);
    const auto value = static_cast<uint8_t>(path + 1);
    if (word->load(std::memory_order_relaxed) != value) word->store(value, std::memory_order_relaxed);
}

inline int SharedMemoryTransport::shared_copy_path(uint32_t slot) const {
    const SharedSegment *seg = my_index_ == 0 ? node_.own.get() : node_.peers[0].get();
    if (!seg) return -1;  // not mapped yet: no sends to it so far
    return copy_path_slot(seg->data(), node_.local_ranks.size(), slot)->load(std::memory_order_relaxed) - 1;
}

Status SharedMemoryTransport::post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                                        TransportHandle *h) {
    const int li = route.channel;
    if (!is_channel_of(peer, li)) return not_carried(peer, bytes);
    ShmOp *op = take_op();
    op->peer = static_cast<size_t>(li);
    op->tag = tag;
    op->buf = static_cast<unsigned char *>(const_cast<void *>(buf));
    op->bytes = bytes;
    op->arrived_bytes = bytes;  // a send's size is its own
    // Several calls may be running: a thread-driven plan's sends keep its preference.
    op->single_copy = bytes >= single_copy_min_ &&
                      (prefer_single_copy_ || (single_copy_min_ != SIZE_MAX && threaded_plan(route.plan)));
    set_op(h, op);
    peers_[li].sends.push_back(op);
    push_sends(static_cast<size_t>(li));  // small messages complete here, like an eager send
    return LOOM_SUCCESS;
}

Status SharedMemoryTransport::post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                                        TransportHandle *h) {
    const int li = route.channel;
    if (!is_channel_of(peer, li)) return not_carried(peer, bytes);
    ShmOp *op = take_op();
    op->peer = static_cast<size_t>(li);
    op->tag = tag;
    op->buf = static_cast<unsigned char *>(buf);
    op->bytes = bytes;
    op->arrived_bytes = 0;
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

bool SharedMemoryTransport::withdraw(TransportHandle *h, bool receive) {
    ShmOp *op = op_of(h);
    if (op == kReleased) return true;
    PeerState &ps = peers_[op->peer];
    if (op->done) {
        // Finished, not yet collected.
    } else if (!receive) {
        // A send partly in the ring (or handed over for a single copy) must finish.
        if (op->header_written || op->moved) return false;
        for (auto it = ps.sends.begin(); it != ps.sends.end(); ++it)
            if (*it == op) {
                ps.sends.erase(it);
                break;
            }
    } else {
        if (ps.in_op == op) return false;  // its message is arriving
        for (auto it = ps.recvs.begin(); it != ps.recvs.end(); ++it)
            if (*it == op) {
                ps.recvs.erase(it);
                break;
            }
        // Still arriving as an unexpected message: it stays there, unclaimed.
        for (auto &u : ps.unexpected)
            if (u->claimed == op) u->claimed = nullptr;
    }
    release_op(op);
    set_op(h, kReleased);
    return true;
}

// A poll moves every peer's messages, tested here or not; *moved says
// whether a cell moved.
Status SharedMemoryTransport::test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) {
    const uint64_t before = cells_moved_;
    poll();
    if (moved) *moved = cells_moved_ != before;
    if (!map_error_.empty()) return fail(LOOM_ERR_TRANSPORT, map_error_);
    return collect(hs, n, done);
}

inline Status SharedMemoryTransport::not_carried(int peer, size_t bytes) const {
    return fail(LOOM_ERR_INTERNAL, "shared memory was given a " + std::to_string(bytes) + "-byte message for rank " +
                                       std::to_string(peer) + ", which it does not carry");
}

// Reports the shared-memory operations among `hs` that are done, and
// releases them (their handles are cleared, so a second call skips them).
inline Status SharedMemoryTransport::collect(TransportHandle *const *hs, size_t n, unsigned char *done) {
    Status st = LOOM_SUCCESS;
    for (size_t i = 0; i < n; ++i) {
        ShmOp *op = op_of(hs[i]);
        if (op == kReleased) {
            done[i] = 1;
            continue;
        }
        done[i] = op->done;
        if (!op->done) continue;
        if (op->arrived_bytes != op->bytes)
            st = fail(LOOM_ERR_MISMATCH, "a shared-memory message of " + std::to_string(op->arrived_bytes) +
                                             " bytes from rank " + std::to_string(node_.local_ranks[op->peer]) +
                                             " met a receive of " + std::to_string(op->bytes) +
                                             " (did every rank pass the same count, type and op?)");
        if (op->copy_errno)
            st = fail(LOOM_ERR_TRANSPORT, "single-copy transfer between this rank and rank " +
                                              std::to_string(node_.local_ranks[op->peer]) +
                                              " failed (process_vm_readv: " + std::strerror(op->copy_errno) + ")");
        release_op(op);
        set_op(hs[i], kReleased);
    }
    return st;
}

inline void SharedMemoryTransport::poll() {
    for (size_t li = 0; li < peers_.size(); ++li) {
        if (li == my_index_) continue;
        if (!peers_[li].sends.empty() || !peers_[li].reading.empty()) push_sends(li);
        // Cells emptied: the sender's thread may wait for room or for a single copy to be read.
        const uint64_t before = cells_moved_;
        pull_messages(li);
        if (ring_peers_ && cells_moved_ != before) ring_peer(li);
    }
    if (node_.own && node_.own->named()) mapped_by_every_peer();
}

bool SharedMemoryTransport::mapped_by_every_peer() {
    if (!node_.own) return false;
    if (!node_.own->named()) return true;  // unlinked once all had mapped it, or made by a set-up that mapped all
    if (header_of(node_.own->data())->attached.load(std::memory_order_acquire) + 1 < node_.local_ranks.size())
        return false;
    node_.own->unlink();
    return true;
}

inline void SharedMemoryTransport::push_sends(size_t li) {
    const uint64_t before = cells_moved_;
    push_sends_to(peers_[li]);
    if (ring_peers_ && cells_moved_ != before) ring_peer(li);
}

// Wakes peer li's progress thread if it sleeps. Its inbox is mapped here if
// this rank never sent to it (the thread may wait for room we freed).
inline void SharedMemoryTransport::ring_peer(size_t li) {
    if (unsigned char *inbox = peer_inbox(li)) ring(doorbell_of(inbox));
}

// Peer li's inbox, mapped on first use; null while it does not exist yet or
// when it belongs to someone else (map_error_ says so).
inline unsigned char *SharedMemoryTransport::peer_inbox(size_t li) {
    if (!node_.peers[li]) {
        bool mapped = false;
        if (shm_open_peer(node_.key, li, &node_, &mapped) != LOOM_SUCCESS) {
            map_error_ = last_error_message();
            return nullptr;
        }
        if (!mapped) return nullptr;
    }
    return node_.peers[li]->data();
}

// Written into every local peer's inbox header (mapping it if this rank
// never sent to it: an error path), so that a waiting rank reads one word of
// its own. The earliest call wins.
void SharedMemoryTransport::revoke(uint64_t call) {
    const uint64_t notice = call << 16 | (my_index_ + 1);
    for (size_t li = 0; li < node_.local_ranks.size(); ++li) {
        if (li == my_index_) continue;
        unsigned char *inbox = peer_inbox(li);
        if (!inbox) continue;  // not made yet: that rank has entered no call
        std::atomic<uint64_t> &word = header_of(inbox)->revoke_notice;
        uint64_t seen = word.load(std::memory_order_relaxed);
        while ((!seen || notice >> 16 < seen >> 16) &&
               !word.compare_exchange_weak(seen, notice, std::memory_order_release, std::memory_order_relaxed)) {}
    }
}

bool SharedMemoryTransport::revoked_by_peer(uint64_t *call, int *peer) {
    if (!node_.own) return false;
    const uint64_t notice = header_of(node_.own->data())->revoke_notice.load(std::memory_order_acquire);
    if (!notice) return false;
    *call = notice >> 16;
    *peer = node_.local_ranks[(notice & 0xffff) - 1];
    return true;
}

unsigned char *SharedMemoryTransport::inbox_of(size_t li) {
    return li == my_index_ ? node_.own->data() : peer_inbox(li);
}

// Writes queued sends to the peer's ring while it has free cells. A
// peer whose inbox is not mapped yet is looked up first; until it
// exists the sends wait.
inline void SharedMemoryTransport::push_sends_to(PeerState &ps) {
    const size_t payload = node_.geometry.cell_payload;
    for (;;) {
        // A single-copy cell that is empty again has been read; it must
        // be seen before it is reused (each write path looks again after
        // finding its cells empty, as the receiver may empty them between).
        finish_read_sends(ps);
        if (ps.sends.empty()) return;
        ShmOp *op = ps.sends.front();
        unsigned char *inbox = peer_inbox(op->peer);
        if (!inbox) return;
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
inline bool SharedMemoryTransport::push_whole(PeerState &ps, ShmOp *op, unsigned char *inbox) {
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

// Reads the cells that have arrived from one peer, matching each new
// message to the first posted receive with its tag (MPI's order).
inline void SharedMemoryTransport::pull_messages(size_t li) {
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
                finish_message(ps);
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
// on shared cores, and copying those messages out twice cost more than the
// PML's one copy (docs/design.md, "The shared-memory path").
//
// Flattened: GCC inlined the deque erase below (libstdc++'s _M_erase)
// while these types were private to one file; called out of line, it made
// a small message dearer (docs/design.md, "Measurements behind code choices").
__attribute__((flatten)) inline bool SharedMemoryTransport::begin_message(PeerState &ps, size_t li, uint32_t tag,
                                                                          uint64_t bytes) {
    for (auto it = ps.recvs.begin(); it != ps.recvs.end(); ++it) {
        if ((*it)->tag != tag) continue;
        ps.in_total = bytes;
        ps.in_pos = 0;
        ps.in_op = *it;
        ps.recvs.erase(it);
        ps.in_op->arrived_bytes = bytes;
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
inline bool SharedMemoryTransport::ring_full(const PeerState &ps, size_t li) const {
    const auto *last =
        reinterpret_cast<const CellHeader *>(cell(node_.own->data(), li, ps.recv_next + node_.geometry.cells - 1));
    return last->full.load(std::memory_order_acquire) != 0;
}

inline void SharedMemoryTransport::finish_message(PeerState &ps) {
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
inline void SharedMemoryTransport::recycle(PeerState &ps, std::deque<std::unique_ptr<Unexpected>>::iterator it) {
    if (spare_.size() < kSpareUnexpected) spare_.push_back(std::move(*it));
    ps.unexpected.erase(it);
}

inline void SharedMemoryTransport::deliver(const Unexpected &u, ShmOp *op) {
    op->arrived_bytes = u.size;
    op->copy_errno = u.copy_errno;
    const size_t n = std::min(u.size, op->bytes);
    if (n) std::memcpy(op->buf, u.data.get(), n);
    op->done = true;
}

}  // namespace shm_detail

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
    *out = std::make_unique<shm_detail::SharedMemoryTransport>(rank, size, std::move(node), options);
    return LOOM_SUCCESS;
}

}  // namespace loom
