// The TCP side channel of the handshake, as taught in stage 04
// (docs/04-rdma-write.md, section "The handshake"): listening, connecting,
// and moving whole messages, where every wait has a deadline.
//
// Why a deadline everywhere: a peer that connects and never speaks, or
// speaks half a message, would otherwise leave read() blocked forever. And
// read() and write() may move fewer bytes than asked (a "short" read or
// write), so a message is assembled in a loop until it is whole.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rdma_tutorial/wire.hpp"

namespace rdma::tcp {

using deadline = std::chrono::steady_clock::time_point;

// A connected or listening socket; closes itself.
class socket {
 public:
  socket() = default;
  socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~socket();
  socket(socket&& other) noexcept;
  socket& operator=(socket&& other) noexcept;
  socket(const socket&) = delete;
  socket& operator=(const socket&) = delete;

  int fd() const noexcept { return fd_; }
  // "192.0.2.2:40312" for a connection, "0.0.0.0:18515" for a listener.
  const std::string& peer() const noexcept { return peer_; }

 private:
  int fd_ = -1;
  std::string peer_;
};

// Listens on `bind_addr` (an IPv4 address; "" or "0.0.0.0": every address)
// and `port` (SO_REUSEADDR, so a restarted server can reuse it at once).
socket listen_on(const std::string& bind_addr, std::uint16_t port);

// The first client to connect, or an error once `until` has passed.
socket accept_one(const socket& listener, deadline until);

// Connects to host:port, retrying while nobody listens there yet (the server
// may still be starting), until `until`. An address nobody answers for at
// all is bounded by the same deadline.
socket connect_to(const std::string& host, std::uint16_t port, deadline until);

// Writes all of `bytes`, or reads exactly bytes.size(), looping over short
// writes and reads; `what` names the message in errors ("the server's
// endpoint"). A peer that closes early or stays silent past `until` is an
// error saying how much of the message arrived.
void send_all(const socket& s, std::span<const std::byte> bytes, deadline until, std::string_view what);
void recv_exact(const socket& s, std::span<std::byte> bytes, deadline until, std::string_view what);

// Waits until the peer closes its end; anything it sends instead, or the
// deadline passing, is an error.
void wait_for_close(const socket& s, deadline until);

// Whether the peer has closed its end (or reset it), waiting at most
// wait_ms for it to happen (0: just look); bytes it sent stay unread.
bool peer_closed(const socket& s, int wait_ms = 0);

// One endpoint message each way (wire.hpp), decoded and checked on arrival.
void send_endpoint(const socket& s, const wire::endpoint& e, deadline until);
wire::endpoint receive_endpoint(const socket& s, deadline until);

// The deadline `ms` milliseconds from now.
deadline after_ms(int ms);

}  // namespace rdma::tcp
