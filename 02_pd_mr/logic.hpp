// Stage 02: the parts of pd_mr that need no device (unit-tested in
// tests/logic_test.cpp): the access flags as text, buffer sizes as text, the
// sizes the cost table measures, and the median of a few timings.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace stage02 {

inline constexpr std::size_t page_size = 4096;

// "LOCAL_WRITE | REMOTE_WRITE"; "none (local read only)" for 0; unknown bits
// as hex so nothing is hidden.
std::string access_text(int access);

// 4096 -> "4 KiB", 1048576 -> "1 MiB", 1536 -> "1536 bytes".
std::string size_text(std::size_t bytes);

// The cost table's sizes: 4 KiB doubling up to the largest power of two that
// leaves half of `memlock_bytes` free (other registrations, the library's own
// pinned memory), and never above `cap`. Empty when not even 4 KiB fits.
std::vector<std::size_t> table_sizes(std::size_t memlock_bytes, std::size_t cap);

// The median (mean of the middle two for an even count); 0 for no samples.
double median(std::vector<double> samples);

}  // namespace stage02
