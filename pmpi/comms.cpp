/*
 * libloom-mpi's communicators: one Loom communicator per MPI
 * intracommunicator, cached as an attribute, freed by the attribute's delete
 * callback when the program frees the communicator and, for those still
 * alive (MPI_COMM_WORLD's among them), at MPI_Finalize. Also the statistics
 * and the error reports.
 */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "loom_mpi.hpp"

namespace loom_mpi {

LOOM_MPI_THREAD_LOCAL int inside_loom = 0;

namespace {

const char *const names[NCOLLECTIVES] = {"allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "alltoall",
                                         "alltoallv", "allgatherv"};
const char *const mpi_names[NCOLLECTIVES] = {"MPI_Allreduce", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
                                             "MPI_Allgather", "MPI_Alltoall",       "MPI_Alltoallv",
                                             "MPI_Allgatherv"};
const char *const hand_down_reasons[NHAND_DOWNS] = {
    "intercommunicator or Loom not set up", "datatype not a predefined basic type",    "user-defined op",
    "op not defined for the datatype",      "send and receive types or counts differ", "libloom refused the call"};

/* What the attribute holds: the Loom communicator, or null where Loom
 * cannot run on the communicator (asked once). */
struct Cached {
    loom_comm_t loom = nullptr;
    MPI_Comm mpi = MPI_COMM_NULL;
};

std::mutex mutex; /* the keyval's creation, the live list and the statistics */
std::atomic<int> keyval{MPI_KEYVAL_INVALID};
/* Bumped whenever a Loom communicator is freed: the threads' caches of the
 * last communicator (whose handle the MPI may give a new one) are then stale. */
std::atomic<uint64_t> frees{0};
struct LastComm {
    MPI_Comm mpi = MPI_COMM_NULL;
    loom_comm_t loom = nullptr;
    uint64_t frees = 0;
};
LOOM_MPI_THREAD_LOCAL LastComm last_comm;
std::vector<Cached *> live; /* in creation order */
uint64_t created = 0, freed_with_communicator = 0, freed_at_finalize = 0;
bool finalizing = false;

const int MAX_ALGORITHMS = 8;
struct Stats {
    uint64_t calls = 0, bytes = 0;
    struct {
        const char *name;
        uint64_t calls;
    } algorithms[MAX_ALGORITHMS] = {};
    uint64_t hand_downs[NHAND_DOWNS] = {};
} stats[NCOLLECTIVES];

bool stats_wanted() {
    static const bool wanted = [] {
        const char *v = std::getenv("LOOM_MPI_STATS");
        return v && *v && std::strcmp(v, "0") != 0;
    }();
    return wanted;
}

int delete_cached(MPI_Comm, int, void *value, void *) {
    auto *cached = static_cast<Cached *>(value);
    InsideLoom inside;
    frees.fetch_add(1, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (size_t i = 0; i < live.size(); ++i)
            if (live[i] == cached) {
                live.erase(live.begin() + static_cast<long>(i));
                break;
            }
        if (cached->loom) ++(finalizing ? freed_at_finalize : freed_with_communicator);
    }
    if (cached->loom) loom_comm_free(&cached->loom);
    delete cached;
    return MPI_SUCCESS;
}

/* MPI_COMM_WORLD's transport and progress thread, read before it is freed. */
std::string describe_world() {
    void *value = nullptr;
    int found = 0;
    if (keyval.load() == MPI_KEYVAL_INVALID ||
        PMPI_Comm_get_attr(MPI_COMM_WORLD, keyval.load(), &value, &found) != MPI_SUCCESS || !found ||
        !static_cast<Cached *>(value)->loom)
        return "no Loom communicator";
    loom_comm_t world = static_cast<Cached *>(value)->loom;
    std::string text;
    loom_transport_info_t t;
    t.version = LOOM_TRANSPORT_INFO_VERSION;
    if (loom_comm_transport_info(world, &t) == LOOM_SUCCESS)
        text = !std::strcmp(t.name, "shared_memory")
                   ? "shared_memory among " + std::to_string(t.node_ranks) + " ranks of this node"
                   : std::string(t.name) + " (point-to-point only)";
    const char *progress = nullptr;
    if (loom_comm_progress_state(world, &progress) == LOOM_SUCCESS && progress)
        text += std::string(", progress thread: ") + progress;
    return text;
}

void print_stats(const std::string &world) {
    std::printf("loom-mpi stats (rank 0):\n");
    std::printf("  MPI_COMM_WORLD: %s\n", world.c_str());
    std::printf(
        "  loom communicators: %llu created, %llu freed with their MPI communicator, %llu freed at "
        "MPI_Finalize\n",
        (unsigned long long)created, (unsigned long long)freed_with_communicator,
        (unsigned long long)freed_at_finalize);
    std::printf("  %-22s %10s %14s %10s  %s\n", "collective", "calls", "bytes", "handed down",
                "algorithms / reasons handed down");
    for (int c = 0; c < NCOLLECTIVES; ++c) {
        uint64_t downs = 0;
        for (uint64_t n : stats[c].hand_downs) downs += n;
        std::printf("  %-22s %10llu %14llu %10llu ", names[c], (unsigned long long)stats[c].calls,
                    (unsigned long long)stats[c].bytes, (unsigned long long)downs);
        for (int i = 0; i < MAX_ALGORITHMS && stats[c].algorithms[i].name; ++i)
            std::printf(" %s=%llu", stats[c].algorithms[i].name, (unsigned long long)stats[c].algorithms[i].calls);
        for (int f = 0; f < NHAND_DOWNS; ++f)
            if (stats[c].hand_downs[f])
                std::printf(" [handed down: %s=%llu]", hand_down_reasons[f],
                            (unsigned long long)stats[c].hand_downs[f]);
        std::printf("\n");
    }
    std::fflush(stdout);
}

}  // namespace

const char *collective_name(Collective c) { return names[c]; }
const char *mpi_name(Collective c) { return mpi_names[c]; }

loom_comm_t loom_comm_of(MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) return nullptr;
    LastComm &last = last_comm;
    if (comm == last.mpi && last.frees == frees.load(std::memory_order_acquire)) return last.loom;
    if (keyval.load(std::memory_order_acquire) == MPI_KEYVAL_INVALID) {
        std::lock_guard<std::mutex> lock(mutex);
        int made = MPI_KEYVAL_INVALID;
        if (keyval.load() == MPI_KEYVAL_INVALID) {
            if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_cached, &made, nullptr) != MPI_SUCCESS)
                return nullptr;
            keyval.store(made, std::memory_order_release);
        }
    }
    const uint64_t frees_before = frees.load(std::memory_order_acquire);
    void *value = nullptr;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, keyval.load(), &value, &found) != MPI_SUCCESS) return nullptr;
    loom_comm_t loom = nullptr;
    if (found) {
        loom = static_cast<Cached *>(value)->loom;
    } else {
        auto *cached = new Cached;
        cached->mpi = comm;
        int inter = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (!inter) {
            InsideLoom inside;
            if (loom_comm_create(comm, &cached->loom) != LOOM_SUCCESS) {
                std::fprintf(stderr,
                             "loom-mpi: Loom could not be set up on a communicator (%s); its collectives go to "
                             "the MPI's own\n",
                             loom_last_error());
                cached->loom = nullptr;
            }
        }
        PMPI_Comm_set_attr(comm, keyval.load(), cached);
        std::lock_guard<std::mutex> lock(mutex);
        live.push_back(cached);
        if (cached->loom) ++created;
        loom = cached->loom;
    }
    last = {comm, loom, frees_before};
    return loom;
}

void count_call(Collective c, uint64_t bytes, loom_comm_t comm) {
    if (!stats_wanted()) return;
    const char *algorithm = nullptr;
    if (comm) loom_comm_last_algorithm(comm, names[c], &algorithm);
    {
        std::lock_guard<std::mutex> lock(mutex);
        stats[c].calls++;
        stats[c].bytes += bytes;
    }
    if (algorithm) count_algorithm(c, algorithm);
}

void count_algorithm(Collective c, const char *algorithm) {
    if (!stats_wanted() || !algorithm) return;
    std::lock_guard<std::mutex> lock(mutex);
    for (auto &a : stats[c].algorithms) {
        if (!a.name) a.name = algorithm;
        if (a.name == algorithm || !std::strcmp(a.name, algorithm)) {
            a.calls++;
            return;
        }
    }
}

void count_hand_down(Collective c, HandDown why) {
    std::lock_guard<std::mutex> lock(mutex);
    stats[c].hand_downs[why]++;
}

int report(MPI_Comm comm, const char *what, int error_class, const char *message) {
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(comm, &handler);
    /* A program that takes errors back reads the class; one that aborts
     * would otherwise never see what was wrong. */
    if (handler != MPI_ERRORS_RETURN) std::fprintf(stderr, "loom-mpi: %s: %s\n", what, message);
    if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
    PMPI_Comm_call_errhandler(comm, error_class);
    return error_class;
}

int report_error(MPI_Comm comm, const char *what, int loom_status) {
    const int error_class = loom_mpi_error_class(loom_status);
    return report(comm, what, error_class ? error_class : MPI_ERR_OTHER, loom_last_error());
}

}  // namespace loom_mpi

using namespace loom_mpi;

extern "C" int MPI_Finalize(void) {
    {
        InsideLoom inside;
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        const bool print = stats_wanted() && rank == 0;
        const std::string world = print ? describe_world() : std::string();
        std::vector<MPI_Comm> alive;
        {
            std::lock_guard<std::mutex> lock(mutex);
            finalizing = true;
            for (Cached *c : live) alive.push_back(c->mpi);
        }
        /* Each free is collective over its communicator: every rank frees in
         * the order it made them, which is the order of the first collectives. */
        for (MPI_Comm c : alive) PMPI_Comm_delete_attr(c, keyval.load());
        if (print) print_stats(world);
        int made = keyval.exchange(MPI_KEYVAL_INVALID);
        if (made != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&made);
    }
    return PMPI_Finalize();
}
