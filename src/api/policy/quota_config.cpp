#include "api/policy/quota_config.h"

#include <string>

namespace hichat::api {

Status QuotaConfig::validate() const {
    if (requests_per_minute < 0) {
        return invalid_argument("quota requests_per_minute must be >= 0 (0: unlimited), got " +
                                std::to_string(requests_per_minute));
    }
    if (tokens_per_minute < 0) {
        return invalid_argument("quota tokens_per_minute must be >= 0 (0: unlimited), got " +
                                std::to_string(tokens_per_minute));
    }
    if (max_concurrent < 0) {
        return invalid_argument("quota max_concurrent must be >= 0 (0: unlimited), got " +
                                std::to_string(max_concurrent));
    }
    return ok_status();
}

}  // namespace hichat::api
