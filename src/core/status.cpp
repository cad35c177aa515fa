#include "core/status.hpp"

namespace loom {
namespace {
thread_local std::string g_last_error;
}

Status fail(Status code, std::string message) {
    g_last_error = std::move(message);
    return code;
}

const char *last_error_message() { return g_last_error.c_str(); }

}  // namespace loom

extern "C" const char *loom_strerror(int status) {
    switch (status) {
        case LOOM_SUCCESS: return "success";
        case LOOM_ERR_INVALID_ARGUMENT: return "invalid argument";
        case LOOM_ERR_INVALID_COUNT: return "invalid count";
        case LOOM_ERR_INVALID_DATATYPE: return "invalid datatype";
        case LOOM_ERR_INVALID_OP: return "invalid reduction operation";
        case LOOM_ERR_UNKNOWN_ALGORITHM: return "unknown algorithm name";
        case LOOM_ERR_ALGORITHM_NOT_APPLICABLE: return "algorithm not applicable to this call";
        case LOOM_ERR_UNKNOWN_PARAMETER: return "unknown parameter name";
        case LOOM_ERR_INVALID_PARAMETER_VALUE: return "invalid parameter value";
        case LOOM_ERR_TRANSPORT: return "transport (MPI) error";
        case LOOM_ERR_NO_MEMORY: return "out of memory";
        case LOOM_ERR_TIMEOUT: return "collective timed out (hang_timeout, hang_abort)";
        case LOOM_ERR_MISMATCH: return "ranks called the collective with different arguments (communicator revoked)";
        case LOOM_ERR_INTERNAL: return "internal error";
        default: return "unknown status code";
    }
}

extern "C" const char *loom_last_error(void) { return loom::last_error_message(); }
