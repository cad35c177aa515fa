// Value/index pair layouts as MPI defines them (C struct layout), for
// MINLOC and MAXLOC; compiled by nvcc too (cuda/).
#pragma once

namespace loom {

struct FloatInt {
    float value;
    int index;
};
struct DoubleInt {
    double value;
    int index;
};
struct LongInt {
    long value;
    int index;
};
struct TwoInt {
    int value;
    int index;
};
struct ShortInt {
    short value;
    int index;
};
struct LongDoubleInt {
    long double value;
    int index;
};

}  // namespace loom
