#include "runtime/node_slot_call.hpp"

#include <cstring>

#include "algorithms/algorithm.hpp"
#include "node_map.hpp"

namespace loom {

size_t NodeSlotCall::buffer_bytes(const CollArgs &a) {
    const NodeMap &m = *a.nodes;
    const size_t combined = a.collective == Collective::allgather
                                ? a.count * static_cast<size_t>(m.max_ranks_per_node())
                                : a.input_count();
    return (node_slots_result_count(a) + combined) * a.elem_size;
}

void NodeSlotCall::begin(SharedSlots *slots, uint64_t generation, const CollArgs &a, int rank, const void *sendbuf,
                         void *recvbuf, ReduceFn reduce, unsigned char *buffer) {
    const NodeMap &m = *a.nodes;
    slots_ = slots;
    generation_ = generation;
    args_ = &a;
    local_ = m.local_index[rank];
    ranks_on_node_ = m.ranks_on(m.node_of[rank]);
    output_ = static_cast<unsigned char *>(recvbuf);
    input_ = !a.in_place ? static_cast<const unsigned char *>(sendbuf)
             : a.collective == Collective::allgather ? output_ + a.in_place_input_offset(rank) * a.elem_size
                                                     : output_;
    reduce_ = reduce;
    buffer_ = buffer;
    input_bytes_ = a.input_count() * a.elem_size;
    result_bytes_ = node_slots_result_count(a) * a.elem_size;
    // allgather: every rank's output is the whole result.
    const CollArgs::Part part = a.collective == Collective::allgather ? CollArgs::Part{0, node_slots_result_count(a)}
                                                                      : a.reduced_part(rank);
    part_offset_ = part.offset * a.elem_size;
    part_bytes_ = part.count * a.elem_size;
    stage_ = Stage::waiting;
    published_ = false;
    result_published_ = false;
    failed_ = false;
    next_peer_ = 1;
}

unsigned char *NodeSlotCall::result() {
    return slots_ ? slots_->own_buffer(generation_ + 1, result_bytes_) : buffer_;
}

NodeSlotCall::Stage NodeSlotCall::advance(uint64_t *finished) {
    if (stage_ != Stage::waiting) return stage_;
    if (result_published_) return stage_ = slots_->mapped_by_every_peer() ? Stage::done : Stage::waiting;
    if (slots_ && *finished + 1 != generation_) return stage_;  // an earlier call still uses the slots
    if (local_ == 0) {
        for (; next_peer_ < ranks_on_node_; ++next_peer_)
            if (!slots_->peer_buffer(next_peer_, generation_, input_bytes_)) return stage_;
        combine();
        return stage_ = Stage::exchange;
    }
    if (!published_) {
        std::memcpy(slots_->own_buffer(generation_, input_bytes_), input_, input_bytes_);
        slots_->publish(generation_);
        published_ = true;
    }
    if (!slots_->mapped_by_every_peer()) return stage_;
    const unsigned char *result = slots_->peer_buffer(0, generation_ + 1, result_bytes_);
    if (!result) return stage_;
    failed_ = slots_->peer_note(0, generation_ + 1) != 0;
    if (!failed_) copy_part(result);
    *finished = generation_ + 1;
    return stage_ = Stage::done;
}

void NodeSlotCall::waiting_for(std::vector<int> *local) const {
    local->clear();
    if (!slots_ || stage_ != Stage::waiting) return;
    if (local_ == 0) {
        if (result_published_) return;
        for (int i = next_peer_; i < ranks_on_node_; ++i)
            if (!slots_->peer_buffer(i, generation_, input_bytes_)) local->push_back(i);
        return;
    }
    if (!slots_->peer_buffer(0, generation_ + 1, result_bytes_)) local->push_back(0);
}

void NodeSlotCall::finish_exchange(bool ok, uint64_t *finished) {
    failed_ = !ok;
    if (slots_) {
        slots_->set_note(generation_ + 1, ok ? 0 : 1);
        slots_->publish(generation_ + 1);
        *finished = generation_ + 1;
    }
    if (ok) copy_part(result());
    // With slots, the next advance() ends the call once every peer can read the result.
    result_published_ = slots_ != nullptr;
    stage_ = slots_ ? Stage::waiting : Stage::done;
}

// The leader's input and its node's, in local order: added up, or side by side.
void NodeSlotCall::combine() {
    const CollArgs &a = *args_;
    auto from = [&](int j) { return j == 0 ? input_ : slots_->peer_buffer(j, generation_, input_bytes_); };
    unsigned char *to = buffer_ + result_bytes_;  // combined()
    if (!input_bytes_) return;  // count 0: no buffer (memcpy's null is undefined even for 0 bytes)
    if (a.collective == Collective::allgather) {
        for (int j = 0; j < ranks_on_node_; ++j) std::memcpy(to + j * input_bytes_, from(j), input_bytes_);
        return;
    }
    std::memcpy(to, input_, input_bytes_);
    for (int j = 1; j < ranks_on_node_; ++j) reduce_(to, from(j), a.input_count());
}

void NodeSlotCall::copy_part(const unsigned char *result) {
    if (part_bytes_) std::memcpy(output_, result + part_offset_, part_bytes_);
}

}  // namespace loom
