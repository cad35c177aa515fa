#include "runtime/slot_call.hpp"

#include <cstring>


namespace loom {

bool SlotCall::all_published() {
    for (; next_peer_ < slots_->size(); ++next_peer_) {
        if (!slots_->peer_buffer(next_peer_, generation_, bytes_)) return false;
        if (mismatched_rank_ < 0 && slots_->peer_note(next_peer_, generation_) != signature_)
            mismatched_rank_ = next_peer_;
    }
    return true;
}

void SlotCall::unpublished(std::vector<int> *local) const {
    local->clear();
    if (!slots_ || done_) return;
    for (int i = 0; i < slots_->size(); ++i)
        if (i != slots_->rank() && !slots_->peer_buffer(i, generation_, bytes_)) local->push_back(i);
}

uint64_t SlotCall::call_signature(const CollArgs &a, int datatype, int op) {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
    mix(static_cast<uint64_t>(a.collective));
    const bool reduces = a.collective == Collective::allreduce || a.collective == Collective::reduce_scatter ||
                         a.collective == Collective::reduce_scatter_block;
    if (reduces) {  // the arithmetic depends on them
        mix(a.count);
        mix(static_cast<uint64_t>(datatype));
        mix(static_cast<uint64_t>(op));
        for (size_t c : a.recv_counts) mix(c);
    } else {  // movements need only the same bytes
        mix(a.count * a.elem_size);
    }
    return h;
}

bool SlotCall::advance_shared(uint64_t *finished) {
    if (!published_) {
        if (*finished + 1 != generation_) return false;  // an earlier call still reads the slots
        if (bytes_) std::memcpy(slots_->own_buffer(generation_, bytes_), input_, bytes_);
        slots_->set_note(generation_, signature_);
        slots_->publish(generation_);
        published_ = true;
    }
    // Every peer's generation is read, mismatched or not: the slots may be reused.
    if (!all_published() || !slots_->mapped_by_every_peer()) return false;
    if (!failed()) compute();
    *finished = generation_;
    return true;
}

// The output from every rank's contribution; `from(i)` is rank i's
// (one rank: its own input, which in place is the output itself).
void SlotCall::compute() {
    const CollArgs &a = *args_;
    if (a.nranks == 1) {  // every collective's output is then its input
        // No bytes: the buffers may be NULL, which memcpy must not be given.
        if (bytes_ && input_ != output_) std::memcpy(output_, input_, bytes_);
        return;
    }
    const int p = a.nranks;
    const int me = slots_ ? slots_->rank() : 0;
    const size_t elem = a.elem_size;
    auto from = [&](int i) -> const unsigned char * { return slots_ ? slots_->peer_buffer(i, generation_, bytes_) : input_; };
    switch (a.collective) {
        case Collective::allgather:
            for (int i = 0; i < p; ++i)
                if (!(a.in_place && i == me)) std::memcpy(output_ + i * a.count * elem, from(i), a.count * elem);
            return;
        case Collective::alltoall:
            for (int i = 0; i < p; ++i) {
                const unsigned char *block = from(i) + me * a.count * elem;
                if (block != output_ + i * a.count * elem) std::memcpy(output_ + i * a.count * elem, block, a.count * elem);
            }
            return;
        default: break;
    }
    // The reductions' block: the whole vector, or this rank's part of it.
    const CollArgs::Part part = a.reduced_part(me);
    const size_t bytes = part.count * elem;
    const unsigned char *first = from(0) + part.offset * elem;
    if (first != output_ && bytes) std::memmove(output_, first, bytes);  // one rank in place: the same bytes
    for (int i = 1; i < p; ++i) reduce_(output_, from(i) + part.offset * elem, part.count);
}

}  // namespace loom
