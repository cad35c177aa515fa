// Parameter hang_timeout: a call that waits that long says who it waits
// for. The watch counts a waiting call's looks and reads the clock only
// every kLooksPerClock of them, so that a call that finishes in time pays
// a counter; the time it reports starts at its first clock reading.
#pragma once
#include <cstdint>

#include "core/clock.hpp"

namespace loom {

class HangWatch {
  public:
    static constexpr uint32_t kLooksPerClock = 256;
    void reset() { *this = HangWatch{}; }
    // One look at the unfinished call; the clock and `timeout_ns()` (0: no
    // timeout) are read every kLooksPerClock looks. True once, when the
    // call has waited at least that long.
    template <class Timeout>
    bool due(Timeout timeout_ns) {
        if (reported_ || ++looks_ % kLooksPerClock != 0) return false;
        const uint64_t now = now_ns();
        if (!since_ns_) since_ns_ = now;
        const uint64_t limit = timeout_ns();
        if (!limit || now - since_ns_ < limit) return false;
        waited_ns_ = now - since_ns_;
        reported_ = true;
        return true;
    }
    double waited_s() const { return static_cast<double>(waited_ns_) / 1e9; }
    // Since the first clock reading, for a report asked for meanwhile (0 before it).
    double waited_s_now() const { return since_ns_ ? static_cast<double>(now_ns() - since_ns_) / 1e9 : 0.0; }

  private:
    uint32_t looks_ = 0;
    uint64_t since_ns_ = 0, waited_ns_ = 0;
    bool reported_ = false;
};

}  // namespace loom
