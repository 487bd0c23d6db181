#include "placement_flags.h"

namespace hichat::tools {

Result<PlacementFlags> parse_placement_flags(const CliArgs& flags) {
    PlacementFlags o;
    auto layers = executor::parse_gpu_layers(flags.get("gpu-layers"));
    HICHAT_RETURN_IF_ERROR(layers.status());
    o.gpu_layers = *layers;
    auto offload = executor::parse_offload_mode(flags.get("offload"));
    HICHAT_RETURN_IF_ERROR(offload.status());
    o.offload = *offload;
    if (flags.has("gpu-memory-gb")) {
        auto gb = flags.get_double("gpu-memory-gb");
        HICHAT_RETURN_IF_ERROR(gb.status());
        o.gpu_memory_bytes = static_cast<int64_t>(*gb * static_cast<double>(int64_t{1} << 30));
    }
    return o;
}

}  // namespace hichat::tools
