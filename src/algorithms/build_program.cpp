#include "algorithms/algorithm.hpp"

namespace loom {

Program build_program(const AlgorithmInfo &algo, const CollArgs &args, int rank) {
    Program program;
    ProgramBuilder builder(program);
    if (args.in_place && algo.in_place_aliasing_safe) builder.alias_input_to_output(args.in_place_input_offset(rank));
    algo.build(args, rank, builder);
    program.finalize();
    return program;
}

}  // namespace loom
