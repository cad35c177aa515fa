// The plans a communicator has built, under what each depends on, least
// recently used evicted first. Evicted plans keep their ids until no request
// runs them, so the transports keep their policy for a plan still running.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/params.hpp"
#include "core/plan.hpp"
#include "select/selector.hpp"

namespace loom {

extern const ParamId kParamPlanCacheEntries;

class Engine;
class PathRunner;

// A built plan: what runs, why it was chosen, its id for the transports.
struct CachedPlan {
    const AlgorithmInfo *algorithm = nullptr;
    std::string why;
    std::shared_ptr<const Program> program;
    uint32_t id = 0;
    Engine *engine = nullptr;            // for its local steps; null: host memory, inline
    const PathRunner *runner = nullptr;  // runs its calls (path_runner.hpp)
    // Made for calls the progress thread may drive (nonblocking or persistent, with the thread on).
    bool for_progress_thread = false;
    // Made for the progress thread, and every
    // message of it goes through a transport the thread may drive.
    bool thread_drivable = false;
    const char *thread_blocker = nullptr;  // otherwise, for such a plan: the transport the thread may not drive
};

// What a call's plan depends on. The parameters enter through their
// generation, so changing one never reuses a stale choice.
struct PlanKey {
    Collective collective;
    bool in_place;
    MemoryType memory;
    size_t count, elem_size;
    uint64_t config_generation;
    std::vector<size_t> recv_counts, recv_displs, send_counts, send_displs, count_matrix;
    NodeCounts node_counts;
    bool internal;
    bool progress_thread;
    const AlgorithmInfo *adapted;  // what adaptation chose instead of the selector; null: the selector's

    // The key's fields, and a call's that match them: every comparison goes through these two lists.
    template <typename Key>
    static auto fields(Key &k) {
        return std::tie(k.collective, k.in_place, k.memory, k.count, k.elem_size, k.config_generation, k.recv_counts,
                        k.recv_displs, k.send_counts, k.send_displs, k.count_matrix, k.node_counts, k.internal,
                        k.progress_thread, k.adapted);
    }
    static auto fields_of(const CollArgs &a, const uint64_t &generation, const bool &progress_thread,
                          const AlgorithmInfo *const &adapted) {
        return std::tie(a.collective, a.in_place, a.memory, a.count, a.elem_size, generation, a.recv_counts,
                        a.recv_displs, a.send_counts, a.send_displs, a.count_matrix, a.node_counts, a.internal,
                        progress_thread, adapted);
    }

    // `progress_thread`: for calls the progress thread may drive.
    static PlanKey of(const CollArgs &a, uint64_t generation, bool progress_thread = false,
                      const AlgorithmInfo *adapted = nullptr) {
        PlanKey k{};
        fields(k) = fields_of(a, generation, progress_thread, adapted);
        return k;
    }
    // Whether such a call has this key (nothing copied).
    bool matches(const CollArgs &a, uint64_t generation, bool progress_thread,
                 const AlgorithmInfo *adapted = nullptr) const {
        return fields(*this) == fields_of(a, generation, progress_thread, adapted);
    }
    bool operator==(const PlanKey &o) const { return fields(*this) == fields(o); }
};

struct PlanKeyHash {
    size_t operator()(const PlanKey &k) const;
};

class PlanCache {
  public:
    // The last call's plan, if `a` under `generation` is the same call: loops
    // repeat one call, and this skips the hash.
    const CachedPlan *last(const CollArgs &a, uint64_t generation, bool progress_thread = false,
                           const AlgorithmInfo *adapted = nullptr) const {
        return last_plan_ && last_key_.matches(a, generation, progress_thread, adapted) ? last_plan_ : nullptr;
    }
    void remember_last(const CollArgs &a, uint64_t generation, const CachedPlan *plan, bool progress_thread = false,
                       const AlgorithmInfo *adapted = nullptr) {
        last_key_ = PlanKey::of(a, generation, progress_thread, adapted);
        last_plan_ = plan;
    }
    // The plan cached under `key`, now the most recently used; null if none.
    const CachedPlan *find(const PlanKey &key);
    // Caches `plan` under `key` and evicts the least recently used beyond
    // `capacity`; returns the cached plan.
    const CachedPlan *insert(PlanKey key, CachedPlan plan, size_t capacity);
    // Retires every plan (their ids stay taken while requests run them).
    void retire_all();
    // Calls removed(id) for each retired plan no request runs any more, and
    // forgets it.
    template <class Removed>
    void forget_retired(Removed removed) {
        size_t kept = 0;
        for (auto &r : retired_) {
            if (r.second.use_count() == 1) removed(r.first);
            else retired_[kept++] = std::move(r);
        }
        retired_.resize(kept);
    }
    // A new plan's id: never reused.
    uint32_t take_id() { return next_id_++; }
    uint32_t next_id() const { return next_id_; }
    size_t size() const { return lru_.size(); }

  private:
    // Most recently used at the front.
    std::list<std::pair<PlanKey, CachedPlan>> lru_;
    std::unordered_map<PlanKey, decltype(lru_)::iterator, PlanKeyHash> index_;
    std::vector<std::pair<uint32_t, std::shared_ptr<const Program>>> retired_;
    uint32_t next_id_ = 0;
    PlanKey last_key_{};
    const CachedPlan *last_plan_ = nullptr;  // points into lru_; cleared when evicted
};

}  // namespace loom
