// The immediate's tagged encoding (common/src/imm.cpp): pure, no device.
#include <doctest/doctest.h>

#include <array>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"

namespace imm = rdma::imm;

namespace {

constexpr std::array<imm::accepted, 2> rules{{{1, "DATA", 4}, {2, "END", imm::index_limit}}};

std::string refusal(std::uint32_t value) {
  try {
    imm::validate(value, rules);
    return {};
  } catch (const rdma::tutorial_error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("imm encoding should round-trip type and index") {
  for (std::uint32_t index : {0u, 1u, 3u, 0xabcdeu, 0xffffffu}) {
    const auto t = imm::decode(imm::encode(0x7e, index));
    CHECK(t.type == 0x7e);
    CHECK(t.index == index);
  }
  CHECK(imm::encode(0x01, 2) == 0x01000002u);
  CHECK(imm::encode(0xff, 0xffffff) == 0xffffffffu);
}

TEST_CASE("an index that does not fit 24 bits should be refused at the sender") {
  CHECK_THROWS_WITH_AS(imm::encode(1, 0x1000000), "immediate index 16777216 does not fit 24 bits", rdma::tutorial_error);
}

TEST_CASE("a receiver should accept only the types it knows, with indexes inside what it exposed") {
  CHECK(refusal(0x01000003).empty());
  CHECK(std::string(imm::validate(0x02abcdef, rules).name) == "END");
  CHECK(refusal(0x01000004) == "imm 0x01000004: DATA index 4 is outside 0..3");
  CHECK(refusal(0x7f000001) == "imm 0x7f000001: type 0x7f is none of DATA, END");
  CHECK(refusal(0x00000000) == "imm 0x00000000: type 0x00 is none of DATA, END");
}

TEST_CASE("a byte-swapped immediate should be refused, not taken for another slot") {
  // DATA slot 2 sent without htonl arrives as 0x02000001: END 1 by accident
  // here, so the stage checks END's count too; a swapped DATA 3 is no type at all.
  CHECK(refusal(0x03000001) == "imm 0x03000001: type 0x03 is none of DATA, END");
}
