#include "runtime/buffer_pool.hpp"

#include <algorithm>

namespace loom {

void BufferPool::keep(std::vector<unsigned char> &&buffer) {
    if (buffer.capacity() < kSmallest) return;
    size_t held = buffer.capacity();
    for (const auto &b : spare_) held += b.capacity();
    // The smallest go first.
    while (!spare_.empty() && (spare_.size() >= kMostBuffers || held > kMostBytes)) {
        auto smallest = std::min_element(spare_.begin(), spare_.end(),
                                         [](const auto &x, const auto &y) { return x.capacity() < y.capacity(); });
        if (smallest->capacity() > buffer.capacity()) return;  // this one is the smallest: drop it
        held -= smallest->capacity();
        spare_.erase(smallest);
    }
    if (held > kMostBytes) return;
    spare_.push_back(std::move(buffer));
}

void BufferPool::take(std::vector<unsigned char> &into, size_t bytes) {
    if (into.capacity() >= bytes) return;
    auto best = spare_.end();
    for (auto it = spare_.begin(); it != spare_.end(); ++it)
        if (it->capacity() >= bytes && (best == spare_.end() || it->capacity() < best->capacity())) best = it;
    if (best == spare_.end()) return;
    into.swap(*best);
    if (best->capacity() < kSmallest) spare_.erase(best);  // what was in `into`: not worth keeping
}

}  // namespace loom
