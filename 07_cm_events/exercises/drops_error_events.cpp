// EXERCISE: a client pointed at an address nobody owns never ends
//
// This is common/src/cm_events.cpp (stage 07's events, shared with stage 09)
// with one bug. Build and check it with
//   scripts/check_exercise.sh drops_error_events
// (203.0.113.99 is on the guest's dummy1, a subnet where ARP is asked and
// nobody answers; scripts/rxe_vm.sh sets it up.)
//
// TODO: pointed at an address nobody owns, the client prints nothing and
// never ends, though rdma_resolve_addr was given 2000 ms. A fixed client
// fails within about 3 s, naming the step and the event (and so exits 1:
// that is the right answer here). Read what await() does with an event
// that is not the one it waits for. (Hint: docs/07-cm-events.md, section
// "Every event is an answer".)
// The lesson's heart: rdma_cm tells us how each step went by an event on
// the channel, never by the call's return value. rdma_resolve_addr returning
// 0 only means "started"; ADDR_RESOLVED or ADDR_ERROR says how it ended.
//
//   rdma_get_cm_event   take the next event (its fd is non-blocking, and we
//                       poll() it in between, so a step can have a deadline)
//   copy what we need   private data and connection parameters live inside
//                       the event and are gone once it is acked
//   rdma_ack_cm_event   give it back; rdma_destroy_id waits until every event
//                       of that id has been acked
//   judge it            the event we wanted, an error event of the step (with
//                       its meaning and fix), or anything else: named, fatal
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <cstdio>
#include <string>

#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace rdma::cm {

namespace {

// What an event means when it ends a step badly, and what usually fixes it.
struct meaning {
  rdma_cm_event_type type;
  const char* what;
  const char* fix;
};

// The dispatch table: every error event rdma_cm can end a step with.
constexpr meaning error_events[] = {
    {RDMA_CM_EVENT_ADDR_ERROR, "no local RDMA device reaches that address",
     "nobody answered ARP for it within --resolve-ms, or the interface of its subnet has no RDMA device: check the "
     "address, `ip route get ADDR` and `rdma link show`"},
    {RDMA_CM_EVENT_ROUTE_ERROR, "no path to the peer through the chosen device",
     "the device's GID table lacks the interface's address (`rdma link show`, `ip addr`); try a longer --resolve-ms"},
    {RDMA_CM_EVENT_CONNECT_ERROR, "the connection failed while it was being set up",
     "the peer's CM answered but the connection could not be completed; see the peer's output"},
    {RDMA_CM_EVENT_UNREACHABLE, "the peer's CM never answered the connect request",
     "is a server running on that address? Is the address on the same Ethernet as ours?"},
    {RDMA_CM_EVENT_REJECTED, "the peer rejected the connection", ""},
    {RDMA_CM_EVENT_DEVICE_REMOVAL, "the RDMA device went away",
     "the rxe link was deleted or its driver unloaded: `rdma link show`"},
    {RDMA_CM_EVENT_DISCONNECTED, "the peer disconnected", "see the peer's output for why it left"},
};

}  // namespace

// The IB CM's reject reasons a reader meets here (IBTA 12.6.7.2), and
// iWARP's errnos in their place (cm_events.hpp).
std::string reject_reason(int status) {
  switch (status) {
    case reject_no_listener: return "nobody listens on that address and port (reason 8, invalid service ID)";
    case reject_by_consumer: return "the server's own reason (reason 28, consumer reject)";
    case -ECONNREFUSED: return "nobody listens on that address and port (iWARP: TCP refused, status -111, ECONNREFUSED)";
    case -ECONNRESET: return "the server's own reason (iWARP: an MPA reject, status -104, ECONNRESET)";
    default: return status < 0 ? "status " + std::to_string(status) + ", " + errno_name(-status) : "reason " + std::to_string(status);
  }
}

std::string describe_status(rdma_cm_event_type type, int status) {
  if (type == RDMA_CM_EVENT_REJECTED) return reject_reason(status);
  if (status < 0) return "status " + std::to_string(status) + ", " + errno_name(-status);
  return "status " + std::to_string(status);
}

tutorial_error explain(const cm_event& ev, std::string_view wanted, std::string_view step) {
  std::string got = rdma_event_str(ev.type);
  if (got == "UNKNOWN EVENT") got += " " + std::to_string(static_cast<int>(ev.type));  // newer than this librdmacm
  got += " (" + describe_status(ev.type, ev.status) + ")";
  for (const meaning& m : error_events) {
    if (m.type != ev.type) continue;
    std::string message = std::string(step) + ": " + got + ": " + m.what;
    std::string fix = m.fix;
    if (ev.type == RDMA_CM_EVENT_REJECTED) {
      if (nobody_listens(ev.status)) {
        fix = "start the server first, or check -p";
      } else if (rejected_by_server(ev.status)) {
        message += ": \"" + reject_text(ev.private_data) + "\"";
      }
    }
    return tutorial_error(message, fix);
  }
  return tutorial_error(std::string(step) + ": unexpected " + got + " while waiting for " + std::string(wanted));
}

int ms_left(std::chrono::steady_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  return static_cast<int>(std::max<long>(left, 0));
}

std::optional<cm_event> try_event(rdma_event_channel* channel) {
  rdma_cm_event* raw = nullptr;
  if (rdma_get_cm_event(channel, &raw) != 0) {
    // The fd is non-blocking (cm_events.cpp): nothing there yet. (Even
    // after poll() said readable: the library may have read an event it
    // keeps to itself.)
    if (errno == EAGAIN) return std::nullopt;
    throw verbs_error(errno, "rdma_get_cm_event");
  }
  // Acked however this block is left; rdma_destroy_id of its id would wait
  // forever for an event never acked.
  std::unique_ptr<rdma_cm_event, int (*)(rdma_cm_event*)> event(raw, rdma_ack_cm_event);
  cm_event copy;
  copy.type = event->event;
  copy.status = event->status;
  copy.id = event->id;  // for CONNECT_REQUEST: a new id, ours to destroy
  const rdma_conn_param& conn = event->param.conn;
  if (conn.private_data != nullptr) {
    const auto* data = static_cast<const std::byte*>(conn.private_data);
    copy.private_data.assign(data, data + conn.private_data_len);
  }
  copy.responder_resources = conn.responder_resources;
  copy.initiator_depth = conn.initiator_depth;
  // Everything we need is copied: ack now, and check that it worked.
  check_errno(rdma_ack_cm_event(event.release()), "rdma_ack_cm_event");
  return copy;
}

cm_event next_event(rdma_event_channel* channel, int wait_ms, std::string_view waiting_for, std::string_view hint) {
  // poll() between tries: rdma_get_cm_event on a blocking fd would wait for
  // as long as it takes. wait_ms < 0 waits as long as the CM takes (await).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(wait_ms, 0));
  for (;;) {
    if (auto ev = try_event(channel)) return *ev;
    pollfd pfd{channel->fd, POLLIN, 0};
    const int timeout = wait_ms < 0 ? -1 : ms_left(deadline);
    const int ready = poll(&pfd, 1, timeout);
    if (ready < 0 && errno == EINTR) continue;  // a signal: look again, with what is left of the deadline
    if (check_errno(ready, "poll(the CM event channel)") == 0) {
      throw tutorial_error("no " + std::string(waiting_for), std::string(hint));
    }
  }
}

cm_event await(rdma_event_channel* channel, rdma_cm_id* id, rdma_cm_event_type want, std::string_view step,
               int wait_ms, std::string_view bound) {
  const std::string within = bound.empty() ? std::to_string(wait_ms) + " ms" : std::string(bound);
  cm_event ev = next_event(channel, wait_ms, std::string(rdma_event_str(want)) + " after " + std::string(step) +
                                                 " within " + within);
  // Every event names the id it is about: one about another id on this
  // channel answers nothing we asked.
  if (ev.id != id) throw about_another_id(ev, rdma_event_str(want), step);
  while (ev.type != want) ev = next_event(channel, wait_ms, rdma_event_str(want));  // TODO
  return ev;
}

tutorial_error about_another_id(const cm_event& ev, std::string_view wanted, std::string_view step) {
  return tutorial_error(std::string(rdma_event_str(ev.type)) + " about another id while we waited for " +
                            std::string(wanted) + " after " + std::string(step),
                        "every event names its id (rdma_cm_event.id): take each to the connection it is about, "
                        "or give each id a channel of its own");
}

// A reject's private data: printable text, at most max_reject_text bytes
// (the REJ message carries 148), zero-padded on arrival.
std::vector<std::byte> encode_reject_text(std::string_view text) {
  text = text.substr(0, max_reject_text);
  std::vector<std::byte> out(text.size());
  std::transform(text.begin(), text.end(), out.begin(), [](char c) { return static_cast<std::byte>(c); });
  return out;
}

std::string reject_text(std::span<const std::byte> data) {
  std::string text;
  for (std::byte b : data.first(std::min(data.size(), max_reject_text))) {
    const char c = static_cast<char>(b);
    if (c == '\0') break;
    text += c >= ' ' && c <= '~' ? c : '?';  // from the peer: never print raw bytes
  }
  return text;
}


std::string address_text(const sockaddr* sa) {
  if (sa == nullptr || sa->sa_family != AF_INET) return "?";
  const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
  return std::string(text) + (in->sin_port != 0 ? ":" + std::to_string(ntohs(in->sin_port)) : "");
}

std::string describe_id(rdma_cm_id* id) {
  // A listener bound to every address has no device yet (id->verbs NULL).
  const std::string where = id->verbs != nullptr
                                ? std::string(ibv_get_device_name(id->verbs->device)) + " port " + std::to_string(id->port_num)
                                : std::string("every device");
  return where + ", " + address_text(rdma_get_local_addr(id)) + " -> " + address_text(rdma_get_peer_addr(id));
}

sockaddr_in ipv4_address(const std::string& text, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, text.c_str(), &sa.sin_addr) != 1) {
    throw usage_error("-s takes an IPv4 address, got '" + text + "'");
  }
  return sa;
}

cm_id_ptr resolve(rdma_event_channel* channel, const sockaddr_in& server, std::string_view to, int resolve_ms,
                  std::optional<std::uint8_t> ack_timeout, std::optional<std::uint8_t> tos) {
  rdma_cm_id* raw = nullptr;
  check_errno(rdma_create_id(channel, &raw, nullptr, RDMA_PS_TCP), "rdma_create_id");
  cm_id_ptr id(raw);
  // The QP's ACK timeout, which rdma_cm otherwise takes from the route (for
  // RoCE, a fixed packet lifetime: 2 s and more per try); the packets' type
  // of service, which the route takes up.
  if (ack_timeout) set_ack_timeout(id.get(), *ack_timeout);
  if (tos) set_tos(id.get(), *tos);

  // The address: the route table picks our interface, ARP finds the
  // server's MAC, and rdma_cm the RDMA device on that interface.
  sockaddr_in dst = server;
  const std::string addr_step = "rdma_resolve_addr(" + std::string(to) + ")";
  check_errno(rdma_resolve_addr(id.get(), nullptr, reinterpret_cast<sockaddr*>(&dst), resolve_ms), addr_step);
  await(channel, id.get(), RDMA_CM_EVENT_ADDR_RESOLVED, addr_step, cm_bounds_it);

  // The route: for RoCE, the GIDs and the Ethernet path (no subnet manager).
  const std::string route_step = "rdma_resolve_route(" + std::string(to) + ")";
  check_errno(rdma_resolve_route(id.get(), resolve_ms), route_step);
  await(channel, id.get(), RDMA_CM_EVENT_ROUTE_RESOLVED, route_step, cm_bounds_it);
  return id;
}

}  // namespace rdma::cm
