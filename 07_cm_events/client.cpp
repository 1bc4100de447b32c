// The client's story: find the server by its IP address, connect, learn
// where its region is from the connection itself, write into it, read it
// back, say so, disconnect. (protocol.hpp has the messages in order.)
//
// Each rdma_cm call only starts a step; its event says how the step ended,
// and an error event at any step ends the program with that step named.
#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace stage07 {

namespace {

using clock = std::chrono::steady_clock;

// Posts one work request and waits for its completion (stage 04's
// rdma::post_and_wait, common/src/completion.cpp). A failed status is
// thrown with how long the device tried: for a dead peer, that is the
// detection time (retry_count resends, each after the ACK timeout).
void post_and_time(const on_device& dev, ibv_qp* qp, ibv_send_wr& wr, int wait_ms, const std::string& what,
                   bool say) {
  const auto posted = clock::now();
  ibv_wc wc{};
  try {
    wc = rdma::post_and_wait(qp, dev.cq.get(), wr, wait_ms, what);
  } catch (const rdma::tutorial_error& e) {
    // On iWARP no ACK timeout ends a wait: TCP retransmits (net.ipv4.
    // tcp_retries2, about 15 minutes by default), and Soft-iWARP now and
    // then never completes a request that was in flight when the
    // connection closed (docs/07-cm-events.md, "On iWARP").
    if (rdma::is_iwarp(qp->context)) {
      throw rdma::tutorial_error(e.what(), "on iWARP only TCP gives up on a peer, after minutes, and a request in "
                                           "flight when the connection closed may never complete: the peer's output "
                                           "says whether it left");
    }
    if (wr.opcode != IBV_WR_RDMA_READ) throw;
    // A Read waits at our end for a free read slot: max_rd_atomic 0 (the
    // server granted no responder_resources) means it never leaves.
    throw rdma::tutorial_error(e.what(), "is max_rd_atomic 0 in the QP line above? Then the server's rdma_accept "
                                         "granted responder_resources 0: no RDMA Read can ever be served");
  }
  if (wc.status != IBV_WC_SUCCESS) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - posted).count();
    throw rdma::tutorial_error(what + " failed " + std::to_string(ms) + " ms after it was posted: " +
                                   rdma::describe_wc(wc),
                               rdma::wc_status_hint(wc.status));
  }
  if (say) std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
}

}  // namespace

int run_client(const options& opts, rdma_event_channel* channel) {
  const sockaddr_in server = rdma::cm::ipv4_address(opts.peer.server, opts.peer.port);
  const std::string to = opts.peer.server + ":" + std::to_string(opts.peer.port);
  // A new id, its address and route resolved: the device and port that
  // reach the server, and the path to it (common/src/cm_events.cpp).
  rdma::cm_id_ptr id = rdma::cm::resolve(channel, server, to, opts.resolve_ms, opts.ack_timeout, opts.tos);
  std::printf("ADDR_RESOLVED: %s\nROUTE_RESOLVED\n", describe_id(id.get()).c_str());

  // Everything on the device rdma_cm chose for the address.
  const on_device dev = open_on(id.get(), 4, opts);
  // What we write from (the payload, then the notice), and where the RDMA
  // Read puts the copy: the device writes there, so LOCAL_WRITE. On RoCE
  // nothing of ours is open to the server. On iWARP the copy is: a Read
  // Request names its sink by key, and the server's device places the
  // response there as tagged writes, so the sink needs REMOTE_WRITE (the
  // kernel's RDMA R/W API registers an iWARP Read sink so, core/rw.c; siw
  // checks only LOCAL_WRITE, a NIC may check both).
  const int sink_access = IBV_ACCESS_LOCAL_WRITE | (rdma::is_iwarp(id->verbs) ? IBV_ACCESS_REMOTE_WRITE : 0);
  const rdma::registered_buffer source(dev.pd.get(), opts.size + notice_size, 0, "payload");
  const rdma::registered_buffer copy(dev.pd.get(), opts.size, sink_access, "read-back copy");
  const std::span<char> payload = source.bytes().first(opts.size);
  fill_payload(payload);
  // Owns the QP on the id (id->qp; rdma_destroy_qp on the way out).
  rdma::cm_qp_ptr qp = create_qp(id.get(), dev, 2);
  // On iWARP there is no RTR to pass: the connection manager hands the
  // QP its TCP connection and moves it to RTS (siw_cm.c).
  std::printf("QP 0x%x: made by rdma_create_qp, already in INIT (rdma_cm moves it to %s)\n", id->qp->qp_num,
              rdma::is_iwarp(id->verbs) ? "RTS with the TCP connection" : "RTR and RTS");

  // What the server needs to know travels in the connect request itself.
  const auto hello_bytes = encode_hello({opts.size});
  rdma_conn_param param{};
  param.private_data = hello_bytes.data();
  param.private_data_len = hello_size;
  param.initiator_depth = opts.initiator_depth;  // RDMA Reads we keep in flight (the QP's max_rd_atomic)
  param.responder_resources = 0;                 // we answer no reads: nothing here is readable
  param.retry_count = opts.retry_count;          // < 7, or a dead peer is retried forever; both QPs get it
  // Not for our Sends: the server's QP gets this one, for its Sends into
  // our receive queue. Our notice's retries come from the server's accept.
  param.rnr_retry_count = opts.rnr_retry_count;
  // A client started before its server is rejected ("nobody listens") and
  // tries again on a new id until --wait-ms (common/src/cm_connect.cpp);
  // its QP moves to each new id. (The device stays the same for the same
  // address.)
  const rdma::cm::connect_target target{server, to, opts.resolve_ms, opts.ack_timeout, opts.tos};
  const cm_event established = rdma::cm::connect(channel, id, target, param, opts.peer.wait_ms, [&](rdma_cm_id* next) {
    qp.reset();
    qp = create_qp(next, dev, 2);
  });
  // The server's private data: copied out of the event before it was acked.
  const region peer = decode_region(established.private_data);
  std::printf("ESTABLISHED: %s; the server's region: %u bytes at 0x%llx, rkey 0x%x\n", describe_id(id.get()).c_str(),
              peer.length, static_cast<unsigned long long>(peer.addr), peer.rkey);
  std::printf("%s\n", describe_qp(id->qp).c_str());
  if (opts.size > peer.length) {
    throw rdma::tutorial_error("the server accepted " + std::to_string(opts.size) + " bytes but offers " +
                               std::to_string(peer.length));
  }

  ibv_sge write_sge{reinterpret_cast<std::uintptr_t>(payload.data()), opts.size, source.lkey()};
  ibv_sge read_sge{reinterpret_cast<std::uintptr_t>(copy.data()), opts.size, copy.lkey()};
  for (std::uint32_t round = 0; round < opts.iters; ++round) {
    const bool say = round == 0;
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &write_sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
    if (say) std::printf("RDMA Write: %u bytes to 0x%llx\n", opts.size, static_cast<unsigned long long>(peer.addr));
    post_and_time(dev, id->qp, wr, opts.peer.wait_ms, "the RDMA Write", say);

    // An RDMA Read: the server's QP answers it without its CPU, using one
    // of the responder resources it granted in rdma_accept.
    std::memset(copy.data(), 0, copy.size());
    wr.wr_id = 2;
    wr.sg_list = &read_sge;
    wr.opcode = IBV_WR_RDMA_READ;
    if (say) {
      std::printf("RDMA Read: %u bytes back from 0x%llx", opts.size, static_cast<unsigned long long>(peer.addr));
      // On iWARP the Read Request names our copy, and the response is
      // written into it by that key.
      if (sink_access & IBV_ACCESS_REMOTE_WRITE) {
        std::printf(" into our copy at 0x%llx, key 0x%x", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(copy.data())), copy.rkey());
      }
      std::printf("\n");
    }
    post_and_time(dev, id->qp, wr, opts.peer.wait_ms, "the RDMA Read", say);
    if (say) std::fflush(stdout);  // a long run (--iters) shows its first round at once
    if (std::memcmp(copy.data(), payload.data(), opts.size) != 0) {
      throw rdma::tutorial_error("round " + std::to_string(round + 1) + ": what we read back differs from what we wrote");
    }
  }
  const std::uint32_t sum = fnv1a(payload);
  std::printf("read back %u bytes %u time(s), each the same as written: \"%.*s\", fnv1a 0x%08x\n", opts.size,
              opts.iters, static_cast<int>(std::min<std::size_t>(opts.size, payload_text.size())), payload.data(), sum);

  // The notice: the server's CPU saw neither the writes nor the reads.
  const auto notice_bytes = encode_notice({opts.size, sum});
  char* notice_at = source.data() + opts.size;
  std::memcpy(notice_at, notice_bytes.data(), notice_size);
  ibv_sge notice_sge{reinterpret_cast<std::uintptr_t>(notice_at), notice_size, source.lkey()};
  ibv_send_wr wr{};
  wr.wr_id = 3;
  wr.sg_list = &notice_sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  std::printf("notice by Send: %u bytes, fnv1a 0x%08x\n", opts.size, sum);
  post_and_time(dev, id->qp, wr, opts.peer.wait_ms, "the notice", true);

  // Leaving, the rdma_cm way: a disconnect request both sides see as an event.
  rdma::check_errno(rdma_disconnect(id.get()), "rdma_disconnect");
  await(channel, id.get(), RDMA_CM_EVENT_DISCONNECTED, "rdma_disconnect", opts.peer.wait_ms,
        "--wait-ms " + std::to_string(opts.peer.wait_ms));
  std::printf("DISCONNECTED\n");
  return 0;
}

}  // namespace stage07
