// The handshake's sockets (common/src/tcp.cpp) on this machine's loopback:
// short reads, silent and vanishing peers, refused connections. No device.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/tcp.hpp"

using namespace std::chrono_literals;
namespace tcp = rdma::tcp;

namespace {

// Two connected ends; the second is a raw fd the test drives by hand.
struct pair {
  tcp::socket ours;
  int theirs = -1;
  pair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
    ours = tcp::socket(fds[0], "peer");
    theirs = fds[1];
  }
  ~pair() {
    if (theirs >= 0) ::close(theirs);
  }
  void say(std::span<const std::byte> bytes) const {
    REQUIRE(::send(theirs, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  }
};

rdma::wire::endpoint sample() {
  rdma::wire::endpoint e;
  e.qp_num = 0x11;
  e.psn = 42;
  e.gid.raw[15] = 1;
  return e;
}

// The port the kernel gave a listener bound to port 0.
std::uint16_t local_port(const tcp::socket& l) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(l.fd(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
  return ntohs(a.sin_port);
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("an endpoint sent in small pieces should be assembled whole") {
  pair p;
  const auto bytes = rdma::wire::encode_endpoint(sample());
  std::thread writer([&] {
    for (std::size_t at = 0; at < bytes.size(); at += 5) {
      p.say(std::span(bytes).subspan(at, std::min<std::size_t>(5, bytes.size() - at)));
      std::this_thread::sleep_for(2ms);
    }
  });
  const auto e = tcp::receive_endpoint(p.ours, tcp::after_ms(2000));
  writer.join();
  CHECK(e.qp_num == 0x11);
  CHECK(e.psn == 42);
}

TEST_CASE("a peer that connects and says nothing should be an error at the deadline, not a hang") {
  pair p;
  const auto start = std::chrono::steady_clock::now();
  const std::string what = error_of([&] { tcp::receive_endpoint(p.ours, tcp::after_ms(300)); });
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK(what.starts_with("peer sent 0 of 8 bytes of the peer's endpoint within 0."));
}

TEST_CASE("a peer that closes mid-message should be an error saying how much came") {
  pair p;
  const auto bytes = rdma::wire::encode_endpoint(sample());
  p.say(std::span(bytes).first(20));
  ::close(p.theirs);
  p.theirs = -1;
  CHECK(error_of([&] { tcp::receive_endpoint(p.ours, tcp::after_ms(2000)); }) ==
        "peer closed the connection after 12 of 44 bytes of the peer's endpoint");
}

TEST_CASE("garbage should be refused as soon as its header is in, without waiting for the rest") {
  pair p;
  const char junk[] = "GET / HT";
  p.say(std::as_bytes(std::span(junk, 8)));
  const auto start = std::chrono::steady_clock::now();
  CHECK(error_of([&] { tcp::receive_endpoint(p.ours, tcp::after_ms(5000)); }).starts_with("handshake: bad magic"));
  CHECK(std::chrono::steady_clock::now() - start < 1s);
}

TEST_CASE("connecting where nobody listens should give up at the deadline and say so") {
  // A port we held a moment ago: nobody listens there now.
  std::uint16_t port = 0;
  {
    port = local_port(tcp::listen_on("127.0.0.1", 0));
  }
  const std::string what = error_of([&] { tcp::connect_to("127.0.0.1", port, tcp::after_ms(300)); });
  CHECK(what.starts_with("no server answered at 127.0.0.1:" + std::to_string(port) + " within "));
  CHECK(what.ends_with("(ECONNREFUSED: nobody listens there)"));
}

TEST_CASE("a client should reach a server that starts listening after it began trying") {
  const std::uint16_t port = 18999;
  tcp::socket accepted;
  std::thread server([&] {
    std::this_thread::sleep_for(200ms);
    const tcp::socket l = tcp::listen_on("127.0.0.1", port);
    accepted = tcp::accept_one(l, tcp::after_ms(3000));
  });
  const tcp::socket c = tcp::connect_to("127.0.0.1", port, tcp::after_ms(3000));
  server.join();
  tcp::send_endpoint(c, sample(), tcp::after_ms(1000));
  CHECK(tcp::receive_endpoint(accepted, tcp::after_ms(1000)).qp_num == 0x11);
}

TEST_CASE("a port already in use should be a bind error with the likely fix") {
  const tcp::socket first = tcp::listen_on("127.0.0.1", 0);
  try {
    tcp::listen_on("127.0.0.1", local_port(first));
    FAIL("the second bind succeeded");
  } catch (const rdma::verbs_error& e) {
    CHECK(std::string(e.what()).starts_with("bind(127.0.0.1:"));
    CHECK(e.code().value() == EADDRINUSE);
    CHECK(e.hint().find("-p on both sides") != std::string::npos);
  }
}

TEST_CASE("an accept with no client should end at the deadline with the fix") {
  const tcp::socket l = tcp::listen_on("127.0.0.1", 0);
  CHECK(error_of([&] { tcp::accept_one(l, tcp::after_ms(200)); }).find("no client connected to 127.0.0.1:") == 0);
}
