// Intra-node shared-memory transport. Every rank owns an inbox segment with
// one channel per rank of its node; a channel is a ring of cells that only
// its sender fills and only the inbox's owner empties (one producer, one
// consumer, a `full` flag per cell, no locks). Messages to ranks of the same
// node up to max_bytes go through the rings, cut into cells; everything else
// goes to the base transport (the PML, MPI point-to-point). A message to a
// local rank of a given size takes the same path on both sides, since plans
// post sends and receives of equal sizes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/shm/copy_path_chooser.hpp"
#include "transport/shm/segment.hpp"
#include "transport/transport.hpp"

namespace loom {

struct ShmGeometry {
    uint32_t cells = 64;           // cells per channel (messages in flight before the sender waits)
    uint32_t cell_payload = 4096;  // bytes a cell carries
    // Each of the owner's two shared-slot buffers (slots.hpp): the most a
    // rank publishes in one shared-slots call. A multiple of 64.
    uint32_t slot_bytes = 32768;
    size_t ring_bytes() const { return static_cast<size_t>(cells) * cell_payload; }
};

// The geometry of inboxes on a node of `nlocal` ranks: 64 cells of 4 KiB per
// peer (a 256 KiB ring) while an inbox stays within 4 MiB, fewer cells (a
// power of two, at least 8) on larger nodes.
ShmGeometry shm_geometry_for(size_t nlocal);
// Largest message the rings should carry: at most half a ring. A message
// that fills the ring makes its sender wait for the receiver to drain it,
// and when both share a core that costs a scheduler slice per ring
// (docs/design.md, "The shared-memory path").
size_t shm_ring_message_limit(const ShmGeometry &g, size_t requested);

// What a rank knows about its node: the communicator ranks that share it
// (ascending, itself included), its own inbox, and the peers' inboxes.
struct SharedMemoryNode {
    std::vector<int> local_ranks;
    ShmGeometry geometry;
    uint64_t identity = 0;  // written in every inbox; a peer checks it before use
    std::unique_ptr<SharedSegment> own;
    // By local index; null for itself. A null peer with a non-empty `key` is
    // mapped when this rank first sends to it (its inbox may not exist yet:
    // sends to it wait until it does).
    std::vector<std::unique_ptr<SharedSegment>> peers;
    std::string key;
};

size_t shm_inbox_bytes(size_t nlocal, const ShmGeometry &g);
// Empty when `local_ranks` is a valid node group for `rank` of a
// communicator of `size` ranks (distinct, ascending, in range, `rank`
// included); otherwise what is wrong.
std::string node_group_problem(const std::vector<int> &local_ranks, int rank, int size);
// "/loom-<uid>-<key>-<rank>": the name of `rank`'s inbox for the node group `key`.
std::string shm_inbox_name(const std::string &key, int rank);
// Writes the inbox header. The caller publishes the segment to its peers afterwards.
void shm_inbox_init(unsigned char *inbox, size_t nlocal, const ShmGeometry &g, uint64_t identity);
// Removes this user's inboxes in /dev/shm whose owning process is gone (a
// crash before every peer had mapped them); returns how many. Run once per
// process, before its first inbox is made.
size_t shm_remove_stale_inboxes();
// Creates and initialises this rank's named inbox, with shm_geometry_for
// the node's size (node->geometry is set).
Status shm_create_inbox(const std::string &key, int rank, SharedMemoryNode *node);
// Maps the peers' inboxes by name, checks their headers and counts itself attached.
Status shm_open_peers(const std::string &key, int rank, SharedMemoryNode *node);
// Maps one peer's inbox (local index i) if it exists: LOOM_SUCCESS and
// *mapped, or *mapped false when it does not exist yet; an error when it
// belongs to another communicator.
Status shm_open_peer(const std::string &key, size_t i, SharedMemoryNode *node, bool *mapped);

// How messages of at least min_bytes that go through shared memory are
// handed over: through the rings' cells, or by single copy (the receiver
// reads the send buffer from the sender's memory with process_vm_readv),
// always or as measured per plan (CopyPathChooser over the plan's timed
// blocking calls, the node's first rank choosing for all). Single copy
// starts once the receiver has found it may read the sender's memory; until
// then, and where it may not, messages go through the cells.
struct SingleCopyPolicy {
    enum Mode { never = 0, measured = 1, always = 2 };
    Mode mode = never;
    size_t min_bytes = 16384;
};

struct ShmOptions {
    size_t max_bytes = 0;                  // largest message through the rings (shm_ring_message_limit)
    size_t alltoall_max_bytes = SIZE_MAX;  // alltoall plans' limit (their blocks come in ring-sized pieces)
    SingleCopyPolicy single_copy;
};

// The shared-memory transport for `rank` of a communicator of `size`: it
// carries messages of up to options.max_bytes to the other ranks of
// `node.local_ranks` (which must contain `rank`); every peer's inbox must be
// mapped or `node.key` name them. A Router puts it before the transport that
// carries everything else.
Status make_shared_memory_transport(int rank, int size, SharedMemoryNode node, const ShmOptions &options,
                                    std::unique_ptr<Transport> *out);

}  // namespace loom
