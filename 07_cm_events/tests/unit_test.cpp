// cm_events' pure logic, no device: the command line, the private data of
// each CM message, and the CM event dispatch table.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "rdma_tutorial/command_line.hpp"
#include "stage.hpp"

namespace {

stage07::options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "cm_events");
  stage07::options opts;
  REQUIRE(stage07::parse_options(static_cast<int>(args.size()), args.data(), opts));
  return opts;
}

std::string usage_error_of(std::vector<const char*> args) {
  args.insert(args.begin(), "cm_events");
  stage07::options opts;
  try {
    stage07::parse_options(static_cast<int>(args.size()), args.data(), opts);
  } catch (const rdma::usage_error& e) {
    return e.what();
  }
  return {};
}

stage07::cm_event event(rdma_cm_event_type type, int status, std::string_view data = {}) {
  stage07::cm_event ev;
  ev.type = type;
  ev.status = status;
  for (char c : data) ev.private_data.push_back(static_cast<std::byte>(c));
  return ev;
}

}  // namespace

TEST_CASE("with no -s it should be the server, answering one RDMA Read at a time") {
  const auto o = parse({});
  CHECK_FALSE(o.peer.is_client());
  CHECK(o.peer.port == 18515);
  CHECK(o.size == 4096);
  CHECK(o.responder_resources == 1);
}

TEST_CASE("the client's defaults should detect a dead peer: retry counts below 7") {
  const auto o = parse({"-s", "192.0.2.1"});
  CHECK(o.peer.is_client());
  CHECK(o.resolve_ms == 2000);
  CHECK(o.retry_count == 3);
  CHECK(o.rnr_retry_count == 3);
  CHECK(o.initiator_depth == 1);
  CHECK(o.iters == 1);
}

TEST_CASE("a retry count of 7 (forever) should be a usage error") {
  CHECK(usage_error_of({"-s", "192.0.2.1", "--retry-count", "7"}).find("--retry-count") != std::string::npos);
  CHECK(usage_error_of({"-s", "192.0.2.1", "--rnr-retry-count", "7"}).find("--rnr-retry-count") != std::string::npos);
  CHECK(parse({"-s", "192.0.2.1", "--retry-count", "0", "--rnr-retry-count", "6"}).rnr_retry_count == 6);
}

TEST_CASE("an option of one role given to the other should be a usage error") {
  CHECK(usage_error_of({"--initiator-depth", "2"}).find("--initiator-depth") != std::string::npos);
  CHECK(usage_error_of({"--resolve-ms", "10"}).find("--resolve-ms") != std::string::npos);
  CHECK(usage_error_of({"-s", "192.0.2.1", "--responder-resources", "0"}).find("--responder-resources") !=
        std::string::npos);
  CHECK(parse({"--responder-resources", "0"}).responder_resources == 0);
}

TEST_CASE("the hello should round-trip, padded as the CM delivers it") {
  const auto bytes = stage07::encode_hello({4096});
  std::vector<std::byte> padded(bytes.begin(), bytes.end());
  padded.resize(56);  // a connect request's private-data field
  CHECK(stage07::decode_hello(padded).size == 4096);
}

TEST_CASE("the region should round-trip, padded as the CM delivers it") {
  const auto bytes = stage07::encode_region({0x1234, 0x7f0011223344, 8192});
  std::vector<std::byte> padded(bytes.begin(), bytes.end());
  padded.resize(196);  // a reply's private-data field
  const auto r = stage07::decode_region(padded);
  CHECK(r.rkey == 0x1234);
  CHECK(r.addr == 0x7f0011223344);
  CHECK(r.length == 8192);
}

TEST_CASE("private data that is short, foreign or asks for nothing should be refused, saying what is wrong") {
  const auto bytes = stage07::encode_hello({64});
  CHECK_THROWS_WITH_AS(stage07::decode_hello(std::span(bytes).first(4)),
                       "the client's hello: 4 bytes of private data, 8 expected", rdma::tutorial_error);
  std::vector<std::byte> foreign(56, std::byte{0x41});
  CHECK_THROWS_WITH_AS(stage07::decode_region(foreign), "the server's region: the private data does not start with \"cm07\"",
                       rdma::tutorial_error);
  CHECK_THROWS_AS(stage07::decode_hello(stage07::encode_hello({0})), rdma::tutorial_error);
}

TEST_CASE("a reject's text should come back printable, without its padding") {
  auto text = stage07::encode_reject_text("asks for 9000 bytes");
  text.resize(148, std::byte{0});
  CHECK(stage07::reject_text(text) == "asks for 9000 bytes");
  const std::vector<std::byte> raw{std::byte{'o'}, std::byte{0x07}, std::byte{'k'}};
  CHECK(stage07::reject_text(raw) == "o?k");
  CHECK(stage07::encode_reject_text(std::string(300, 'x')).size() == stage07::max_reject_text);
}

TEST_CASE("each error event should end its step with the step, the event, its status and its meaning") {
  const auto addr = stage07::explain(event(RDMA_CM_EVENT_ADDR_ERROR, -110), "RDMA_CM_EVENT_ADDR_RESOLVED",
                                     "rdma_resolve_addr(203.0.113.99:18515)");
  CHECK(std::string(addr.what()) ==
        "rdma_resolve_addr(203.0.113.99:18515): RDMA_CM_EVENT_ADDR_ERROR (status -110, ETIMEDOUT): no local RDMA "
        "device reaches that address");
  CHECK(addr.hint().find("ARP") != std::string::npos);
  for (const auto type : {RDMA_CM_EVENT_ROUTE_ERROR, RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_UNREACHABLE,
                          RDMA_CM_EVENT_DEVICE_REMOVAL, RDMA_CM_EVENT_DISCONNECTED}) {
    const auto e = stage07::explain(event(type, -110), "X", "step");
    CAPTURE(rdma_event_str(type));
    CHECK(std::string(e.what()).starts_with(std::string("step: ") + rdma_event_str(type) + " (status -110, ETIMEDOUT): "));
    CHECK(std::string(e.what()).find("unexpected") == std::string::npos);
    CHECK_FALSE(e.hint().empty());
  }
}

TEST_CASE("a rejection should say whether nobody listens or the server said no, and why") {
  const auto nobody = stage07::explain(event(RDMA_CM_EVENT_REJECTED, 8), "RDMA_CM_EVENT_ESTABLISHED", "rdma_connect");
  CHECK(std::string(nobody.what()) ==
        "rdma_connect: RDMA_CM_EVENT_REJECTED (nobody listens on that address and port (reason 8, invalid service "
        "ID)): the peer rejected the connection");
  CHECK(nobody.hint() == "start the server first, or check -p");
  const auto refused = stage07::explain(event(RDMA_CM_EVENT_REJECTED, 28, "too big"), "E", "rdma_connect");
  CHECK(std::string(refused.what()).ends_with("the peer rejected the connection: \"too big\""));
}

TEST_CASE("an event the step does not expect should be named, never passed over") {
  const auto e = stage07::explain(event(RDMA_CM_EVENT_TIMEWAIT_EXIT, 0), "RDMA_CM_EVENT_ESTABLISHED", "rdma_accept");
  CHECK(std::string(e.what()) ==
        "rdma_accept: unexpected RDMA_CM_EVENT_TIMEWAIT_EXIT (status 0) while waiting for RDMA_CM_EVENT_ESTABLISHED");
}

TEST_CASE("rnr_retry_count should be each side's to give its peer, below 7") {
  CHECK(parse({"--rnr-retry-count", "2"}).rnr_retry_count == 2);
  CHECK(parse({"-s", "192.0.2.1", "--rnr-retry-count", "5"}).rnr_retry_count == 5);
  CHECK_FALSE(usage_error_of({"--rnr-retry-count", "7"}).empty());
  CHECK_FALSE(usage_error_of({"-s", "192.0.2.1", "--ack-timeout", "0"}).empty());
}
