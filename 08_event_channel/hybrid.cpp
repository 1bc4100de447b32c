// The hybrid's decision: spin while a completion is likely to come soon,
// sleep once spinning has cost --spin-us. Pure (the clock is passed in), so
// the unit tests drive it with made-up times.
#include "stage.hpp"

namespace stage08 {

bool spin_then_sleep::keep_spinning(std::uint32_t looks, function_ref<double()> elapsed_us) {
  if (spin_us_ == 0 || spent_) return false;
  // Between clock reads, spin on: a read can cost more than a look.
  if (looks % looks_per_clock_ != 0) return true;
  spent_ = elapsed_us() >= spin_us_;
  return !spent_;
}

}  // namespace stage08
