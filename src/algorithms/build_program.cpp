#include "algorithms/algorithm.hpp"

namespace loom {

Program build_program(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, int rank,
                      size_t step_limit) {
    Program program;
    ProgramBuilder builder(program, knobs);
    builder.set_step_limit(step_limit);
    if (args.in_place && algo.in_place_aliasing_safe) builder.alias_input_to_output(args.in_place_input_offset(rank));
    if (algo.build) algo.build(args, rank, builder);  // a plan-free algorithm's program stays empty
    if (!program.truncated) program.finalize();
    return program;
}

}  // namespace loom
