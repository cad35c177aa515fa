#include "algorithms/phases.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace loom {

BlockLayout reduce_scatter_blocks(const CollArgs &a) {
    if (a.collective == Collective::reduce_scatter) return BlockLayout(a.recv_counts);
    return BlockLayout(a.count * static_cast<size_t>(a.nranks), static_cast<size_t>(a.nranks));
}

namespace {

// A contiguous stretch of the vector, in elements.
struct Run {
    size_t offset, count;
};

// The runs holding the blocks owned by core ranks [first, first + n). Block b
// belongs to core rank b % core, so the range owns one run per lap of `core`
// blocks: at most two when there is one block per rank (core > nranks / 2).
std::vector<Run> runs_of(const BlockLayout &blocks, int core, int first, int n) {
    std::vector<Run> runs;
    const size_t total = blocks.blocks();
    for (size_t lap = 0; lap < total; lap += static_cast<size_t>(core)) {
        const size_t begin = std::min(total, lap + first), end = std::min(total, lap + first + n);
        if (begin < end) runs.push_back(Run{blocks.offset(begin), blocks.span(begin, end - begin)});
    }
    return runs;
}

size_t elements_in(const std::vector<Run> &runs) {
    size_t n = 0;
    for (const Run &r : runs) n += r.count;
    return n;
}

bool same_slice(const Slice &x, const Slice &y) { return x.buffer == y.buffer && x.offset == y.offset; }

size_t largest_of(const BlockLayout &blocks) {
    size_t largest = 0;
    for (size_t blk = 0; blk < blocks.blocks(); ++blk) largest = std::max(largest, blocks.count(blk));
    return largest;
}

}  // namespace

void reduce_scatter_halving(const Fold &fold, const BlockLayout &blocks, int rank, Slice source, Slice work,
                            ProgramBuilder &b) {
    if (!fold.in_core(rank)) {
        b.send(fold.carrier(rank), source);
        return;
    }
    const int core = fold.core;
    const std::vector<int> carried = fold.carried(rank);
    // `work` holds this rank's partial sums (over the range still in play)
    // once something has been added into it; until then the contribution is
    // read from `source` and the first incoming data lands straight in `work`.
    const bool starts_filled = same_slice(source, work);

    // Size the receive buffers first so they come out of one scratch area.
    // Stages alternate between two landing buffers, so a stage's receive need
    // not wait for the previous stage's reduction to finish reading.
    size_t fold_landing = 0, stage_landing[2] = {0, 0};
    bool filled = starts_filled;
    for (size_t i = 0; i < carried.size(); ++i) {
        if (filled) fold_landing = blocks.total();
        filled = true;
    }
    int stage = 0;
    for (int half = core / 2; half >= 1; half /= 2, ++stage) {
        const int keep_first = (rank & half) ? (rank & ~(2 * half - 1)) + half : rank & ~(2 * half - 1);
        if (filled)
            stage_landing[stage % 2] =
                std::max(stage_landing[stage % 2], elements_in(runs_of(blocks, core, keep_first, half)));
        filled = true;
    }
    const size_t scratch_needed = std::max(fold_landing, stage_landing[0] + stage_landing[1]);
    const Slice pool = scratch_needed ? b.scratch(scratch_needed) : Slice{};
    const Slice landing[2] = {pool.sub(0, stage_landing[0]), pool.sub(stage_landing[0], stage_landing[1])};

    // Fold: add in the whole contribution of each rank this one carries.
    filled = starts_filled;
    for (int peer : carried) {
        if (filled) {
            const Slice incoming = pool.sub(0, blocks.total());
            b.recv(peer, incoming);
            b.reduce(work, incoming);
        } else {
            b.recv(peer, work);
            b.reduce(work, source);
            filled = true;
        }
    }

    // Halving over the core-rank index space: with partner rank ^ half, keep
    // the half of the current range holding my blocks, send the other half.
    stage = 0;
    for (int half = core / 2; half >= 1; half /= 2, ++stage) {
        const int partner = rank ^ half;
        const int range_first = rank & ~(2 * half - 1);
        const bool keep_lower = (rank & half) == 0;
        const int keep_first = keep_lower ? range_first : range_first + half;
        const int give_first = keep_lower ? range_first + half : range_first;
        const Slice outgoing = filled ? work : source;
        for (const Run &r : runs_of(blocks, core, give_first, half)) b.send(partner, outgoing.sub(r.offset, r.count));
        size_t landed = 0;
        for (const Run &r : runs_of(blocks, core, keep_first, half)) {
            const Slice mine = work.sub(r.offset, r.count);
            if (filled) {
                // Receive into scratch, never into `work`, which may be what the
                // partner reads from in this same exchange.
                const Slice incoming = landing[stage % 2].sub(landed, r.count);
                landed += r.count;
                b.recv(partner, incoming);
                b.reduce(mine, incoming);
            } else {
                b.recv(partner, mine);
                b.reduce(mine, source.sub(r.offset, r.count));
            }
        }
        filled = true;
    }
    if (!filled)  // a communicator of one: nothing was exchanged
        for (const Run &r : runs_of(blocks, core, rank, 1))
            b.copy(work.sub(r.offset, r.count), source.sub(r.offset, r.count));
}

void allgather_doubling(const Fold &fold, const BlockLayout &blocks, int rank, Slice work, ProgramBuilder &b) {
    if (!fold.in_core(rank)) {
        b.recv(fold.carrier(rank), work);
        return;
    }
    const int core = fold.core;
    // Before the stage with distance `held`, I hold the blocks of the `held`
    // core ranks in my aligned group; my partner holds its group's. The two
    // groups are disjoint, so the exchange reads and writes disjoint runs.
    for (int held = 1; held < core; held *= 2) {
        const int partner = rank ^ held;
        for (const Run &r : runs_of(blocks, core, rank & ~(held - 1), held))
            b.send(partner, work.sub(r.offset, r.count));
        for (const Run &r : runs_of(blocks, core, partner & ~(held - 1), held))
            b.recv(partner, work.sub(r.offset, r.count));
    }
    for (int peer : fold.carried(rank)) b.send(peer, work);
}

void deliver_own_blocks(const Fold &fold, const BlockLayout &blocks, int rank, Slice work, Slice result,
                        ProgramBuilder &b) {
    if (!fold.in_core(rank)) {
        b.recv(fold.carrier(rank), result);
        return;
    }
    for (int peer : fold.carried(rank)) b.send(peer, work.sub(blocks.offset(peer), blocks.count(peer)));
    b.copy(result, work.sub(blocks.offset(rank), blocks.count(rank)));
}

Ring::Ring(const CollArgs &a, size_t segment_bytes, int r, BlockLayout layout, size_t owned_block)
    : nranks(a.nranks),
      left((r + a.nranks - 1) % a.nranks),
      right((r + 1) % a.nranks),
      blocks(std::move(layout)),
      owned(owned_block),
      largest_block(largest_of(blocks)),
      segment(segment_elements(segment_bytes, a.elem_size, largest_block)) {}

size_t Ring::block_before_owned(int back) const {
    const long long p = nranks, i = (static_cast<long long>(owned) - back) % p;
    return static_cast<size_t>(i < 0 ? i + p : i);
}

size_t Ring::segment_count(size_t block, size_t offset) const {
    return offset < blocks.count(block) ? std::min(segment, blocks.count(block) - offset) : size_t{0};
}

void ring_reduce_scatter(const Ring &ring, Slice contribution, Slice result, RingPartials partials, ProgramBuilder &b) {
    if (ring.nranks == 1) return;
    const BlockLayout &blocks = ring.blocks;
    const Slice landing[2] = {b.scratch(ring.largest_block), b.scratch(ring.largest_block)};
    auto part_of = [&](size_t blk) { return contribution.sub(blocks.offset(blk), blocks.count(blk)); };
    for (int step = 0; step < ring.nranks - 1; ++step) {
        const size_t out_block = ring.block_before_owned(step + 1), in_block = ring.block_before_owned(step + 2);
        const bool last = step == ring.nranks - 2;
        // What leaves is the partial sum completed last step, or at first my own part.
        const Slice outgoing = step == 0 || partials == RingPartials::in_contribution
                                   ? part_of(out_block)
                                   : landing[(step - 1) % 2].sub(0, blocks.count(out_block));
        const Slice incoming = landing[step % 2];
        const size_t span = std::max(blocks.count(out_block), blocks.count(in_block));
        for (size_t off = 0; off < span; off += ring.segment) {
            b.send(ring.right, outgoing.sub(off, ring.segment_count(out_block, off)));
            const size_t in_n = ring.segment_count(in_block, off);
            const Slice arrived = incoming.sub(off, in_n), mine = part_of(in_block).sub(off, in_n);
            b.recv(ring.left, arrived);
            if (last) b.reduce(result.sub(off, in_n), arrived);
            else if (partials == RingPartials::in_contribution) b.reduce(mine, arrived);
            else b.reduce(arrived, mine);
        }
    }
}

void ring_allgather(const Ring &ring, Slice vec, Slice own_block, ProgramBuilder &b) {
    const BlockLayout &blocks = ring.blocks;
    for (int step = 0; step < ring.nranks - 1; ++step) {
        const size_t out_block = ring.block_before_owned(step), in_block = ring.block_before_owned(step + 1);
        const Slice outgoing = step == 0 ? own_block : vec.sub(blocks.offset(out_block), blocks.count(out_block));
        const size_t span = std::max(blocks.count(out_block), blocks.count(in_block));
        for (size_t off = 0; off < span; off += ring.segment) {
            b.send(ring.right, outgoing.sub(off, ring.segment_count(out_block, off)));
            const size_t in_n = ring.segment_count(in_block, off);
            b.recv(ring.left, vec.sub(blocks.offset(in_block) + off, in_n));
        }
    }
}

void allreduce_by_digit_exchange(const CollArgs &a, int rank, int radix, ProgramBuilder &b) {
    const Slice result = output_slice(0, a.count);
    b.copy(result, input_slice(0, a.count));
    if (a.nranks == 1 || a.count == 0) return;
    const Fold fold(a.nranks, radix);
    if (!fold.in_core(rank)) {
        b.send(fold.carrier(rank), result);
        b.recv(fold.carrier(rank), result);
        return;
    }
    const std::vector<int> carried = fold.carried(rank);
    std::vector<Slice> incoming;
    for (int i = 0; i < std::max<int>(radix - 1, static_cast<int>(carried.size())); ++i)
        incoming.push_back(b.scratch(a.count));
    // Only the carrier sums its carried vectors (in rank order), so no other rank can differ on them.
    for (size_t i = 0; i < carried.size(); ++i) b.recv(carried[i], incoming[i]);
    for (size_t i = 0; i < carried.size(); ++i) b.reduce(result, incoming[i]);
    std::vector<Slice> by_digit(radix);
    for (int stride = 1; stride < fold.core; stride *= radix) {
        const int digit = (rank / stride) % radix;
        // All sends and receives of the round go out before any reduction, so
        // the k-1 exchanges overlap; peers in the order digit+1, digit+2, ...
        // so no rank is everyone's first.
        for (int j = 1; j < radix; ++j) b.send(rank + (((digit + j) % radix) - digit) * stride, result);
        for (int j = 1; j < radix; ++j) {
            const int peer_digit = (digit + j) % radix;
            by_digit[peer_digit] = incoming[j - 1];
            b.recv(rank + (peer_digit - digit) * stride, by_digit[peer_digit]);
        }
        // Every rank of the group combines the k vectors in digit order,
        // v0 op v1 op ... op v(k-1), so all get the same bits (floating-point
        // reduction is not associative). The lower digits gather in the
        // first landing buffer; mine joins as `result op= that`, which is
        // the same as `that op= mine` since op is commutative.
        if (digit > 0) {
            for (int d = 1; d < digit; ++d) b.reduce(by_digit[0], by_digit[d]);
            b.reduce(result, by_digit[0]);
        }
        for (int d = digit + 1; d < radix; ++d) b.reduce(result, by_digit[d]);
    }
    for (int extra : carried) b.send(extra, result);
}

}  // namespace loom
