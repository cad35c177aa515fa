// Inboxes: their names, geometry and size, making and initialising this
// rank's, mapping and checking the peers', and removing those a crashed run
// left in /dev/shm.
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "transport/shm/layout.hpp"
#include "transport/shm/shm.hpp"

namespace loom {

using namespace shm_detail;

std::string shm_inbox_name(const std::string &key, int rank) {
    return "/loom-" + std::to_string(getuid()) + "-" + key + "-" + std::to_string(rank);
}

ShmGeometry shm_geometry_for(size_t nlocal) {
    constexpr size_t kInboxBudget = 4u << 20;
    ShmGeometry g;
    while (g.cells > 8 && nlocal * g.ring_bytes() > kInboxBudget) g.cells /= 2;
    return g;
}

size_t shm_ring_message_limit(const ShmGeometry &g, size_t requested) {
    return std::min(requested, g.ring_bytes() / 2);
}

size_t shm_inbox_bytes(size_t nlocal, const ShmGeometry &g) {
    return slot_area_offset(nlocal, g) + slot_area_bytes(g);
}

void shm_inbox_init(unsigned char *inbox, size_t nlocal, const ShmGeometry &g, uint64_t identity) {
    InboxHeader *h = header_of(inbox);
    h->identity = identity;
    h->nlocal = static_cast<uint32_t>(nlocal);
    h->cells = g.cells;
    h->cell_payload = g.cell_payload;
    h->attached.store(0, std::memory_order_relaxed);
    h->owner_pid = static_cast<int32_t>(getpid());
    h->doorbell.store(0, std::memory_order_relaxed);
    h->sleepers.store(0, std::memory_order_relaxed);
    h->calls_entered.store(0, std::memory_order_relaxed);
    h->revoke_notice.store(0, std::memory_order_relaxed);
    // Cells are zero (empty) in a fresh segment; the magic goes last, a
    // release store that shm_open_peer's acquire load pairs with.
    __atomic_store_n(&h->magic, kInboxMagic, __ATOMIC_RELEASE);
}

namespace {
// Exited, or exited and not yet reaped (a zombie holds no mappings).
bool process_gone(int pid) {
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64], state = 0;
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (FILE *f = std::fopen(path, "r")) {
        // "pid (comm) state ...": the state follows the last ')'.
        char line[512];
        if (std::fgets(line, sizeof line, f))
            if (const char *close = std::strrchr(line, ')')) state = close[1] == ' ' ? close[2] : 0;
        std::fclose(f);
    }
    return state == 'Z' || state == 'X';
}
}  // namespace

size_t shm_remove_stale_inboxes() {
    const std::string prefix = "loom-" + std::to_string(getuid()) + "-";
    DIR *dir = opendir("/dev/shm");
    if (!dir) return 0;
    size_t removed = 0;
    while (struct dirent *e = readdir(dir)) {
        const std::string name = e->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) continue;
        std::unique_ptr<SharedSegment> seg;
        if (SharedSegment::open("/" + name, &seg) != LOOM_SUCCESS || seg->size() < kHeaderBytes) continue;
        const InboxHeader *h = header_of(seg->data());
        // Only inboxes whose owner is gone: a live owner's (even another
        // job's) is in use, and one without its magic yet is being made.
        if ((h->magic == kInboxMagic || older_inbox_magic(h->magic)) && h->owner_pid > 0 && process_gone(h->owner_pid)) {
            shm_unlink(("/" + name).c_str());
            ++removed;
        }
    }
    closedir(dir);
    return removed;
}

Status shm_create_inbox(const std::string &key, int rank, SharedMemoryNode *node) {
    static std::once_flag swept;
    std::call_once(swept, [] { shm_remove_stale_inboxes(); });
    node->geometry = shm_geometry_for(node->local_ranks.size());
    const size_t bytes = shm_inbox_bytes(node->local_ranks.size(), node->geometry);
    LOOM_RETURN_IF_ERROR(SharedSegment::create(shm_inbox_name(key, rank), bytes, &node->own));
    shm_inbox_init(node->own->data(), node->local_ranks.size(), node->geometry, node->identity);
    return LOOM_SUCCESS;
}

Status shm_open_peer(const std::string &key, size_t i, SharedMemoryNode *node, bool *mapped) {
    *mapped = false;
    const int peer = node->local_ranks[i];
    const std::string name = shm_inbox_name(key, peer);
    std::unique_ptr<SharedSegment> seg;
    if (SharedSegment::open(name, &seg) != LOOM_SUCCESS) return LOOM_SUCCESS;  // not created yet
    const InboxHeader *h = header_of(seg->data());
    // Sized, but the magic (written last) not there yet: still being made.
    if (seg->size() < kHeaderBytes) return LOOM_SUCCESS;
    const uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    if (older_inbox_magic(magic))
        return fail(LOOM_ERR_TRANSPORT, "shared-memory inbox " + name + " of rank " + std::to_string(peer) +
                                            " was made by an older Loom version");
    if (magic != kInboxMagic) return LOOM_SUCCESS;
    if (seg->size() != shm_inbox_bytes(node->local_ranks.size(), node->geometry) || h->identity != node->identity ||
        h->nlocal != node->local_ranks.size())
        return fail(LOOM_ERR_TRANSPORT, "shared-memory inbox " + name + " of rank " + std::to_string(peer) +
                                            " belongs to another communicator or Loom version");
    header_of(seg->data())->attached.fetch_add(1, std::memory_order_acq_rel);
    node->peers[i] = std::move(seg);
    *mapped = true;
    return LOOM_SUCCESS;
}

Status shm_open_peers(const std::string &key, int rank, SharedMemoryNode *node) {
    node->peers.clear();
    node->peers.resize(node->local_ranks.size());
    for (size_t i = 0; i < node->local_ranks.size(); ++i) {
        if (node->local_ranks[i] == rank) continue;
        bool mapped = false;
        LOOM_RETURN_IF_ERROR(shm_open_peer(key, i, node, &mapped));
        if (!mapped)
            return fail(LOOM_ERR_TRANSPORT, "shared-memory inbox " + shm_inbox_name(key, node->local_ranks[i]) +
                                                " of rank " + std::to_string(node->local_ranks[i]) + " is missing");
    }
    return LOOM_SUCCESS;
}

std::string node_group_problem(const std::vector<int> &local_ranks, int rank, int size) {
    for (size_t i = 0; i < local_ranks.size(); ++i)
        if (local_ranks[i] < 0 || local_ranks[i] >= size || (i > 0 && local_ranks[i] <= local_ranks[i - 1]))
            return "the node group must list distinct communicator ranks in ascending order";
    if (std::find(local_ranks.begin(), local_ranks.end(), rank) == local_ranks.end())
        return "the node group must include rank " + std::to_string(rank);
    return {};
}

}  // namespace loom
