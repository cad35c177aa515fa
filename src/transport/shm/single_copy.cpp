// The single-copy path of the shared-memory transport: a large message is
// one cell naming the send buffer, and the receiver reads it straight out
// of the sender's memory with process_vm_readv (CMA), once it has found
// that it may.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>

#include "transport/shm/shm_transport.hpp"

namespace loom {
namespace shm_detail {

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

namespace {
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
}  // namespace

// Hands a message over by single copy: one cell naming the send buffer,
// which the receiver reads straight into its receive buffer. The send
// completes once the cell is empty again (finish_read_sends). False
// while the ring is full.
bool SharedMemoryTransport::push_single_copy(PeerState &ps, ShmOp *op, unsigned char *inbox) {
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
void SharedMemoryTransport::finish_read_sends_from(PeerState &ps) {
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
void SharedMemoryTransport::try_single_copy(PeerState &ps, size_t li, const CellHeader *ch) {
    uint64_t probe = 0;
    const int err =
        read_from_process(ch->sender_pid, ch->probe, reinterpret_cast<unsigned char *>(&probe), sizeof probe);
    ps.single_copy = err == 0 && probe == ch->probe_value ? kSingleCopyAllowed : kSingleCopyRefused;
    single_copy_flag(node_.own->data(), li)->store(ps.single_copy, std::memory_order_relaxed);
}

// Copies a single-copy message out of its sender's memory into the
// receive (what fits) or the unexpected buffer, then empties its cell,
// which completes the send. The caller (pull_messages) then finishes the
// message, as it does one that came in cells.
void SharedMemoryTransport::read_single_copy(PeerState &ps, size_t li, CellHeader *ch) {
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
}

}  // namespace shm_detail
}  // namespace loom
