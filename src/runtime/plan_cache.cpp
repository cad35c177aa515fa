#include "runtime/plan_cache.hpp"

namespace loom {

const ParamId kParamPlanCacheEntries =
    declare_param(ParamSection::plans,
                  {"plan_cache_entries", ParamType::integer, "128", 6,
                   "Plans (with their algorithm choice) kept per communicator; the least recently used are dropped", 1,
                   1 << 20, Collective::allreduce});

size_t PlanKeyHash::operator()(const PlanKey &k) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
    mix(static_cast<uint64_t>(k.collective) << 1 | k.in_place);
    mix(static_cast<uint64_t>(k.memory));
    mix(k.count);
    mix(k.elem_size);
    mix(k.config_generation << 2 | static_cast<uint64_t>(k.internal) << 1 | k.progress_thread);
    mix(static_cast<uint64_t>(k.node_counts.node));
    mix(k.node_counts.total);
    mix(k.node_counts.largest);
    // By name: the hash indexes state the node's processes share, where addresses differ.
    if (k.adapted)
        for (const char *c = k.adapted->name; *c; ++c) mix(static_cast<unsigned char>(*c));
    for (const auto *v :
         {&k.recv_counts, &k.recv_displs, &k.send_counts, &k.send_displs, &k.count_matrix, &k.node_counts.counts})
        for (size_t c : *v) mix(c);
    return static_cast<size_t>(h);
}

const CachedPlan *PlanCache::find(const PlanKey &key) {
    auto hit = index_.find(key);
    if (hit == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, hit->second);
    return &hit->second->second;
}

const CachedPlan *PlanCache::insert(PlanKey key, CachedPlan plan, size_t capacity) {
    lru_.emplace_front(std::move(key), std::move(plan));
    index_[lru_.front().first] = lru_.begin();
    while (lru_.size() > capacity) {
        if (&lru_.back().second == last_plan_) last_plan_ = nullptr;  // evicted: forget the shortcut
        retired_.emplace_back(lru_.back().second.id, lru_.back().second.program);
        index_.erase(lru_.back().first);
        lru_.pop_back();
    }
    return &lru_.front().second;
}

void PlanCache::retire_all() {
    for (auto &entry : lru_) retired_.emplace_back(entry.second.id, entry.second.program);
    lru_.clear();
    index_.clear();
    last_plan_ = nullptr;
}

}  // namespace loom
