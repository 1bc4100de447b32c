// Stage 02's pure logic, no device needed.
#include <doctest/doctest.h>
#include <infiniband/verbs.h>

#include <vector>

#include "../stage.hpp"

using stage02::access_text;
using stage02::median;
using stage02::size_text;
using stage02::table_sizes;

TEST_CASE("access_text should name each flag in the order the verbs define them") {
  CHECK(access_text(IBV_ACCESS_LOCAL_WRITE) == "LOCAL_WRITE");
  CHECK(access_text(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE) == "LOCAL_WRITE | REMOTE_WRITE");
  CHECK(access_text(IBV_ACCESS_REMOTE_READ) == "REMOTE_READ");
  CHECK(access_text(IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND) == "REMOTE_ATOMIC | MW_BIND");
}

TEST_CASE("access_text should say what no flags mean and show unknown bits instead of hiding them") {
  CHECK(access_text(0) == "none (local read only)");
  CHECK(access_text(IBV_ACCESS_LOCAL_WRITE | 0x10000000) == "LOCAL_WRITE | 0x10000000");
}

TEST_CASE("size_text should use the largest binary unit that divides the size") {
  CHECK(size_text(4096) == "4 KiB");
  CHECK(size_text(1 << 20) == "1 MiB");
  CHECK(size_text(3 << 20) == "3 MiB");
  CHECK(size_text(1536) == "1536 bytes");
  CHECK(size_text(0) == "0 bytes");
}

TEST_CASE("table_sizes should double from one page up to half the memlock limit") {
  const std::vector<std::size_t> expected{4096, 8192, 16384, 32768};
  CHECK(table_sizes(64 * 1024, 1 << 30) == expected);
  // The guest's 8192 KiB limit: 4 KiB .. 4 MiB, eleven sizes.
  const auto guest = table_sizes(8192 * 1024, 1 << 30);
  REQUIRE(guest.size() == 11);
  CHECK(guest.back() == 4 << 20);
}

TEST_CASE("table_sizes should stop at the cap and at a limit that is not a power of two") {
  CHECK(table_sizes(std::size_t{1} << 40, 16384) == std::vector<std::size_t>{4096, 8192, 16384});
  CHECK(table_sizes(100 * 1024, 1 << 30).back() == 32768);  // half is 50 KiB
}

TEST_CASE("table_sizes should be empty when half the limit is less than a page") {
  CHECK(table_sizes(0, 1 << 30).empty());
  CHECK(table_sizes(8191, 1 << 30).empty());
  CHECK(table_sizes(8192, 1 << 30) == std::vector<std::size_t>{4096});
}

TEST_CASE("median should take the middle sample, ignoring the order they came in") {
  CHECK(median({5.0, 1.0, 3.0}) == 3.0);
  CHECK(median({100.0, 2.0, 1.0, 3.0, 2.5}) == 2.5);  // one slow run does not move it
  CHECK(median({4.0, 1.0, 2.0, 3.0}) == 2.5);
  CHECK(median({7.0}) == 7.0);
  CHECK(median({}) == 0.0);
}
