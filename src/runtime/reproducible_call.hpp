// A reduction whose result's bits depend only on the inputs and the ranks'
// order (the reproducible parameter): each rank's input is encoded into
// exact sums (core/exact_sum.hpp), the call runs on those with Loom's own
// element type, whatever algorithm, path or rails the selector picks, and the
// result is decoded into the caller's buffer once the call is done.
#pragma once
#include <vector>

#include "core/exact_sum.hpp"
#include "core/params.hpp"
#include "runtime/communicator.hpp"

namespace loom {

extern const ParamId kParamReproducible;

// Whether `comm`'s reproducible parameter turns this reduction into exact
// sums: a sum of floating values. Other floating reductions (a product,
// long double) cannot be made so and are refused with the reason in *why;
// integer ones and min/max are exact as they are.
enum class ReproducibleNeed { none, exact_sums, refused };
ReproducibleNeed reproducible_need(const Config &config, loom_datatype_t type, loom_op_t op, int nranks,
                                   std::string *why);

class ReproducibleCall {
  public:
    // The exact sums' buffers for `user`'s call on `args` (its counts in
    // the caller's elements): inner_args() and inner_call() are the call to run.
    Status prepare(const CollArgs &args, int rank, const CallData &user);
    const CollArgs &inner_args() const { return inner_args_; }
    const CallData &inner_call() const { return inner_; }
    void encode_input();   // before each start
    void decode_output();  // once the call is done

  private:
    CallData user_, inner_;
    CollArgs inner_args_;
    size_t in_count_ = 0, out_count_ = 0;  // the caller's elements
    const void *input_ = nullptr;          // sendbuf, or recvbuf in place (at in_offset_)
    std::vector<ExactSum> in_, out_;
};

}  // namespace loom
