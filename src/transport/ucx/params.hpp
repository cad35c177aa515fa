// The rails' parameters (transport/ucx): declared in every build, so that
// a job script that sets them runs unchanged where Loom was built without UCX
// (the rails are then left out).
#pragma once
#include "core/params.hpp"

namespace loom {

extern const ParamId kParamRails;
extern const ParamId kParamUcxTls;
extern const ParamId kParamRailWeights;
extern const ParamId kParamRailStripeMinBytes;
extern const ParamId kParamRailMinBytes;
extern const ParamId kParamRailProbeBytes;
extern const ParamId kParamRailTimeoutMs;
extern const ParamId kParamRailStallMs;
extern const ParamId kParamRailRefreshCalls;

}  // namespace loom
