// Picks the algorithm for a call (selector.cpp) and explains the choice
// (explain.cpp). A forced name that does not exist or cannot run the call is
// an error, never a silent substitution.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/params.hpp"
#include "select/cost_model.hpp"
#include "select/rules.hpp"

namespace loom {

extern const ParamId kParamRulesFile;
extern const ParamId kParamSlotsMaxBytes;

extern const ParamId kParamAllreduceAlgorithm;
extern const ParamId kParamReduceScatterAlgorithm;
extern const ParamId kParamReduceScatterBlockAlgorithm;
extern const ParamId kParamAllgatherAlgorithm;
extern const ParamId kParamAlltoallAlgorithm;
// The algorithm the parameters force for `c`: "auto" when none.
const std::string &forced_algorithm(const Config &config, Collective c);

struct Selection {
    const AlgorithmInfo *algorithm = nullptr;
    // "forced", "rule 3 of rules.json[: note]", "built-in rule 12: note", "model: ..."
    std::string why;
    // Knobs a rule set for this call; unset: the parameters' values.
    std::optional<size_t> segment_bytes;
    std::optional<int> radix, max_outstanding;
    void apply_knobs(PlanKnobs *k) const;
};

// The cost model in force: the cost_model parameter when set, else the
// rules file's model, else the defaults.
CostModel model_for(const Config &config);
// The rules file named by rules_file (empty when none or invalid).
std::shared_ptr<const RuleSet> rules_for(const Config &config);

// Order of authority: a forced name (parameter), then the first matching
// rule of the rules file that names an algorithm able to run the call, then
// the same for Loom's built-in rules (builtin_rules.hpp), then the cost
// model's fastest applicable algorithm, priced with `knobs` (the
// parameters' and the rings' piece size, as the call would be built).
Status select_algorithm(const Config &config, const CollArgs &args, Selection *out,
                        const PlanKnobs &knobs = PlanKnobs());

// The built-in rules, then the model: the choice without a forced name or rules file.
Status default_selection(const CollArgs &args, Selection *out, const CostModel &model = CostModel(),
                         const PlanKnobs &knobs = PlanKnobs());

// Empty when Loom can execute plans on the call's memory; otherwise why not.
std::string memory_problem(const CollArgs &args);

// The explanation of a choice (explain.cpp).

struct Prediction {
    const AlgorithmInfo *algorithm = nullptr;
    double us = -1;              // < 0: not predicted
    std::string not_applicable;  // why it cannot run this call, or why there is no prediction
};

struct Explanation {
    Selection selection;                 // algorithm null when nothing can run the call's memory type
    std::string not_executable;          // why, then
    double predicted_us = -1;            // the chosen algorithm's
    std::vector<Prediction> candidates;  // predicted ones, fastest first, then the others
    std::string model;                   // the model's parameters
};

// The selection and the model's price of every algorithm of the collective.
Status explain_selection(const Config &config, const CollArgs &args, Explanation *out,
                         const PlanKnobs &knobs = PlanKnobs());
// A table for loom-info --explain.
std::string format_explanation(const CollArgs &args, const Explanation &e);
// One line for the verbose log: the choice, why, its prediction and the runners-up.
std::string explanation_line(const CollArgs &args, const Explanation &e);
// "allreduce 1 MiB on 8 ranks (4 nodes x 2)": what a call is, in words.
std::string call_text(const CollArgs &args);
// "4 MiB", "3 KiB", "100 B": in the largest unit that divides it.
std::string bytes_text(size_t bytes);

}  // namespace loom
