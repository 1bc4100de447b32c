// main() for unit test executables (meson suite "unit"): pure logic, no device.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
