#include "sampling/sampling_params.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace hichat::sampling {
namespace {

std::string fmt(float v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(v));
    return buf;
}

// "top_p must be in (0, 1], got 1.5": the same words as the API's checks of the same fields.
Status check_range(const char* field, float v, float lo, float hi, bool lo_open) {
    bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
    if (ok) return ok_status();
    return invalid_argument(std::string(field) + " must be in " + (lo_open ? "(" : "[") + fmt(lo) + ", " + fmt(hi) +
                            "], got " + fmt(v));
}

}  // namespace

Status SamplingParams::validate() const {
    HICHAT_RETURN_IF_ERROR(check_range("temperature", temperature, 0.0f, 100.0f, false));
    HICHAT_RETURN_IF_ERROR(check_range("top_p", top_p, 0.0f, 1.0f, true));
    HICHAT_RETURN_IF_ERROR(check_range("min_p", min_p, 0.0f, 1.0f, false));
    HICHAT_RETURN_IF_ERROR(check_range("repetition_penalty", repetition_penalty, 0.0f, 10.0f, true));
    HICHAT_RETURN_IF_ERROR(check_range("presence_penalty", presence_penalty, -2.0f, 2.0f, false));
    HICHAT_RETURN_IF_ERROR(check_range("frequency_penalty", frequency_penalty, -2.0f, 2.0f, false));
    if (top_k < 0) return invalid_argument("top_k must be >= 0, got " + std::to_string(top_k));
    for (const TokenBias& b : logit_bias) {
        if (b.token < 0) return invalid_argument("logit_bias token ids must be >= 0, got " + std::to_string(b.token));
        HICHAT_RETURN_IF_ERROR(check_range("logit_bias", b.bias, -100.0f, 100.0f, false));
    }
    return ok_status();
}

}  // namespace hichat::sampling
