// Selection rules in the loom-rules(5) format: entries keyed by collective,
// memory type, communicator size, nodes, ranks per node, message size and
// a few shape conditions, each naming an algorithm (or a fallback list) and
// optionally its knobs. The first entry that matches a call and names an
// algorithm that can run it wins. A user's file may also carry a cost model
// (what loom-tune fitted); Loom's own defaults are a document in the same
// format (builtin_rules.hpp).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/status.hpp"
#include "select/cost_model.hpp"

namespace loom {

struct Range {
    long long min = 0, max = -1;  // inclusive; max < 0: unbounded
    bool contains(long long v) const { return v >= min && (max < 0 || v <= max); }
};

struct Rule {
    size_t index = 0;  // position in the file, from 0 ("rule 0")
    Collective collective = Collective::allreduce;
    std::string memory = "any";  // "host", "cuda", "cuda_managed", "device" (either cuda kind) or "any"
    Range comm_size, nodes, ppn, bytes;
    Range total_bytes;                    // total_bytes(args)
    Range elements_per_rank;              // elements_per_rank(args)
    Range skew;                           // skew_of(args)
    std::optional<bool> single_node;      // CollArgs::single_node; unset: either
    // An alltoallv rule with a size: it matches only calls that learnt the
    // totals of every rank's counts (CollArgs::node_counts), the same on every rank.
    bool needs_every_ranks_counts = false;
    std::optional<bool> power_of_two;     // of the communicator size; unset: either
    std::vector<std::string> algorithms;  // in order of preference: the first that can run the call
    std::string note;                     // why, shown in the selection's reason
    std::optional<size_t> segment_bytes;
    std::optional<int> radix;
    std::optional<int> max_outstanding;
};

struct RuleSet {
    std::string path;
    std::vector<Rule> rules;
    std::optional<CostModel> model;
};

// The message size a rule's "bytes" range is matched against, as OSU
// reports it: allreduce the vector; reduce_scatter(_block) the whole input;
// allgather and alltoall one rank's block.
size_t message_bytes(const CollArgs &a);
// One rank's whole buffer, for a "total_bytes" range: message_bytes for
// allreduce and reduce_scatter(_block); all comm_size blocks for allgather
// (the result) and alltoall (the send buffer).
size_t total_bytes(const CollArgs &a);
// The elements of the call over the communicator size, rounded down, for an
// "elements_per_rank" range: allreduce the vector, reduce_scatter(_block) the
// whole input; allgather and alltoall one block.
size_t elements_per_rank(const CollArgs &a);
// The vector collectives' skew: the largest block (alltoallv: of every
// rank's counts, where gathered; allgatherv: shard) over the mean, rounded
// down; 1 for the others and where the blocks are unknown or all empty.
size_t skew_of(const CollArgs &a);

// Reads and validates a rules file. Errors name the file, the entry and the
// field ("rules.json: rule 3: field 'bytes': ...").
Status load_rules(const std::string &path, RuleSet *out);
// Validates rules given as JSON text; `origin` names them in errors.
Status parse_rules(const std::string &text, const std::string &origin, RuleSet *out);

// The first rule that matches `a` (its algorithms may still not apply:
// the caller checks and moves on); null when none does. `from` skips
// earlier rules.
const Rule *match_rule(const RuleSet &rules, const CollArgs &a, size_t from = 0);

// The rules file named by a parameter, loaded once per path and shared:
// an invalid file is reported on stderr once and treated as empty.
std::shared_ptr<const RuleSet> rules_for_path(const std::string &path);

}  // namespace loom
