#include "runtime/params.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>

#include "algorithms/algorithm.hpp"
#include "node_map.hpp"
#include "select/cost_model.hpp"

namespace loom {

const std::vector<ParamSpec> &param_table() {
    static const std::vector<ParamSpec> table = {
        {kParamAllreduceAlgorithm, "allreduce_algorithm", ParamType::algorithm, "auto", 2,
         "Allreduce algorithm by name, or auto to let the selector choose", 0, 0, Collective::allreduce},
        {kParamReduceScatterAlgorithm, "reduce_scatter_algorithm", ParamType::algorithm, "auto", 2,
         "Reduce_scatter algorithm by name, or auto", 0, 0, Collective::reduce_scatter},
        {kParamReduceScatterBlockAlgorithm, "reduce_scatter_block_algorithm", ParamType::algorithm, "auto", 2,
         "Reduce_scatter_block algorithm by name, or auto", 0, 0, Collective::reduce_scatter_block},
        {kParamAllgatherAlgorithm, "allgather_algorithm", ParamType::algorithm, "auto", 2,
         "Allgather algorithm by name, or auto", 0, 0, Collective::allgather},
        {kParamAlltoallAlgorithm, "alltoall_algorithm", ParamType::algorithm, "auto", 2,
         "Alltoall algorithm by name, or auto", 0, 0, Collective::alltoall},
        {kParamSegmentSize, "segment_size", ParamType::size, "256KiB", 5,
         "Pipelining segment of ring algorithms in bytes (0 = no segmentation); accepts k/KiB/M/MiB suffixes", 0,
         1LL << 40, Collective::allreduce},
        {kParamKnomialRadix, "knomial_radix", ParamType::integer, "4", 5, "Radix k of recursive_multiplying allreduce",
         2, 64, Collective::allreduce},
        {kParamAlltoallMaxOutstanding, "alltoall_max_outstanding", ParamType::integer, "8", 5,
         "Most sends and receives in flight per rank in the scattered alltoall", 1, 1 << 20, Collective::alltoall},
        {kParamPlanCacheEntries, "plan_cache_entries", ParamType::integer, "128", 6,
         "Plans (with their algorithm choice) kept per communicator; the least recently used are dropped", 1, 1 << 20,
         Collective::allreduce},
        {kParamVerbose, "verbose", ParamType::integer, "0", 2,
         "0 silent; 1 reports errors and each algorithm choice once; 2 every call", 0, 100, Collective::allreduce},
        {kParamSharedMemory, "shared_memory", ParamType::integer, "1", 4,
         "1: messages between ranks of one node go through Loom's shared-memory rings (up to shm_max_bytes); "
         "0: everything goes through the point-to-point transport. Read when the communicator is created",
         0, 1, Collective::allreduce},
        {kParamShmMaxBytes, "shm_max_bytes", ParamType::size, "128KiB", 5,
         "Largest message sent through the shared-memory rings, never more than half a ring (128 KiB with up to "
         "16 ranks per node, less on larger nodes); larger ones use the point-to-point transport. "
         "Read when the communicator is created",
         0, 1LL << 30, Collective::allreduce},
        {kParamAlltoallShmMaxBytes, "alltoall_shm_max_bytes", ParamType::size, "256KiB", 5,
         "Largest alltoall block sent through the shared-memory rings; a block above shm_max_bytes goes in pieces of "
         "that size while it fits a whole ring (256 KiB with up to 16 ranks per node). Larger blocks use the "
         "point-to-point transport",
         0, 1LL << 30, Collective::alltoall},
        {kParamSingleCopy, "single_copy", ParamType::integer, "1", 5,
         "How shared-memory messages of at least single_copy_min_bytes are handed over: 0 through the rings (copied "
         "in and out); 1 per call shape (cached plan), the faster of the rings and single copy (the receiver reads "
         "the send buffer with CMA process_vm_readv) as timed by the node's first rank; 2 always single copy. "
         "Processes that may not read each other's memory (ptrace rules) keep the rings. Read when the communicator "
         "is created",
         0, 2, Collective::allreduce},
        {kParamSingleCopyMinBytes, "single_copy_min_bytes", ParamType::size, "16KiB", 5,
         "Smallest shared-memory message that single_copy applies to (smaller ones always go through the rings). "
         "Read when the communicator is created",
         1, 1LL << 30, Collective::allreduce},
        {kParamRulesFile, "rules_file", ParamType::path, "", 4,
         "JSON file of selection rules (loom-rules(5)): matching entries choose the algorithm (and its segment "
         "size, radix ...) before Loom's built-in rules; an invalid file is reported and ignored",
         0, 0, Collective::allreduce},
        {kParamCostModel, "cost_model", ParamType::cost_model, "", 5,
         "Cost model parameters, e.g. \"shm=1us:8GB/s:0.1us,intra=3us:10GB/s:0.3us,net=5us:1.25GB/s:0.5us,"
         "reduce=8GB/s,copy=16GB/s,shm_max=128KiB\": per link latency:bandwidth[:core time per message] (any subset; "
         "empty: the rules file's model, else these defaults). Used by explain and where no rule decides",
         0, 0, Collective::allreduce},
        {kParamTopology, "topology", ParamType::topology, "", 4,
         "Emulated topology: \"nodes=N[,rails=R]\" (consecutive ranks per node) or a node label per rank "
         "(\"0,0,1,1,1,2;rails=2\"); empty for the machine's own. Node-aware algorithms and the selector follow it, "
         "and shared memory links only ranks of one emulated node (read when the communicator is created)",
         0, 0, Collective::allreduce},
        {kParamRails, "rails", ParamType::text, "auto", 3,
         "Network interfaces that carry messages between nodes, one UCX worker each (\"rail0,rail1\"); auto: the "
         "NICs hwloc finds; none: the PML or MPI carries them. Read when the communicator is created",
         0, 0, Collective::allreduce},
        {kParamUcxTls, "ucx_tls", ParamType::text, "^sm", 5,
         "UCX transports of the rails' workers (UCX_TLS syntax: \"tcp\", \"rc,ud\"); the default excludes UCX's "
         "shared memory, which Loom's own replaces. Read when the communicator is created",
         0, 0, Collective::allreduce},
        {kParamRailWeights, "rail_weights", ParamType::text, "", 4,
         "Share of a striped message per rail (\"2,1\"); empty: measured by a probe when the rails come up. Read "
         "when the communicator is created",
         0, 0, Collective::allreduce},
        {kParamRailStripeMinBytes, "rail_stripe_min_bytes", ParamType::size, "64KiB", 5,
         "Smallest message cut over every rail by weight; smaller ones travel on their lane's rail. Read when the "
         "communicator is created",
         0, 1LL << 40, Collective::allreduce},
        {kParamRailMinBytes, "rail_min_bytes", ParamType::size, "16KiB", 5,
         "Smallest message between nodes that the rails carry; smaller ones go through the PML or MPI. Read when "
         "the communicator is created",
         0, 1LL << 40, Collective::allreduce},
        {kParamRailProbeBytes, "rail_probe_bytes", ParamType::size, "1MiB", 5,
         "Bytes each rank sends on every rail at once when the rails come up, to weigh them (0: equal weights). Read "
         "when the communicator is created",
         0, 1LL << 30, Collective::allreduce},
        {kParamRailTimeoutMs, "rail_timeout_ms", ParamType::integer, "10000", 5,
         "How long bringing a rail up may wait for a peer before the rails are left out. Read when the "
         "communicator is created",
         1, 1LL << 31, Collective::allreduce},
        {kParamRailStallMs, "rail_stall_ms", ParamType::integer, "2000", 5,
         "How long a rank may hear nothing from a sender on a rail, beyond the time a message should take at the "
         "rail's measured rate, before that rail counts as failed; its messages then go through the PML or MPI "
         "(0: no failover). Read when the communicator is created",
         0, 1LL << 31, Collective::allreduce},
        {kParamRailRefreshCalls, "rail_refresh_calls", ParamType::integer, "8", 5,
         "Every this many blocking collectives of at least rail_stripe_min_bytes, the ranks agree on the rails: "
         "a failed rail is left out, a rail left out comes back once it works again, new weights from the rates "
         "striped messages arrived at (0: never; the first weights stay). Read when the communicator is created",
         0, 1LL << 30, Collective::allreduce},
        {kParamProgressThread, "progress_thread", ParamType::choice, "off", 3,
         "A thread that progresses nonblocking and persistent collectives between the caller's MPI calls: off; on; "
         "auto, on where every rank of the node has a core to spare for it. It drives only calls whose messages all "
         "go through Loom's shared memory (which then carries them at any size); the others progress in the "
         "caller's calls. Read at the communicator's first nonblocking or persistent call",
         0, 0, Collective::allreduce, "off,on,auto"},
        {kParamSlotsMaxBytes, "slots_max_bytes", ParamType::size, "4KiB", 4,
         "Largest input per rank (allreduce's vector, reduce_scatter's and alltoall's whole send buffer, "
         "allgather's block) that a collective among the ranks of one node runs through the shared slots "
         "(algorithm shared_slots: inputs published in shared memory and read in place, no messages), unless a rules "
         "file or a forced algorithm decides first; at most 32 KiB. 0: only where forced or named by a rule",
         0, 32768, Collective::allreduce},
        {kParamSlotsWait, "slots_wait", ParamType::choice, "auto", 5,
         "How a rank waits for the others in a shared-slots call: spin on their generation words; yield, giving "
         "its core away between looks (through the progress engine below where it yields by itself, as Open MPI's "
         "does with mpi_yield_when_idle); auto, spin where this rank has a core of its own (bound to one core, or as "
         "many cores as ranks on the node) and yield otherwise. coll/loom sets yield where Open MPI's "
         "mpi_yield_when_idle is on (mpirun sets it when it oversubscribes)",
         0, 0, Collective::allreduce, "auto,spin,yield"},
        {kParamCudaStagingChunkBytes, "cuda_staging_chunk_bytes", ParamType::size, "0", 5,
         "Chunk of a blocking allreduce on device buffers staged through pinned host memory: the copy of one chunk "
         "to the host overlaps the reduction of the one before and the copy back of the one before that. 0: the "
         "cost model's choice (its pcie link for the copies, its prediction of each chunk's allreduce), a power of "
         "two from 64 KiB to 16 MiB",
         0, 1LL << 30, Collective::allreduce},
        {kParamCudaIpc, "cuda_ipc", ParamType::integer, "1", 5,
         "Blocking collectives whose buffers are all on the device, among the ranks of one node: 1 run them on the "
         "device, each rank reading its peers' buffers through CUDA IPC (the cuda_ipc_* algorithms); 0 stage them "
         "through pinned host memory like every other call on device buffers. Every rank must set the same value",
         0, 1, Collective::allreduce},
        {kParamTrace, "trace", ParamType::path, "", 4,
         "Write the step timeline of every collective to this file, as Chrome trace-event JSON (Perfetto, "
         "chrome://tracing, loom-trace(1)): each call and each step of its plan, posted and completed, with peer, "
         "bytes, lane, rail, transport and phase. %r is the process's rank in the job, %p its pid, %h its host "
         "(\"/tmp/loom-%r.json\"); empty: off. A file that cannot be written is reported once and the job runs "
         "untraced",
         0, 0, Collective::allreduce},
        {kParamWait, "wait", ParamType::choice, "auto", 4,
         "How a rank waits for a collective's messages: spin, polling without pause; sleep, after wait_spin_us "
         "without news, in the kernel until a transport that can wake it (the rails' UCX workers) has news, at most "
         "a millisecond at a time (the others are polled between sleeps); auto, sleep where this rank shares its "
         "cores with other ranks (bound to fewer cores than one each, or more ranks on the node than cores) and "
         "spin otherwise",
         0, 0, Collective::allreduce, "auto,spin,sleep"},
        {kParamWaitSpinUs, "wait_spin_us", ParamType::integer, "50", 5,
         "How long a wait that may sleep polls without news before it sleeps, in microseconds",
         0, 1LL << 30, Collective::allreduce},
        {kParamHangTimeout, "hang_timeout", ParamType::integer, "0", 3,
         "Seconds a collective may wait before it prints, once, who it waits for: its collective and call number, "
         "the ranks of this node that have not entered it, and the ranks whose messages or shared slots it waits "
         "for (loom_comm_state gives the same text); 0 waits for ever without a word, as MPI does",
         0, 1LL << 30, Collective::allreduce},
        {kParamHangAbort, "hang_abort", ParamType::integer, "0", 3,
         "1: a collective that has waited hang_timeout seconds fails with an error naming the ranks it waits for, "
         "and every later collective on the communicator fails with it (free the communicator); 0: it goes on "
         "waiting, as MPI does",
         0, 1, Collective::allreduce},
    };
    return table;
}

const ParamSpec *find_param(const std::string &name) {
    for (const ParamSpec &s : param_table())
        if (name == s.name) return &s;
    return nullptr;
}

std::string param_env_name(const ParamSpec &spec) {
    std::string env = "LOOM_";
    for (const char *c = spec.name; *c; ++c) env += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    return env;
}

bool parse_size(const std::string &text, long long *out) {
    if (text.empty()) return false;
    size_t pos = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == 0 || pos > 15) return false;
    long long v = std::stoll(text.substr(0, pos));
    std::string suffix = text.substr(pos);
    for (char &c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    long long mult = 1;
    if (suffix.empty() || suffix == "b") mult = 1;
    else if (suffix == "k" || suffix == "kb" || suffix == "kib") mult = 1LL << 10;
    else if (suffix == "m" || suffix == "mb" || suffix == "mib") mult = 1LL << 20;
    else if (suffix == "g" || suffix == "gb" || suffix == "gib") mult = 1LL << 30;
    else return false;
    if (v > LLONG_MAX / mult) return false;  // "999999999999999g": more bytes than a long long holds
    *out = v * mult;
    return true;
}

Config::Config() {
    for (const ParamSpec &s : param_table()) {
        Status st = set(s.name, s.default_value);
        (void)st;  // defaults are valid by construction (tested)
    }
}

Status Config::set(const std::string &name, const std::string &value) {
    const ParamSpec *spec = find_param(name);
    if (!spec) {
        std::string names;
        for (const ParamSpec &s : param_table()) names += std::string(names.empty() ? "" : ", ") + s.name;
        return fail(LOOM_ERR_UNKNOWN_PARAMETER, "unknown parameter '" + name + "' (known: " + names + ")");
    }
    switch (spec->type) {
        case ParamType::algorithm:
            if (value != "auto" && !find_algorithm(spec->collective, value))
                return fail(LOOM_ERR_UNKNOWN_ALGORITHM, std::string(collective_name(spec->collective)) +
                                                            " has no algorithm '" + value + "' (set by " + name +
                                                            "); known: auto, " + algorithm_names(spec->collective));
            break;
        case ParamType::size:
        case ParamType::integer: {
            long long v = 0;
            bool ok = spec->type == ParamType::size ? parse_size(value, &v) : false;
            if (spec->type == ParamType::integer) {
                char *end = nullptr;
                v = std::strtoll(value.c_str(), &end, 10);
                ok = !value.empty() && end && *end == '\0';
            }
            if (!ok || v < spec->min_value || v > spec->max_value)
                return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                            "parameter " + name + " = '" + value + "' is not " +
                                (spec->type == ParamType::size ? "a size" : "an integer") + " in [" +
                                std::to_string(spec->min_value) + ", " + std::to_string(spec->max_value) + "]");
            values_[spec->id] = v;
            break;
        }
        case ParamType::choice: {
            const std::string choices = spec->choices;
            long long index = 0;
            size_t begin = 0;
            for (;; ++index) {
                const size_t end = choices.find(',', begin);
                if (choices.compare(begin, end == std::string::npos ? std::string::npos : end - begin, value) == 0)
                    break;
                if (end == std::string::npos)
                    return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                                "parameter " + name + " = '" + value + "' is not one of " + choices);
                begin = end + 1;
            }
            values_[spec->id] = index;
            break;
        }
        case ParamType::path:
        case ParamType::text:
            break;  // read when selection first needs it: an unreadable file is reported and ignored there
        case ParamType::cost_model: {
            CostModel m;
            if (CostModel::parse(value, &m) != LOOM_SUCCESS)
                return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, "parameter " + name + ": " + last_error_message());
            break;
        }
        case ParamType::topology: {
            // The rank count is known only to the communicator: check the
            // form here, against the fewest ranks it allows (a label each,
            // or one per node): coll/loom sets it on every communicator.
            NodeMap m;
            const size_t nodes_at = value.find("nodes=");
            size_t ranks = nodes_at == std::string::npos
                               ? static_cast<size_t>(std::count(value.begin(), value.end(), ',') + 1)
                               : std::strtoul(value.c_str() + nodes_at + 6, nullptr, 10);
            ranks = std::min(std::max<size_t>(ranks, 1), size_t{1} << 20);
            if (!value.empty() && NodeMap::parse(value, static_cast<int>(ranks), &m) != LOOM_SUCCESS)
                return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, "parameter " + name + ": " + last_error_message());
            break;
        }
    }
    raw_[spec->id] = value;
    ++generation_;
    return LOOM_SUCCESS;
}

Status Config::load_environment() {
    for (const ParamSpec &s : param_table()) {
        const char *v = std::getenv(param_env_name(s).c_str());
        if (!v) continue;
        Status st = set(s.name, v);
        if (st != LOOM_SUCCESS)
            return fail(st, std::string("environment variable ") + param_env_name(s) + ": " + last_error_message());
    }
    return LOOM_SUCCESS;
}

const std::string &Config::forced_algorithm(Collective c) const {
    static const ParamId ids[kCollectiveCount] = {kParamAllreduceAlgorithm, kParamReduceScatterAlgorithm,
                                                  kParamReduceScatterBlockAlgorithm, kParamAllgatherAlgorithm,
                                                  kParamAlltoallAlgorithm};
    return raw_[ids[static_cast<int>(c)]];
}

}  // namespace loom
