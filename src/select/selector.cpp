#include "select/selector.hpp"

#include <cstdio>

#include "algorithms/compose.hpp"
#include "engine/engine.hpp"
#include "select/builtin_rules.hpp"

namespace loom {
namespace {

Status check_algorithm_name(const ParamSpec &spec, const std::string &value) {
    if (value == "auto" || find_algorithm(spec.collective, value)) return LOOM_SUCCESS;
    return fail(LOOM_ERR_UNKNOWN_ALGORITHM, std::string(collective_name(spec.collective)) + " has no algorithm '" +
                                                value + "' (set by " + spec.name + "); known: auto, " +
                                                algorithm_names(spec.collective));
}

// Sub-collectives of node-aware plans take the default rules: their
// arguments carry no node map, so only flat algorithms apply.
const AlgorithmInfo *default_sub_collective(const CollArgs &sub, const PlanKnobs &knobs) {
    Selection chosen;
    return default_selection(sub, &chosen, CostModel(), knobs) == LOOM_SUCCESS ? chosen.algorithm : nullptr;
}

const bool sub_collectives_chosen_by_default_rules = (choose_sub_collectives_with(default_sub_collective), true);

}  // namespace

const ParamId kParamRulesFile = declare_param(
    ParamSection::selection,
    {"rules_file", ParamType::path, "", 4,
     "JSON file of selection rules (loom-rules(5)): matching entries choose the algorithm (and its segment "
     "size, radix ...) before Loom's built-in rules; an invalid file is reported and ignored",
     0, 0, Collective::allreduce});
const ParamId kParamSlotsMaxBytes = declare_param(
    ParamSection::selection,
    {"slots_max_bytes", ParamType::size, "4KiB", 4,
     "Largest input per rank (allreduce's vector, reduce_scatter's and alltoall's whole send buffer, "
     "allgather's block) that a collective among the ranks of one node runs through the shared slots "
     "(algorithm shared_slots: inputs published in shared memory and read in place, no messages), unless a rules "
     "file or a forced algorithm decides first; at most 32 KiB. 0: only where forced or named by a rule",
     0, 32768, Collective::allreduce});

const ParamId kParamAllreduceAlgorithm =
    declare_param(ParamSection::algorithms, {"allreduce_algorithm", ParamType::algorithm, "auto", 2,
                                             "Allreduce algorithm by name, or auto to let the selector choose", 0, 0,
                                             Collective::allreduce, nullptr, check_algorithm_name});
const ParamId kParamReduceScatterAlgorithm =
    declare_param(ParamSection::algorithms, {"reduce_scatter_algorithm", ParamType::algorithm, "auto", 2,
                                             "Reduce_scatter algorithm by name, or auto", 0, 0,
                                             Collective::reduce_scatter, nullptr, check_algorithm_name});
const ParamId kParamReduceScatterBlockAlgorithm =
    declare_param(ParamSection::algorithms, {"reduce_scatter_block_algorithm", ParamType::algorithm, "auto", 2,
                                             "Reduce_scatter_block algorithm by name, or auto", 0, 0,
                                             Collective::reduce_scatter_block, nullptr, check_algorithm_name});
const ParamId kParamAllgatherAlgorithm =
    declare_param(ParamSection::algorithms,
                  {"allgather_algorithm", ParamType::algorithm, "auto", 2, "Allgather algorithm by name, or auto", 0, 0,
                   Collective::allgather, nullptr, check_algorithm_name});
const ParamId kParamAlltoallAlgorithm =
    declare_param(ParamSection::algorithms,
                  {"alltoall_algorithm", ParamType::algorithm, "auto", 2, "Alltoall algorithm by name, or auto", 0, 0,
                   Collective::alltoall, nullptr, check_algorithm_name});
const ParamId kParamAlltoallvAlgorithm =
    declare_param(ParamSection::algorithms,
                  {"alltoallv_algorithm", ParamType::algorithm, "auto", 2, "Alltoallv algorithm by name, or auto", 0, 0,
                   Collective::alltoallv, nullptr, check_algorithm_name});
const ParamId kParamAllgathervAlgorithm =
    declare_param(ParamSection::algorithms,
                  {"allgatherv_algorithm", ParamType::algorithm, "auto", 2, "Allgatherv algorithm by name, or auto", 0,
                   0, Collective::allgatherv, nullptr, check_algorithm_name});

const std::string &forced_algorithm(const Config &config, Collective c) {
    static const ParamId ids[kCollectiveCount] = {kParamAllreduceAlgorithm,          kParamReduceScatterAlgorithm,
                                                  kParamReduceScatterBlockAlgorithm, kParamAllgatherAlgorithm,
                                                  kParamAlltoallAlgorithm,           kParamAlltoallvAlgorithm,
                                                  kParamAllgathervAlgorithm};
    return config.raw(ids[static_cast<int>(c)]);
}

void Selection::apply_knobs(PlanKnobs *k) const {
    if (segment_bytes) k->segment_bytes = *segment_bytes;
    if (radix) k->radix = *radix;
    if (max_outstanding) k->max_outstanding = *max_outstanding;
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

std::string memory_problem(const CollArgs &args) {
    if (args.memory != MemoryType::cuda_managed) return {};
    return "managed memory is read and written by the host algorithms in place (memory=host)";
}

namespace {
// The first rule of `rules` that matches the call and names an algorithm that
// can run it: its choice, with the rule's knobs, in `out`. Null when none.
const Rule *select_by_rules(const RuleSet &rules, const CollArgs &args, Selection *out) {
    for (const Rule *r = match_rule(rules, args); r; r = match_rule(rules, args, r->index + 1)) {
        Selection s;
        s.segment_bytes = r->segment_bytes;
        s.radix = r->radix;
        s.max_outstanding = r->max_outstanding;
        for (const std::string &name : r->algorithms) {
            const AlgorithmInfo *algo = find_algorithm(args.collective, name);
            if (algo && why_not_applicable(*algo, args).empty()) {
                s.algorithm = algo;
                break;
            }
        }
        if (!s.algorithm) continue;  // none of its algorithms can run the call: the next matching rule
        *out = std::move(s);
        return r;
    }
    return nullptr;
}

std::string with_note(const std::string &head, const Rule &r) { return r.note.empty() ? head : head + ": " + r.note; }
}  // namespace

Status select_algorithm(const Config &config, const CollArgs &args, Selection *out, const PlanKnobs &knobs) {
    const Collective c = args.collective;
    const std::string memory = memory_problem(args);
    if (!memory.empty()) return fail(LOOM_ERR_ALGORITHM_NOT_APPLICABLE, call_text(args) + ": " + memory);
    const std::string &forced = forced_algorithm(config, c);
    if (forced != "auto" && !args.internal) {
        const AlgorithmInfo *algo = find_algorithm(c, forced);
        if (!algo)
            return fail(LOOM_ERR_UNKNOWN_ALGORITHM, std::string(collective_name(c)) + " has no algorithm '" + forced +
                                                        "'; known: auto, " + algorithm_names(c));
        // A forced algorithm rules the calls on the memory it runs on: forcing a
        // device algorithm leaves host calls (Loom's own set-up calls among them)
        // to the usual selection, and the other way round.
        if (memory_mismatch(*algo, args).empty()) {
            const std::string why_not = algo->not_applicable(args);
            if (!why_not.empty())
                return fail(LOOM_ERR_ALGORITHM_NOT_APPLICABLE,
                            std::string(collective_name(c)) + " algorithm '" + forced + "' (forced) cannot run " +
                                args.describe() + ": " + why_not +
                                "; unset it or choose another of: " + algorithm_names(c));
            *out = Selection{};
            out->algorithm = algo;
            out->why = "forced";
            return LOOM_SUCCESS;
        }
    }
    const auto rules = rules_for(config);
    if (const Rule *r = select_by_rules(*rules, args, out)) {
        out->why = with_note("rule " + std::to_string(r->index) + " of " + rules->path, *r);
        return LOOM_SUCCESS;
    }
    const AlgorithmInfo *slots = shared_slots_algorithm(c);
    const long long slots_max = config.integer(kParamSlotsMaxBytes);
    if (slots && static_cast<long long>(args.input_count() * args.elem_size) <= slots_max &&
        slots->not_applicable(args).empty()) {
        *out = Selection{};
        out->algorithm = slots;
        out->why = "input <= slots_max_bytes (" + std::to_string(slots_max) + ") on one node: shared slots";
        return LOOM_SUCCESS;
    }
    return default_selection(args, out, model_for(config), knobs);
}

Status default_selection(const CollArgs &args, Selection *out, const CostModel &model, const PlanKnobs &knobs) {
    const Collective c = args.collective;
    *out = Selection{};
    if (const Rule *r = select_by_rules(builtin_rules(), args, out)) {
        out->why = with_note("built-in rule " + std::to_string(r->index), *r);
        return LOOM_SUCCESS;
    }
    // No built-in rule can run the call: the model's fastest.
    double best = -1;
    for (const AlgorithmInfo *algo : algorithms_for(c)) {
        // The slots' reach is measured (slots_max_bytes, the built-in rules), not the model's.
        if (traits_of(algo->path).rules_only || !why_not_applicable(*algo, args).empty()) continue;
        double us = -1;
        if (predict_time(*algo, args, knobs, model, &us) != LOOM_SUCCESS) us = -1;
        if (!out->algorithm || (us >= 0 && (best < 0 || us < best))) {
            out->algorithm = algo;
            best = us;
        }
    }
    if (!out->algorithm && args.memory != MemoryType::host)
        return fail(LOOM_ERR_ALGORITHM_NOT_APPLICABLE,
                    std::string("no ") + collective_name(c) + " algorithm runs " + args.describe() +
                        " on the device (the cuda_ipc algorithms need every rank on one node with Loom's shared "
                        "memory): Loom stages such calls through host memory");
    if (!out->algorithm)
        return fail(LOOM_ERR_INTERNAL,
                    std::string("no ") + collective_name(c) + " algorithm applies to " + args.describe());
    char text[96];
    std::snprintf(text, sizeof text, "model: fastest applicable, %.1f us predicted", best);
    out->why = best >= 0 ? text : "first applicable (no model prediction)";
    return LOOM_SUCCESS;
}

}  // namespace loom
