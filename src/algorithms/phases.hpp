// Phase builders shared by several algorithms: the recursive-halving
// reduce-scatter and recursive-doubling allgather over a Fold (any
// communicator size), and the block layout of the reduce-scatter collectives.
#pragma once
#include "algorithms/fold.hpp"
#include "core/plan.hpp"

namespace loom {

// Blocks of a reduce_scatter / reduce_scatter_block input: block r is rank r's.
BlockLayout reduce_scatter_blocks(const CollArgs &args);

// In the halving and doubling phases, block b belongs to core rank
// b % fold.core. With one block per core rank that is block c for rank c; with
// one block per rank, core rank c also owns the blocks of the ranks it carries.
//
// Recursive-halving reduce-scatter of the vector `work` (blocks.total()
// elements, cut by `blocks`). `source` is where this rank's contribution is;
// pass `work` itself when the caller already copied it there, else the
// contribution is read from `source` and `work` is filled as the halving goes
// (saving a full copy). On return core rank c holds, in `work`, the fully
// reduced blocks it owns; the rest of `work` is garbage. A rank outside the
// core only sends its contribution to its carrier.
void reduce_scatter_halving(const Fold &fold, const BlockLayout &blocks, int rank, Slice source, Slice work,
                            ProgramBuilder &b);

// Recursive-doubling allgather, the inverse: core rank c starts with the
// blocks it owns in `work` and ends with all of them; each rank outside the
// core then receives the whole of `work` from its carrier.
void allgather_doubling(const Fold &fold, const BlockLayout &blocks, int rank, Slice work, ProgramBuilder &b);

// Reduce-scatter ending (one block per rank): after reduce_scatter_halving,
// every rank gets its own block r into `result`; core ranks copy theirs out of
// `work` and send the carried ranks theirs.
void deliver_own_blocks(const Fold &fold, const BlockLayout &blocks, int rank, Slice work, Slice result,
                        ProgramBuilder &b);

// Allreduce by whole-vector exchanges: log_radix(p) rounds, in each every core
// rank swaps its vector with the radix-1 ranks differing from it in one
// base-radix digit and reduces; ranks outside the core (the largest power of
// `radix` not above p) hand their vector to a carrier first and get the result
// back. Radix 2 is recursive doubling. The output holds the input on entry.
void allreduce_by_digit_exchange(const CollArgs &a, int rank, int radix, ProgramBuilder &b);

}  // namespace loom
