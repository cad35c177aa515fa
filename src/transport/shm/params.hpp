// The shared-memory transport's parameters (transport/shm).
#pragma once
#include "core/params.hpp"

namespace loom {

extern const ParamId kParamSharedMemory;
extern const ParamId kParamShmMaxBytes;
extern const ParamId kParamAlltoallShmMaxBytes;
extern const ParamId kParamSingleCopy;
extern const ParamId kParamSingleCopyMinBytes;

}  // namespace loom
