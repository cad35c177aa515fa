// loom-plan: what Loom would do on a machine it is not running on. From a
// machine description (nodes, ranks per node, rails, the cost model's
// links), for each collective and size: the algorithm the selector would
// choose, its predicted time, algbw, busbw, the share of the network's
// bound it reaches, and the runners-up; as a table, CSV or JSON, and a PNG
// of predicted busbw against size. See loom-plan(1).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/params.hpp"
#include "select/call_spec.hpp"
#include "select/cost_model.hpp"
#include "select/phase_prediction.hpp"
#include "select/program_builds.hpp"
#include "select/rules.hpp"
#include "select/selector.hpp"

using nlohmann::json;
using namespace loom;

namespace {

void usage(FILE *out) {
    std::fputs(
        "usage: loom-plan [options] MACHINE\n"
        "  MACHINE        \"nodes=N ppn=N [np=N] [rails=N] [type=NAME]\" (as loom-info --explain's words),\n"
        "                 or @FILE.json: {\"nodes\": N, \"ppn\": N, \"ranks_per_node\": [..], \"rails\": N,\n"
        "                 \"type\": NAME, \"cost_model\": \"net=5us:25GB/s,...\", \"node_speeds\": [1, 0.5, ..],\n"
        "                 \"rails_down\": [1]}\n"
        "  -c LIST        collectives, comma-separated (default: allreduce,reduce_scatter,allgather,alltoall)\n"
        "  -m MIN:MAX     message sizes, doubling, as OSU reports them (default 64KiB:16MiB)\n"
        "  -r N           runners-up to list (default 2)\n"
        "  -f FORMAT      table (default), csv (a row per algorithm) or json\n"
        "  --cost-model T the model's links, as the cost_model parameter (default: the rules file's, or the\n"
        "                 built-in defaults); added to a JSON machine's cost_model, its keys winning\n"
        "  --png OUT.png  predicted busbw against size, a panel per collective, a line per algorithm\n"
        "                 (needs gnuplot)\n"
        "  --phases       under each call (table), the chosen plan's phases: each sub-collective's first\n"
        "                 step's start and last step's end over all ranks, as loom-trace prints a traced call\n"
        "  --check        also simulate every rank (up to 4096 ranks) and print (on stderr) how far the\n"
        "                 simulation of one node for all is from it, per algorithm, and both ways' times\n"
        "LOOM_* variables (LOOM_RULES, LOOM_COST_MODEL, ...) apply as they do to a communicator.\n",
        out);
}

struct Machine {
    std::string words;                // for parse_call_spec
    std::vector<int> ranks_per_node;  // unequal nodes, from a JSON file
    int rails = 1;
    std::string cost_model;  // from a JSON file
};

Status fail_field(const std::string &file, const std::string &field, const std::string &what) {
    return fail(LOOM_ERR_INVALID_ARGUMENT, "loom-plan: " + file + ": \"" + field + "\" " + what);
}

Status read_machine_file(const std::string &file, Config &config, Machine *m) {
    std::ifstream in(file);
    if (!in) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom-plan: cannot open " + file);
    json j;
    try {
        in >> j;
    } catch (const json::exception &e) {
        return fail(LOOM_ERR_INVALID_ARGUMENT, "loom-plan: " + file + " is not JSON: " + e.what());
    }
    if (!j.is_object()) return fail(LOOM_ERR_INVALID_ARGUMENT, "loom-plan: " + file + " is not a JSON object");
    const auto positive = [&](const char *field, long long max, long long *out) -> Status {
        if (!j.contains(field)) return LOOM_SUCCESS;
        const json &v = j[field];
        if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
            return fail_field(file, field, "must be an integer from 1 to " + std::to_string(max));
        *out = v.get<long long>();
        return LOOM_SUCCESS;
    };
    for (const auto &item : j.items())
        if (item.key() != "nodes" && item.key() != "ppn" && item.key() != "ranks_per_node" && item.key() != "rails" &&
            item.key() != "type" && item.key() != "cost_model" && item.key() != "node_speeds" &&
            item.key() != "rails_down")
            return fail_field(file, item.key(),
                              "is not a field (nodes, ppn, ranks_per_node, rails, type, cost_model, node_speeds, "
                              "rails_down)");
    long long nodes = 0, ppn = 0, rails = 1;
    LOOM_RETURN_IF_ERROR(positive("nodes", 1 << 16, &nodes));
    LOOM_RETURN_IF_ERROR(positive("ppn", 1 << 12, &ppn));
    LOOM_RETURN_IF_ERROR(positive("rails", 64, &rails));
    m->rails = static_cast<int>(rails);
    if (j.contains("ranks_per_node")) {
        const json &list = j["ranks_per_node"];
        if (!list.is_array() || list.empty())
            return fail_field(file, "ranks_per_node", "must be a list of ranks per node");
        for (const json &v : list) {
            if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1 << 12))
                return fail_field(file, "ranks_per_node", "must hold integers from 1 to 4096");
            m->ranks_per_node.push_back(v.get<int>());
        }
        if ((nodes && nodes != static_cast<long long>(list.size())) || ppn)
            return fail_field(file, "ranks_per_node", "replaces \"nodes\" and \"ppn\"; give one or the other");
        long long np = 0;
        for (int k : m->ranks_per_node) np += k;
        m->words = "np=" + std::to_string(np) + " nodes=" + std::to_string(list.size());
    } else {
        if (!nodes || !ppn) return fail_field(file, nodes ? "ppn" : "nodes", "is missing");
        m->words = "nodes=" + std::to_string(nodes) + " ppn=" + std::to_string(ppn);
    }
    m->words += " rails=" + std::to_string(rails);
    if (j.contains("type")) {
        if (!j["type"].is_string() || j["type"].get<std::string>().find_first_of(" \t\n=") != std::string::npos)
            return fail_field(file, "type", "must be a datatype name (loom-info -d)");
        m->words += " type=" + j["type"].get<std::string>();
    }
    if (j.contains("cost_model")) {
        if (!j["cost_model"].is_string() ||
            config.set("cost_model", j["cost_model"].get<std::string>()) != LOOM_SUCCESS)
            return fail_field(file, "cost_model", std::string("is not a cost model: ") + last_error_message());
        m->cost_model = j["cost_model"].get<std::string>();
    }
    // Nodes that differ travel in the cost model (node_speeds, rails_down).
    const long long node_count = m->ranks_per_node.empty() ? nodes : static_cast<long long>(m->ranks_per_node.size());
    std::string differ;
    if (j.contains("node_speeds")) {
        const json &list = j["node_speeds"];
        if (!list.is_array() || static_cast<long long>(list.size()) != node_count)
            return fail_field(file, "node_speeds",
                              "must be a list of one speed per node (" + std::to_string(node_count) + " nodes)");
        differ += ",node_speeds=";
        for (size_t n = 0; n < list.size(); ++n) {
            if (!list[n].is_number() || !(list[n].get<double>() > 0) || !std::isfinite(list[n].get<double>()))
                return fail_field(file, "node_speeds", "must hold positive numbers (1: as the model's links)");
            char speed[32];
            std::snprintf(speed, sizeof speed, "%s%.17g", n ? ":" : "", list[n].get<double>());
            differ += speed;
        }
    }
    if (j.contains("rails_down")) {
        const json &list = j["rails_down"];
        if (!list.is_array() || list.empty()) return fail_field(file, "rails_down", "must be a list of rail numbers");
        differ += ",rails_down=";
        for (size_t k = 0; k < list.size(); ++k) {
            if (!list[k].is_number_integer() || list[k].get<long long>() < 0 || list[k].get<long long>() >= rails)
                return fail_field(file, "rails_down",
                                  "must hold rail numbers from 0 to " + std::to_string(rails - 1) +
                                      " (\"rails\": " + std::to_string(rails) + ")");
            differ += (k ? ":" : "") + std::to_string(list[k].get<long long>());
        }
    }
    if (!differ.empty()) {
        // Without a cost_model of its own, onto the model the machine would
        // have had (LOOM_COST_MODEL's, else the rules file's, else the defaults).
        if (m->cost_model.empty()) m->cost_model = model_for(config).describe();
        m->cost_model += differ;
        if (config.set("cost_model", m->cost_model) != LOOM_SUCCESS)
            return fail_field(file, j.contains("node_speeds") ? "node_speeds" : "rails_down", last_error_message());
    }
    return LOOM_SUCCESS;
}

// Bytes the bandwidth figures count: the vector (allreduce), the input
// (reduce_scatter), the whole output (allgather), every block sent
// (alltoall), as nccl-tests counts them; busbw scales them by 2(p-1)/p
// (allreduce) or (p-1)/p.
double data_bytes(const CollArgs &a) {
    const double s = static_cast<double>(message_bytes(a));
    switch (a.collective) {
        case Collective::allreduce:
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: return s;
        default: return s * a.nranks;
    }
}
double bus_factor(const CollArgs &a) {
    const double p = a.nranks;
    return p < 2 ? 1 : a.collective == Collective::allreduce ? 2 * (p - 1) / p : (p - 1) / p;
}

// The least time the bytes that must cross a node's rails take, at the
// node's speed, the slowest node deciding; 0 on one node.
double network_bound_us(const CollArgs &a, const CostModel &model) {
    if (!a.nodes || a.nodes->nodes() < 2) return 0;
    const double n = a.nodes->nodes(), p = a.nranks;
    const double s = static_cast<double>(message_bytes(a));
    // Bytes per microsecond out of a node: every live rail at its rate, the
    // first of them at the PML's where that is faster (the PML's messages
    // take it); none left, the PML alone.
    const std::vector<int> live = model.live_rails(std::max(1, a.nodes->rails));
    double capacity = live.empty() ? 1 / model.pml.us_per_byte : 0;
    for (size_t i = 0; i < live.size(); ++i) {
        double rate = model.rail_rate(live[i]) / model.network.us_per_byte;
        if (i == 0 && model.rail_min_bytes > 0) rate = std::max(rate, 1 / model.pml.us_per_byte);
        capacity += rate;
    }
    double slowest = 0;
    for (int node = 0; node < a.nodes->nodes(); ++node) {
        const double k = a.nodes->ranks_on(node);
        double bytes = 0;  // through this node's rails, one direction
        switch (a.collective) {
            case Collective::allreduce: bytes = 2 * (n - 1) / n * s; break;
            case Collective::reduce_scatter:
            case Collective::reduce_scatter_block: bytes = (n - 1) / n * s; break;
            case Collective::allgather:
            case Collective::allgatherv: bytes = (p - k) * s; break;  // the others' blocks in
            case Collective::alltoall:
            case Collective::alltoallv: bytes = k * (p - k) * s; break;
        }
        slowest = std::max(slowest, bytes / capacity / model.node_speed(node));
    }
    return slowest;
}

struct Row {
    std::string collective;
    size_t bytes = 0;
    int nranks = 0;
    Explanation e;
    double data = 0, factor = 1;                                             // data_bytes, bus_factor
    double bound_us = 0;                                                     // network_bound_us; 0: none
    std::vector<PhaseSpan> phases;                                           // --phases
    std::string no_phases;                                                   // why there are none
    double seconds = 0;                                                      // spent planning it
    double algbw(double us) const { return us > 0 ? data / us / 1000 : 0; }  // GB/s
    double busbw(double us) const { return algbw(us) * factor; }
    double bound_pct(double us) const { return us > 0 && bound_us > 0 ? 100 * bound_us / us : 0; }
};

std::string size_text(size_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + "MiB";
    if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + "KiB";
    return std::to_string(b) + "B";
}

void print_table(const std::vector<Row> &rows, int runners) {
    std::printf("%-15s %9s %-18s %13s %9s %9s %7s %8s  %s\n", "collective", "size", "chosen", "predicted_us", "algbw",
                "busbw", "bound", "plan_s", "runners-up");
    for (const Row &r : rows) {
        std::string others;
        int listed = 0;
        for (const Prediction &p : r.e.candidates) {
            if (p.algorithm == r.e.selection.algorithm || p.us < 0 || listed == runners) continue;
            char item[96];
            std::snprintf(item, sizeof item, "%s%s %.1f", others.empty() ? "" : ", ", p.algorithm->name, p.us);
            others += item;
            ++listed;
        }
        const double us = r.e.predicted_us;
        char bound[16] = "-";
        if (r.bound_pct(us) > 0) std::snprintf(bound, sizeof bound, "%.0f%%", r.bound_pct(us));
        if (us >= 0)
            std::printf("%-15s %9s %-18s %13.1f %9.3f %9.3f %7s %8.3f  %s\n", r.collective.c_str(),
                        size_text(r.bytes).c_str(), r.e.selection.algorithm->name, us, r.algbw(us), r.busbw(us), bound,
                        r.seconds, others.c_str());
        else
            std::printf("%-15s %9s %-18s %13s %9s %9s %7s %8.3f  %s\n", r.collective.c_str(),
                        size_text(r.bytes).c_str(), r.e.selection.algorithm ? r.e.selection.algorithm->name : "none",
                        "-", "-", "-", "-", r.seconds, others.c_str());
        if (!r.no_phases.empty()) std::printf("    phases: none (%s)\n", r.no_phases.c_str());
        for (const PhaseSpan &p : r.phases)
            std::printf("    %-52s %+10.3f ms .. %+10.3f ms  (%5.1f %% of the call)\n", p.phase.c_str(),
                        p.start_us / 1000, p.end_us / 1000, us > 0 ? 100 * (p.end_us - p.start_us) / us : 0);
    }
    std::puts("algbw, busbw: GB/s (nccl-tests' definitions); bound: the network's least time over the predicted");
}

void print_csv(const std::vector<Row> &rows) {
    std::puts("collective,bytes,ranks,algorithm,chosen,predicted_us,algbw_GBps,busbw_GBps,bound_pct,note");
    for (const Row &r : rows)
        for (const Prediction &p : r.e.candidates) {
            const bool chosen = p.algorithm == r.e.selection.algorithm;
            std::string note = p.not_applicable;
            std::replace(note.begin(), note.end(), '"', '\'');
            if (p.us >= 0) {
                std::printf("%s,%zu,%d,%s,%d,%.3f,%.4f,%.4f,%.1f,\n", r.collective.c_str(), r.bytes, r.nranks,
                            p.algorithm->name, chosen, p.us, r.algbw(p.us), r.busbw(p.us), r.bound_pct(p.us));
            } else {
                std::printf("%s,%zu,%d,%s,%d,,,,,\"%s\"\n", r.collective.c_str(), r.bytes, r.nranks, p.algorithm->name,
                            chosen, note.c_str());
            }
        }
}

void print_json(const std::vector<Row> &rows, const std::string &model) {
    json out = {{"model", model}, {"calls", json::array()}};
    for (const Row &r : rows) {
        json call = {{"collective", r.collective},
                     {"bytes", r.bytes},
                     {"ranks", r.nranks},
                     {"chosen", r.e.selection.algorithm ? json(r.e.selection.algorithm->name) : json(nullptr)},
                     {"why", r.e.selection.why},
                     {"plan_seconds", r.seconds},
                     {"candidates", json::array()}};
        if (r.bound_us > 0) call["bound_us"] = r.bound_us;
        for (const Prediction &p : r.e.candidates) {
            json c = {{"algorithm", p.algorithm->name}};
            if (p.us >= 0) {
                c["predicted_us"] = p.us;
                c["algbw_GBps"] = r.algbw(p.us);
                c["busbw_GBps"] = r.busbw(p.us);
                if (r.bound_us > 0) c["bound_pct"] = r.bound_pct(p.us);
            } else {
                c["declined"] = p.not_applicable;
            }
            call["candidates"].push_back(c);
        }
        out["calls"].push_back(call);
    }
    std::puts(out.dump(1).c_str());
}

// A panel per collective: busbw against size, a line per algorithm.
int write_png(const std::vector<Row> &rows, const std::vector<std::string> &collectives, const std::string &png,
              const std::string &title) {
    const std::string data = png + ".dat", script = png + ".gp";
    std::ofstream d(data);
    std::ofstream g(script);
    g << "set terminal png size 1200," << 380 * collectives.size() << " noenhanced\n";
    g << "set output '" << png << "'\nset multiplot layout " << collectives.size() << ",1 title '" << title << "'\n";
    g << "set logscale x 2\nset format x '%.0b%B'\nset xlabel 'message size (bytes)'\nset ylabel 'predicted busbw (GB/s)'\n";
    g << "set key outside right\nset grid\n";
    int block = 0;
    for (const std::string &c : collectives) {
        std::vector<std::string> names;
        for (const Row &r : rows)
            if (r.collective == c)
                for (const Prediction &p : r.e.candidates)
                    if (p.us >= 0 && std::find(names.begin(), names.end(), p.algorithm->name) == names.end())
                        names.push_back(p.algorithm->name);
        g << "set title '" << c << "'\nplot ";
        for (size_t i = 0; i < names.size(); ++i) {
            for (const Row &r : rows)
                if (r.collective == c)
                    for (const Prediction &p : r.e.candidates)
                        if (p.us >= 0 && names[i] == p.algorithm->name)
                            d << r.bytes << ' ' << r.busbw(p.us)
                              << (p.algorithm == r.e.selection.algorithm ? " 1" : " 0") << '\n';
            d << "\n\n";
            g << (i ? ", " : "") << "'" << data << "' index " << block++ << " using 1:2 with linespoints title '"
              << names[i] << "'";
        }
        if (names.empty()) g << "NaN title 'no prediction'";
        g << "\n";
    }
    g << "unset multiplot\n";
    d.close();
    g.close();
    const std::string cmd = "gnuplot '" + script + "'";
    if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "loom-plan: gnuplot failed or is missing; the data is in %s and the script in %s\n",
                     data.c_str(), script.c_str());
        return 1;
    }
    std::remove(data.c_str());
    std::remove(script.c_str());
    std::fprintf(stderr, "loom-plan: wrote %s\n", png.c_str());
    return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Both ways of simulating every algorithm of `spec`'s call; the largest
// difference where both answer, 0 where none does.
double check_call(const CallSpec &spec, const Config &config, const std::string &label) {
    const CostModel model = model_for(config);
    double worst = 0;
    for (const AlgorithmInfo *algo : algorithms_for(spec.args.collective)) {
        if (!why_not_applicable(*algo, spec.args).empty()) continue;
        // One way's prediction, its error message and how long it took.
        const auto priced = [&](SimulationScope scope, double *us, std::string *why, double *seconds) {
            const auto t0 = std::chrono::steady_clock::now();
            const Status st = predict_time(*algo, spec.args, spec.knobs, model, scope, us);
            if (st != LOOM_SUCCESS) *why = last_error_message();
            *seconds = seconds_since(t0);
            return st;
        };
        double one = -1, every = -1, s_one = 0, s_every = 0;
        std::string why_one, why_every;
        const Status st_one = priced(SimulationScope::node_symmetry, &one, &why_one, &s_one);
        const Status st_every = priced(SimulationScope::every_rank, &every, &why_every, &s_every);
        if (st_one == LOOM_SUCCESS && st_every == LOOM_SUCCESS) {
            const double diff = 100 * (one - every) / every;
            worst = std::max(worst, std::fabs(diff));
            std::fprintf(stderr,
                         "check %-28s %-22s one node %12.1f us (%.3f s)  every rank %12.1f us (%.3f s)  %+6.2f%%\n",
                         label.c_str(), algo->name, one, s_one, every, s_every, diff);
        } else {
            std::fprintf(stderr, "check %-28s %-22s one node %s  every rank %s\n", label.c_str(), algo->name,
                         st_one == LOOM_SUCCESS ? std::to_string(one).c_str() : ("- (" + why_one + ")").c_str(),
                         st_every == LOOM_SUCCESS ? std::to_string(every).c_str() : ("- (" + why_every + ")").c_str());
        }
    }
    return worst;
}

std::vector<std::string> split(const std::string &text, char sep) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, sep))
        if (!item.empty()) out.push_back(item);
    return out;
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<std::string> collectives = {"allreduce", "reduce_scatter", "allgather", "alltoall"};
    long long min_bytes = 64 << 10, max_bytes = 16 << 20;
    int runners = 2;
    std::string format = "table", png, machine_text, cost_model;
    bool check = false, phases = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-c" && has_value) {
            collectives = split(argv[++i], ',');
        } else if (a == "-m" && has_value) {
            const std::vector<std::string> range = split(argv[++i], ':');
            if (range.size() != 2 || !parse_size(range[0], &min_bytes) || !parse_size(range[1], &max_bytes) ||
                min_bytes < 1 || max_bytes < min_bytes) {
                std::fprintf(stderr, "loom-plan: -m %s is not MIN:MAX (e.g. 64KiB:16MiB, MIN at least 1)\n", argv[i]);
                return 2;
            }
        } else if (a == "-r" && has_value) {
            char *end = nullptr;
            runners = static_cast<int>(std::strtol(argv[++i], &end, 10));
            if (*end || end == argv[i] || runners < 0 || runners > 64) {
                std::fprintf(stderr, "loom-plan: -r %s is not a count from 0 to 64\n", argv[i]);
                return 2;
            }
        } else if (a == "-f" && has_value) {
            format = argv[++i];
            if (format != "table" && format != "csv" && format != "json") {
                std::fprintf(stderr, "loom-plan: -f %s: the formats are table, csv and json\n", format.c_str());
                return 2;
            }
        } else if (a == "--cost-model" && has_value) {
            cost_model = argv[++i];
        } else if (a == "--png" && has_value) {
            png = argv[++i];
            if (png.find('\'') != std::string::npos) {  // it goes into gnuplot's script, quoted
                std::fprintf(stderr, "loom-plan: --png %s: a path with a ' is not taken\n", png.c_str());
                return 2;
            }
        } else if (a == "--phases") {
            phases = true;
        } else if (a == "--check") {
            check = true;
        } else if (a[0] != '-' && machine_text.empty()) {
            machine_text = a;
        } else {
            std::fprintf(stderr, "loom-plan: unknown or incomplete option '%s'\n", a.c_str());
            usage(stderr);
            return 2;
        }
    }
    if (machine_text.empty()) {
        usage(stderr);
        return 2;
    }
    set_program_build_threads(std::thread::hardware_concurrency());
    Config config;
    Machine machine;
    Status st = config.load_environment();
    if (st == LOOM_SUCCESS) {
        if (machine_text[0] == '@') st = read_machine_file(machine_text.substr(1), config, &machine);
        else machine.words = machine_text;
    }
    // CostModel::parse takes the last of a key: the command line's win.
    if (st == LOOM_SUCCESS && !cost_model.empty())
        st = config.set("cost_model", machine.cost_model.empty() ? cost_model : machine.cost_model + "," + cost_model);
    if (st != LOOM_SUCCESS) {
        std::fprintf(stderr, "%s\n", last_error_message());
        return 2;
    }
    const CostModel model = model_for(config);
    std::vector<Row> rows;
    double worst_check = 0;
    for (const std::string &c : collectives) {
        for (long long bytes = min_bytes; bytes <= max_bytes;
             bytes = bytes > max_bytes / 2 ? max_bytes + 1 : 2 * bytes) {
            CallSpec spec;
            if (parse_call_spec(c + " " + std::to_string(bytes) + " " + machine.words, config, &spec) != LOOM_SUCCESS) {
                std::fprintf(stderr, "loom-plan: %s\n", last_error_message());
                return 2;
            }
            if (!machine.ranks_per_node.empty()) {  // nodes of the sizes given, ranks consecutive
                std::vector<int> labels;
                for (size_t node = 0; node < machine.ranks_per_node.size(); ++node)
                    labels.insert(labels.end(), static_cast<size_t>(machine.ranks_per_node[node]),
                                  static_cast<int>(node));
                *spec.nodes = NodeMap::from_labels(labels, machine.rails);
            }
            Row r;
            r.collective = c;
            r.bytes = static_cast<size_t>(bytes);
            r.nranks = spec.args.nranks;
            const auto t0 = std::chrono::steady_clock::now();
            if (explain_selection(config, spec.args, &r.e, spec.knobs) != LOOM_SUCCESS) {
                std::fprintf(stderr, "loom-plan: %s\n", last_error_message());
                return 1;
            }
            r.seconds = seconds_since(t0);
            if (phases && r.e.selection.algorithm) {
                PlanKnobs knobs = spec.knobs;
                r.e.selection.apply_knobs(&knobs);
                double us = 0;
                if (predict_phases(*r.e.selection.algorithm, spec.args, knobs, model, &r.phases, &us) != LOOM_SUCCESS)
                    r.no_phases = last_error_message();
            }
            r.data = data_bytes(spec.args);
            r.factor = bus_factor(spec.args);
            r.bound_us = network_bound_us(spec.args, model);
            if (check) worst_check = std::max(worst_check, check_call(spec, config, c + " " + size_text(r.bytes)));
            rows.push_back(std::move(r));
        }
    }
    if (check) std::fprintf(stderr, "check: the largest difference where both answer: %.2f%%\n", worst_check);
    if (format == "csv") print_csv(rows);
    else if (format == "json") print_json(rows, model.describe());
    else print_table(rows, runners);
    std::string title = "loom-plan " + machine_text;
    std::replace(title.begin(), title.end(), '\'', '"');
    if (!png.empty()) return write_png(rows, collectives, png, title);
    return 0;
}
