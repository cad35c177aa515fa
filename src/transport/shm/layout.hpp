// The layout of a shared-memory inbox, which every rank of a node maps: a
// header line, the single-copy verdicts and copy-path slots, one ring of
// cells per sender, then the owner's shared slots (slots.hpp). Internal to the transport (inbox.cpp makes and checks
// inboxes, shm.cpp and single_copy.cpp move messages through them); not
// installed.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/futex.hpp"
#include "transport/shm/shm.hpp"

namespace loom {
namespace shm_detail {
// Hidden, as the anonymous namespace these came from was: calls among them
// stay direct inside the library, and -fPIC does not make GCC assume they
// may be interposed (which would keep it from inlining them).
#pragma GCC visibility push(hidden)

constexpr uint64_t kInboxMagic = 0x6c6f6f6d2d736d34ULL;  // "loom-sm4"
// Earlier layouts' (sm1: no single copy; sm2: no shared slots; sm3: no
// revoked call); their header is the same up to its last word.
constexpr uint64_t kInboxMagicV1 = 0x6c6f6f6d2d736d31ULL;  // "loom-sm1"
constexpr uint64_t kInboxMagicV2 = 0x6c6f6f6d2d736d32ULL;  // "loom-sm2"
constexpr uint64_t kInboxMagicV3 = 0x6c6f6f6d2d736d33ULL;  // "loom-sm3"
inline bool older_inbox_magic(uint64_t magic) {
    return magic == kInboxMagicV1 || magic == kInboxMagicV2 || magic == kInboxMagicV3;
}
constexpr size_t kHeaderBytes = 64;
constexpr size_t kCellHeaderBytes = 64;  // keeps payloads cache-line aligned

struct InboxHeader {
    uint64_t magic;
    uint64_t identity;
    uint32_t nlocal;
    uint32_t cells;
    uint32_t cell_payload;
    std::atomic<uint32_t> attached;  // peers that have mapped this inbox
    int32_t owner_pid;               // lets a later run remove it if its owner died
    // The owner's progress thread sleeps on `doorbell` (a futex word) while
    // `sleepers` counts it; peers that hand it work ring it (core/futex.hpp).
    std::atomic<uint32_t> doorbell;
    std::atomic<uint32_t> sleepers;
    // The collective calls the owner has entered on this communicator:
    // a peer's hang report tells from it who has not arrived.
    std::atomic<uint64_t> calls_entered;
    // A peer's revoke (the earliest): the call it found its ranks disagree
    // on, shifted left 16 bits, and its local index + 1; 0: none. The owner
    // reads it while it waits, in that call or a later one, and fails too.
    std::atomic<uint64_t> revoke_notice;
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
    int32_t copy_errno;    // single copy: 0, or why the receiver's read failed
    uint64_t source;       // single copy: the send buffer's address; 0 for payload in cells
    uint64_t probe;        // the address of kSingleCopyProbe in the sender
    uint64_t probe_value;  // and its value
};
static_assert(sizeof(CellHeader) <= 64, "cell header fits its line");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "cells need lock-free flags across processes");

inline size_t cell_stride(const ShmGeometry &g) { return kCellHeaderBytes + g.cell_payload; }

inline InboxHeader *header_of(unsigned char *inbox) { return reinterpret_cast<InboxHeader *>(inbox); }
inline Doorbell doorbell_of(unsigned char *inbox) {
    InboxHeader *h = header_of(inbox);
    return {&h->doorbell, &h->sleepers};
}

// After the header line: one byte per sender, the inbox owner's verdict on
// reading that sender's memory: 0 before it has tried, kSingleCopyAllowed
// or kSingleCopyRefused; the rings start on the next line.
constexpr uint8_t kSingleCopyAllowed = 1, kSingleCopyRefused = 2;
// Then, in the inbox of the node's first rank only, a line of
// kCopyPathSlots bytes: its choice of path for the calls of each plan
// (0: none yet, else 1 + CopyPathChooser::Path) that the others follow.
constexpr size_t kCopyPathSlots = 64;
inline size_t header_area_bytes(size_t nlocal) { return kHeaderBytes + (nlocal + 63) / 64 * 64 + kCopyPathSlots; }
inline std::atomic<uint8_t> *single_copy_flag(unsigned char *inbox, size_t sender_index) {
    return reinterpret_cast<std::atomic<uint8_t> *>(inbox + kHeaderBytes + sender_index);
}
inline std::atomic<uint8_t> *copy_path_slot(unsigned char *inbox, size_t nlocal, uint32_t slot) {
    return reinterpret_cast<std::atomic<uint8_t> *>(inbox + header_area_bytes(nlocal) - kCopyPathSlots +
                                                    slot % kCopyPathSlots);
}
static_assert(sizeof(std::atomic<uint8_t>) == 1 && std::atomic<uint8_t>::is_always_lock_free, "flag bytes");

// The shared slots follow the rings: two lines, each a generation word and
// a small contribution, then two buffers of geometry.slot_bytes for larger
// ones (a call of generation g uses line and buffer g % 2; slots.hpp).
inline size_t slot_area_offset(size_t nlocal, const ShmGeometry &g) {
    return header_area_bytes(nlocal) + nlocal * g.cells * cell_stride(g);
}
constexpr size_t kSlotHeaderBytes = 128;
inline size_t slot_area_bytes(const ShmGeometry &g) { return kSlotHeaderBytes + 2 * g.slot_bytes; }
static_assert(std::atomic<uint64_t>::is_always_lock_free, "slot generations need lock-free words across processes");

#pragma GCC visibility pop
}  // namespace shm_detail
}  // namespace loom
