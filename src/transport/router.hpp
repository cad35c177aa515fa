// The per-peer router: a communicator's transports in preference order, and
// for each message the first whose carries() accepts it. The last one
// carries anything (the PML, MPI point-to-point). It counts messages and
// bytes per transport and lane.
#pragma once
#include <memory>
#include <vector>

#include "transport/transport.hpp"

namespace loom {

struct Program;

class Router final : public Transport {
  public:
    explicit Router(std::unique_ptr<Transport> fallback);
    // The transports added later go first: they may use the fallback as they go (the rails' failover).
    ~Router() override {
        while (transports_.size() > 1) transports_.pop_back();
    }
    // Puts `t` before the present transports (it must span the same ranks).
    // Operations in flight keep their carrier: indices never change.
    void add_preferred(std::unique_ptr<Transport> t);
    const Transport &fallback() const { return *transports_.front().transport; }
    Transport &fallback() { return *transports_.front().transport; }
    // Name, per-lane counts and the transport's own counts, in preference order.
    void report(std::vector<TransportCounters> *out) const;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const char *name() const override { return "router"; }
    uint32_t max_tag() const override { return max_tag_; }
    Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                     TransportHandle *h) override;
    Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route, TransportHandle *h) override;
    Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) override;
    Status idle() override;
    bool withdraw(TransportHandle *h, bool receive) override {
        return transports_[h->carrier].transport->withdraw(h, receive);
    }
    void call_abandoned() override {
        for (Entry &e : transports_) e.transport->call_abandoned();
    }
    size_t background_operations() const override {
        size_t n = 0;
        for (const Entry &e : transports_) n += e.transport->background_operations();
        return n;
    }
    Status progress_background() override;
    void revoke(uint64_t call) override {
        for (Entry &e : transports_) e.transport->revoke(call);
    }
    bool revoked_by_peer(uint64_t *call, int *peer) override {
        bool any = false;
        for (Entry &e : transports_) {
            uint64_t c = 0;
            int p = -1;
            if (e.transport->revoked_by_peer(&c, &p) && (!any || c < *call)) {
                *call = c;
                *peer = p;
                any = true;
            }
        }
        return any;
    }
    void reserve(size_t operations, int lanes) override;
    bool drives_progress_engine() const override;
    bool oversubscribed() const override { return oversubscribed_; }
    void plan_added(uint32_t id, uint32_t key, const CollArgs &args, bool for_progress_thread) override;
    void plan_removed(uint32_t id) override;
    bool follows_plans() const override { return !followers_.empty(); }
    // Inline: every call asks, and most communicators have no follower.
    bool call_starts(uint32_t plan, bool blocking) override {
        return !followers_.empty() && followers_start(plan, blocking);
    }
    void call_ends(uint32_t plan, uint64_t elapsed_ns) override;
    Status caller_turn() override {
        for (Transport *t : followers_) LOOM_RETURN_IF_ERROR(t->caller_turn());
        return LOOM_SUCCESS;
    }
    uint64_t data_movements() const override;

    // Whether the progress thread may drive every message of `program` (the
    // plan `plan`): null when each goes through a transport that allows it,
    // else the name of the first that does not.
    const char *thread_blocker(const Program &program, uint32_t plan, size_t elem_size);
    // For the step timeline: the name of a handle's carrier, and how it
    // spread a message over its rails (Transport::rail_split).
    const char *carrier_name(uint32_t carrier) const {
        return carrier < transports_.size() ? transports_[carrier].transport->name() : "?";
    }
    void rail_split(uint32_t carrier, size_t bytes, const Route &route,
                    std::vector<std::pair<int, size_t>> *out) const {
        if (carrier < transports_.size()) transports_[carrier].transport->rail_split(bytes, route, out);
        else out->clear();
    }
    Doorbell doorbell() override;  // the first transport's that has one
    // Sleeping waits, in two halves: arm_for_sleep (under the
    // communicator's lock, as every transport call) prepares every
    // transport that can wake a sleeper, false when one has news now or
    // none can; sleep_armed (without the lock, so the progress thread may
    // run) then sleeps until one has news, at most `timeout_us`.
    bool arm_for_sleep() { return arm_for_sleep(&wake_fds_); }
    void sleep_armed(int timeout_us) { sleep_on(wake_fds_, timeout_us); }
    // The same with descriptors of the caller's own (the progress thread's).
    bool arm_for_sleep(std::vector<int> *fds);
    static void sleep_on(const std::vector<int> &fds, int timeout_us);
    void ring_peers() override;

  private:
    struct Entry {
        std::unique_ptr<Transport> transport;
        bool engine = false;  // drives_progress_engine(), asked once
        std::vector<LaneCounters> lanes;
        // Scratch for test_many: this transport's share of the handles.
        std::vector<TransportHandle *> handles;
        std::vector<size_t> slots;
        std::vector<unsigned char> done;
    };
    // The carrying entry for a message, with its channel in *channel.
    Entry &carrier_for(int peer, size_t bytes, const Route &route, int *channel);
    static LaneCounters &lane(Entry &e, int lane) {
        const size_t i = lane < 0 ? 0 : static_cast<size_t>(lane);
        if (i >= e.lanes.size()) e.lanes.resize(i + 1);
        return e.lanes[i];
    }
    // Tests the entry's share of the handles; its done flags go to their slots.
    Status test_entry(Entry &e, unsigned char *done, bool *moved, bool *finished);
    bool followers_start(uint32_t plan, bool blocking);
    std::vector<Entry> transports_;       // in the order added: a handle's carrier indexes it; [0] carries anything
    std::vector<int> wake_fds_;           // scratch for sleep_until_news
    std::vector<size_t> order_;           // preference order: indices into transports_, the fallback last
    std::vector<Transport *> followers_;  // those that follow plans
    int rank_, size_;
    uint32_t max_tag_;
    bool oversubscribed_;
};

// The counters of the transport called `name` in a report, or null.
const TransportCounters *find_counters(const std::vector<TransportCounters> &report, const char *name);
// One of a transport's own counts by name; 0 when it has none of that name.
uint64_t extra_counter(const TransportCounters &c, const char *name);

}  // namespace loom
