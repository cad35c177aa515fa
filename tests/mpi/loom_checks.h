/* The failure counting of the libloom test programs: CHECK prints the first
 * ten failures of a rank (the program defines `rank` and `failures`), and
 * LOOM_OK checks that a libloom call succeeded, naming its error. */
#pragma once
#include <loom.h>
#include <stdio.h>

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            if (failures++ < 10) {                         \
                fprintf(stderr, "[rank %d] FAIL: ", rank); \
                fprintf(stderr, __VA_ARGS__);              \
                fprintf(stderr, "\n");                     \
            }                                              \
        }                                                  \
    } while (0)

#define LOOM_OK(call)                                                                             \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        CHECK(rc_ == LOOM_SUCCESS, "%s -> %s: %s", #call, loom_strerror(rc_), loom_last_error()); \
    } while (0)
