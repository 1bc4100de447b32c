#include "rdma_tutorial/main.hpp"

#include <cstdio>
#include <iostream>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace rdma {

namespace {

void print_failure(const char* program, const std::string& what, const std::string& hint) {
  // What the program printed before the error comes first in a log: both
  // streams it may have used (printf's buffer is not std::cout's).
  std::cout.flush();
  std::fflush(stdout);
  std::cerr << program << ": " << what << "\n";
  if (!hint.empty()) std::cerr << "  likely fix: " << hint << "\n";
}

}  // namespace

int run_main(const char* program, const std::function<int()>& body) {
  try {
    const int rc = body();
    // The body's handles are gone by now; a failed destroy only warned.
    if (const int failed = release_failures(); rc == 0 && failed > 0) {
      print_failure(program, std::to_string(failed) + " release call(s) failed (the warnings above name them)",
                    "a failed destroy usually means something still uses the object: destroy in reverse order of creation");
      return 1;
    }
    return rc;
  } catch (const usage_error& e) {
    print_failure(program, e.what(), std::string("see ") + program + " --help");
    return 2;
  } catch (const verbs_error& e) {
    print_failure(program, e.what(), e.hint());
  } catch (const tutorial_error& e) {
    print_failure(program, e.what(), e.hint());
  } catch (const std::exception& e) {
    print_failure(program, e.what(), "");
  }
  return 1;
}

}  // namespace rdma
