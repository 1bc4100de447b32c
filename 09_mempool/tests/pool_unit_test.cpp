// Unit tests for stage 09's bookkeeping: the chunk ledger, which decides who
// owns which chunk, held to its word without a device.
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>

#include "../pool.hpp"
#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/error.hpp"

namespace {

// The message of the tutorial_error that `f` throws, or "" if it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const rdma::tutorial_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("chunk ledger should hand out every chunk once and report exhaustion") {
  stage09::chunk_ledger ledger(16);
  std::set<std::uint32_t> seen;
  for (int i = 0; i < 16; ++i) {
    const auto index = ledger.take();
    REQUIRE(index.has_value());
    CHECK(*index < 16);
    CHECK(seen.insert(*index).second);
  }
  CHECK(seen.size() == 16);
  CHECK_FALSE(ledger.take().has_value());
  // Still empty when asked again: exhaustion is a state, not a one-off.
  CHECK_FALSE(ledger.take().has_value());
}

TEST_CASE("chunk ledger should fill a fresh pool from its first chunk") {
  stage09::chunk_ledger ledger(3);
  CHECK(ledger.take() == 0u);
  CHECK(ledger.take() == 1u);
  CHECK(ledger.take() == 2u);
}

TEST_CASE("chunk ledger should hand out the chunk given back last first") {
  stage09::chunk_ledger ledger(8);
  for (int i = 0; i < 5; ++i) REQUIRE(ledger.take().has_value());
  ledger.give_back(1);
  ledger.give_back(3);
  CHECK(ledger.take() == 3u);
  CHECK(ledger.take() == 1u);
}

TEST_CASE("chunk ledger should hand a chunk out again once an exhausted pool gets it back") {
  stage09::chunk_ledger ledger(2);
  REQUIRE(ledger.take().has_value());
  REQUIRE(ledger.take().has_value());
  REQUIRE_FALSE(ledger.take().has_value());
  ledger.give_back(0);
  CHECK(ledger.take() == 0u);
  CHECK_FALSE(ledger.take().has_value());
}

TEST_CASE("chunk ledger should count the chunks in use and the free ones") {
  stage09::chunk_ledger ledger(4);
  CHECK(ledger.count() == 4);
  CHECK(ledger.free_count() == 4);
  const auto a = ledger.take();
  const auto b = ledger.take();
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(ledger.free_count() == 2);
  CHECK(ledger.in_use(*a));
  CHECK(ledger.in_use(*b));
  ledger.give_back(*a);
  CHECK_FALSE(ledger.in_use(*a));
  CHECK(ledger.in_use(*b));
  CHECK(ledger.free_count() == 3);
  CHECK(ledger.count() == 4);
  // An index past the end is simply not in use; asking must not throw.
  CHECK_FALSE(ledger.in_use(4));
}

TEST_CASE("chunk ledger should refuse a chunk released twice, and stay consistent") {
  stage09::chunk_ledger ledger(16);
  for (int i = 0; i < 4; ++i) REQUIRE(ledger.take().has_value());
  ledger.give_back(3);
  CHECK(error_of([&] { ledger.give_back(3); }) == "chunk 3 released twice: it is not in use");
  // The refused release changed nothing: chunk 3 is free exactly once.
  CHECK(ledger.free_count() == 13);
  CHECK(ledger.take() == 3u);
  CHECK(ledger.take() == 4u);
}

TEST_CASE("chunk ledger should refuse a chunk never handed out") {
  stage09::chunk_ledger ledger(16);
  CHECK(error_of([&] { ledger.give_back(0); }) == "chunk 0 released twice: it is not in use");
  CHECK(ledger.free_count() == 16);
}

TEST_CASE("chunk ledger should refuse an index out of range and name the pool's size") {
  stage09::chunk_ledger ledger(16);
  REQUIRE(ledger.take().has_value());
  CHECK(error_of([&] { ledger.give_back(17); }) == "chunk 17 is not in this pool of 16");
  CHECK(error_of([&] { ledger.give_back(16); }) == "chunk 16 is not in this pool of 16");
  CHECK(ledger.free_count() == 15);
}

TEST_CASE("memory pool should refuse a chunk size that is not a whole number of pages, before any verb") {
  // The check comes before mmap and ibv_reg_mr, so no PD is needed to see it.
  CHECK(error_of([] { stage09::memory_pool(nullptr, 1000, 4, IBV_ACCESS_LOCAL_WRITE); }) ==
        "chunk size 1000 is not a multiple of the page size, " + std::to_string(rdma::page_size) + " bytes");
  CHECK(error_of([] { stage09::memory_pool(nullptr, 0, 4, IBV_ACCESS_LOCAL_WRITE); }) ==
        "chunk size 0 is not a multiple of the page size, " + std::to_string(rdma::page_size) + " bytes");
}
