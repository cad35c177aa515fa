#include "runtime/reproducible_call.hpp"

#include "core/datatype.hpp"

namespace loom {

const ParamId kParamReproducible = declare_param(
    ParamSection::selection,
    {"reproducible", ParamType::integer, "0", 3,
     "1: allreduce and reduce_scatter sums of floating values (float, double, float16, bfloat16 and their "
     "complex forms) give the same bits whatever the algorithm, message size, chunking, rails or node layout: "
     "each value is cut into parts on fixed grids that add exactly, so their order does not matter (32 bytes "
     "on the wire per value); a floating product or a long double sum is refused, since it has no such form",
     0, 1, Collective::allreduce});

ReproducibleNeed reproducible_need(const Config &config, loom_datatype_t type, loom_op_t op, int nranks,
                                   std::string *why) {
    if (!config.integer(kParamReproducible)) return ReproducibleNeed::none;
    const DatatypeInfo *info = datatype_info(type);
    const bool floating = info->type_class == TypeClass::floating || info->type_class == TypeClass::reduced_float ||
                          info->type_class == TypeClass::complex;
    if (!floating || (op != LOOM_SUM && op != LOOM_PROD))
        return ReproducibleNeed::none;  // integers wrap exactly; min and max pick a value
    if (op == LOOM_PROD) {
        *why = std::string("reproducible: a product of ") + info->name +
               " values depends on the order of its multiplications, and Loom has no order-free form of it";
        return ReproducibleNeed::refused;
    }
    if (!exact_sum_type(type)) {
        *why = std::string("reproducible: a sum of ") + info->name +
               " values is wider than the exact sums' doubles take (float, double, float16, bfloat16 and "
               "their complex forms do)";
        return ReproducibleNeed::refused;
    }
    if (nranks > kExactSumMaxRanks) {
        *why = "reproducible: " + std::to_string(nranks) + " ranks is more than the " +
               std::to_string(kExactSumMaxRanks) + " whose values an exact sum adds without rounding";
        return ReproducibleNeed::refused;
    }
    return ReproducibleNeed::exact_sums;
}

Status ReproducibleCall::prepare(const CollArgs &args, int rank, const CallData &user) {
    user_ = user;
    const size_t per = exact_sums_per_element(user.type);
    inner_args_ = args;
    inner_args_.internal = false;  // the user's call: forced algorithms apply
    // Out of place on Loom's own buffers: the output is the rank's block
    // alone, also where the caller's input sits in recvbuf.
    inner_args_.in_place = false;
    in_count_ = args.input_count();
    out_count_ = inner_args_.output_count(rank);
    inner_args_.count *= per;
    for (size_t &c : inner_args_.recv_counts) c *= per;
    input_ = user.in_place ? static_cast<const unsigned char *>(user.recvbuf) +
                                 args.in_place_input_offset(rank) * datatype_info(user.type)->size
                           : user.sendbuf;
    if (in_count_ > in_.max_size() / per || out_count_ > out_.max_size() / per)
        return fail(LOOM_ERR_INVALID_COUNT,
                    "reproducible: " + args.describe() + " needs more exact sums than a process can address");
    try {
        in_.resize(in_count_ * per);
        out_.resize(out_count_ * per);
    } catch (const std::exception &) {  // bad_alloc, or length_error past max_size
        return fail(LOOM_ERR_NO_MEMORY, "reproducible: cannot allocate the exact sums (" +
                                            std::to_string(sizeof(ExactSum)) + " bytes per value) for " +
                                            args.describe());
    }
    inner_ = CallData::of(in_.data(), false, out_.data(), kExactSumType, LOOM_SUM);
    return LOOM_SUCCESS;
}

void ReproducibleCall::encode_input() { exact_sum_encode(user_.type, input_, in_count_, in_.data()); }

void ReproducibleCall::decode_output() { exact_sum_decode(user_.type, out_.data(), out_count_, user_.recvbuf); }

}  // namespace loom
