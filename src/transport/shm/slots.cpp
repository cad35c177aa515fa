#include "transport/shm/slots.hpp"

#include "transport/shm/layout.hpp"
#include "transport/shm/shm_transport.hpp"

namespace loom {

using namespace shm_detail;
static_assert(SharedSlots::kHeaderBytes == kSlotHeaderBytes, "the slot area's header line");

bool SharedSlots::ignore_generation_for_test = false;

SharedSlots::SharedSlots(int rank, int ranks, size_t capacity, size_t area_offset,
                         unsigned char *(*inbox_of)(void *, size_t), bool (*own_inbox_mapped_by_all)(void *),
                         void *context)
    : rank_(rank),
      size_(ranks),
      capacity_(capacity),
      area_offset_(area_offset),
      inbox_of_(inbox_of),
      own_inbox_mapped_by_all_(own_inbox_mapped_by_all),
      context_(context),
      areas_(static_cast<size_t>(ranks), nullptr) {
    own_ = map(rank);
    own_calls_entered_ = &header_of(inbox_of_(context_, static_cast<size_t>(rank)))->calls_entered;
}

bool SharedSlots::peer_calls_entered(int i, uint64_t *calls) const {
    unsigned char *inbox = inbox_of_(context_, static_cast<size_t>(i));
    if (!inbox) return false;
    *calls = header_of(inbox)->calls_entered.load(std::memory_order_relaxed);
    return true;
}

unsigned char *SharedSlots::map(int i) {
    unsigned char *inbox = inbox_of_(context_, static_cast<size_t>(i));
    if (!inbox) return nullptr;
    areas_[i] = inbox + area_offset_;
    return areas_[i];
}

std::unique_ptr<SharedSlots> make_shared_slots(Transport &shared_memory) {
    auto *t = dynamic_cast<SharedMemoryTransport *>(&shared_memory);
    if (!t) return nullptr;
    const SharedMemoryNode &node = t->node();
    const ShmGeometry &g = node.geometry;
    const size_t ranks = node.local_ranks.size();
    return std::make_unique<SharedSlots>(
        static_cast<int>(t->own_index()), static_cast<int>(ranks), g.slot_bytes, slot_area_offset(ranks, g),
        [](void *context, size_t i) { return static_cast<SharedMemoryTransport *>(context)->inbox_of(i); },
        [](void *context) { return static_cast<SharedMemoryTransport *>(context)->mapped_by_every_peer(); }, t);
}

}  // namespace loom
