// Scratch and snapshot buffers of finished requests, kept for the next
// nonblocking calls: memory fresh from the system costs a page fault per
// page on first touch, and large blocks go back to it when freed.
#pragma once
#include <cstddef>
#include <vector>

namespace loom {

class BufferPool {
  public:
    // Keeps `buffer` if it is large enough to be worth it, dropping the
    // smallest kept ones beyond the pool's limits.
    void keep(std::vector<unsigned char> &&buffer);
    // Gives `into` a kept buffer of at least `bytes` if it has less room and
    // one is kept (what `into` held takes its place).
    void take(std::vector<unsigned char> &into, size_t bytes);

    static constexpr size_t kSmallest = 64 << 10;  // smaller buffers are not worth keeping
    static constexpr size_t kMostBuffers = 8;
    static constexpr size_t kMostBytes = size_t{512} << 20;

  private:
    std::vector<std::vector<unsigned char>> spare_;
};

}  // namespace loom
