// rdma_cm's events, as stage 07 teaches them (docs/07-cm-events.md, "Every
// event is an answer"): each step rdma_cm takes ends with an event on a
// channel, never with the call's return value. Taking one is four moves:
// rdma_get_cm_event, copy what we need, rdma_ack_cm_event, judge it; these
// functions do the first three and give the judging one dispatch table of
// every error event with its meaning and likely fix. Stages 07 and 09 wait
// on them.
#pragma once

#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"

namespace rdma::cm {

// One event, copied out of the library's struct and acked.
struct cm_event {
  rdma_cm_event_type type{};
  int status = 0;
  rdma_cm_id* id = nullptr;  // the id it is about; for CONNECT_REQUEST a new one, ours to destroy
  std::vector<std::byte> private_data;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
};
// No deadline of ours: for steps that rdma_cm itself bounds (address and
// route resolution end within their timeout_ms, with an event either way).
inline constexpr int cm_bounds_it = -1;
// What is left of a deadline, in ms (0 once it passed): a wait_ms.
int ms_left(std::chrono::steady_clock::time_point deadline);
// The next event if one is there (the channel's fd is non-blocking),
// copied and acked.
std::optional<cm_event> try_event(rdma_event_channel* channel);
// The next event within wait_ms (cm_bounds_it: as long as it takes), copied
// and acked; otherwise throws "no <waiting_for>", with `hint`. A signal
// (EINTR) does not end the wait.
cm_event next_event(rdma_event_channel* channel, int wait_ms, std::string_view waiting_for,
                    std::string_view hint = {});
// Waits for `want` about `id`, the event that ends `step` well
// ("rdma_resolve_addr(ADDR)"); anything else is thrown as explain() says,
// an event about another id as about_another_id. `bound` names the limit
// in the timeout's message ("--accept-ms 3000"); empty: wait_ms.
cm_event await(rdma_event_channel* channel, rdma_cm_id* id, rdma_cm_event_type want, std::string_view step,
               int wait_ms, std::string_view bound = {});
// "RDMA_CM_EVENT_X about another id while we waited for <wanted> after <step>".
tutorial_error about_another_id(const cm_event& ev, std::string_view wanted, std::string_view step);
// The dispatch table (pure): an error event of a step with its meaning and
// likely fix, or any other event named as unexpected while we waited for
// `wanted` ("RDMA_CM_EVENT_ESTABLISHED", "the client's notice").
tutorial_error explain(const cm_event& ev, std::string_view wanted, std::string_view step);
std::string describe_status(rdma_cm_event_type type, int status);
std::string reject_reason(int status);
// The IB CM's reject reasons (a REJECTED event's status) a reader meets here
// (IBTA 12.6.7.2): nobody listens on that port (a server not started yet), and
// the server's own rdma_reject.
inline constexpr int reject_no_listener = 8;   // invalid service ID
inline constexpr int reject_by_consumer = 28;  // consumer reject
// iWARP has no CM of its own to give reasons: there a REJECTED event's
// status is a negative errno (the kernel's cma.c, cma_iw_handler):
// -ECONNREFUSED when the TCP connection was refused (nobody listens),
// -ECONNRESET for the peer's MPA reject, its rdma_reject, whose private
// data arrives as on InfiniBand (siw_cm.c, Linux 6.1 and 6.12).
inline bool nobody_listens(int status) { return status == reject_no_listener || status == -ECONNREFUSED; }
inline bool rejected_by_server(int status) { return status == reject_by_consumer || status == -ECONNRESET; }

// rdma_reject's private data (the REJ message): why, as printable text
// (the REJ has room for 148 bytes; we send at most this many).
inline constexpr std::size_t max_reject_text = 100;
std::vector<std::byte> encode_reject_text(std::string_view text);
std::string reject_text(std::span<const std::byte> data);  // printable, padding cut

// "192.0.2.1:18515" for an IPv4 address (no port when it is 0); "?" for others.
std::string address_text(const sockaddr* sa);
// "rxe0 port 1, 192.0.2.1 -> 192.0.2.1:18515": the device and port rdma_cm
// chose for the id, and both ends' addresses.
std::string describe_id(rdma_cm_id* id);
// A dotted IPv4 address and a port as rdma_cm takes them; anything else is
// a usage_error naming -s.
sockaddr_in ipv4_address(const std::string& text, std::uint16_t port);
// The client's first two steps, on a new id: rdma_resolve_addr (the route
// table picks the interface, ARP the MAC, rdma_cm the device), then
// rdma_resolve_route; each bounded by rdma_cm itself (resolve_ms) and
// judged by await. `to` names the server in messages ("192.0.2.1:18515").
// ack_timeout and tos, when given, are set on the id first (set_ack_timeout,
// set_tos).
cm_id_ptr resolve(rdma_event_channel* channel, const sockaddr_in& server, std::string_view to, int resolve_ms,
                  std::optional<std::uint8_t> ack_timeout, std::optional<std::uint8_t> tos = std::nullopt);

// rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT): the QP's ACK timeout,
// 4.096 us x 2^N, in place of the one rdma_cm takes from the route; before
// rdma_connect (src/cm_connect.cpp).
void set_ack_timeout(rdma_cm_id* id, std::uint8_t timeout);
// rdma_set_option(RDMA_OPTION_ID_TOS): the type of service of the id's
// packets, the byte a RoCE v2 packet carries in its IP header (DSCP in the
// upper six bits, ECN the lower two), which a fabric's switches classify
// on (a PFC priority, an ECN queue); on RoCE it becomes the path's traffic
// class at route resolution, so it is set before rdma_resolve_route
// (cma.c, cma_resolve_iboe_route). Default: the port's default_roce_tos, 0.
void set_tos(rdma_cm_id* id, std::uint8_t tos);

// Where a client connects, and how each new id is resolved (as resolve()
// takes it).
struct connect_target {
  sockaddr_in address{};
  std::string name;  // "192.0.2.1:18515", for messages
  int resolve_ms = 0;
  std::optional<std::uint8_t> ack_timeout;
  std::optional<std::uint8_t> tos;
};
// rdma_connect on `id` (resolved, its QP made), within wait_ms: returns the
// ESTABLISHED event (the server's private data copied out). A server started
// beside us may not listen yet (REJECTED, reason 8; on iWARP the TCP
// connection refused, which siw reports as rdma_connect failing with
// ECONNREFUSED): a rejected id cannot connect again, so a new one is
// resolved, move_qp(new id) destroys the old QP and creates one there, the
// old id is destroyed, and the connect is tried again, until wait_ms. Any
// other answer is thrown as explain() says. Where rdma_connect itself
// blocks (siw's TCP connect), wait_ms bounds the call too.
// (src/cm_connect.cpp, so that an exercise replacing cm_events.cpp keeps it.)
cm_event connect(rdma_event_channel* channel, cm_id_ptr& id, const connect_target& to, const rdma_conn_param& param,
                 int wait_ms, const std::function<void(rdma_cm_id* next)>& move_qp);

}  // namespace rdma::cm
