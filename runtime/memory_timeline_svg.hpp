// SVG charts of memory by category, readable in any browser without other tools: the stacked-area
// timeline of one profiled step (MemoryProfiler samples, like PyTorch's memory viewer) and the
// shared pieces the planner's bar chart uses (category colours, axis ticks, escaping).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/memory_profiler.hpp"

namespace tessera {

// Stacked areas of the bytes allocated per category at each phase boundary of `samples` (one step),
// with the simultaneous peak inside each phase drawn as a dashed step line above them.
std::string memory_timeline_svg(const std::vector<MemorySample>& samples, const std::string& title);
// Writes it to `path`; throws std::runtime_error naming the path when it cannot.
void write_memory_timeline_svg(const std::string& path, const std::vector<MemorySample>& samples,
                               const std::string& title);

// Fill colour of a category (the same in every Tessera chart).
const char* memory_category_color(MemoryCategory category);
// Escapes &, <, >, " for SVG text and attributes.
std::string svg_escape(std::string_view text);
// A round tick step (1, 2 or 5 x 10^k bytes) giving at most about `ticks` ticks up to `max_bytes`.
std::int64_t svg_tick_step(std::int64_t max_bytes, int ticks);
// A short axis label in powers of 10: "1.5 GB", "200 MB".
std::string svg_bytes_label(std::int64_t bytes);
// Writes `svg` to `path`; throws std::runtime_error naming the path when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace tessera
