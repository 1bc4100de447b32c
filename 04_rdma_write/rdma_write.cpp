// Stage 04 — one-sided RDMA Write with an out-of-band handshake.
//
// Two processes, on one host or on two: the server exposes a landing region
// and tells the client, over TCP, where it is (address, rkey, length); the
// client writes into it with RDMA Write, which the server's CPU never sees,
// then tells the server it is done (a Send, or a flag word the server
// watches). protocol.hpp has every message in order.
//
//   server:  rdma_write [--bind ADDR] [-p PORT] [--size BYTES] [--notify send|flag]
//   client:  rdma_write -s ADDR [-p PORT] [--size BYTES] [--notify send|flag]
//                       [--iters N [--tx-depth N] [--cq-mod N]]
//   both:    [-d NAME] [-i PORT] [-g INDEX] [--wait-ms MS]
//
// Read it beside docs/04-rdma-write.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cstdio>
#include <random>
#include <string>

#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/port.hpp"
#include "stage.hpp"

namespace stage04 {

rdma::qp_ptr create_qp(const rdma_device& dev, std::uint32_t tx_depth) {
  ibv_qp_cap cap{};
  cap.max_send_wr = tx_depth;  // the writes in flight; the notice goes after they complete
  cap.max_recv_wr = 1;         // the server's one Recv for the notice
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = notice_size;
  return rdma::create_rc_qp(dev.pd.get(), dev.cq.get(), dev.cq.get(), cap, "our QP");
}

rdma::wire::endpoint local_endpoint(const rdma_device& dev, const ibv_qp* qp) {
  // A fresh first PSN per connection, so packets of an earlier connection
  // that reused this QPN cannot be taken for this one's (24 bits).
  std::random_device random;
  rdma::wire::endpoint e;
  e.qp_num = qp->qp_num;
  e.psn = random() & 0xffffff;
  e.gid = dev.gid.gid;
  return e;
}

void connect_to_peer(const rdma_device& dev, ibv_qp* qp, const rdma::wire::endpoint& ours,
                     const rdma::wire::endpoint& peer) {
  rdma::connect_qp_rts(qp, "our QP", ours.psn, rdma::peer_info{peer.qp_num, peer.psn, peer.gid}, dev.params);
  std::printf("QP 0x%x: RESET -> INIT -> RTR -> RTS (sq_psn 0x%x, rq_psn 0x%x)\n", qp->qp_num, ours.psn, peer.psn);
}

}  // namespace stage04

int main(int argc, char** argv) {
  return rdma::run_main("rdma_write", [&] {
    stage04::options opts;
    if (!stage04::parse_options(argc, argv, opts)) return 0;

    // Stages 01-03: the device, its RoCE v2 GID, the port's MTU, a PD, a CQ.
    stage04::rdma_device dev;
    dev.ctx = rdma::open_device(opts.device.device);
    dev.gid = rdma::choose_gid(dev.ctx.get(), opts.device.port, opts.device.gid_index);
    ibv_port_attr port_attr{};
    rdma::check_rc(ibv_query_port(dev.ctx.get(), opts.device.port, &port_attr), "ibv_query_port");
    dev.params.port = opts.device.port;
    if (dev.gid.index > 255) {  // the address vector's sgid_index is 8 bits wide
      throw rdma::tutorial_error("GID index " + std::to_string(dev.gid.index) + " does not fit sgid_index (0-255)",
                                 "pick an entry below 256 with -g; 01_devices/devices lists them");
    }
    dev.params.gid_index = static_cast<std::uint8_t>(dev.gid.index);
    // Both ends must use the same path MTU: the port's active_mtu, which is
    // 1024 on every Soft-RoCE link over a 1500-byte Ethernet MTU.
    dev.params.path_mtu = port_attr.active_mtu;
    // Only the server's QP accepts RDMA Writes; the client's accepts nothing.
    dev.params.qp_access_flags = opts.server.empty() ? IBV_ACCESS_REMOTE_WRITE : 0;
    std::printf("%s port %u, GID [%d] %s (%s), path_mtu %d\n", ibv_get_device_name(dev.ctx->device),
                opts.device.port, dev.gid.index, rdma::gid_to_string(dev.gid.gid).c_str(),
                rdma::gid_type_name(dev.gid.type), rdma::mtu_bytes(dev.params.path_mtu));
    dev.pd.reset(rdma::check_ptr(ibv_alloc_pd(dev.ctx.get()), "ibv_alloc_pd"));
    // Selective signaling keeps at most tx_depth / cq_mod + 1 completions due.
    dev.cq.reset(rdma::check_ptr(ibv_create_cq(dev.ctx.get(), static_cast<int>(opts.tx_depth) + 2, nullptr, nullptr, 0),
                                 "ibv_create_cq"));

    return opts.server.empty() ? stage04::run_server(opts, dev) : stage04::run_client(opts, dev);
  });
}
