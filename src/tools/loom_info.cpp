// loom-info: what this Loom build offers. Algorithms with their restrictions
// (like ucc_info -A), every parameter with its default, level and help (like
// fi_info -e), the datatypes and the operations defined on them.
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <mpi.h>
#include <unistd.h>

#include <vector>

#include "core/datatype.hpp"
#include "core/params.hpp"
#include "core/plan.hpp"
#include "loom.h"
#include "loom_config.h"
#include "machine.hpp"
#include "select/call_spec.hpp"
#include "select/program_builds.hpp"
#include "select/selector.hpp"

using namespace loom;

namespace {

void usage(FILE *f) {
    std::fprintf(
        f,
        "usage: loom-info [-a|--algorithms] [-p|--params] [-d|--datatypes] [-t|--topology] [-v|--version] [-h|--help]\n"
        "       loom-info --explain \"COLLECTIVE SIZE [nodes=N] [ppn=N] [np=N] [rails=N] [type=NAME] [in_place] [skew=S]\"\n"
        "With no option, prints everything but the topology. --topology runs under mpirun\n"
        "(mpirun -np 4 loom-info --topology; LOOM_TOPOLOGY=nodes=2 emulates nodes). --explain says\n"
        "which algorithm Loom would choose for such a call and why, with the cost model's\n"
        "prediction for every algorithm (LOOM_* parameters and LOOM_RULES_FILE apply). See loom-info(1).\n");
}

// Algorithms come through the public API, so what users read is what
// loom_algorithm_info gives programs (the tests compare both with the man
// pages). "ring, recursive_halving, ..." for one collective:
std::string algorithm_list(const char *collective) {
    std::string s;
    for (int i = 0; i < loom_algorithm_count(); ++i) {
        loom_algorithm_info_t a;
        if (loom_algorithm_info(i, &a) == LOOM_SUCCESS && !std::strcmp(a.collective, collective))
            s += std::string(s.empty() ? "" : ", ") + a.name;
    }
    return s;
}

void print_algorithms() {
    std::printf("# Algorithms (force one with LOOM_<COLLECTIVE>_ALGORITHM=<name>)\n");
    for (int c = 0; c < kCollectiveCount; ++c) {
        const char *coll = collective_name(static_cast<Collective>(c));
        std::printf("\n%s:\n", coll);
        for (int i = 0; i < loom_algorithm_count(); ++i) {
            loom_algorithm_info_t a;
            if (loom_algorithm_info(i, &a) != LOOM_SUCCESS || std::strcmp(a.collective, coll)) continue;
            std::printf("  %-22s %s\n", a.name, a.description);
            std::printf("  %-22s restrictions: %s\n", "", a.restrictions);
        }
    }
}

const char *type_name(ParamType t) {
    switch (t) {
        case ParamType::algorithm: return "algorithm";
        case ParamType::size: return "size";
        case ParamType::integer: return "integer";
        case ParamType::topology: return "topology";
        case ParamType::cost_model: return "cost model";
        case ParamType::path: return "path";
        case ParamType::text: return "text";
        case ParamType::choice: return "choice";
    }
    return "?";
}

void print_params() {
    std::printf("# Parameters (environment LOOM_<NAME>, or loom_comm_set_param(comm, name, value))\n\n");
    for (const ParamSpec &s : param_table()) {
        std::printf("  %s  (%s, default \"%s\", level %d, env %s)\n", s.name, type_name(s.type), s.default_value,
                    s.level, param_env_name(s).c_str());
        std::printf("      %s\n", s.help);
        if (s.type == ParamType::algorithm)
            std::printf("      values: auto, %s\n", algorithm_list(collective_name(s.collective)).c_str());
        else if (s.type == ParamType::size || s.type == ParamType::integer)
            std::printf("      range: [%lld, %lld]\n", s.min_value, s.max_value);
        else if (s.type == ParamType::topology)
            std::printf("      form: nodes=N[,rails=R] or a node label per rank[;rails=R]\n");
        else if (s.type == ParamType::cost_model)
            std::printf(
                "      form: key=value,... with keys shm, intra, net (LATENCY:BANDWIDTH[:OVERHEAD]), reduce, copy "
                "(BANDWIDTH), shm_max, stripe_min (size), rail_rates (rates relative to net, e.g. 1:0.5), pml (a "
                "link, for net messages below rail_min, a size), node_speeds (e.g. 1:1:0.5), rails_down (e.g. 1)\n");
        else if (s.type == ParamType::choice) std::printf("      values: %s\n", s.choices);
        else if (s.type == ParamType::path) std::printf("      form: a file path (see loom-rules(5))\n");
    }
}

void print_datatypes() {
    std::printf("# Datatypes and the operations defined on them\n\n");
    for (int t = 0; t < LOOM_DATATYPE_COUNT; ++t) {
        const DatatypeInfo *info = datatype_info(static_cast<loom_datatype_t>(t));
        std::string ops;
        for (int o = 0; o < LOOM_OP_COUNT; ++o)
            if (reduction_kernel(static_cast<loom_datatype_t>(t), static_cast<loom_op_t>(o)))
                ops += std::string(ops.empty() ? "" : " ") + op_name(static_cast<loom_op_t>(o));
        std::printf("  %-20s %-26s %3zu B  %s\n", info->name, info->mpi_name, info->size, ops.c_str());
    }
}

// Under mpirun: what every rank sees (node, local rank, transport, rail),
// then each node's machine as hwloc reports it.
int print_topology(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    loom_comm_t lc = nullptr;
    if (loom_comm_create(MPI_COMM_WORLD, &lc) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-info: rank %d: %s\n", rank, loom_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int node = 0, nodes = 1, local = 0, local_count = 1, rails = 1;
    loom_comm_node_info(lc, &node, &nodes, &local, &local_count, &rails);
    loom_transport_info_t t;
    t.version = LOOM_TRANSPORT_INFO_VERSION;
    loom_comm_transport_info(lc, &t);
    std::string transports;  // in the order a message tries them
    for (int i = 0; i < t.transports; ++i) transports += std::string(i ? " > " : "") + t.transport[i].name;
    MachineView view;
    const bool have_machine = discover_machine(&view) == LOOM_SUCCESS;
    const int nic = have_machine ? assign_rail(view, local, local_count) : -1;
    char host[256] = "?";
    gethostname(host, sizeof host);
    char line[512];
    std::snprintf(line, sizeof line,
                  "rank %d: host %s, node %d of %d, local rank %d of %d, %s among %d, lane %d of %d, NIC %s, "
                  "transports %s",
                  rank, host, node, nodes, local, local_count, t.name, t.node_ranks, local % rails, rails,
                  nic >= 0 ? view.nics[nic].name.c_str() : "(none)", transports.c_str());
    std::vector<char> all(rank == 0 ? sizeof line * size : 1);
    MPI_Gather(line, sizeof line, MPI_CHAR, all.data(), sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    // One machine description per node: from its first local rank.
    char machine[1024] = "";
    if (local == 0)
        std::snprintf(machine, sizeof machine, "node %d (%s): %s", node, host,
                      have_machine ? view.describe().c_str() : loom_last_error());
    std::vector<char> machines(rank == 0 ? sizeof machine * size : 1);
    MPI_Gather(machine, sizeof machine, MPI_CHAR, machines.data(), sizeof machine, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *text = nullptr;
        loom_comm_describe_nodes(lc, &text);
        std::printf("Loom topology of MPI_COMM_WORLD (%d ranks): %s\n", size, text);
        const char *rails_state = nullptr;
        loom_comm_rails_state(lc, &rails_state);
        std::printf("  rails: %s\n", rails_state && *rails_state ? rails_state : "none (one node, or rails=none)");
        for (int r = 0; r < size; ++r) std::printf("  %s\n", &all[sizeof line * r]);
        for (int r = 0; r < size; ++r)
            if (machines[sizeof machine * r]) std::printf("  %s\n", &machines[sizeof machine * r]);
    }
    loom_comm_free(&lc);
    MPI_Finalize();
    return 0;
}

// The same selection and explanation a communicator logs at verbose 1.
int explain(const char *text) {
    set_program_build_threads(std::thread::hardware_concurrency());
    Config config;
    CallSpec spec;
    if (config.load_environment() != LOOM_SUCCESS || parse_call_spec(text, config, &spec) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-info: %s\n", last_error_message());
        return 2;
    }
    Explanation e;
    if (explain_selection(config, spec.args, &e, spec.knobs) != LOOM_SUCCESS) {
        std::fprintf(stderr, "loom-info: %s\n", last_error_message());
        return 1;
    }
    std::fputs(format_explanation(spec.args, e).c_str(), stdout);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "-t") || !std::strcmp(argv[i], "--topology")) return print_topology(argc, argv);
        if (!std::strcmp(argv[i], "-e") || !std::strcmp(argv[i], "--explain")) {
            if (i + 1 >= argc) {
                usage(stderr);
                return 2;
            }
            return explain(argv[i + 1]);
        }
    }
    bool algorithms = false, params = false, datatypes = false;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!std::strcmp(a, "-a") || !std::strcmp(a, "--algorithms")) algorithms = true;
        else if (!std::strcmp(a, "-p") || !std::strcmp(a, "--params")) params = true;
        else if (!std::strcmp(a, "-d") || !std::strcmp(a, "--datatypes")) datatypes = true;
        else if (!std::strcmp(a, "-v") || !std::strcmp(a, "--version")) {
            std::printf("loom %d.%d.%d\n", LOOM_VERSION_MAJOR, LOOM_VERSION_MINOR, LOOM_VERSION_PATCH);
            std::printf("built with:%s%s%s\n",
#ifdef LOOM_HAVE_UCX
                        " ucx",
#else
                        "",
#endif
#ifdef LOOM_HAVE_HWLOC
                        " hwloc",
#else
                        "",
#endif
#ifdef LOOM_HAVE_CUDA
                        " cuda"
#else
                        ""
#endif
            );
            // Device buffers: whether this process found the driver (loaded at run time).
            std::printf("cuda driver: %s\n", loom_cuda_state());
            return 0;
        } else if (!std::strcmp(a, "-h") || !std::strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "loom-info: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!algorithms && !params && !datatypes) algorithms = params = datatypes = true;
    std::printf("Loom %d.%d.%d\n\n", LOOM_VERSION_MAJOR, LOOM_VERSION_MINOR, LOOM_VERSION_PATCH);
    if (algorithms) print_algorithms();
    if (params) {
        if (algorithms) std::printf("\n");
        print_params();
    }
    if (datatypes) {
        if (algorithms || params) std::printf("\n");
        print_datatypes();
    }
    return 0;
}
