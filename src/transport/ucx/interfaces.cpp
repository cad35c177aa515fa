// The machine's network interfaces as the rails see them (which exist,
// their addresses, whether they are up, the kernel's route to a peer) and
// the rail parameters' lists.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "machine.hpp"
#include "transport/ucx/setup.hpp"
#include "transport/ucx/setup_steps.hpp"

namespace loom {

bool is_loopback(const std::string &ipv4) { return ipv4.rfind("127.", 0) == 0; }

Status choose_rails(const std::string &param, bool emulated, std::vector<std::string> *names) {
    names->clear();
    if (param == "none" || param.empty()) return LOOM_SUCCESS;
    if (param != "auto") return parse_rail_names(param, names);
    if (emulated) return LOOM_SUCCESS;
    MachineView view;
    if (discover_machine(&view) != LOOM_SUCCESS) return LOOM_SUCCESS;
    for (const MachineDevice &d : view.nics) {
        std::string ip;
        if (d.kind == "network" && interface_address(d.name, &ip) && !ip.empty() && !is_loopback(ip))
            names->push_back(d.name);
    }
    return LOOM_SUCCESS;
}

bool interface_up(const std::string &name) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return false;
    ifreq req = {};
    std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
    const bool ok = ioctl(fd, SIOCGIFFLAGS, &req) == 0 && (req.ifr_flags & IFF_UP) && (req.ifr_flags & IFF_RUNNING);
    close(fd);
    return ok;
}

bool interface_address(const std::string &name, std::string *ipv4) {
    ipv4->clear();
    if (if_nametoindex(name.c_str()) == 0) return false;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return true;
    for (ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || name != i->ifa_name) continue;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr, text, sizeof text);
        *ipv4 = text;
        break;
    }
    freeifaddrs(list);
    return true;
}

Status route_source(const std::string &ipv4, std::string *source) {
    // A connected UDP socket sends nothing but asks the routing table.
    sockaddr_in to = {};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    if (inet_pton(AF_INET, ipv4.c_str(), &to.sin_addr) != 1)
        return fail(LOOM_ERR_TRANSPORT, "rails: '" + ipv4 + "' is not an IPv4 address");
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return fail(LOOM_ERR_TRANSPORT, "rails: cannot open a socket to ask for routes");
    sockaddr_in from = {};
    socklen_t len = sizeof from;
    const bool ok = connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr *>(&from), &len) == 0;
    close(fd);
    if (!ok) return fail(LOOM_ERR_TRANSPORT, "rails: no route to " + ipv4);
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &from.sin_addr, text, sizeof text);
    *source = text;
    return LOOM_SUCCESS;
}

namespace {

// The items of a comma list, empty ones kept (so that the callers refuse them).
std::vector<std::string> comma_items(const std::string &text) {
    std::vector<std::string> items;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) return items;
        start = comma + 1;
    }
}

}  // namespace

Status parse_rail_names(const std::string &text, std::vector<std::string> *out) {
    out->clear();
    for (const std::string &name : comma_items(text)) {
        if (name.empty() || name.size() >= IF_NAMESIZE || name.find_first_of(" /") != std::string::npos)
            return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                        "rails = '" + text + "': expected auto, none, or interface names separated by commas");
        out->push_back(name);
    }
    return LOOM_SUCCESS;
}

Status parse_rail_weights(const std::string &text, size_t rails, std::vector<double> *out) {
    out->clear();
    for (const std::string &item : comma_items(text)) {
        char *end = nullptr;
        const double w = std::strtod(item.c_str(), &end);
        if (item.empty() || !end || *end || !(w > 0) || !std::isfinite(w))
            return fail(LOOM_ERR_INVALID_PARAMETER_VALUE,
                        "rail_weights = '" + text + "': expected positive numbers separated by commas, one per rail");
        out->push_back(w);
    }
    if (out->size() != rails)
        return fail(LOOM_ERR_INVALID_PARAMETER_VALUE, "rail_weights = '" + text + "' gives " +
                                                          std::to_string(out->size()) + " weights for " +
                                                          std::to_string(rails) + " rails");
    return LOOM_SUCCESS;
}
}  // namespace loom
