// Transport over caller-supplied operations (loom_transport_t).
#pragma once
#include <memory>

#include "loom.h"
#include "transport/transport.hpp"

namespace loom {

Status make_external_transport(const loom_transport_t &ops, std::unique_ptr<Transport> *out);

}  // namespace loom
