// Sockets for the handshake. Every socket is non-blocking and every wait is
// a poll() with the time left until the caller's deadline, so no peer can
// hold a program in read(), write(), accept() or connect() forever.
#include "rdma_tutorial/tcp.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/waiting.hpp"

namespace rdma::tcp {

namespace {

using clock = std::chrono::steady_clock;

std::string seconds_text(clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(d).count());
  return text;
}

std::string address_text(const sockaddr_in& a) {
  char host[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
}

// poll() for `events` until `until`; false when the deadline passed first.
bool wait_for(int fd, short events, deadline until) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;  // ready, or an error/hang-up the next call will report
    if (n < 0 && errno != EINTR) throw verbs_error(errno, "poll");
  }
}

int new_socket() {
  return check_errno(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), "socket");
}

sockaddr_in resolve(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    throw tutorial_error("cannot resolve '" + host + "': " + ::gai_strerror(rc),
                         "give the peer's IPv4 address (192.0.2.1 in the project's guest)");
  }
  sockaddr_in a{};
  std::memcpy(&a, found->ai_addr, sizeof a);
  ::freeaddrinfo(found);
  a.sin_port = htons(port);
  return a;
}

}  // namespace

socket::~socket() {
  if (fd_ >= 0) ::close(fd_);
}

socket::socket(socket&& other) noexcept : fd_(other.fd_), peer_(std::move(other.peer_)) { other.fd_ = -1; }

socket& socket::operator=(socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

deadline after_ms(int ms) { return clock::now() + std::chrono::milliseconds(ms); }

socket listen_on(const std::string& bind_addr, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  const std::string host = bind_addr.empty() ? "0.0.0.0" : bind_addr;
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    throw tutorial_error("'" + host + "' is not an IPv4 address", "--bind takes an address like 192.0.2.1");
  }
  socket s(new_socket(), address_text(a));
  const int on = 1;
  check_errno(::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on), "setsockopt(SO_REUSEADDR)");
  check_errno(::bind(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a), "bind(" + s.peer() + ")");
  check_errno(::listen(s.fd(), 4), "listen(" + s.peer() + ")");
  return s;
}

socket accept_one(const socket& listener, deadline until) {
  const auto start = clock::now();
  for (;;) {
    if (!wait_for(listener.fd(), POLLIN, until)) {
      throw tutorial_error("no client connected to " + listener.peer() + " within " + seconds_text(clock::now() - start),
                           "start the client with -s <this host's address> and the same -p");
    }
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const int fd = ::accept4(listener.fd(), reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) return socket(fd, address_text(from));
    // The client may have given up between poll and accept: wait for the next.
    if (errno != EAGAIN && errno != ECONNABORTED && errno != EINTR) throw verbs_error(errno, "accept");
  }
}

socket connect_to(const std::string& host, std::uint16_t port, deadline until) {
  const sockaddr_in a = resolve(host, port);
  const std::string where = address_text(a);
  const auto start = clock::now();
  int last_err = 0;
  while (clock::now() < until) {
    socket s(new_socket(), where);
    int err = 0;
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!wait_for(s.fd(), POLLOUT, until)) break;
        socklen_t len = sizeof err;
        check_errno(::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len), "getsockopt(SO_ERROR)");
      }
    }
    if (err == 0) {
      // Handshake messages are small and answered at once: no Nagle delay.
      const int on = 1;
      check_errno(::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on), "setsockopt(TCP_NODELAY)");
      return s;
    }
    if (err != ECONNREFUSED) throw verbs_error(err, "connect(" + where + ")");
    last_err = err;  // nobody listens yet: the server may still be starting
    std::this_thread::sleep_for(waiting_policy::tcp_connect_retry);
  }
  throw tutorial_error("no server answered at " + where + " within " + seconds_text(clock::now() - start) +
                           (last_err != 0 ? " (" + errno_name(last_err) + ": nobody listens there)" : ""),
                       "start the server first, and give both the same -p; check the address with 'ip -br addr' "
                       "on the server's host");
}

void send_all(const socket& s, std::span<const std::byte> bytes, deadline until, std::string_view what) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    if (!wait_for(s.fd(), POLLOUT, until)) {
      throw tutorial_error(s.peer() + " took only " + std::to_string(sent) + " of " + std::to_string(bytes.size()) +
                           " bytes of " + std::string(what) + " in time");
    }
    // MSG_NOSIGNAL: a peer that has gone away is an EPIPE to report, not a SIGPIPE that kills us.
    const ssize_t n = ::send(s.fd(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      throw verbs_error(errno, "send(" + std::string(what) + " to " + s.peer() + ")",
                        "the peer closed the connection or went away");
    }
    sent += static_cast<std::size_t>(n);
  }
}

void recv_exact(const socket& s, std::span<std::byte> bytes, deadline until, std::string_view what) {
  const auto start = clock::now();
  std::size_t got = 0;
  while (got < bytes.size()) {
    const std::string so_far = std::to_string(got) + " of " + std::to_string(bytes.size()) + " bytes of " +
                               std::string(what);
    if (!wait_for(s.fd(), POLLIN, until)) {
      throw tutorial_error(s.peer() + " sent " + so_far + " within " + seconds_text(clock::now() - start),
                           "the peer connected but does not speak this protocol, or is stuck; check that both sides "
                           "run this stage's program");
    }
    const ssize_t n = ::recv(s.fd(), bytes.data() + got, bytes.size() - got, 0);
    if (n == 0) {
      throw tutorial_error(s.peer() + " closed the connection after " + so_far,
                           "the peer gave up or failed; its own output says why");
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      // A peer that closes with bytes of ours unread resets the connection.
      if (errno == ECONNRESET) {
        throw tutorial_error(s.peer() + " reset the connection after " + so_far,
                             "the peer closed it without reading what we sent (it gave up, failed or was killed); "
                             "its own output says why");
      }
      throw verbs_error(errno, "recv(" + std::string(what) + " from " + s.peer() + ")",
                        "the peer went away (crashed or was killed)");
    }
    got += static_cast<std::size_t>(n);  // a short read: loop for the rest
  }
}

void wait_for_close(const socket& s, deadline until) {
  const auto start = clock::now();
  for (;;) {
    if (!wait_for(s.fd(), POLLIN, until)) {
      throw tutorial_error(s.peer() + " did not close the connection within " + seconds_text(clock::now() - start),
                           "the peer is stuck before its end of the exchange; its own output says where");
    }
    std::byte b{};
    const ssize_t n = ::recv(s.fd(), &b, 1, 0);
    if (n == 0) return;
    if (n > 0) throw tutorial_error(s.peer() + " sent bytes after the handshake; this protocol has none there");
    if (errno == ECONNRESET) return;  // closed without a clean FIN: gone all the same
    if (errno != EAGAIN && errno != EINTR) throw verbs_error(errno, "recv(from " + s.peer() + ")");
  }
}

bool peer_closed(const socket& s, int wait_ms) {
  pollfd p{s.fd(), POLLIN, 0};
  const int ready = ::poll(&p, 1, wait_ms);
  if (ready < 0 && errno == EINTR) return false;
  if (check_errno(ready, "poll") == 0) return false;
  std::byte b{};
  const ssize_t n = ::recv(s.fd(), &b, 1, MSG_PEEK);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

void send_endpoint(const socket& s, const wire::endpoint& e, deadline until) {
  const auto bytes = wire::encode_endpoint(e);
  send_all(s, bytes, until, "our endpoint");
}

wire::endpoint receive_endpoint(const socket& s, deadline until) {
  std::array<std::byte, wire::endpoint_size> bytes{};
  // The fixed header first: garbage or another version is refused as soon
  // as its 8 bytes are in, without waiting for a length it may never send.
  recv_exact(s, std::span(bytes).first(wire::header_size), until, "the peer's endpoint");
  wire::check_header(std::span(bytes).first(wire::header_size));
  recv_exact(s, std::span(bytes).subspan(wire::header_size), until, "the peer's endpoint");
  return wire::decode_endpoint(bytes);
}

}  // namespace rdma::tcp
