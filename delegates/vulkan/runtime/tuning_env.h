// Environment overrides of the Vulkan delegate's shader choices, for measuring one choice against
// another on a device without rebuilding (EMBER_VULKAN_TILED, _WQ_THREADS, _ATTN_WG, ...).
// Read at init (graph lowering) only, never while executing; each caller validates the value's
// range itself and falls back to its heuristic when the value is out of range.
#pragma once

namespace ember {
namespace vulkan {

// "0" or "1" in `name` forces the choice off or on; unset or anything else: `heuristic`.
bool tuning_choice(const char* name, bool heuristic);

// The decimal integer in `name`; 0 when unset or when it does not start with a number (every
// override treats 0 as "not set").
long tuning_number(const char* name);

}  // namespace vulkan
}  // namespace ember
