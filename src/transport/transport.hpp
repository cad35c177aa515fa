// Transports move bytes between ranks of one communicator. The executor posts
// nonblocking sends and receives and polls them; a transport needs nothing
// else. Messages between a pair with the same tag match in posting order.
//
// Several transports serve one communicator (shared memory within a node,
// a UCX worker per rail across nodes, the PML or MPI for the rest): a Router
// (transport/router.hpp) asks each, in preference order, whether it carries a
// message, the way NCCL picks the first transport whose canConnect accepts a
// peer pair. A transport's own policy (ring limits, copy paths) stays inside
// it; what it learns of a call is an opaque plan id.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/futex.hpp"
#include "core/status.hpp"

namespace loom {

struct CollArgs;

// Opaque per-operation storage owned by the caller. `bytes` belongs to the
// transport that carries the operation; `carrier` is the router's index of
// that transport.
struct TransportHandle {
    alignas(8) unsigned char bytes[24];
    uint32_t carrier = 0;
};

// Where a message goes besides its peer: the lane (rail, channel) and the
// plan it belongs to, so per-plan policy applies to both sides of a message
// alike (both run the same plan). kNoPlan outside a cached plan.
struct Route {
    static constexpr uint32_t kNoPlan = 0xffffffffu;
    uint32_t plan = kNoPlan;
    int lane = 0;
    // Set by the router: what the carrying transport's carries() answered
    // (its own index for the peer, say), so that posting need not work it out again.
    int channel = 0;
};

// Messages and bytes a transport carried on one lane, sends and receives.
struct LaneCounters {
    uint64_t sent_messages = 0, sent_bytes = 0;
    uint64_t received_messages = 0, received_bytes = 0;
};

// What a communicator's router reports about one of its transports.
struct TransportCounters {
    std::string name;
    std::vector<LaneCounters> lanes;                      // by lane, as many as were used (at least one)
    std::vector<std::pair<std::string, uint64_t>> extra;  // the transport's own counts
    uint64_t sent_messages() const {
        uint64_t n = 0;
        for (const LaneCounters &c : lanes) n += c.sent_messages;
        return n;
    }
};

// True on the progress thread: the router never enters a progress engine
// (the PML, MPI) there.
extern thread_local bool t_on_progress_thread;

class Transport {
  public:
    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual const char *name() const = 0;
    // Largest tag the transport carries; the communicator cycles tags below it.
    virtual uint32_t max_tag() const = 0;
    // Whether this transport carries a message of `bytes` between this rank
    // and `peer` for `route`: a channel >= 0 of its own, which the router
    // passes to the post in route.channel, or -1. Both sides must agree for
    // one message: it may depend on the peer pair, the size and the route only.
    virtual int carries(int peer, size_t bytes, const Route &route) const { return 0; }
    virtual Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                             TransportHandle *h) = 0;
    virtual Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, const Route &route,
                             TransportHandle *h) = 0;
    // Tests n handles at once, setting done[i] for every one of them; a
    // handle reported done is released by the transport. *moved (may be null) tells whether anything
    // happened, done or not: a router then knows whether to drive the
    // transports that wait in a progress engine.
    virtual Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done, bool *moved) = 0;
    Status test(TransportHandle *h, bool *done) {
        unsigned char d = 0;
        TransportHandle *one[1] = {h};
        LOOM_RETURN_IF_ERROR(test_many(one, 1, &d, nullptr));
        *done = d != 0;
        return LOOM_SUCCESS;
    }
    // Room for `operations` posted at once on up to `lanes` lanes, made now
    // (a persistent request's init), so that posting later allocates nothing.
    virtual void reserve(size_t operations, int lanes) {}
    // Called when a poll found nothing to do: drive the progress engine
    // below once (Open MPI's gives the core away when oversubscribed).
    virtual Status idle() { return LOOM_SUCCESS; }
    // Work a call leaves behind once its steps are done: a rail message
    // whose receiver may still ask for a piece again. How many such
    // operations wait, and one attempt to move them; a call completes only
    // when none is left (nothing would move them once it returned). Every
    // transport's are counted process-wide in background_operations_anywhere().
    virtual size_t background_operations() const { return 0; }
    virtual Status progress_background() { return LOOM_SUCCESS; }
    // True when a transport's progress happens in an engine that idle()
    // drives (the PML, MPI); false when a poll does all the work (memory).
    virtual bool drives_progress_engine() const { return false; }
    // True when this rank shares its cores with more ranks than there are
    // cores: a waiting rank must then give its core away between polls, or
    // the rank it waits for cannot run. Otherwise spinning is faster.
    virtual bool oversubscribed() const { return true; }

    // Plans. The communicator tells its transports about every plan it
    // caches (id: never reused within the communicator, removed once no
    // request runs it; `key`: a hash of the call's shape, equal on every
    // rank; `for_progress_thread`: made for calls the progress thread may
    // drive) and, per call, when it starts. A
    // transport that wants a blocking call's time returns true from
    // call_starts and is told the time in call_ends.
    // Whether the transport overrides the four below (the router then calls them).
    virtual bool follows_plans() const { return false; }
    virtual void plan_added(uint32_t id, uint32_t key, const CollArgs &args, bool for_progress_thread) {}
    virtual void plan_removed(uint32_t id) {}
    virtual bool call_starts(uint32_t plan, bool blocking) { return false; }
    virtual void call_ends(uint32_t plan, uint64_t elapsed_ns) {}

    // A count that grows whenever the transport moves data, finished or not
    // (a long message moves cell by cell before its step completes): lets a
    // caller tell a slow message from a stall.
    virtual uint64_t data_movements() const { return 0; }

    // The progress thread. Whether another thread than the caller's may
    // progress this transport's operations (under the communicator's lock):
    // true for Loom's own memory transports; false for those that enter MPI
    // or the PML, which take no locks below MPI_THREAD_MULTIPLE.
    virtual bool progress_thread_safe() const { return false; }
    // The caller's thread is here (a test or a start): a transport posts
    // what the progress thread left for it (messages through MPI or the PML).
    virtual Status caller_turn() { return LOOM_SUCCESS; }
    // Where a progress thread may sleep until this transport has news for
    // it; empty when it has no such word.
    virtual Doorbell doorbell() { return {}; }
    // From now on, ring the peers' doorbells whenever this rank hands them
    // work or frees room they wait for.
    virtual void ring_peers() {}

    // For the step timeline: how this transport spreads a message of
    // `bytes` on `route` over its rails, as (rail, bytes); left empty by a
    // transport without rails.
    virtual void rail_split(size_t bytes, const Route &route, std::vector<std::pair<int, size_t>> *out) const {
        out->clear();
    }

    // Sleeping waits. Prepares to sleep until this transport has news for
    // this rank: 1 when armed (the file descriptors that then become
    // readable are appended to *fds), 0 when it has news already (do not
    // sleep), -1 when it has no way to wake a sleeper (it is polled when
    // the sleep ends).
    virtual int arm_wakeup(std::vector<int> *fds) { return -1; }

    // A call abandoned under hang_abort. withdraw takes back a posted send
    // or receive that has not started moving, releasing its handle, so that
    // the caller's buffers are not touched after the call has returned;
    // false when it cannot (a message already arriving into a receive, a
    // send the transport cannot recall). call_abandoned: messages the call
    // sent may never be received, so a transport whose channel a later
    // communicator could reuse (an MPI communicator's context) keeps it.
    virtual bool withdraw(TransportHandle *h, bool receive) { return false; }
    virtual void call_abandoned() {}

    // A call whose ranks disagree (a message larger than its receive, or
    // shared slots that differ) is revoked, as ULFM revokes a
    // communicator: revoke(call) tells the peers this transport reaches
    // that this rank found collective `call` mismatched; revoked_by_peer
    // gives the earliest such call a peer has told this rank of, and that
    // peer, so that ranks still waiting in it or a later call fail too.
    virtual void revoke(uint64_t call) {}
    virtual bool revoked_by_peer(uint64_t *call, int *peer) { return false; }

    // Counts of its own worth showing beside the router's per-lane
    // messages and bytes ("single_copy_sends" ...).
    virtual void extra_counters(std::vector<std::pair<std::string, uint64_t>> *out) const {}
};

// Background operations (above) of every transport in the process: one
// atomic load tells a finishing call whether it must look further.
std::atomic<size_t> &background_operations_anywhere();

}  // namespace loom
