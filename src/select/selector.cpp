#include "select/selector.hpp"

#include "engine/engine.hpp"

#include <algorithm>
#include <cstdio>

#include "algorithms/fold.hpp"
#include "node_map.hpp"

namespace loom {
namespace {

std::string bytes_text(size_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
    if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
    return std::to_string(b) + " B";
}

}  // namespace

// Several nodes with several ranks on some: the node-aware algorithms keep
// traffic inside nodes where they can. The thresholds come from loom-tune on
// the testbed (4 nodes x 2 ranks, block placement, 2 rails of 200 Mbit/s;
// best of 4 launches), where the network costs ~100 us a round and 25 MB/s:
// below them the fewest network rounds win, above them the fewest bytes on
// each node's link. Each choice was within 5 % of the fastest at 14-16 of
// its 16 sizes (8 B-256 KiB); on a second sweep, not used to set them, at 60
// of the 64 points.
bool node_aware_choice(const CollArgs &a, std::vector<const char *> *out, std::string *why) {
    if (!a.nodes || a.nodes->nodes() < 2 || a.nodes->max_ranks_per_node() < 2) return false;
    const size_t elem = a.elem_size;
    const std::string shape = std::to_string(a.nodes->nodes()) + " nodes of up to " +
                              std::to_string(a.nodes->max_ranks_per_node()) + " ranks";
    switch (a.collective) {
        case Collective::allreduce: {
            // hier_leader within 5 % at 14 of 16 sizes; 8-15 % behind ring at 8-16 KiB.
            const size_t bytes = a.count * elem;
            if (bytes <= 256 * 1024) {
                *why = "vector " + bytes_text(bytes) + " <= 256 KiB on " + shape + ": one leader per node on the network";
                *out = {"hier_leader", "recursive_doubling"};
                return true;
            }
            *why = "vector " + bytes_text(bytes) + " > 256 KiB on " + shape + ": every local rank on the network";
            *out = {"hier_split", "rabenseifner"};
            return true;
        }
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: {
            // The node-sums 14-27 % behind recursive halving up to 2 KiB.
            const size_t bytes = a.input_count() * elem;
            if (bytes <= 2 * 1024) {
                *why = "input " + bytes_text(bytes) + " <= 2 KiB on " + shape + ": lg p rounds";
                *out = {"recursive_halving", "hierarchical"};
                return true;
            }
            *why = "input " + bytes_text(bytes) + " > 2 KiB on " + shape + ": node-sums cross the network once";
            *out = {"hierarchical", "ring"};
            return true;
        }
        case Collective::allgather: {
            // Recursive doubling fastest up to 256 B blocks (the node-aware
            // exchange up to 14 % behind); above, the node-aware exchange
            // (11-28 % behind ring at 64 and 256 KiB).
            const size_t block = a.count * elem;
            if (block <= 256 && is_power_of_two(a.nranks)) {
                *why = "blocks of " + bytes_text(block) + " <= 256 B on " + shape + ": lg p rounds";
                *out = {"recursive_doubling", "hierarchical"};
                return true;
            }
            *why = shape + ": within nodes first, then one fetch per remote node";
            *out = {"hierarchical", "ring"};
            return true;
        }
        case Collective::alltoall: {
            // Node aggregation fastest up to 64 KiB blocks (pairwise 2-3.6x
            // slower up to 256 B); from 128 KiB pairwise, the others 20-61 %
            // behind it.
            const size_t block = a.count * elem;
            if (block <= 64 * 1024) {
                *why = "blocks of " + bytes_text(block) + " <= 64 KiB on " + shape + ": one message per node pair";
                *out = {"node_aggregation", "bruck"};
                return true;
            }
            *why = "blocks of " + bytes_text(block) + " > 64 KiB on " + shape + ": one exchange at a time";
            *out = {"pairwise", "scattered"};
            return true;
        }
    }
    return false;
}

std::vector<const char *> default_preference(const CollArgs &a, std::string *why) {
    std::vector<const char *> node_aware;
    if (node_aware_choice(a, &node_aware, why)) return node_aware;
    // Thresholds follow the alpha-beta costs: latency-bound algorithms
    // (log p rounds) below, bandwidth-optimal ones (ring, pairwise) above.
    const size_t elem = a.elem_size;
    switch (a.collective) {
        case Collective::allreduce: {
            const size_t bytes = a.count * elem;
            // Measured with loom-tune at 4 ranks on one node (5 repetitions,
            // coll/loom): direct 3.8-7.6 us up to 8 KiB, as fast as the best;
            // from 16 KiB a reduce-scatter then an allgather within the node
            // (hier_split with one node: pairwise, then direct) was 4-31 %
            // faster than rabenseifner up to 512 KiB and equal at 1 MiB.
            if (a.single_node && a.nranks <= 8 && bytes <= 8 * 1024) {
                *why = "vector " + bytes_text(bytes) + " <= 8 KiB on one node of <= 8 ranks: one round";
                return {"direct", "recursive_doubling"};
            }
            if (a.single_node && a.nranks <= 8) {
                *why = "vector " + bytes_text(bytes) + " > 8 KiB on one node of <= 8 ranks: reduce-scatter, then allgather";
                return {"hier_split", "rabenseifner"};
            }
            if (bytes <= 16 * 1024) {
                *why = "vector " + bytes_text(bytes) + " <= 16 KiB: latency-bound";
                return {"recursive_doubling", "ring"};
            }
            // Same bandwidth term; rabenseifner has lg p rounds to ring's
            // 2(p-1). Measured at 4 ranks in one job (Loom and Open MPI
            // alternating, as loom-bench --interleave-default does): rabenseifner
            // 0.95-1.18x Open MPI up to 4 MiB where ring was 1.2-1.6x.
            if (bytes <= 512 * 1024 || a.nranks <= 8 || a.count < static_cast<size_t>(a.nranks) * 4) {
                *why = "vector " + bytes_text(bytes) + (a.nranks <= 8 ? " on <= 8 ranks" : " <= 512 KiB");
                return {"rabenseifner", "ring"};
            }
            *why = "vector " + bytes_text(bytes) + " > 512 KiB on " + std::to_string(a.nranks) + " ranks";
            return {"ring", "rabenseifner"};
        }
        case Collective::reduce_scatter:
        case Collective::reduce_scatter_block: {
            const size_t bytes = a.input_count() * elem;
            // Measured at 4 ranks on one node, 32 KiB-1 MiB inputs: pairwise
            // 0.12-0.81x Open MPI, ring 0.15-0.76x, recursive halving between.
            // loom-tune, 4 ranks on one node, best of 10 launches: pairwise
            // within 5 % of the fastest at 17 of 18 sizes (8 B-1 MiB),
            // recursive halving 8-48 % slower up to 512 KiB.
            if (a.single_node && a.nranks <= 8) {
                *why = "one node of <= 8 ranks: contributions go straight to their owners";
                return {"pairwise", "recursive_halving"};
            }
            if (bytes <= 64 * 1024) {
                *why = "input " + bytes_text(bytes) + " <= 64 KiB";
                return {"recursive_halving", "ring"};
            }
            *why = "input " + bytes_text(bytes) + " > 64 KiB: bandwidth-bound";
            return {"ring", "pairwise"};
        }
        case Collective::allgather: {
            const size_t bytes = a.count * elem * a.nranks;
            // loom-tune, 4 ranks on one node: direct within 3 % of the fastest
            // at every size from 8 B to 1 MiB blocks (medians of 5 launches);
            // recursive doubling was 10-60 % slower from 8 KiB blocks.
            if (a.single_node && a.nranks <= 8) {
                *why = "one node of <= 8 ranks: one round";
                return {"direct", "recursive_doubling"};
            }
            // Power-of-two sizes: recursive doubling's lg p rounds also won at
            // 1 MiB on 4 ranks (0.73-1.00x Open MPI; ring 1.05-1.08x).
            if (is_power_of_two(a.nranks) && a.nranks <= 8 && bytes <= 16 * 1024 * 1024) {
                *why = "result " + bytes_text(bytes) + " on a power-of-two size <= 8";
                return {"recursive_doubling", "ring"};
            }
            if (bytes <= 64 * 1024) {
                *why = "result " + bytes_text(bytes) + " <= 64 KiB";
                return is_power_of_two(a.nranks) ? std::vector<const char *>{"recursive_doubling", "bruck"}
                                                 : std::vector<const char *>{"bruck", "ring"};
            }
            *why = "result " + bytes_text(bytes) + " > 64 KiB: bandwidth-bound";
            return {"ring", "bruck"};
        }
        case Collective::alltoall: {
            const size_t block = a.count * elem;
            if (block <= 256 && a.nranks > 4) {
                *why = "blocks of " + bytes_text(block) + " <= 256 B on " + std::to_string(a.nranks) + " ranks";
                return {"bruck", "scattered"};
            }
            // Measured at 4 ranks: scattered 1.03-1.08x Open MPI for 32-128 KiB
            // blocks, pairwise 1.14-1.33x; even from 256 KiB. On one node
            // (loom-tune, through the rings up to 128 KiB) scattered stayed
            // ahead of pairwise at 512 KiB and 1 MiB blocks too (4-8 %).
            if (block <= 256 * 1024) {
                *why = "blocks of " + bytes_text(block) + " <= 256 KiB";
                return {"scattered", "pairwise"};
            }
            if (a.single_node && a.nranks <= 8) {
                *why = "blocks of " + bytes_text(block) + " on one node of <= 8 ranks";
                return {"scattered", "pairwise"};
            }
            *why = "blocks of " + bytes_text(block) + " > 256 KiB";
            return {"pairwise", "scattered"};
        }
    }
    return {};
}

void Selection::apply_knobs(CollArgs *a) const {
    if (segment_bytes) a->segment_bytes = *segment_bytes;
    if (radix) a->radix = *radix;
    if (max_outstanding) a->max_outstanding = *max_outstanding;
}

std::shared_ptr<const RuleSet> rules_for(const Config &config) {
    const std::string &path = config.raw(kParamRulesFile);
    if (path.empty()) return std::make_shared<const RuleSet>();
    return rules_for_path(path);
}

CostModel model_for(const Config &config) {
    CostModel m;
    const std::string &text = config.raw(kParamCostModel);
    if (!text.empty()) {
        (void)CostModel::parse(text, &m);  // validated when the parameter was set
        return m;
    }
    const auto rules = rules_for(config);
    return rules->model ? *rules->model : m;
}

namespace {
// Empty when Loom can execute plans on the call's memory; otherwise why not.
std::string memory_problem(const CollArgs &args) {
    if (engine_for(args.memory)) return {};
    return std::string("no algorithm is executable for memory=") + memory_type_name(args.memory) +
           " yet: Loom has no engine for it (host memory only)";
}
}  // namespace

Status select_algorithm(const Config &config, const CollArgs &args, Selection *out) {
    const Collective c = args.collective;
    const std::string memory = memory_problem(args);
    if (!memory.empty()) return fail(LOOM_ERR_ALGORITHM_NOT_APPLICABLE, call_text(args) + ": " + memory);
    const std::string &forced = config.forced_algorithm(c);
    if (forced != "auto") {
        const AlgorithmInfo *algo = find_algorithm(c, forced);
        if (!algo)
            return fail(LOOM_ERR_UNKNOWN_ALGORITHM, std::string(collective_name(c)) + " has no algorithm '" + forced +
                                                        "'; known: auto, " + algorithm_names(c));
        std::string why_not = algo->not_applicable(args);
        if (!why_not.empty())
            return fail(LOOM_ERR_ALGORITHM_NOT_APPLICABLE, std::string(collective_name(c)) + " algorithm '" + forced +
                                                               "' (forced) cannot run " + args.describe() + ": " +
                                                               why_not + "; unset it or choose another of: " +
                                                               algorithm_names(c));
        *out = Selection{};
        out->algorithm = algo;
        out->why = "forced";
        return LOOM_SUCCESS;
    }
    const auto rules = rules_for(config);
    for (const Rule *r = match_rule(*rules, args); r; r = match_rule(*rules, args, r->index + 1)) {
        Selection s;
        s.algorithm = find_algorithm(c, r->algorithm);
        s.segment_bytes = r->segment_bytes;
        s.radix = r->radix;
        s.max_outstanding = r->max_outstanding;
        CollArgs tuned = args;
        s.apply_knobs(&tuned);
        if (!s.algorithm || !s.algorithm->not_applicable(tuned).empty()) continue;  // the next matching rule
        s.why = "rule " + std::to_string(r->index) + " of " + rules->path;
        *out = std::move(s);
        return LOOM_SUCCESS;
    }
    return default_selection(args, out, model_for(config));
}

Status default_selection(const CollArgs &args, Selection *out, const CostModel &model) {
    const Collective c = args.collective;
    std::string why;
    *out = Selection{};
    for (const char *name : default_preference(args, &why)) {
        const AlgorithmInfo *algo = find_algorithm(c, name);
        if (algo && algo->not_applicable(args).empty()) {
            out->algorithm = algo;
            out->why = "built-in rule: " + why;
            return LOOM_SUCCESS;
        }
    }
    // Nothing the built-in rules prefer can run the call: the model's fastest.
    double best = -1;
    for (const AlgorithmInfo *algo : algorithms_for(c)) {
        if (!algo->not_applicable(args).empty()) continue;
        double us = -1;
        if (predict_time(*algo, args, model, &us) != LOOM_SUCCESS) us = -1;
        if (!out->algorithm || (us >= 0 && (best < 0 || us < best))) {
            out->algorithm = algo;
            best = us;
        }
    }
    if (!out->algorithm)
        return fail(LOOM_ERR_INTERNAL, std::string("no ") + collective_name(c) + " algorithm applies to " + args.describe());
    char text[96];
    std::snprintf(text, sizeof text, "model: fastest applicable, %.1f us predicted", best);
    out->why = best >= 0 ? text : "first applicable (no model prediction)";
    return LOOM_SUCCESS;
}

std::string call_text(const CollArgs &a) {
    std::string s = std::string(collective_name(a.collective)) + " " + bytes_text(message_bytes(a)) + " on " +
                    std::to_string(a.nranks) + (a.nranks == 1 ? " rank" : " ranks");
    if (a.nodes && a.nodes->nranks() == a.nranks && a.nodes->nodes() > 1) {
        s += " (" + std::to_string(a.nodes->nodes()) + " nodes x " +
             (a.nodes->uniform() ? "" : "up to ") + std::to_string(a.nodes->max_ranks_per_node());
        if (a.nodes->rails > 1) s += ", " + std::to_string(a.nodes->rails) + " rails";
        s += ")";
    } else if (a.single_node) {
        s += " (one node)";
    }
    if (a.memory != MemoryType::host) s += " on " + std::string(memory_type_name(a.memory)) + " memory";
    return s;
}

Status explain_selection(const Config &config, const CollArgs &args, Explanation *out) {
    Explanation e;
    const CostModel model = model_for(config);
    e.model = model.describe();
    e.not_executable = memory_problem(args);
    if (!e.not_executable.empty()) {
        // Say what would be chosen once it can run: the rules file's entry for this memory.
        const auto rules = rules_for(config);
        if (const Rule *r = match_rule(*rules, args))
            e.not_executable += "; rule " + std::to_string(r->index) + " of " + rules->path + " (memory " + r->memory +
                                ") names " + r->algorithm;
        for (const AlgorithmInfo *algo : algorithms_for(args.collective)) {
            Prediction p;
            p.algorithm = algo;
            p.not_applicable = std::string("not executable on ") + memory_type_name(args.memory) + " memory yet";
            e.candidates.push_back(std::move(p));
        }
        *out = std::move(e);
        return LOOM_SUCCESS;
    }
    LOOM_RETURN_IF_ERROR(select_algorithm(config, args, &e.selection));
    std::vector<Prediction> predicted, others;
    for (const AlgorithmInfo *algo : algorithms_for(args.collective)) {
        Prediction p;
        p.algorithm = algo;
        CollArgs a = args;
        if (algo == e.selection.algorithm) e.selection.apply_knobs(&a);
        p.not_applicable = algo->not_applicable(a);
        if (p.not_applicable.empty()) {
            if (predict_time(*algo, a, model, &p.us) != LOOM_SUCCESS) {
                p.us = -1;
                p.not_applicable = std::string("no prediction: ") + last_error_message();
            }
        }
        if (algo == e.selection.algorithm) e.predicted_us = p.us;
        (p.us >= 0 ? predicted : others).push_back(std::move(p));
    }
    std::stable_sort(predicted.begin(), predicted.end(),
                     [](const Prediction &x, const Prediction &y) { return x.us < y.us; });
    e.candidates = std::move(predicted);
    e.candidates.insert(e.candidates.end(), others.begin(), others.end());
    *out = std::move(e);
    return LOOM_SUCCESS;
}

std::string format_explanation(const CollArgs &args, const Explanation &e) {
    std::string s = call_text(args) + "\n";
    if (!e.selection.algorithm) s += "  chosen: none (" + e.not_executable + ")\n";
    else s += "  chosen: " + std::string(e.selection.algorithm->name) + " (" + e.selection.why + ")\n";
    s += "  model: " + e.model + "\n";
    const double best = !e.candidates.empty() ? e.candidates.front().us : -1;
    for (const Prediction &p : e.candidates) {
        char line[160];
        if (p.us >= 0) {
            std::snprintf(line, sizeof line, "  %-22s %12.1f us  %+7.1f%%%s\n", p.algorithm->name, p.us,
                          best > 0 ? 100 * (p.us / best - 1) : 0.0,
                          p.algorithm == e.selection.algorithm ? "  <- chosen" : "");
            s += line;
        } else {
            std::snprintf(line, sizeof line, "  %-22s %12s     ", p.algorithm->name, "-");
            s += line + p.not_applicable + "\n";
        }
    }
    return s;
}

std::string explanation_line(const CollArgs &args, const Explanation &e) {
    char head[64];
    if (!e.selection.algorithm) return call_text(args) + ": " + e.not_executable;
    std::snprintf(head, sizeof head, ", predicted %.1f us", e.predicted_us);
    std::string s = call_text(args) + ": " + e.selection.algorithm->name + " (" + e.selection.why + ")" +
                    (e.predicted_us >= 0 ? head : "");
    std::string runners;
    for (const Prediction &p : e.candidates) {
        if (p.algorithm == e.selection.algorithm || p.us < 0) continue;
        char item[64];
        std::snprintf(item, sizeof item, "%s%s %.1f us", runners.empty() ? "" : ", ", p.algorithm->name, p.us);
        runners += item;
    }
    return runners.empty() ? s : s + "; runners-up: " + runners;
}

}  // namespace loom
