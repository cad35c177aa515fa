// The steps of bringing the rails up and keeping them (transport/ucx):
// shared by setup.cpp (the collective set-up), rail_exchange.cpp (what the
// ranks tell each other and the handshakes), interfaces.cpp (the machine's
// network interfaces and the rail parameters) and revival.cpp (the periodic
// agreement: rails left out, brought back, reweighed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "node_map.hpp"
#include "transport/setup_context.hpp"
#include "transport/ucx/ucx.hpp"

namespace loom {

// Tags of the set-up's own messages: the rails carry nothing else until
// the set-up has ended.
constexpr uint32_t kHandshakeTag = UcxTransport::kMaxTag;
constexpr uint32_t kProbeTag = UcxTransport::kMaxTag - 1;
constexpr uint32_t kRevivalTag = UcxTransport::kMaxTag - 2;

// What one rank tells the others: per rail its IPv4 address and worker address.
struct RankCard {
    uint32_t comm_id = 0;
    std::vector<std::string> ipv4, worker;
};
std::string encode_card(const RankCard &c);
bool decode_card(const char *at, size_t bytes, size_t rails, RankCard *c);

// Every rank's string, in rank order (collective over the transports the
// communicator has so far).
Status allgather_strings(SetupContext &c, const std::string &mine, std::vector<std::string> *all);

// The peer each rank greets on every rail: the next rank, in rank order,
// on another node; -1 when all share a node.
int greeted_by(const NodeMap &map, int rank);

// Posts one message per rail to the greeted peer and a receive per rail
// from each rank that greets this one; waits for all of them, at most
// `timeout_ms`. Returns per rail the nanoseconds until its receives finished.
Status exchange_on_every_rail(UcxTransport &t, const NodeMap &map, int me, uint32_t tag, size_t bytes,
                              long long timeout_ms, std::vector<uint64_t> *rail_ns);

bool is_loopback(const std::string &ipv4);
// Rails from the parameter, or the NICs hwloc finds (auto; not between
// emulated nodes, which share the machine's NICs). Empty: none.
Status choose_rails(const std::string &param, bool emulated, std::vector<std::string> *names);
// Whether interface `name` is up with its carrier (a cable, a veth peer).
bool interface_up(const std::string &name);

// The periodic agreement on the rails (SetupContext::Upkeep; `transport` is
// the UcxTransport).
void check_rails(SetupContext &c, void *transport);

}  // namespace loom
