// A program with the faults the sanitize and valgrind suites exist to catch:
// `checker_canary heap` loses a heap block, `checker_canary fd` leaves a file
// descriptor open. Those suites run it and expect the checker to fail it, so
// a suite whose settings had quietly stopped finding anything fails too.
#include <fcntl.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "heap") == 0) {
    void* lost = std::malloc(100);
    *static_cast<volatile char*>(lost) = 1;
    lost = nullptr;  // the only pointer to the block is gone
    return lost == nullptr ? 0 : 1;
  }
  if (argc == 2 && std::strcmp(argv[1], "fd") == 0) return ::open("/dev/null", O_RDONLY) >= 0 ? 0 : 1;
  return 2;
}
