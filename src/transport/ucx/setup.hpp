// Bringing the rails up on a communicator that spans nodes: which
// interfaces, their workers' addresses exchanged over the communicator's
// present transports, the kernel's route to every peer's rail checked, a
// handshake on every rail, the rails weighed by a probe. Collective; every
// rank ends with the rails attached, or every rank without them and the
// reason recorded (the PML or MPI then carries inter-node messages).
#pragma once
#include <string>
#include <vector>

#include "core/status.hpp"
#include "transport/setup_context.hpp"

namespace loom {

void set_up_rails(SetupContext &c);

// This host's IPv4 address of interface `name` ("" when it has none) and
// whether the interface exists at all.
bool interface_address(const std::string &name, std::string *ipv4);
// The source address the kernel's routing table picks for traffic to `ipv4`.
Status route_source(const std::string &ipv4, std::string *source);
// "rail0,rail1" into names; errors name the parameter.
Status parse_rail_names(const std::string &text, std::vector<std::string> *out);
Status parse_rail_weights(const std::string &text, size_t rails, std::vector<double> *out);

}  // namespace loom
