// The cost model's timeline of a composition's phases (its sub-collectives,
// as the step timeline names them): each phase from its first step's start
// to its last step's end over all ranks, as loom-trace prints a traced call,
// so that the two can be set side by side.
#pragma once
#include <string>
#include <vector>

#include "select/cost_model.hpp"

namespace loom {

struct PhaseSpan {
    std::string phase;  // the plan's own steps: "ALGORITHM (own steps)", as loom-trace names them
    double start_us = 0, end_us = 0;
};

// The phases of `algo` (a plan; the slot and device paths have none) in the
// order they start, and the whole call's time, priced as predict_time()
// prices it.
Status predict_phases(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, const CostModel &model,
                      std::vector<PhaseSpan> *phases, double *us);

}  // namespace loom
