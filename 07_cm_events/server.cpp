// The server's story: listen, take a connect request, build the connection
// on the request's own id, tell the client where the region is in the
// accept itself, then wait for the notice and the disconnect. (protocol.hpp
// has the messages in order.)
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "stage.hpp"

namespace stage07 {

namespace {

using clock = std::chrono::steady_clock;

// The notice arrives as a Send into the Recv posted before rdma_accept. The
// client may also leave first (DISCONNECTED, or killed: its kernel
// disconnects for it), so the CM channel is watched as well. The disconnect
// travels apart from the Send (a CM message, not on our QP) and can be seen
// a moment before the Send's completion: after DISCONNECTED the CQ gets one
// more look, 100 ms later; `disconnected` says the event was taken here.
notice wait_for_notice(const on_device& dev, rdma_event_channel* channel, const rdma::registered_buffer& notice_buf,
                       int wait_ms, bool& disconnected) {
  const auto deadline = clock::now() + std::chrono::milliseconds(wait_ms);
  ibv_wc wc{};
  while (rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 0) {
    pollfd pfd{channel->fd, POLLIN, 0};
    if (rdma::check_errno(poll(&pfd, 1, 1), "poll(the CM event channel)") == 1) {
      const cm_event ev = next_event(channel, 0, "a CM event");
      if (ev.type == RDMA_CM_EVENT_DISCONNECTED) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1) {
          disconnected = true;
          break;
        }
      }
      throw explain(ev, "the client's notice", "waiting for the notice");
    }
    if (clock::now() >= deadline) {
      throw rdma::tutorial_error("no notice from the client within " + std::to_string(wait_ms) + " ms");
    }
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
int serve(const options& opts, rdma_event_channel* channel, rdma_cm_id* id, const hello& h) {
  // The request's id already knows the device the request came in on.
  const on_device dev = open_on(id, 4);
  // The landing region: the client writes it and reads it back, so
  // REMOTE_WRITE and REMOTE_READ (and LOCAL_WRITE, which REMOTE_WRITE needs).
  const rdma::registered_buffer landing(dev.pd.get(), opts.size,
                                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
                                        "landing region");
  const rdma::registered_buffer notice_buf(dev.pd.get(), notice_size, IBV_ACCESS_LOCAL_WRITE, "notice");
  // After both buffers: destroyed first, so no packet reaches freed memory.
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
  // the client reads its payload back. The REP carries it to the client,
  // whose QP gets it as max_rd_atomic: 0, and the client's Reads never go.
  param.responder_resources = opts.responder_resources;
  param.initiator_depth = 0;  // we read nothing
  param.rnr_retry_count = 3;  // < 7 (we send nothing: the knob for our sends, if we had any)
  std::printf("rdma_accept: region %u bytes at 0x%llx, rkey 0x%x; responder_resources %u\n", ours.length,
              static_cast<unsigned long long>(ours.addr), ours.rkey, param.responder_resources);
  rdma::check_errno(rdma_accept(id, &param), "rdma_accept");
  await(channel, RDMA_CM_EVENT_ESTABLISHED, "rdma_accept", opts.peer.wait_ms);
  std::printf("ESTABLISHED: %s\n%s\n", describe_id(id).c_str(), describe_qp(id->qp).c_str());
  std::fflush(stdout);

  // The client writes and reads for as long as --iters makes it; the bound
  // is --accept-ms.
  bool disconnected = false;
  const notice n = wait_for_notice(dev, channel, notice_buf, opts.peer.accept_ms, disconnected);
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
  if (!disconnected) {
    await(channel, RDMA_CM_EVENT_DISCONNECTED, "waiting for the client to disconnect", opts.peer.wait_ms);
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
    const cm_event request = await(channel, RDMA_CM_EVENT_CONNECT_REQUEST, "rdma_listen", ms_left(deadline));
    // A new id, for this connection only: ours to destroy (the event that
    // brought it is already acked, so rdma_destroy_id will not wait).
    const rdma::cm_id_ptr id(request.id);
    // The event states the request from our side: responder_resources is
    // what the client asks us to serve (its initiator_depth).
    std::printf("CONNECT_REQUEST: %s; it reads %u at once, %zu bytes of private data\n", describe_id(id.get()).c_str(),
                request.responder_resources, request.private_data.size());
    const std::string why = refusal(request, opts);
    if (why.empty()) return serve(opts, channel, id.get(), decode_hello(request.private_data));
    // rdma_reject: a REJ message (reason 28, "consumer"), our text in it.
    const auto text = encode_reject_text(why);
    rdma::check_errno(rdma_reject(id.get(), text.data(), static_cast<std::uint8_t>(text.size())), "rdma_reject");
    std::printf("rejected: %s\n", why.c_str());
    std::fflush(stdout);
  }
}

}  // namespace stage07
