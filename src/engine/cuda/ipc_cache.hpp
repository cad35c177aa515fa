// Peers' device allocations opened in this process through CUDA IPC, by
// (peer process, allocation base). An entry is reused while the peer's
// buffer id for that base is unchanged; a new id means the peer freed the
// buffer and the range holds another allocation, so the old mapping is
// closed and the new one opened. The least recently used entries are closed
// beyond `capacity`. Needs no driver: open and close are the caller's.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <utility>

#include "core/status.hpp"
#include "engine/cuda/driver.hpp"

namespace loom {

class IpcPeerCache {
  public:
    struct Ops {
        void *context = nullptr;
        Status (*open)(void *context, const IpcHandle &handle, void **base) = nullptr;
        Status (*close)(void *context, void *base) = nullptr;
    };
    struct Counters {
        uint64_t opens = 0, hits = 0, reopens = 0, evictions = 0;
    };
    explicit IpcPeerCache(Ops ops, size_t capacity = 256) : ops_(ops), capacity_(capacity) {}
    ~IpcPeerCache();
    IpcPeerCache(const IpcPeerCache &) = delete;
    IpcPeerCache &operator=(const IpcPeerCache &) = delete;
    // The local address of the peer's allocation at `peer_base`.
    Status map(int pid, uintptr_t peer_base, uint64_t buffer_id, const IpcHandle &handle, void **local_base);
    Counters counters() const { return counters_; }
    size_t size() const { return entries_.size(); }

  private:
    struct Entry {
        uint64_t buffer_id;
        void *local;
        std::list<std::pair<int, uintptr_t>>::iterator age;
    };
    Ops ops_;
    size_t capacity_;
    std::map<std::pair<int, uintptr_t>, Entry> entries_;
    std::list<std::pair<int, uintptr_t>> ages_;  // most recently used first
    Counters counters_;
};

// The driver's open and close, for IpcPeerCache.
IpcPeerCache::Ops driver_ipc_ops();

}  // namespace loom
