// The plan IR: for one rank, the steps it performs in a collective.
//
// A Program is pure data: steps over buffer slices (counted in elements), each
// with the steps it waits for. Building one touches no MPI, no user memory and
// no clock, so the same program feeds the executor, the unit tests (all ranks
// in one process), the cost model and the simulator.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "core/memory.hpp"

namespace loom {

struct NodeMap;

enum class Collective : uint8_t {
    allreduce,
    reduce_scatter,
    reduce_scatter_block,
    allgather,
    alltoall,
    alltoallv,
    allgatherv
};
constexpr int kCollectiveCount = 7;
// Collectives whose blocks differ per peer, given as counts and displacements.
inline bool is_vector_collective(Collective c) { return c == Collective::alltoallv || c == Collective::allgatherv; }
const char *collective_name(Collective c);
bool collective_from_name(const std::string &name, Collective *out);

// Which memory a slice lives in. `input` is the user's send buffer (or, for an
// in-place call, the executor's view of the input; see Execution).
enum class Buffer : uint8_t { input, output, scratch };

struct Slice {
    Buffer buffer = Buffer::scratch;
    size_t offset = 0;  // elements
    size_t count = 0;   // elements
    Slice sub(size_t off, size_t n) const { return Slice{buffer, offset + off, n}; }
};
inline Slice input_slice(size_t offset, size_t count) { return Slice{Buffer::input, offset, count}; }
inline Slice output_slice(size_t offset, size_t count) { return Slice{Buffer::output, offset, count}; }

enum class StepKind : uint8_t {
    send,    // send `src` to `peer`
    recv,    // receive from `peer` into `dst`
    reduce,  // dst = dst op src
    copy,    // dst = src
    join     // no data; completes when its dependencies have (used to merge dependencies)
};
const char *step_kind_name(StepKind k);

using StepId = uint32_t;

struct Step {
    StepKind kind = StepKind::join;
    uint8_t lane = 0;        // rail / channel of a send or receive (both sides alike); single-lane transports ignore it
    int32_t peer = -1;       // communicator rank (send/recv)
    Slice dst;               // recv, reduce, copy
    Slice src;               // send, reduce, copy
    uint32_t first_dep = 0;  // index into Program::deps
    uint32_t dep_count = 0;
};

// One rank's steps. Messages between a pair of ranks match in program order:
// the k-th send from a to b is the k-th receive from a on b.
struct Program {
    std::vector<Step> steps;
    std::vector<StepId> deps;  // dependency lists, referenced by Step::first_dep/dep_count
    size_t scratch_count = 0;  // elements of scratch the program needs
    // Derived by finalize(): who waits on whom (CSR) and the steps with no dependencies.
    std::vector<uint32_t> dependents_begin;
    std::vector<StepId> dependents;
    // Sends to (and receives from) one peer are posted in program order so
    // messages match: each such step also waits for the previous one to be
    // posted. next_in_peer_order[id] is the step it releases (kNoStep if none).
    std::vector<StepId> next_in_peer_order;
    std::vector<uint32_t> initial_unmet;  // dependencies + the posting-order gate
    std::vector<StepId> initial_ready;    // steps with nothing to wait for
    // The sub-collectives of a composition, for the step timeline: phase
    // names ([0] is the plan's own steps, "") and each step's phase (empty
    // when the plan has none).
    std::vector<std::string> phases;
    std::vector<uint16_t> step_phase;
    // Set where the builder's step limit cut the plan short (the cost
    // model's budget): such a program is priced by nothing and never run.
    bool truncated = false;
    const std::string &phase_of(StepId id) const {
        static const std::string none;
        return step_phase.empty() ? none : phases[step_phase[id]];
    }
    static constexpr StepId kNoStep = 0xffffffffu;

    size_t size() const { return steps.size(); }
    void finalize();
    // Structural check: dependencies point backwards, slices in bounds. Returns
    // an empty string when valid, else what is wrong (used by tests and debug builds).
    std::string validate(size_t input_count, size_t output_count) const;
};

using Deps = std::initializer_list<StepId>;

// How a plan is tuned, apart from the call's shape: the parameters' knobs,
// a rule's, and the shared-memory rings' piece size. They travel beside
// CollArgs: the selector and the cost model take them, and ProgramBuilder
// carries them to the plan builders.
struct PlanKnobs {
    size_t segment_bytes = 0;  // pipelining segment for ring-style algorithms (0 = none)
    int radix = 4;             // recursive multiplying
    int max_outstanding = 8;   // scattered alltoall window
    // Scattered alltoall: send each block in pieces of at most this many
    // bytes (0: whole), so a block too large for one ring message still
    // goes through the shared-memory rings.
    size_t ring_piece_bytes = 0;
};

// Appends steps to a Program and derives their dependencies from the data
// they touch: a step that reads a region waits for the last steps that wrote
// it; a step that writes a region waits for every earlier reader and writer.
// Algorithms therefore state only what moves where, in program order; extra
// ordering (a window of outstanding messages, say) is passed as explicit deps.
// Zero-length sends/receives/copies become joins so both sides of a message
// agree without special cases.
class ProgramBuilder {
  public:
    explicit ProgramBuilder(Program &program, const PlanKnobs &knobs = PlanKnobs()) : p_(program), knobs_(knobs) {}
    // The knobs the plan is built with (a sub-collective may get its own).
    const PlanKnobs &knobs() const { return knobs_; }
    void set_knobs(const PlanKnobs &knobs) { knobs_ = knobs; }
    // At most `steps` steps (0: no limit); past them the builder only runs
    // through its loops and marks the program truncated.
    void set_step_limit(size_t steps) { step_limit_ = steps; }
    StepId send(int peer, Slice src, Deps deps = {}, int lane = 0) {
        return add(StepKind::send, peer, {}, src, deps.begin(), deps.size(), lane);
    }
    StepId send(int peer, Slice src, const std::vector<StepId> &deps, int lane = 0) {
        return add(StepKind::send, peer, {}, src, deps.data(), deps.size(), lane);
    }
    // A message's lane must be the same on both sides (its sender's and its receiver's step).
    StepId recv(int peer, Slice dst, Deps deps = {}, int lane = 0) {
        return add(StepKind::recv, peer, dst, {}, deps.begin(), deps.size(), lane);
    }
    StepId recv(int peer, Slice dst, const std::vector<StepId> &deps, int lane = 0) {
        return add(StepKind::recv, peer, dst, {}, deps.data(), deps.size(), lane);
    }
    StepId reduce(Slice dst, Slice src, Deps deps = {}) {
        return add(StepKind::reduce, -1, dst, src, deps.begin(), deps.size(), 0);
    }
    StepId copy(Slice dst, Slice src, Deps deps = {}) {
        return add(StepKind::copy, -1, dst, src, deps.begin(), deps.size(), 0);
    }
    StepId join(const std::vector<StepId> &deps) {
        return add(StepKind::join, -1, {}, {}, deps.data(), deps.size(), 0);
    }
    // Reserves `count` elements of scratch.
    Slice scratch(size_t count) {
        Slice s{Buffer::scratch, p_.scratch_count, count};
        p_.scratch_count += count;
        return s;
    }
    // For in-place calls whose input lives in the output buffer at `offset`:
    // input reads are then tracked as reads of that part of the output.
    void alias_input_to_output(size_t offset) {
        input_aliased_ = true;
        input_alias_offset_ = offset;
    }
    // Composition. The steps added between push_group and pop_group belong
    // to a sub-collective over a group of ranks: its peer g is communicator
    // rank ranks[g], and its input and output buffers are the given slices
    // of the current ones (scratch stays shared). A sub-plan is then built
    // by any algorithm's builder with group-relative CollArgs. Groups nest.
    // `lane` >= 0 puts the group's sends on that lane (its rail).
    // `phase` names the sub-collective for the step timeline ("allreduce
    // rabenseifner over 4"); nested names join with " / ".
    void push_group(const std::vector<int> &ranks, Slice input, Slice output, int lane = -1,
                    const std::string &phase = {});
    void pop_group();
    Program &program() { return p_; }

  private:
    struct Group {
        std::vector<int> ranks;
        Slice input, output;
        int lane;
        uint16_t phase;  // index into Program::phases
    };
    std::vector<Group> groups_;
    Slice to_current(const Slice &s) const;  // a slice of the innermost group, in the program's buffers

    // Per buffer, the touched elements as disjoint pieces [begin, end), each
    // with its last writer and the readers since: an access touches only the
    // pieces it overlaps, so building stays O(steps log steps).
    struct Piece {
        size_t end;
        StepId writer;  // kNoWriter when only read so far
        std::vector<StepId> readers;
    };
    using PieceMap = std::map<size_t, Piece>;
    static constexpr StepId kNoWriter = 0xffffffffu;
    StepId add(StepKind kind, int peer, Slice dst, Slice src, const StepId *deps, size_t ndeps, int lane);
    void track(const Slice &s, bool write, StepId id, std::vector<StepId> &deps);
    static void split_at(PieceMap &pieces, size_t at);
    Program &p_;
    PlanKnobs knobs_;
    PieceMap pieces_[3];  // per Buffer
    bool input_aliased_ = false;
    size_t input_alias_offset_ = 0;
    size_t step_limit_ = 0;
};

// Elements in one segment of a pipelined plan: segment_bytes' worth (at
// least one element), or `unsegmented` where segment_bytes is 0 (no cutting).
inline size_t segment_elements(size_t segment_bytes, size_t elem_size, size_t unsegmented) {
    return std::max<size_t>(1, segment_bytes ? segment_bytes / elem_size : unsegmented);
}

// Splits `count` elements into `parts` nearly equal contiguous blocks (the
// first count % parts blocks get one more element).
struct BlockLayout {
    BlockLayout() = default;
    BlockLayout(size_t count, size_t parts);
    explicit BlockLayout(const std::vector<size_t> &counts);  // explicit block sizes
    size_t offset(size_t block) const { return offsets[block]; }
    size_t count(size_t block) const { return offsets[block + 1] - offsets[block]; }
    // Elements of blocks [first, first + n).
    size_t span(size_t first, size_t n) const { return offsets[first + n] - offsets[first]; }
    size_t blocks() const { return offsets.size() - 1; }
    size_t total() const { return offsets.back(); }
    std::vector<size_t> offsets;
};

// What an alltoallv across nodes learns of the other ranks' counts before
// it runs (CollArgs::node_counts): the counts of every block that leaves or
// enters the caller's node, from the node's own ranks, which
// node_aggregation's agents size their packs by, and two figures over every
// rank's blocks, the same on every rank, which selection reads. O(ranks per
// node x ranks) per rank, where every rank's counts would be ranks squared.
struct NodeCounts {
    int node = 0;                // the node whose ranks these are
    size_t ranks = 0;            // p, the communicator's
    std::vector<size_t> counts;  // rows of p: each of the node's ranks' send counts, then their receive counts
    size_t total = 0;            // every rank's blocks, summed
    size_t largest = 0;          // the largest block of any rank
    bool known() const { return !counts.empty(); }
    size_t rows() const { return ranks ? counts.size() / (2 * ranks) : 0; }  // the node's ranks
    // What the node's i-th rank sends rank d, and receives from rank s.
    size_t sent(size_t i, size_t d) const { return counts[i * ranks + d]; }
    size_t received(size_t i, size_t s) const { return counts[(rows() + i) * ranks + s]; }
    bool operator==(const NodeCounts &o) const {
        return node == o.node && ranks == o.ranks && counts == o.counts && total == o.total && largest == o.largest;
    }
};

// What a plan is built for: the call's shape. Plans depend on shape (and
// knobs) only, never on data.
struct CollArgs {
    Collective collective = Collective::allreduce;
    int nranks = 1;
    size_t count = 0;                 // allreduce: elements; allgather/alltoall/rs_block: per rank; allgatherv: sent
    std::vector<size_t> recv_counts;  // reduce_scatter, allgatherv, alltoallv: per rank
    // The vector collectives, as MPI passes them, in elements. They describe
    // the calling rank's buffers only: a plan for rank r is built from rank
    // r's arguments (and allgatherv's recv_counts, which every rank shares).
    // In place, alltoallv's send side is its receive side.
    std::vector<size_t> recv_displs;  // allgatherv, alltoallv: where each peer's block lands
    std::vector<size_t> send_counts;  // alltoallv: per peer
    std::vector<size_t> send_displs;  // alltoallv: where each peer's block is read
    // alltoallv as --explain and the cost model describe it: every rank's
    // counts, row s what rank s sends (p x p); empty in a rank's own call,
    // which learns node_counts instead (node_aggregation derives a rank's
    // node counts from this where they are unknown).
    std::vector<size_t> count_matrix;
    // alltoallv across nodes: what the ranks exchange first; unknown where
    // they did not.
    NodeCounts node_counts;
    size_t elem_size = 1;             // bytes, so algorithms can size segments
    bool in_place = false;
    MemoryType memory = MemoryType::host;  // where the buffers live
    // Every rank reaches every other through shared memory (one node), where
    // a message is cheap and a round of waiting is what costs.
    bool single_node = false;
    // Which ranks share a node (null: unknown, treated as one node). Plans
    // of node-aware algorithms depend on it; it is fixed per communicator.
    const NodeMap *nodes = nullptr;
    // Every node's ranks share Loom's shared slots (a node of one rank
    // needs none), on two nodes or more: the node_slots algorithms apply.
    bool node_slots = false;
    // Loom's own call (a set-up's agreement, a vector collective's counts):
    // an algorithm the parameters force for the user's calls is not taken,
    // since it might not run this one.
    bool internal = false;

    // Elements of the input and output buffers each rank passes.
    size_t input_count() const;
    size_t output_count(int rank) const;
    // Where an in-place call's input sits inside the output buffer.
    size_t in_place_input_offset(int rank) const;
    // A reduction's output for `rank` within the reduced vector, in
    // elements: its block (reduce_scatter, reduce_scatter_block), or the
    // whole vector (allreduce).
    struct Part {
        size_t offset, count;
    };
    Part reduced_part(int rank) const;
    std::string describe() const;
};

// The elements a buffer must hold for blocks of `counts` at `displs`: the
// furthest end of a nonempty block.
size_t extent_of(const std::vector<size_t> &counts, const std::vector<size_t> &displs);
// Makes `a` (a vector collective on a.nranks ranks) a call whose every block
// holds `block` elements, laid out in rank order: what --explain and
// loom_comm_prepare describe.
void set_uniform_blocks(CollArgs &a, size_t block);
// Makes `a` a vector collective of mean block `block` whose blocks toward
// rank 0 (alltoallv: what every rank sends it; allgatherv: its shard) are
// `skew` times the mean, the others smaller, so that skew_of(a) is `skew`
// (at most the rank count): a popular expert, as --explain describes it.
void set_skewed_blocks(CollArgs &a, size_t block, size_t skew);
// Whether `a` knows every rank's counts of a vector collective (alltoallv:
// count_matrix; allgatherv: recv_counts), so that each rank's own arguments
// differ from the caller's.
bool knows_every_ranks_counts(const CollArgs &a);
// The arguments rank `rank` passes in such a call, its blocks laid out in
// rank order; `a` itself otherwise. The cost model prices every rank's own
// program with them.
CollArgs rank_args(const CollArgs &a, int rank);
// Every rank's blocks summed, and the largest, of an alltoallv that knows
// them (node_counts, or the model's count_matrix): false where it does not.
bool alltoallv_block_totals(const CollArgs &a, size_t *total, size_t *largest);

}  // namespace loom
