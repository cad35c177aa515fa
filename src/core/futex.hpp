// Futex waits and wakes on a 32-bit word, shared between processes (the
// word may live in a shared-memory segment): how the progress thread
// sleeps until a peer or the caller rings it.
#pragma once
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace loom {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word is 32 bits");

// Sleeps while *word == expected, at most timeout_ns (0: no limit). Returns
// early on a wake, a signal, or when the word already differs.
inline void futex_wait(std::atomic<uint32_t> *word, uint32_t expected, uint64_t timeout_ns) {
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000ULL);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000ULL);
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, expected, timeout_ns ? &ts : nullptr,
            nullptr, 0);
}

inline void futex_wake_all(std::atomic<uint32_t> *word) {
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// A word a sleeper waits on and the count of those asleep on it. A ringer
// publishes its work, then rings; a sleeper counts itself, then looks for
// work once more before sleeping. Both touch `sleepers` with read-modify-
// writes, which are ordered one after the other: either the sleeper's comes
// second and it sees the work, or the ringer's does and it sees the sleeper.
struct Doorbell {
    std::atomic<uint32_t> *word = nullptr;
    std::atomic<uint32_t> *sleepers = nullptr;
    explicit operator bool() const { return word != nullptr; }
};

inline void ring(const Doorbell &d) {
    if (d.sleepers->fetch_add(0, std::memory_order_acq_rel) == 0) return;
    d.word->fetch_add(1, std::memory_order_release);
    futex_wake_all(d.word);
}

}  // namespace loom
