// The client's story: learn where the server's landing region is, write
// into it with one RDMA Write, then tell the server. (protocol.hpp has the
// messages in order.)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage04 {

int run_client(const options& opts, const rdma::rdma_device& dev) {
  // What we write from: the payload, then the 8-byte notice. Nothing here
  // is for the server to touch: no remote flag (local reads need none).
  const rdma::registered_buffer source(dev.pd.get(), opts.size + notice_size, 0, "payload");
  const std::span<char> payload = source.bytes().first(opts.size);
  fill_payload(payload);
  const rdma::qp_ptr qp = create_qp(dev, opts.tx_depth);

  rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());
  // What we tell the server: ours, or (--hostile, hostile.cpp) a lie.
  const rdma::wire::endpoint told = opts.hostile == hostile_kind::none ? ours : lie(ours, opts.hostile);
  const auto [server, peer] = rdma::connect_peer(opts.peer.server, opts.peer.port, told, opts.peer.wait_ms);
  std::printf("server %s: %s\n", server.peer().c_str(), rdma::wire::describe(peer).c_str());
  // The region is the payload's capacity plus the flag word; check before
  // writing, or the write fails remotely (IBV_WC_REM_ACCESS_ERR).
  if (peer.length < notice_size || opts.size > peer.length - notice_size) {
    throw rdma::tutorial_error("--size " + std::to_string(opts.size) + " does not fit the server's region (" +
                                   std::to_string(peer.length) + " bytes, 8 of them the flag word)",
                               "write at most " + std::to_string(peer.length - std::min<std::uint32_t>(peer.length, 8)) +
                                   " bytes, or start the server with a larger --size");
  }
  std::printf("%s\n", rdma::connect_and_describe(qp.get(), ours, peer, dev.params).c_str());

  ibv_sge sge{reinterpret_cast<std::uintptr_t>(payload.data()), opts.size, source.lkey()};
  std::uint32_t writes = 1;
  if (!opts.iters) {
    // One RDMA Write: our bytes go straight into the server's memory at
    // peer.addr, allowed by peer.rkey. Signaled, so it completes here.
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
    std::printf("RDMA Write: %u bytes to 0x%llx, rkey 0x%x\n", opts.size,
                static_cast<unsigned long long>(peer.addr), peer.rkey);
    // Post it, wait for its completion (common/src/completion.cpp), show
    // it, and only then judge its status: a failure is thrown with its
    // name, vendor_err and likely cause (check_wc).
    const ibv_wc wc = rdma::post_and_wait(qp.get(), dev.cq.get(), wr, opts.peer.wait_ms, "the RDMA Write");
    std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
    rdma::check_wc(wc);
  } else {
    writes = *opts.iters;
    write_stream(qp.get(), dev.cq.get(), sge, peer, opts);
  }

  // The notice: the server cannot know the write happened unless told.
  const auto notice_bytes = encode_notice({opts.size, writes});
  char* notice_at = source.data() + opts.size;
  std::memcpy(notice_at, notice_bytes.data(), notice_size);
  ibv_sge notice_sge{reinterpret_cast<std::uintptr_t>(notice_at), notice_size, source.lkey()};
  ibv_send_wr wr{};
  wr.wr_id = 2;
  wr.sg_list = &notice_sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;  // 8 bytes travel inside the WQE
  if (opts.notify == notify_by::send) {
    // A Send: consumes the Recv the server posted, and completes there.
    // On one QP it is delivered after the writes posted before it.
    wr.opcode = IBV_WR_SEND;
    std::printf("notice by Send: %u bytes, %u write(s)\n", opts.size, writes);
  } else {
    // Another RDMA Write, into the flag word after the payload: a QP
    // executes its writes in order, so the word turns non-zero only after
    // the payload is in place.
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = peer.addr + peer.length - notice_size;
    wr.wr.rdma.rkey = peer.rkey;
    std::printf("notice by RDMA Write to the flag word: %u bytes, %u write(s)\n", opts.size, writes);
  }
  const ibv_wc wc = rdma::post_and_wait(qp.get(), dev.cq.get(), wr, opts.peer.wait_ms, "the notice");
  std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
  rdma::check_wc(wc);
  std::printf("wrote \"%.*s\", fnv1a 0x%08x\n", static_cast<int>(std::min<std::size_t>(opts.size, payload_text.size())),
              payload.data(), fnv1a(payload));
  // Leaving closes the connection: the server's sign that we are done.
  return 0;
}

}  // namespace stage04
