// Status codes with a detailed, thread-local message: every failure says what
// was wrong and what to do, and never aborts on user input.
#pragma once
#include <string>

#include "loom.h"

namespace loom {

using Status = int;  // one of loom_status_t

// Records `message` as the calling thread's last error and returns `code`.
Status fail(Status code, std::string message);
const char *last_error_message();

}  // namespace loom

#define LOOM_RETURN_IF_ERROR(expr)                             \
    do {                                                       \
        ::loom::Status loom_status_ = (expr);                  \
        if (loom_status_ != LOOM_SUCCESS) return loom_status_; \
    } while (0)
