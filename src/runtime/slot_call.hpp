// One collective over the shared slots (transport/shm/slots.hpp), or, on a
// communicator of one rank, the local copy it amounts to: no plan, no
// messages. It runs as two stages that a request can take in turns: publish
// the contribution (once every earlier shared-slots call of this rank is
// finished), then, once every rank has published this generation, compute
// the output from the slots in place. Reductions add the slots in rank
// order on every rank, so all ranks get the same bits.
#pragma once
#include <vector>
#include <cstdint>

#include "core/datatype.hpp"
#include "core/plan.hpp"
#include "transport/shm/slots.hpp"

namespace loom {

class SlotCall {
  public:
    // `args` (completed: nranks, elem_size, in_place) must outlive the call.
    // `signature` (call_signature) is published beside the generation: a
    // peer that published another one made another call.
    void begin(SharedSlots *slots, uint64_t generation, const CollArgs &args, const void *sendbuf, void *recvbuf,
               ReduceFn reduce, uint64_t signature) {
        slots_ = slots;
        generation_ = generation;
        signature_ = signature;
        mismatched_rank_ = -1;
        args_ = &args;
        output_ = static_cast<unsigned char *>(recvbuf);
        input_ = !args.in_place ? static_cast<const unsigned char *>(sendbuf)
                 : args.collective == Collective::allgather
                     ? output_ + args.in_place_input_offset(slots ? slots->rank() : 0) * args.elem_size
                     : output_;
        reduce_ = reduce;
        bytes_ = published_bytes(args);
        published_ = false;
        done_ = false;
        next_peer_ = 0;
    }
    // Moves the call on: publishes when `finished` (the last generation this
    // rank finished) is the one before, and computes the output when every
    // rank has published. True when the call is finished (then `finished`
    // is its generation).
    bool advance(uint64_t *finished) {
        if (done_) return true;
        if (!slots_) compute();  // one rank: its input is the whole answer
        done_ = !slots_ || advance_shared(finished);
        return done_;
    }
    // The bytes a rank publishes for `args`: its whole input.
    static size_t published_bytes(const CollArgs &args) { return args.input_count() * args.elem_size; }
    // What every rank's call must agree on: the collective and, for a
    // reduction, its counts, datatype and op, for a movement its bytes (not
    // in place, which MPI asks of all ranks but the slots do not need).
    static uint64_t call_signature(const CollArgs &args, int datatype, int op);
    // Finished without an output: rank mismatched_rank() published another
    // signature for this generation (the output buffer is untouched).
    bool failed() const { return mismatched_rank_ >= 0; }
    int mismatched_rank() const { return mismatched_rank_; }

    // The local ranks whose contribution the call still waits for (a hang report).
    void unpublished(std::vector<int> *local) const;

  private:
    bool advance_shared(uint64_t *finished);
    void compute();
    bool all_published();

    SharedSlots *slots_ = nullptr;  // null: one rank, nothing shared
    uint64_t generation_ = 0;
    uint64_t signature_ = 0;
    int mismatched_rank_ = -1;
    const CollArgs *args_ = nullptr;
    const unsigned char *input_ = nullptr;
    unsigned char *output_ = nullptr;
    ReduceFn reduce_ = nullptr;
    size_t bytes_ = 0;  // published_bytes
    bool published_ = false;
    bool done_ = false;  // finished: advancing again changes nothing
    int next_peer_ = 0;  // ranks below it have been seen published
};

}  // namespace loom
