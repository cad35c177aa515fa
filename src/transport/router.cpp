#include "transport/router.hpp"

#include <poll.h>

#include <algorithm>

#include "core/plan.hpp"

namespace loom {

std::atomic<size_t> &background_operations_anywhere() {
    static std::atomic<size_t> count{0};
    return count;
}

Status Router::progress_background() {
    for (Entry &e : transports_)
        if (e.transport->background_operations()) LOOM_RETURN_IF_ERROR(e.transport->progress_background());
    return LOOM_SUCCESS;
}

Router::Router(std::unique_ptr<Transport> fallback)
    : rank_(fallback->rank()),
      size_(fallback->size()),
      max_tag_(fallback->max_tag()),
      oversubscribed_(fallback->oversubscribed()) {
    if (fallback->follows_plans()) followers_.push_back(fallback.get());
    transports_.emplace_back();
    transports_.back().engine = fallback->drives_progress_engine();
    transports_.back().transport = std::move(fallback);
    order_.push_back(0);
}

void Router::add_preferred(std::unique_ptr<Transport> t) {
    max_tag_ = std::min(max_tag_, t->max_tag());
    if (t->follows_plans()) followers_.push_back(t.get());
    Entry e;
    e.engine = t->drives_progress_engine();
    e.transport = std::move(t);
    transports_.push_back(std::move(e));
    order_.insert(order_.begin(), transports_.size() - 1);
}

void Router::reserve(size_t operations, int lanes) {
    for (Entry &e : transports_) {
        e.handles.reserve(operations);
        e.slots.reserve(operations);
        e.done.reserve(operations);
        if (e.lanes.size() < static_cast<size_t>(lanes)) e.lanes.resize(static_cast<size_t>(lanes));
        e.transport->reserve(operations, lanes);
    }
}

Router::Entry &Router::carrier_for(int peer, size_t bytes, const Route &route, int *channel) {
    const size_t last = order_.size() - 1;
    for (size_t k = 0; k < last; ++k) {
        Entry &e = transports_[order_[k]];
        const int c = e.transport->carries(peer, bytes, route);
        if (c >= 0) {
            *channel = c;
            return e;
        }
    }
    *channel = 0;
    return transports_[0];
}

Status Router::post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                         TransportHandle *h) {
    Route r = route;
    Entry &e = carrier_for(peer, bytes, route, &r.channel);
    h->carrier = static_cast<uint32_t>(&e - transports_.data());
    LaneCounters &c = lane(e, route.lane);
    ++c.sent_messages;
    c.sent_bytes += bytes;
    return e.transport->post_send(buf, bytes, peer, tag, r, h);
}

Status Router::post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h) {
    Route r = route;
    Entry &e = carrier_for(peer, bytes, route, &r.channel);
    h->carrier = static_cast<uint32_t>(&e - transports_.data());
    LaneCounters &c = lane(e, route.lane);
    ++c.received_messages;
    c.received_bytes += bytes;
    return e.transport->post_recv(buf, bytes, peer, tag, r, h);
}

Status Router::test_entry(Entry &e, unsigned char *done, bool *moved, bool *finished) {
    const size_t n = e.handles.size();
    if (e.done.size() < n) e.done.resize(n);
    LOOM_RETURN_IF_ERROR(e.transport->test_many(e.handles.data(), n, e.done.data(), moved));
    for (size_t k = 0; k < n; ++k) {
        done[e.slots[k]] = e.done[k];
        *finished |= e.done[k] != 0;
    }
    return LOOM_SUCCESS;
}

Status Router::test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) {
    if (transports_.size() == 1) return transports_[0].transport->test_many(hs, n, done, moved);
    for (Entry &e : transports_) {
        e.handles.clear();
        e.slots.clear();
    }
    for (size_t i = 0; i < n; ++i) {
        Entry &e = transports_[hs[i]->carrier];
        e.handles.push_back(hs[i]);
        e.slots.push_back(i);
    }
    // Transports that a poll drives come first, every time (they also move
    // messages of operations not tested here). Then the progress engines:
    // those with operations, or, when nothing at all happened, one idle
    // turn (Open MPI's gives the core away when oversubscribed), but never
    // after an operation finished: that would yield with work to do.
    bool memory_moved = false, memory_finished = false, engine_finished = false;
    for (Entry &e : transports_) {
        if (e.engine) continue;
        bool m = false;
        LOOM_RETURN_IF_ERROR(test_entry(e, done, &m, &memory_finished));
        memory_moved |= m;
    }
    bool engine_driven = false;
    for (Entry &e : transports_) {
        if (!e.engine) continue;
        // The thread never enters a progress engine: it tests only what is
        // safe for it (the rails with failover leave the PML to the caller).
        if (t_on_progress_thread && (e.handles.empty() || !e.transport->progress_thread_safe())) continue;
        if (!e.handles.empty()) {
            LOOM_RETURN_IF_ERROR(test_entry(e, done, nullptr, &engine_finished));
            engine_driven = true;
        } else if (!memory_moved && !memory_finished) {
            LOOM_RETURN_IF_ERROR(e.transport->idle());
            engine_driven = true;
        }
    }
    // The engine may have given the core away: what arrived meanwhile is
    // seen now, not one poll later.
    if (engine_driven && !memory_moved) {
        for (Entry &e : transports_) {
            if (e.engine) continue;
            bool m = false;
            LOOM_RETURN_IF_ERROR(test_entry(e, done, &m, &memory_finished));
            memory_moved |= m;
        }
    }
    if (moved) *moved = memory_moved || engine_driven;
    return LOOM_SUCCESS;
}

Status Router::idle() {
    for (Entry &e : transports_) LOOM_RETURN_IF_ERROR(e.transport->idle());
    return LOOM_SUCCESS;
}

bool Router::drives_progress_engine() const {
    for (const Entry &e : transports_)
        if (e.engine) return true;
    return false;
}

void Router::plan_added(uint32_t id, uint32_t key, const CollArgs &args, bool for_progress_thread) {
    for (Transport *t : followers_) t->plan_added(id, key, args, for_progress_thread);
}

void Router::plan_removed(uint32_t id) {
    for (Transport *t : followers_) t->plan_removed(id);
}

bool Router::followers_start(uint32_t plan, bool blocking) {
    bool wants_time = false;
    for (Transport *t : followers_) wants_time |= t->call_starts(plan, blocking);
    return wants_time;
}

void Router::call_ends(uint32_t plan, uint64_t elapsed_ns) {
    for (Transport *t : followers_) t->call_ends(plan, elapsed_ns);
}

uint64_t Router::data_movements() const {
    uint64_t n = 0;
    for (const Entry &e : transports_) n += e.transport->data_movements();
    return n;
}

const char *Router::thread_blocker(const Program &program, uint32_t plan, size_t elem_size) {
    for (const Step &s : program.steps) {
        if (s.kind != StepKind::send && s.kind != StepKind::recv) continue;
        const size_t bytes = (s.kind == StepKind::send ? s.src.count : s.dst.count) * elem_size;
        int channel = 0;
        const Transport &t = *carrier_for(s.peer, bytes, Route{plan, s.lane}, &channel).transport;
        if (!t.progress_thread_safe()) return t.name();
    }
    return nullptr;
}

thread_local bool t_on_progress_thread = false;

bool Router::arm_for_sleep(std::vector<int> *wake_fds) {
    wake_fds->clear();
    for (Entry &e : transports_) {
        const int armed = e.transport->arm_wakeup(wake_fds);
        if (armed == 0) return false;
    }
    return !wake_fds->empty();
}

void Router::sleep_on(const std::vector<int> &wake_fds, int timeout_us) {
    pollfd fds[16];
    const size_t n = std::min(wake_fds.size(), sizeof fds / sizeof fds[0]);
    for (size_t i = 0; i < n; ++i) fds[i] = pollfd{wake_fds[i], POLLIN, 0};
    const timespec t{timeout_us / 1000000, static_cast<long>(timeout_us % 1000000) * 1000};
    ppoll(fds, n, &t, nullptr);
}

Doorbell Router::doorbell() {
    for (size_t k : order_)
        if (Doorbell d = transports_[k].transport->doorbell()) return d;
    return {};
}

void Router::ring_peers() {
    for (Entry &e : transports_) e.transport->ring_peers();
}

void Router::report(std::vector<TransportCounters> *out) const {
    out->clear();
    for (size_t k : order_) {
        const Entry &e = transports_[k];
        TransportCounters c;
        c.name = e.transport->name();
        c.lanes = e.lanes.empty() ? std::vector<LaneCounters>(1) : e.lanes;
        e.transport->extra_counters(&c.extra);
        out->push_back(std::move(c));
    }
}

const TransportCounters *find_counters(const std::vector<TransportCounters> &report, const char *name) {
    for (const TransportCounters &c : report)
        if (c.name == name) return &c;
    return nullptr;
}

uint64_t extra_counter(const TransportCounters &c, const char *name) {
    for (const auto &e : c.extra)
        if (e.first == name) return e.second;
    return 0;
}

}  // namespace loom
