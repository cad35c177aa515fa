// The monotonic clock in nanoseconds, for timing calls and messages.
#pragma once
#include <chrono>
#include <cstdint>

namespace loom {

inline uint64_t now_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

}  // namespace loom
