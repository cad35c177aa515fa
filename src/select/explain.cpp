// What a selection is and why, in words: for loom-info --explain and the
// verbose log.
#include "select/selector.hpp"

#include <algorithm>
#include <cstdio>

#include "node_map.hpp"
#include "select/rules.hpp"

namespace loom {
std::string bytes_text(size_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
    if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
    return std::to_string(b) + " B";
}

namespace {

std::string names_text(const std::vector<std::string> &names) {
    std::string s;
    for (const std::string &n : names) s += (s.empty() ? "" : ", then ") + n;
    return s;
}

}  // namespace

std::string call_text(const CollArgs &a) {
    std::string s = std::string(collective_name(a.collective)) + " " + bytes_text(message_bytes(a)) + " on " +
                    std::to_string(a.nranks) + (a.nranks == 1 ? " rank" : " ranks");
    if (a.nodes && a.nodes->nranks() == a.nranks && a.nodes->nodes() > 1) {
        s += " (" + std::to_string(a.nodes->nodes()) + " nodes x " + (a.nodes->uniform() ? "" : "up to ") +
             std::to_string(a.nodes->max_ranks_per_node());
        if (a.nodes->rails > 1) s += ", " + std::to_string(a.nodes->rails) + " rails";
        s += ")";
    } else if (a.single_node) {
        s += " (one node)";
    }
    if (a.memory != MemoryType::host) s += " on " + std::string(memory_type_name(a.memory)) + " memory";
    const size_t skew = skew_of(a);
    if (skew > 1) s += ", skew " + std::to_string(skew) + " (largest block over the mean)";
    return s;
}

Status explain_selection(const Config &config, const CollArgs &args, Explanation *out, const PlanKnobs &knobs) {
    Explanation e;
    const CostModel model = model_for(config);
    e.model = model.describe();
    e.not_executable = memory_problem(args);
    if (e.not_executable.empty()) {
        const Status st = select_algorithm(config, args, &e.selection, knobs);
        // Device memory no algorithm runs here is staged: say so, and why.
        if (st != LOOM_SUCCESS && args.memory == MemoryType::host) return st;
        if (st != LOOM_SUCCESS) {
            e.not_executable = last_error_message();
            e.selection = Selection{};
        }
    }
    if (!e.not_executable.empty()) {
        // Say what would be chosen once it can run: the rules file's entry for this memory.
        const auto rules = rules_for(config);
        if (const Rule *r = match_rule(*rules, args))
            e.not_executable += "; rule " + std::to_string(r->index) + " of " + rules->path + " (memory " + r->memory +
                                ") names " + names_text(r->algorithms);
        for (const AlgorithmInfo *algo : algorithms_for(args.collective)) {
            Prediction p;
            p.algorithm = algo;
            p.not_applicable = why_not_applicable(*algo, args);
            if (p.not_applicable.empty())
                p.not_applicable = std::string("not executable on ") + memory_type_name(args.memory) + " memory";
            e.candidates.push_back(std::move(p));
        }
        *out = std::move(e);
        return LOOM_SUCCESS;
    }
    std::vector<Prediction> predicted, others;
    for (const AlgorithmInfo *algo : algorithms_for(args.collective)) {
        Prediction p;
        p.algorithm = algo;
        PlanKnobs k = knobs;
        if (algo == e.selection.algorithm) e.selection.apply_knobs(&k);
        p.not_applicable = why_not_applicable(*algo, args);
        if (p.not_applicable.empty()) {
            if (predict_time(*algo, args, k, model, &p.us) != LOOM_SUCCESS) {
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
