// A collective call described in words, for loom-info --explain:
// "allreduce 1MiB nodes=4 ppn=2 [np=N] [rails=R] [type=float] [in_place]".
// SIZE is the message size as OSU reports it (see message_bytes); the
// ranks sit on the nodes consecutively, and ranks of one node are assumed
// to share memory, as they do when Loom runs there.
#pragma once
#include <memory>
#include <string>

#include "core/params.hpp"
#include "core/plan.hpp"
#include "core/status.hpp"
#include "node_map.hpp"

namespace loom {

struct CallSpec {
    CollArgs args;  // args.nodes points into `nodes`
    PlanKnobs knobs;
    std::unique_ptr<NodeMap> nodes;
};

// Parses the description; the knobs (segment size, radix ...) come from
// `config`, as they do for a communicator. Errors name the word at fault.
Status parse_call_spec(const std::string &text, const Config &config, CallSpec *out);

// The knobs a communicator's calls take from its parameters.
void knobs_from_config(const Config &config, PlanKnobs *knobs);

// An alltoall on one node whose blocks exceed what one ring message carries
// (ring_message_max) but fit a whole ring (ring_bytes) and
// alltoall_shm_max_bytes: the piece size that sends them through the rings
// anyway; otherwise 0 (whole blocks).
size_t alltoall_ring_piece_bytes(const CollArgs &args, const Config &config, size_t ring_message_max,
                                 size_t ring_bytes);

}  // namespace loom
