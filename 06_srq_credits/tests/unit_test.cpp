// Unit tests for stage 06's pure logic: the command line, the SRQ sizing
// rule the server prints, and the two credit ledgers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../credits.hpp"
#include "../stage.hpp"
#include "rdma_tutorial/error.hpp"

namespace {

stage06::options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "srq_credits");
  stage06::options o;
  REQUIRE(stage06::parse_options(static_cast<int>(args.size()), args.data(), o));
  return o;
}

}  // namespace

TEST_CASE("the defaults: four clients of window 16, 64-byte records, rnr_retry 0") {
  const auto o = parse({});
  CHECK(o.clients == 4);
  CHECK(o.window == 16);
  CHECK(o.size == 64);
  CHECK(o.rnr_retry == 0);
  CHECK_FALSE(o.srq_depth.has_value());
  CHECK(stage06::default_depth(4, 16, 16) == 160);
}

TEST_CASE("options of the other role are usage errors") {
  const auto refused = [](std::vector<const char*> args) {
    args.insert(args.begin(), "srq_credits");
    stage06::options o;
    CHECK_THROWS_AS(stage06::parse_options(static_cast<int>(args.size()), args.data(), o), rdma::usage_error);
  };
  refused({"-s", "127.0.0.1", "--window", "8"});
  refused({"--records", "8"});
  refused({"--window", "4", "--credit-batch", "5"});
  refused({"--srq-depth", "64", "--srq-limit", "64"});
  refused({"--size", "8"});
  refused({"--clients", "0"});
  refused({"-s", "127.0.0.1", "--progress-ms", "100"});
  refused({"--progress-ms", "0"});
}

TEST_CASE("the sizing rule: every window in flight plus a batch short of reposting") {
  stage06::srq_sizing s{4, 16, 160, 16, 40};
  CHECK(s.in_flight() == 64);
  CHECK(s.fewest_posted() == 160 - 64 - 15);
  CHECK_FALSE(s.can_run_dry());
  CHECK_FALSE(s.limit_can_fire());
  CHECK(s.describe().find("at least 81 stay posted") != std::string::npos);
  CHECK(s.describe().find("fires only if the server falls behind") != std::string::npos);

  // Sized for one client's window while four are in flight.
  stage06::srq_sizing one{4, 16, 16, 16, 4};
  CHECK(one.can_run_dry());
  CHECK(one.describe().find("TOO SMALL") != std::string::npos);
  CHECK(one.describe().find("at least 80 Recvs") != std::string::npos);

  // Reposting only when the limit fires: safe while the limit stays above
  // every window plus one poll of returned credits.
  stage06::srq_sizing on_limit{4, 8, 256, 256, 128};
  CHECK(on_limit.limit_can_fire());
  CHECK(on_limit.limit_rescues());
  CHECK_FALSE(on_limit.can_run_dry());
  stage06::srq_sizing late_limit{4, 8, 256, 256, 40};
  CHECK(late_limit.can_run_dry());
}

TEST_CASE("the client's window: never more than `window` unconsumed, old credit values ignored") {
  stage06::credit_window w(3);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(w.can_send());
    w.on_sent();
  }
  CHECK_FALSE(w.can_send());
  CHECK_THROWS_AS(w.on_sent(), rdma::tutorial_error);
  w.on_credit(2);
  CHECK(w.in_flight() == 1);
  w.on_credit(1);  // an older value read late
  CHECK(w.consumed() == 2);
  CHECK_THROWS_AS(w.on_credit(4), rdma::tutorial_error);  // more than was sent
  CHECK(w.most_in_flight() == 3);
}

TEST_CASE("the server's ledger: a return every batch, and at once when urgent") {
  CHECK_THROWS_AS(stage06::credit_ledger(4, 5), rdma::tutorial_error);
  CHECK_THROWS_AS(stage06::credit_ledger(4, 0), rdma::tutorial_error);
  stage06::credit_ledger l(8, 4);
  for (int i = 0; i < 3; ++i) l.on_consumed();
  CHECK_FALSE(l.due());
  l.on_consumed();
  REQUIRE(l.due());
  CHECK(l.take_return() == 4);
  CHECK_FALSE(l.due());
  l.on_consumed();
  CHECK_FALSE(l.due());
  l.make_urgent();
  CHECK(l.due());
  CHECK(l.take_return() == 5);
  CHECK_FALSE(l.due());
}

TEST_CASE("a record: its sequence number and checksum, and what a wrong one says") {
  std::vector<char> rec(64);
  stage06::fill_record(rec, 41);
  CHECK(stage06::check_record(rec, 41).empty());
  CHECK(stage06::check_record(rec, 42).find("a duplicate") != std::string::npos);
  CHECK(stage06::check_record(rec, 40).find("records were lost") != std::string::npos);
  // Both numbers in network byte order: 41 in the 8th byte, the checksum's
  // high byte first in the last 4.
  CHECK(rec[7] == 41);
  CHECK(rec[0] == 0);
  const std::uint32_t sum = rdma::fnv1a(std::span<const char>(rec).first(60));
  CHECK(static_cast<unsigned char>(rec[60]) == sum >> 24);
  CHECK(static_cast<unsigned char>(rec[63]) == (sum & 0xff));
  rec[20] ^= 1;
  CHECK(stage06::check_record(rec, 41).find("checksum mismatch") != std::string::npos);
}
