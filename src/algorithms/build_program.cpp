#include "algorithms/algorithm.hpp"

namespace loom {

Program build_program(const AlgorithmInfo &algo, const CollArgs &args, const PlanKnobs &knobs, int rank) {
    Program program;
    ProgramBuilder builder(program, knobs);
    if (args.in_place && algo.in_place_aliasing_safe) builder.alias_input_to_output(args.in_place_input_offset(rank));
    if (algo.build) algo.build(args, rank, builder);  // a plan-free algorithm's program stays empty
    program.finalize();
    return program;
}

}  // namespace loom
