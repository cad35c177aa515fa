#include "engine/cuda/ipc_cache.hpp"

namespace loom {

IpcPeerCache::~IpcPeerCache() {
    for (auto &e : entries_) (void)ops_.close(ops_.context, e.second.local);
}

Status IpcPeerCache::map(int pid, uintptr_t peer_base, uint64_t buffer_id, const IpcHandle &handle, void **local_base) {
    const auto key = std::make_pair(pid, peer_base);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
        if (it->second.buffer_id == buffer_id) {
            ++counters_.hits;
            ages_.splice(ages_.begin(), ages_, it->second.age);
            *local_base = it->second.local;
            return LOOM_SUCCESS;
        }
        ++counters_.reopens;  // the peer's range holds another allocation now
        (void)ops_.close(ops_.context, it->second.local);
        ages_.erase(it->second.age);
        entries_.erase(it);
    }
    void *local = nullptr;
    LOOM_RETURN_IF_ERROR(ops_.open(ops_.context, handle, &local));
    ++counters_.opens;
    ages_.push_front(key);
    entries_[key] = Entry{buffer_id, local, ages_.begin()};
    while (entries_.size() > capacity_) {
        auto oldest = entries_.find(ages_.back());
        (void)ops_.close(ops_.context, oldest->second.local);
        entries_.erase(oldest);
        ages_.pop_back();
        ++counters_.evictions;
    }
    *local_base = local;
    return LOOM_SUCCESS;
}

IpcPeerCache::Ops driver_ipc_ops() {
    IpcPeerCache::Ops ops;
    ops.open = [](void *, const IpcHandle &h, void **base) { return ipc_open(h, base); };
    ops.close = [](void *, void *base) { return ipc_close(base); };
    return ops;
}

}  // namespace loom
