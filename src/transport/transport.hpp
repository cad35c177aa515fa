// Transports move bytes between ranks of one communicator. The executor posts
// nonblocking sends and receives and polls them; a transport needs nothing
// else. Messages between a pair with the same tag match in posting order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.hpp"

namespace loom {

// Opaque per-operation handle storage owned by the caller. `bytes` belongs to
// the transport that carries the operation; `layered` to a transport wrapped
// around it (the shared-memory path), null when the inner one carries it.
struct TransportHandle {
    alignas(8) unsigned char bytes[16];
    void *layered;
    // Set by the caller before posting: the largest message a shared-memory
    // layer may carry through its rings for this operation (the plan's
    // limit; both sides of a message run the same plan, so they agree).
    size_t ring_limit = SIZE_MAX;
};

class Transport {
  public:
    virtual ~Transport() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual const char *name() const = 0;
    // Largest tag the transport carries; the communicator cycles tags below it.
    virtual uint32_t max_tag() const = 0;
    virtual Status post_send(const void *buf, size_t bytes, int peer, uint32_t tag, int lane,
                             TransportHandle *h) = 0;
    virtual Status post_recv(void *buf, size_t bytes, int peer, uint32_t tag, TransportHandle *h) = 0;
    // Sets *done; a completed handle is released by the transport.
    virtual Status test(TransportHandle *h, bool *done) = 0;
    // For transports whose every test is a sweep: test() as test_many() of one.
    Status test_one_by_sweep(TransportHandle *h, bool *done) {
        unsigned char d = 0;
        TransportHandle *one[1] = {h};
        LOOM_RETURN_IF_ERROR(test_many(one, 1, &d));
        *done = d != 0;
        return LOOM_SUCCESS;
    }
    // Tests n handles at once (done[i] for each). Transports whose every test
    // drives a progress engine (MPI) override it to drive it once per poll.
    virtual Status test_many(TransportHandle *const *hs, size_t n, unsigned char *done) {
        for (size_t i = 0; i < n; ++i) {
            bool d = false;
            LOOM_RETURN_IF_ERROR(test(hs[i], &d));
            done[i] = d;
        }
        return LOOM_SUCCESS;
    }
    // Called by a transport layered on this one when a poll found nothing
    // to do and this one had no operation to test: drive the progress engine
    // below once (Open MPI's gives the core away when oversubscribed).
    virtual Status idle() { return LOOM_SUCCESS; }
    // True when this rank shares its cores with more ranks than there are
    // cores: a waiting rank must then give its core away between polls, or
    // the rank it waits for cannot run. Otherwise spinning is faster.
    virtual bool oversubscribed() const { return true; }
    // A transport that can hand large messages over either way (the shared-
    // memory rings or single copy) and leaves the choice to its caller: the
    // smallest message the choice applies to, else SIZE_MAX; and the choice
    // for the sends posted from now on.
    virtual size_t single_copy_choice_min() const { return SIZE_MAX; }
    virtual void prefer_single_copy(bool) {}
    // Where ranks share that choice: whether this rank makes it, the
    // chooser publishing its choice for the calls of plan `slot` (a hash),
    // and the others reading it (-1: none yet).
    virtual bool leads_copy_path_choice() const { return true; }
    virtual void publish_copy_path(uint32_t, int) {}
    virtual int shared_copy_path(uint32_t) const { return -1; }
};

}  // namespace loom
