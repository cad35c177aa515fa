#include "transport/ucx/params.hpp"

namespace loom {

const ParamId kParamRails = declare_param(
    ParamSection::rails,
    {"rails", ParamType::text, "auto", 3,
     "Network interfaces that carry messages between nodes, one UCX worker each (\"rail0,rail1\"); auto: the "
     "NICs hwloc finds; none: the PML or MPI carries them. Read when the communicator is created",
     0, 0, Collective::allreduce});
const ParamId kParamUcxTls = declare_param(
    ParamSection::rails,
    {"ucx_tls", ParamType::text, "^sm", 5,
     "UCX transports of the rails' workers (UCX_TLS syntax: \"tcp\", \"rc,ud\"); the default excludes UCX's "
     "shared memory, which Loom's own replaces. Read when the communicator is created",
     0, 0, Collective::allreduce});
const ParamId kParamRailWeights = declare_param(
    ParamSection::rails,
    {"rail_weights", ParamType::text, "", 4,
     "Share of a striped message per rail (\"2,1\"); empty: measured by a probe when the rails come up. Read "
     "when the communicator is created",
     0, 0, Collective::allreduce});
const ParamId kParamRailStripeMinBytes = declare_param(
    ParamSection::rails,
    {"rail_stripe_min_bytes", ParamType::size, "64KiB", 5,
     "Smallest message cut over every rail by weight; smaller ones travel on their lane's rail. Read when the "
     "communicator is created",
     0, 1LL << 40, Collective::allreduce});
const ParamId kParamRailMinBytes = declare_param(
    ParamSection::rails,
    {"rail_min_bytes", ParamType::size, "16KiB", 5,
     "Smallest message between nodes that the rails carry; smaller ones go through the PML or MPI. Read when "
     "the communicator is created",
     0, 1LL << 40, Collective::allreduce});
const ParamId kParamRailProbeBytes = declare_param(
    ParamSection::rails,
    {"rail_probe_bytes", ParamType::size, "1MiB", 5,
     "Bytes each rank sends on every rail at once when the rails come up, to weigh them (0: equal weights). Read "
     "when the communicator is created",
     0, 1LL << 30, Collective::allreduce});
const ParamId kParamRailTimeoutMs =
    declare_param(ParamSection::rails,
                  {"rail_timeout_ms", ParamType::integer, "10000", 5,
                   "How long bringing a rail up may wait for a peer before the rails are left out. Read when the "
                   "communicator is created",
                   1, 1LL << 31, Collective::allreduce});
const ParamId kParamRailStallMs = declare_param(
    ParamSection::rails,
    {"rail_stall_ms", ParamType::integer, "2000", 5,
     "How long a rank may hear nothing from a sender on a rail, beyond the time a message should take at the "
     "rail's measured rate, before that rail counts as failed; its messages then go through the PML or MPI "
     "(0: no failover). Read when the communicator is created",
     0, 1LL << 31, Collective::allreduce});
const ParamId kParamRailRefreshCalls = declare_param(
    ParamSection::rails,
    {"rail_refresh_calls", ParamType::integer, "8", 5,
     "Every this many blocking collectives of at least rail_stripe_min_bytes, the ranks agree on the rails: "
     "a failed rail is left out, a rail left out comes back once it works again, the weights move toward the "
     "rates striped messages arrived at since the last agreement (0: never; the first weights stay). Read when the communicator is created",
     0, 1LL << 30, Collective::allreduce});

}  // namespace loom
