// Phase builders shared by several algorithms: the recursive-halving
// reduce-scatter and recursive-doubling allgather over a Fold (any
// communicator size), the ring reduce-scatter and allgather, and the block
// layout of the reduce-scatter collectives.
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

// The ring phases: p ranks pass blocks to the right, one block per rank
// (cut by `blocks`), each sent in segments so consecutive steps pipeline.
// `owned` is the block this rank ends the reduce-scatter with, and the one
// it starts the allgather with.
struct Ring {
    // Segments of `segment_bytes` (0: whole blocks).
    Ring(const CollArgs &a, size_t segment_bytes, int rank, BlockLayout blocks, size_t owned);
    int nranks, left, right;
    BlockLayout blocks;
    size_t owned;
    size_t largest_block;
    size_t segment;  // elements, at least 1
    // The block `back` places before the owned one around the ring.
    size_t block_before_owned(int back) const;
    // Elements of block `block`'s segment starting at `offset` (0 past its end).
    size_t segment_count(size_t block, size_t offset) const;
};

// Where the ring reduce-scatter completes the partial sums passing through.
enum class RingPartials {
    in_contribution,  // in `contribution` itself, a writable copy (each block's sum leaves from there)
    in_landing        // in the two landing buffers (the contribution is only read)
};

// Ring reduce-scatter: in step s block owned-1-s leaves to the right and
// block owned-2-s arrives from the left into one of two landing buffers
// (alternating, so a step's receive overlaps the previous step's work), is
// completed with this rank's part and leaves next step; the last arrival,
// the owned block, is added into `result`, which must hold this rank's part
// of it (with in_contribution: the owned block of `contribution`).
// `contribution` is this rank's whole vector (blocks.total() elements);
// step 0 sends straight from it.
void ring_reduce_scatter(const Ring &ring, Slice contribution, Slice result, RingPartials partials, ProgramBuilder &b);

// Ring allgather over `vec` (blocks.total() elements): this rank starts
// with the owned block and ends with all; in step s it forwards block
// owned-s to the right and receives block owned-1-s from the left. Step 0
// reads the owned block from `own_block` (vec's, or the input's so as not to
// wait for a copy).
void ring_allgather(const Ring &ring, Slice vec, Slice own_block, ProgramBuilder &b);

// Allreduce by whole-vector exchanges: log_radix(p) rounds, in each every core
// rank swaps its vector with the radix-1 ranks differing from it in one
// base-radix digit and reduces; ranks outside the core (the largest power of
// `radix` not above p) hand their vector to a carrier first and get the result
// back. Radix 2 is recursive doubling. The output holds the input on entry.
// Each round's k ranks combine their vectors in the same (digit) order, so
// every rank ends with the same bits.
void allreduce_by_digit_exchange(const CollArgs &a, int rank, int radix, ProgramBuilder &b);

}  // namespace loom
