// The one way every program in this tutorial ends on an error: main() hands
// its body to run_main, which catches what the body throws and prints a single
// line naming what failed, then the likely fix when one is known:
//
//   devices: ibv_query_port(port 0) failed (EINVAL): Invalid argument
//     likely fix: port numbers start at 1; ...
//
// Exit codes: 0 success, 1 a failure at run time (a destroy call that failed
// in a handle's destructor included: it warned, and counts), 2 a bad command
// line.
#pragma once

#include <functional>

namespace rdma {

int run_main(const char* program, const std::function<int()>& body);

}  // namespace rdma
