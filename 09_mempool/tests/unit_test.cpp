// Unit tests for stage 09's pure logic, no device: the server's rules
// (slots, grants, what a completion may claim, the credit edge, the sequence
// numbers), the hello and the grant on the wire, and the command line.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../grants.hpp"
#include "../protocol.hpp"
#include "../stage.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace {

bool says(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

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

stage09::options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "mempool");
  stage09::options opts;
  REQUIRE(stage09::parse_options(static_cast<int>(args.size()), args.data(), opts));
  return opts;
}

// The usage_error's message, or "" if the command line was accepted.
std::string usage_error_of(std::vector<const char*> args) {
  args.insert(args.begin(), "mempool");
  stage09::options opts;
  try {
    stage09::parse_options(static_cast<int>(args.size()), args.data(), opts);
  } catch (const rdma::usage_error& e) {
    return e.what();
  }
  return "";
}

// Three chunks of 16 slots of 100 bytes in 4096-byte chunks: the slots do not
// fill a chunk, so "slot x record size" and "chunk, then slot in chunk" give
// different offsets. The client under test holds chunk 1: slots 16..31.
struct judge_fixture {
  stage09::slot_layout layout{16, 100, 4096, 3};
  stage09::grant mine{16, 16};

  static std::uint32_t data(std::uint32_t slot) { return rdma::imm::encode(stage09::imm_data, slot); }
  static std::uint32_t end(std::uint32_t count) { return rdma::imm::encode(stage09::imm_end, count); }
  stage09::arrival judge(std::uint32_t imm, std::uint32_t byte_len, std::uint64_t records) const {
    return stage09::judge(layout, mine, imm, byte_len, records);
  }
};

std::vector<std::byte> padded(std::span<const std::byte> bytes, std::size_t field) {
  std::vector<std::byte> out(bytes.begin(), bytes.end());
  out.resize(field);  // zeros after the message, as the CM delivers it
  return out;
}

}  // namespace

// --- grants.hpp: where slots live, who holds which -------------------------

TEST_CASE("slot layout should place slot s in chunk s / slots, at (s % slots) x record size") {
  const stage09::slot_layout layout{16, 100, 4096, 3};
  CHECK(layout.slot_count() == 48);
  CHECK(layout.offset(0) == 0);
  CHECK(layout.offset(5) == 500);
  CHECK(layout.offset(15) == 1500);
  CHECK(layout.offset(16) == 4096);           // chunk 1 starts at a chunk boundary, not at 1600
  CHECK(layout.offset(2 * 16 + 3) == 8192 + 300);
  CHECK(layout.first_slot(0) == 0);
  CHECK(layout.first_slot(2) == 32);
}

TEST_CASE("slot layout offsets should not overflow 32 bits in a large pool") {
  const stage09::slot_layout layout{16, 4096, 1u << 26, 64};
  CHECK(layout.offset(63 * 16 + 1) == std::uint64_t{63} * (1u << 26) + 4096);
}

TEST_CASE("a grant should hold its first and last slot and nothing either side") {
  const stage09::grant g{32, 16};
  CHECK(g.holds(32));
  CHECK(g.holds(47));
  CHECK_FALSE(g.holds(48));
  CHECK_FALSE(g.holds(31));
  CHECK_FALSE(g.holds(0));
  const stage09::grant empty{32, 0};
  CHECK_FALSE(empty.holds(32));
}

TEST_CASE("record n should go to the grant's slots in turn, wrapping around") {
  const stage09::grant g{32, 16};
  CHECK(g.slot_for(0) == 32);
  CHECK(g.slot_for(15) == 47);
  CHECK(g.slot_for(16) == 32);
  CHECK(g.slot_for(17) == 33);
  CHECK(g.slot_for(16 * 1000 + 5) == 37);
}

// --- grants.cpp: judging one completion ------------------------------------

TEST_CASE_FIXTURE(judge_fixture, "a DATA write into the slot record n goes to should be read from that slot") {
  const auto a = judge(data(21), 100, 5);
  INFO(a.why);
  CHECK(a.what == stage09::arrival::kind::data);
  CHECK(a.slot == 21);
  // The same slot, one lap later.
  const auto lap = judge(data(21), 100, 16 + 5);
  CHECK(lap.what == stage09::arrival::kind::data);
  CHECK(lap.slot == 21);
}

TEST_CASE_FIXTURE(judge_fixture, "an END of 0 bytes should be taken as the end, with the count it carries") {
  const auto a = judge(end(1234), 0, 1234);
  INFO(a.why);
  CHECK(a.what == stage09::arrival::kind::end);
  CHECK(a.count == 1234);
}

TEST_CASE_FIXTURE(judge_fixture, "an END that carries bytes should be refused") {
  const auto a = judge(end(5), 8, 5);
  CHECK(a.what == stage09::arrival::kind::bad);
  CHECK(says(a.why, "END"));
  CHECK(says(a.why, "8 bytes"));
}

TEST_CASE_FIXTURE(judge_fixture, "an immediate of an unknown type should be refused, naming the type") {
  const auto a = judge(rdma::imm::encode(7, 21), 100, 5);
  CHECK(a.what == stage09::arrival::kind::bad);
  CHECK(says(a.why, "type 7"));
}

TEST_CASE_FIXTURE(judge_fixture, "a slot beyond the pool should be refused as out of range") {
  const auto a = judge(data(48), 100, 5);
  CHECK(a.what == stage09::arrival::kind::bad);
  CHECK(says(a.why, "out of range"));
  CHECK(says(a.why, "48"));
  // The last slot of the pool is in range: refused, but for not being ours.
  const auto last = judge(data(47), 100, 5);
  CHECK(last.what == stage09::arrival::kind::bad);
  CHECK_FALSE(says(last.why, "out of range"));
}

TEST_CASE_FIXTURE(judge_fixture, "a slot of another client's chunk should be refused as never granted") {
  const auto a = judge(data(2 * 16 + 1), 100, 5);
  CHECK(a.what == stage09::arrival::kind::bad);
  CHECK(says(a.why, "never granted"));
  CHECK(says(a.why, "16..31"));
  const auto below = judge(data(15), 100, 5);
  CHECK(below.what == stage09::arrival::kind::bad);
  CHECK(says(below.why, "never granted"));
}

TEST_CASE_FIXTURE(judge_fixture, "a slot of the right grant but not record n's should be refused") {
  const auto a = judge(data(22), 100, 5);
  CHECK(a.what == stage09::arrival::kind::bad);
  CHECK(says(a.why, "record 5"));
  CHECK(says(a.why, "slot 22"));
  CHECK(says(a.why, "not 21"));
}

TEST_CASE_FIXTURE(judge_fixture, "a byte_len other than the record size should be refused, naming both sizes") {
  const auto longer = judge(data(21), 101, 5);
  CHECK(longer.what == stage09::arrival::kind::bad);
  CHECK(says(longer.why, "101"));
  CHECK(says(longer.why, "100"));
  const auto shorter = judge(data(21), 99, 5);
  CHECK(shorter.what == stage09::arrival::kind::bad);
  CHECK(says(shorter.why, "99"));
  CHECK(says(shorter.why, "100"));
  CHECK(judge(data(21), 0, 5).what == stage09::arrival::kind::bad);
}

TEST_CASE_FIXTURE(judge_fixture, "the slot should be judged before the length: an out-of-range slot with a wrong length names the slot") {
  const auto a = judge(data(48), 4096, 5);
  CHECK(a.what == stage09::arrival::kind::bad);
  CHECK(says(a.why, "out of range"));
  CHECK_FALSE(says(a.why, "4096"));
  // And the grant before the turn, the turn before the length.
  const auto foreign = judge(data(40), 4096, 5);
  CHECK(says(foreign.why, "never granted"));
  const auto wrong_turn = judge(data(22), 4096, 5);
  CHECK(says(wrong_turn.why, "not 21"));
  CHECK_FALSE(says(wrong_turn.why, "4096"));
}

// --- grants.hpp: the sequence numbers and the credit edge ------------------

TEST_CASE("records in order should leave the sequence tracker clean") {
  stage09::sequence_tracker t;
  for (std::uint64_t seq = 0; seq < 100; ++seq) CHECK(t.on_record(seq).empty());
  CHECK(t.next() == 100);
  CHECK(t.gaps() == 0);
  CHECK(t.duplicates() == 0);
  CHECK(t.corrupt() == 0);
  CHECK(t.clean());
}

TEST_CASE("a jump in the sequence numbers should count the records lost and go on after it") {
  stage09::sequence_tracker t;
  CHECK(t.on_record(0).empty());
  CHECK(t.on_record(1).empty());
  const std::string why = t.on_record(5);
  CHECK(says(why, "3 lost"));
  CHECK(t.gaps() == 3);
  CHECK(t.next() == 6);
  CHECK_FALSE(t.clean());
  CHECK(t.on_record(6).empty());  // in step again after the gap
  CHECK(t.gaps() == 3);
  CHECK(t.duplicates() == 0);
}

TEST_CASE("a repeated sequence number should count a duplicate and not move the expectation") {
  stage09::sequence_tracker t;
  CHECK(t.on_record(0).empty());
  CHECK(t.on_record(1).empty());
  CHECK_FALSE(t.on_record(1).empty());
  CHECK(t.duplicates() == 1);
  CHECK(t.gaps() == 0);
  CHECK(t.next() == 2);
  CHECK_FALSE(t.clean());
  CHECK(t.on_record(2).empty());
}

TEST_CASE("a corrupt record should be counted and leave the tracker unclean") {
  stage09::sequence_tracker t;
  CHECK(t.on_record(0).empty());
  t.on_corrupt();
  t.on_corrupt();
  CHECK(t.corrupt() == 2);
  CHECK(t.gaps() == 0);
  CHECK(t.duplicates() == 0);
  CHECK_FALSE(t.clean());
}

TEST_CASE("the credit edge should be the records consumed plus the slots") {
  CHECK(stage09::credit_edge(0, 16) == 16);
  CHECK(stage09::credit_edge(100, 16) == 116);
  CHECK(stage09::credit_edge(100, 1) == 101);
  // Counts past 2^32 must not wrap: the edge is 64 bits on the wire.
  CHECK(stage09::credit_edge(std::uint64_t{1} << 32, 16) == (std::uint64_t{1} << 32) + 16);
}

// --- protocol.hpp: the hello and the grant ---------------------------------

TEST_CASE("the hello should round-trip every field, padded as the CM delivers it") {
  stage09::hello h;
  h.flags = stage09::flag_latency;
  h.record_size = 4096;
  h.credit_rkey = 0xdeadbeef;
  h.credit_addr = 0x7f0011223344;
  const auto bytes = stage09::encode_hello(h);
  // The layout protocol.hpp promises a peer: "mp09", version 1, flags big-endian.
  CHECK(bytes[0] == std::byte{'m'});
  CHECK(bytes[3] == std::byte{'9'});
  CHECK(bytes[5] == std::byte{1});
  CHECK(bytes[7] == std::byte{1});
  CHECK(bytes[8 + 3] == std::byte{0x00});
  CHECK(bytes[8 + 2] == std::byte{0x10});  // 4096, big-endian
  CHECK(bytes[12] == std::byte{0xde});
  CHECK(bytes[23] == std::byte{0x44});

  const auto back = stage09::decode_hello(padded(bytes, 56));  // a connect request's field
  CHECK(back.version == stage09::version);
  CHECK(back.flags == stage09::flag_latency);
  CHECK(back.record_size == 4096);
  CHECK(back.credit_rkey == 0xdeadbeef);
  CHECK(back.credit_addr == 0x7f0011223344);
  CHECK(stage09::decode_hello(bytes).flags == stage09::flag_latency);  // unpadded too
}

TEST_CASE("the grant should round-trip every field, padded as the CM delivers it") {
  stage09::grant_msg g;
  g.first_slot = 32;
  g.slots = 16;
  g.rkey = 0x12345678;
  g.addr = 0x7f00aabbccdd;
  g.record_size = 100;
  g.chunk_bytes = 8192;
  const auto bytes = stage09::encode_grant(g);
  CHECK(bytes[0] == std::byte{'m'});
  CHECK(bytes[5] == std::byte{1});
  CHECK(bytes[11] == std::byte{32});
  CHECK(bytes[15] == std::byte{16});
  CHECK(bytes[27] == std::byte{0xdd});
  CHECK(bytes[34] == std::byte{0x20});  // 8192, big-endian

  const auto back = stage09::decode_grant(padded(bytes, 196));  // an accept's field
  CHECK(back.first_slot == 32);
  CHECK(back.slots == 16);
  CHECK(back.rkey == 0x12345678);
  CHECK(back.addr == 0x7f00aabbccdd);
  CHECK(back.record_size == 100);
  CHECK(back.chunk_bytes == 8192);
}

TEST_CASE("a grant past what any server grants should be refused before the client allocates for it") {
  auto why = [](stage09::grant_msg g) {
    return error_of([&] { stage09::decode_grant(stage09::encode_grant(g)); });
  };
  CHECK(says(why({0, 1u << 30, 1, 2, 64, 4096}), "a grant of 1073741824 slots; a server grants 1024 at most"));
  CHECK(says(why({0, 16, 1, 2, 1u << 30, 4096}), "a grant of 1073741824-byte slots; records are 16 to 1048576 bytes"));
  CHECK(says(why({0, 16, 1, 2, 8, 4096}), "a grant of 8-byte slots"));
  CHECK(says(why({0, 16, 1, 2, 4096, 4096}), "a grant of 16 slots of 4096 bytes in a chunk of 4096"));
  CHECK(says(why({0, 16, 1, 2, 64, 1u << 30}), "in a chunk of 1073741824 (at most 67108864)"));
  CHECK(says(why({0xfffff8, 16, 1, 2, 64, 4096}), "do not fit the immediate's 24-bit index"));
  CHECK(stage09::decode_grant(stage09::encode_grant({0xfffff0, 16, 1, 2, 64, 4096})).first_slot == 0xfffff0);
  CHECK(stage09::decode_grant(stage09::encode_grant({0, 1024, 1, 2, 65536, 1u << 26})).slots == 1024);
}

TEST_CASE("private data that is too short should be refused, naming both sizes") {
  const auto hello = stage09::encode_hello({});
  const std::string why = error_of([&] { stage09::decode_hello(std::span(hello).first(20)); });
  CHECK(says(why, "20"));
  CHECK(says(why, "24"));
  const auto grant = stage09::encode_grant({0, 16, 1, 2, 64, 4096});
  const std::string grant_why = error_of([&] { stage09::decode_grant(std::span(grant).first(24)); });
  CHECK(says(grant_why, "24"));
  CHECK(says(grant_why, "36"));
}

TEST_CASE("private data of another program should be refused for its magic") {
  auto bytes = padded(stage09::encode_hello({}), 56);
  bytes[3] = std::byte{'8'};  // "mp08"
  CHECK(says(error_of([&] { stage09::decode_hello(bytes); }), "does not start with"));
  std::vector<std::byte> foreign(196, std::byte{0x41});
  CHECK(says(error_of([&] { stage09::decode_grant(foreign); }), "does not start with"));
}

TEST_CASE("private data of another version should be refused, naming both versions") {
  auto bytes = padded(stage09::encode_hello({}), 56);
  bytes[4] = std::byte{0x01};
  bytes[5] = std::byte{0x02};  // version 258
  std::string why = error_of([&] { stage09::decode_hello(bytes); });
  REQUIRE(says(why, "258"));
  why.erase(why.find("258"), 3);
  CHECK(says(why, std::to_string(stage09::version)));

  auto grant = padded(stage09::encode_grant({0, 16, 1, 2, 64, 4096}), 196);
  grant[5] = std::byte{2};
  CHECK(says(error_of([&] { stage09::decode_grant(grant); }), "version 2"));
}

TEST_CASE("a grant of 0 slots should be refused") {
  const auto bytes = stage09::encode_grant({0, 0, 1, 2, 64, 4096});
  CHECK(says(error_of([&] { stage09::decode_grant(bytes); }), "0 slots"));
  CHECK(error_of([] { stage09::decode_grant(stage09::encode_grant({0, 1, 1, 2, 64, 4096})); }).empty());
}

// --- options.cpp: the command line -----------------------------------------

TEST_CASE("the defaults should be four clients of 16 slots of 64 bytes, one page per chunk") {
  const auto o = parse({});
  CHECK(o.record_size == 64);
  CHECK(o.clients == 4);
  CHECK(o.window == 16);
  CHECK(o.chunk_bytes() == 4096);  // 16 x 64 = 1024, in whole pages
  CHECK(o.chunk_count() == 4);
  CHECK(o.hostile == stage09::hostile_kind::none);
  CHECK(parse({"--clients", "7"}).chunk_count() == 7);
  CHECK(parse({"--clients", "7", "--pool-chunks", "2"}).chunk_count() == 2);
}

TEST_CASE("the chunk should default to window x record size, rounded up to whole pages") {
  CHECK(parse({"--window", "100", "--record-size", "4096"}).chunk_bytes() == 409600);
  CHECK(parse({"--window", "17", "--record-size", "256"}).chunk_bytes() == 8192);  // 4352 bytes
  CHECK(parse({"--chunk-size", "16384"}).chunk_bytes() == 16384);
}

TEST_CASE("a server-only option given to a client should be a usage error") {
  CHECK(usage_error_of({"-s", "127.0.0.1"}).empty());
  CHECK(says(usage_error_of({"-s", "127.0.0.1", "--window", "8"}), "--window"));
  CHECK(says(usage_error_of({"-s", "127.0.0.1", "--credit-batch", "4"}), "--credit-batch"));
}

TEST_CASE("a chunk size that is not whole pages should be a usage error") {
  CHECK(usage_error_of({"--chunk-size", "8192"}).empty());
  CHECK(says(usage_error_of({"--chunk-size", "5000"}), "--chunk-size"));
}

TEST_CASE("a window that does not fit in the chunk should be a usage error") {
  CHECK(usage_error_of({"--window", "64", "--record-size", "128", "--chunk-size", "8192"}).empty());
  const std::string why = usage_error_of({"--window", "64", "--record-size", "128", "--chunk-size", "4096"});
  CHECK(says(why, "8192"));
  CHECK(says(why, "4096"));
}

TEST_CASE("a client should take a known hostile kind and refuse an unknown one") {
  const auto o = parse({"-s", "127.0.0.1", "--hostile", "oversized"});
  CHECK(o.hostile == stage09::hostile_kind::oversized);
  CHECK(std::string(stage09::hostile_name(o.hostile)) == "oversized");
  CHECK(parse({"-s", "127.0.0.1", "--hostile", "slot-not-granted"}).hostile == stage09::hostile_kind::slot_not_granted);
  CHECK(parse({"-s", "127.0.0.1", "--hostile", "ignore-credits"}).hostile == stage09::hostile_kind::ignore_credits);
  CHECK(parse({"-s", "127.0.0.1", "--hostile", "past-window"}).hostile == stage09::hostile_kind::past_window);
  const std::string why = usage_error_of({"-s", "127.0.0.1", "--hostile", "nonsense"});
  CHECK(says(why, "nonsense"));
  CHECK(says(why, "slot-out-of-range, slot-not-granted, oversized, outside-grant, past-window, ignore-credits, silent"));  // every kind
  CHECK_FALSE(usage_error_of({"--hostile", "oversized"}).empty());  // a client's option, without -s
}

TEST_CASE("a credit batch larger than the window should be a usage error") {
  CHECK(usage_error_of({"--credit-batch", "16", "--window", "16"}).empty());
  CHECK(says(usage_error_of({"--credit-batch", "32", "--window", "16"}), "--credit-batch"));
}
