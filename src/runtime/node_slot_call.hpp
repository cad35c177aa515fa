// The slot phases of one node_slots call (algorithms/node_slots.cpp). The
// call takes generations g and g + 1 of its node's shared slots:
//   g:     every rank but the leader (local rank 0) publishes its input;
//          the leader combines the node's inputs, then runs the leaders'
//          plan from them into its own slot of g + 1 (the Request runs it);
//   g + 1: the leader publishes that result, with the plan's status beside
//          the generation, and every other rank copies its part from there.
// The generation rule of the shared slots holds: a rank publishes only once
// it finished its previous generation, which for the others means having
// read the leader's last result, and the leader writes g + 1 only after
// every rank published g, that is after each read g - 1 from it.
// A node of one rank has no slots: its leader works alone.
#pragma once
#include <vector>
#include <cstdint>

#include "core/datatype.hpp"
#include "core/plan.hpp"
#include "transport/shm/slots.hpp"

namespace loom {

class NodeSlotCall {
  public:
    enum class Stage { waiting, exchange, done };

    // Bytes of the buffer begin() needs: room for the result (used where
    // the node has no slots to hold it), then the leader's combined input.
    static size_t buffer_bytes(const CollArgs &args);
    // `args` (completed, with a node map) must outlive the call; `slots`
    // are the node's (null on a node of one rank); `buffer` has
    // buffer_bytes(args).
    void begin(SharedSlots *slots, uint64_t generation, const CollArgs &args, int rank, const void *sendbuf,
               void *recvbuf, ReduceFn reduce, unsigned char *buffer);
    // Moves the call on (`finished`: the last generation this rank
    // finished). A leader reaches `exchange` once the node's inputs are
    // combined: its plan then runs from combined() into result(), and
    // finish_exchange() publishes the result; an advance() that then finds
    // every peer able to read it ends the call. `done`: finished.
    Stage advance(uint64_t *finished);
    const unsigned char *combined() const { return buffer_ + result_bytes_; }
    unsigned char *result();
    void finish_exchange(bool ok, uint64_t *finished);
    // The call ended without a result: the leaders' exchange failed.
    bool failed() const { return failed_; }
    // The local ranks the call waits for in its slot phases (a hang
    // report): a leader, those that have not published their input; the
    // others, the leader until it publishes the result.
    void waiting_for(std::vector<int> *local) const;

  private:
    void combine();
    void copy_part(const unsigned char *result);

    SharedSlots *slots_ = nullptr;
    uint64_t generation_ = 0;
    const CollArgs *args_ = nullptr;
    int local_ = 0, ranks_on_node_ = 1;
    const unsigned char *input_ = nullptr;
    unsigned char *output_ = nullptr;
    ReduceFn reduce_ = nullptr;
    unsigned char *buffer_ = nullptr;  // buffer_bytes(): the result's room, then the combined input
    size_t input_bytes_ = 0, result_bytes_ = 0;
    size_t part_offset_ = 0, part_bytes_ = 0;  // this rank's output within the result
    Stage stage_ = Stage::done;
    bool published_ = false;
    bool result_published_ = false;  // the leader's, in g + 1: done once every peer has mapped its inbox
    bool failed_ = false;
    int next_peer_ = 1;  // the leader: local ranks below it have published
};

}  // namespace loom
