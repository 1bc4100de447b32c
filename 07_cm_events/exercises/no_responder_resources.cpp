// EXERCISE: the client's RDMA Write completes, its RDMA Read never does
//
// This is server.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh no_responder_resources
// (192.0.2.1 is the guest's address: rdma_cm needs the address of an
// interface with an RDMA device; 127.0.0.1 has none.)
//
// TODO: the connection is made, the client's RDMA Write completes, and its
// RDMA Read of the same bytes never does: the client gives up after
// --wait-ms. Read what rdma_accept's conn_param promises the client. (Hint:
// docs/07-cm-events.md, section "Reads need resources at both ends".)
// The server's story: listen, take a connect request, build the connection
// on the request's own id, tell the client where the region is in the
// accept itself, then wait for the notice and the disconnect. (protocol.hpp
// has the messages in order.)
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/waiting.hpp"
#include "stage.hpp"

namespace stage07 {

namespace {

using clock = std::chrono::steady_clock;

// rdma_reject: a REJ message (reason 28, "consumer"), `why` in its private
// data. The request's id is destroyed on the way out.
void turn_away(const cm_event& request, const std::string& why) {
  const rdma::cm_id_ptr id(request.id);
  const auto text = encode_reject_text(why);
  rdma::check_errno(rdma_reject(id.get(), text.data(), static_cast<std::uint8_t>(text.size())), "rdma_reject");
  std::printf("rejected: %s\n", why.c_str());
  std::fflush(stdout);
}

constexpr const char* busy = "busy: this server serves one client at a time";

// What one event on the shared channel means for the connection on `id`:
// ours, or not. Every event names its id. Another client's request that
// comes meanwhile is told we are busy; one about the listener (its device
// removed: RDMA_CM_EVENT_DEVICE_REMOVAL) ends this connection too; any
// other id's is said and passed over.
bool about_our_connection(const cm_event& ev, rdma_cm_id* id, const std::string& waiting_for) {
  if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
    turn_away(ev, busy);
    return false;
  }
  if (ev.id == id) return true;
  if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL) throw explain(ev, waiting_for, "the listener's device");
  std::printf("%s about another id: not this connection's, passed over\n", rdma_event_str(ev.type));
  std::fflush(stdout);
  return false;
}

// The next event of the connection on `id`.
cm_event connection_event(rdma_event_channel* channel, rdma_cm_id* id, clock::time_point deadline,
                          const std::string& waiting_for) {
  for (;;) {
    cm_event ev = next_event(channel, ms_left(deadline), waiting_for);
    if (about_our_connection(ev, id, waiting_for)) return ev;
  }
}

// The notice arrives as a Send into the Recv posted before rdma_accept. The
// client may also leave first (DISCONNECTED; or killed, and its kernel
// disconnects for it), so the CM channel is watched as well. The disconnect
// travels apart from the Send (CM messages, not our QP): when it comes,
// rdma_disconnect moves our QP to ERR, and the Recv's one completion says
// which came first: SUCCESS, the notice; WR_FLUSH_ERR, nothing filled it.
// (On iWARP the connection is the QP's own TCP stream: its end flushes the
// Recv at once, often before the DISCONNECTED.)
notice wait_for_notice(const on_device& dev, rdma_event_channel* channel, rdma_cm_id* id,
                       const rdma::registered_buffer& notice_buf, int wait_ms, bool& disconnected) {
  const auto deadline = clock::now() + std::chrono::milliseconds(wait_ms);
  ibv_wc wc{};
  while (rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 0) {
    pollfd pfd{channel->fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, rdma::waiting_policy::notice_nap_ms);
    if (ready < 0 && errno == EINTR) continue;  // a signal: look again
    if (rdma::check_errno(ready, "poll(the CM event channel)") == 1) {
      const std::optional<cm_event> ev = try_event(channel);
      if (!ev || !about_our_connection(*ev, id, "the client's notice")) continue;
      if (ev->type != RDMA_CM_EVENT_DISCONNECTED) throw explain(*ev, "the client's notice", "waiting for the notice");
      rdma::check_errno(rdma_disconnect(id), "rdma_disconnect");
      disconnected = true;
      wc = rdma::poll_one(dev.cq.get(), 1000, "the notice's Recv, after the disconnect");
      break;
    }
    if (clock::now() >= deadline) {
      throw rdma::tutorial_error("no notice from the client within --wait-ms " + std::to_string(wait_ms),
                                 "its Writes and Reads leave no trace here, so a client still at them (--iters) "
                                 "looks the same as a silent one: give the server a --wait-ms longer than they "
                                 "take, or see the client's output");
    }
  }
  // Flushed: the connection ended first. On RoCE the DISCONNECTED came and
  // our rdma_disconnect flushed the Recv; on iWARP the client's closed TCP
  // connection put our QP in error at once, before rdma_cm's event.
  if (wc.status == IBV_WC_WR_FLUSH_ERR) {
    throw rdma::tutorial_error("the client disconnected before its notice (our Recv came back flushed)",
                               "see the client's output for why it left");
  }
  rdma::check_wc(wc);
  std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
  if (wc.opcode != IBV_WC_RECV || wc.byte_len != notice_size) {
    throw rdma::tutorial_error("the notice should be an 8-byte Send, got " + rdma::describe_wc(wc));
  }
  return decode_notice(std::span<const std::byte, notice_size>(
      reinterpret_cast<const std::byte*>(notice_buf.data()), notice_size));
}

// One client, on the id its CONNECT_REQUEST brought.
int serve(const options& opts, rdma_event_channel* channel, rdma_cm_id* id, const cm_event& request) {
  const hello h = decode_hello(request.private_data);
  // The request's id already knows the device the request came in on.
  const on_device dev = open_on(id, 4, opts);
  // The landing region: the client writes it and reads it back, so
  // REMOTE_WRITE and REMOTE_READ (and LOCAL_WRITE, which REMOTE_WRITE needs).
  const rdma::registered_buffer landing(dev.pd.get(), opts.size,
                                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                                        "landing region");
  const rdma::registered_buffer notice_buf(dev.pd.get(), notice_size, IBV_ACCESS_LOCAL_WRITE, "notice");
  // The QP on the id (id->qp), owned here: after both buffers, so destroyed
  // first (rdma_destroy_qp), and no packet reaches freed memory.
  const rdma::cm_qp_ptr qp = create_qp(id, dev, 1);
  std::printf("QP 0x%x: made by rdma_create_qp on the request's id, already in INIT\n", id->qp->qp_num);

  // Posted before rdma_accept: the client may send the moment it is
  // connected, and a Send that finds no Recv is an RNR NAK.
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(notice_buf.data()), notice_size, notice_buf.lkey()};
  ibv_recv_wr recv{};
  recv.wr_id = 1;
  recv.sg_list = &sge;
  recv.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  rdma::check_rc(ibv_post_recv(id->qp, &recv, &bad), "ibv_post_recv(notice)");

  // The region travels in the accept (the REP message), where stage 04 sent
  // it over TCP.
  const region ours{landing.rkey(), reinterpret_cast<std::uintptr_t>(landing.data()), opts.size};
  const auto region_bytes = encode_region(ours);
  rdma_conn_param param{};
  param.private_data = region_bytes.data();
  param.private_data_len = region_size;
  // RDMA Reads of the client this QP answers at once (its max_dest_rd_atomic):
  // no more than the client asked for (the request's responder_resources,
  // its initiator_depth), no more than --responder-resources. The REP
  // carries it to the client, whose QP gets it as max_rd_atomic: 0, and the
  // client's Reads never leave.
  param.responder_resources = 0;  // TODO
  param.initiator_depth = 0;  // we read nothing
  // For the client's Sends into our Recvs (its notice): its QP gets this.
  param.rnr_retry_count = opts.rnr_retry_count;
  std::printf("rdma_accept: region %u bytes at 0x%llx, rkey 0x%x; responder_resources %u\n", ours.length,
              static_cast<unsigned long long>(ours.addr), ours.rkey, param.responder_resources);
  rdma::check_errno(rdma_accept(id, &param), "rdma_accept");
  const auto established = connection_event(channel, id, clock::now() + std::chrono::milliseconds(opts.peer.wait_ms),
                                            "RDMA_CM_EVENT_ESTABLISHED after rdma_accept within --wait-ms " +
                                                std::to_string(opts.peer.wait_ms));
  if (established.type != RDMA_CM_EVENT_ESTABLISHED) throw explain(established, "RDMA_CM_EVENT_ESTABLISHED", "rdma_accept");
  std::printf("ESTABLISHED: %s\n%s\n", describe_id(id).c_str(), describe_qp(id->qp).c_str());
  std::fflush(stdout);

  // The client writes and reads (as long as --iters makes it), which we
  // never see; the notice must come within --wait-ms, or it went silent.
  bool disconnected = false;
  const notice n = wait_for_notice(dev, channel, id, notice_buf, opts.peer.wait_ms, disconnected);
  // From the peer: checked before the bytes it points at are read.
  if (n.bytes == 0 || n.bytes > h.size) {
    throw rdma::tutorial_error("the notice says " + std::to_string(n.bytes) + " bytes; the client asked for " +
                               std::to_string(h.size));
  }
  const std::span<const char> payload(landing.data(), n.bytes);
  const std::uint32_t sum = fnv1a(payload);
  std::printf("the client wrote %u bytes: \"%.*s\", fnv1a 0x%08x (%s its notice)\n", n.bytes,
              static_cast<int>(std::min<std::size_t>(n.bytes, payload_text.size())), payload.data(), sum,
              sum == n.fnv1a ? "as in" : "NOT as in");
  if (sum != n.fnv1a) throw rdma::tutorial_error("the region's checksum differs from the client's notice");

  // The client disconnects when done; only then is the region ours again.
  // Our rdma_disconnect answers its request (the DREP) and moves our QP to ERR.
  if (!disconnected) {
    const auto ev = connection_event(channel, id, clock::now() + std::chrono::milliseconds(opts.peer.wait_ms),
                                     "RDMA_CM_EVENT_DISCONNECTED from the client within --wait-ms " +
                                         std::to_string(opts.peer.wait_ms));
    if (ev.type != RDMA_CM_EVENT_DISCONNECTED) throw explain(ev, "RDMA_CM_EVENT_DISCONNECTED", "the client's leaving");
    rdma::check_errno(rdma_disconnect(id), "rdma_disconnect");
  }
  std::printf("DISCONNECTED: releasing the region\n");
  return 0;
}

// Why a connect request cannot be served, or "" if it can: its private
// data comes from whoever connected.
std::string refusal(const cm_event& request, const options& opts) {
  try {
    const hello h = decode_hello(request.private_data);
    if (h.size <= opts.size) return {};
    return "asks for " + std::to_string(h.size) + " bytes; the region holds " + std::to_string(opts.size);
  } catch (const rdma::tutorial_error& e) {
    return e.what();
  }
}

}  // namespace

int run_server(const options& opts, rdma_event_channel* channel) {
  rdma_cm_id* raw = nullptr;
  rdma::check_errno(rdma_create_id(channel, &raw, nullptr, RDMA_PS_TCP), "rdma_create_id");
  const rdma::cm_id_ptr listener(raw);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(opts.peer.port);
  if (!opts.peer.bind.empty() && inet_pton(AF_INET, opts.peer.bind.c_str(), &addr.sin_addr) != 1) {
    throw rdma::usage_error("--bind takes an IPv4 address, got '" + opts.peer.bind + "'");
  }
  const std::string where = (opts.peer.bind.empty() ? "0.0.0.0" : opts.peer.bind) + ":" + std::to_string(opts.peer.port);
  rdma::check_errno(rdma_bind_addr(listener.get(), reinterpret_cast<sockaddr*>(&addr)), "rdma_bind_addr(" + where + ")");
  rdma::check_errno(rdma_listen(listener.get(), 1), "rdma_listen");
  std::printf("listening on %s (rdma_listen)\n", where.c_str());
  std::fflush(stdout);

  // Serve the first client whose request fits; reject the others, saying why.
  const auto deadline = clock::now() + std::chrono::milliseconds(opts.peer.accept_ms);
  for (;;) {
    const cm_event request =
        next_event(channel, ms_left(deadline), "client within --accept-ms " + std::to_string(opts.peer.accept_ms),
                   "start one with -s and this host's RDMA address (not 127.0.0.1)");
    if (request.type != RDMA_CM_EVENT_CONNECT_REQUEST) throw explain(request, "RDMA_CM_EVENT_CONNECT_REQUEST", "rdma_listen");
    // A new id, for this connection only: ours to destroy (the event that
    // brought it is already acked, so rdma_destroy_id will not wait).
    rdma::cm_id_ptr id(request.id);
    // The event states the request from our side: responder_resources is
    // what the client asks us to serve (its initiator_depth).
    std::printf("CONNECT_REQUEST: %s; it reads %u at once, %zu bytes of private data\n", describe_id(id.get()).c_str(),
                request.responder_resources, request.private_data.size());
    const std::string why = refusal(request, opts);
    if (why.empty()) return serve(opts, channel, id.get(), request);
    id.release();  // turn_away destroys it
    turn_away(request, why);
  }
}

}  // namespace stage07
