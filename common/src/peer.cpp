#include "rdma_tutorial/peer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/port.hpp"
#include "rdma_tutorial/transport.hpp"
#include "rdma_tutorial/waiting.hpp"

namespace rdma {

rdma_device open_rdma_device(const device_options& opts, int cq_entries, unsigned qp_access, std::string_view cq_option,
                             std::string_view uses_write_with_imm) {
  rdma_device dev;
  dev.ctx = open_device(opts.device);
  dev.limits = device_limits(dev.ctx.get());
  // What iWARP lacks, before anything is created (transport.hpp): the
  // stage's own operation first, then the way it connects.
  if (!uses_write_with_imm.empty()) {
    refuse_without_write_with_imm(dev.ctx.get(), dev.limits.attr(), uses_write_with_imm);
  }
  refuse_qp_by_hand_on_iwarp(dev.ctx.get(), "this stage's TCP handshake does (QPN and PSN swapped, ibv_modify_qp to RTS)");
  check_rc(ibv_query_port(dev.ctx.get(), opts.port, &dev.port_attr), "ibv_query_port");
  const ibv_port_attr& port_attr = dev.port_attr;
  if (port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
    throw tutorial_error(std::string(ibv_get_device_name(dev.ctx->device)) + " port " + std::to_string(opts.port) +
                             " is not Ethernet (link layer " + std::to_string(port_attr.link_layer) +
                             ", InfiniBand): this stage reaches its peer by GID over RoCE and carries no LID",
                         "use a RoCE port (-d, -i), or stage 07's rdma_cm, which finds the path on InfiniBand too");
  }
  dev.gid = choose_gid(dev.ctx.get(), opts.port, opts.gid_index);
  dev.params.port = opts.port;
  dev.params.gid_index = sgid_index(dev.gid.index);
  dev.params.path_mtu = port_attr.active_mtu;
  dev.params.qp_access_flags = qp_access;
  dev.pd.reset(check_ptr(ibv_alloc_pd(dev.ctx.get()), "ibv_alloc_pd"));
  if (cq_entries > 0) {  // 0: the stage makes its own (stage 08, bound to a completion channel)
    dev.limits.cq_entries(static_cast<std::uint64_t>(cq_entries), cq_option);
    dev.cq.reset(check_ptr(ibv_create_cq(dev.ctx.get(), cq_entries, nullptr, nullptr, 0), "ibv_create_cq"));
  }
  return dev;
}

std::string describe(const rdma_device& dev) {
  return std::string(ibv_get_device_name(dev.ctx->device)) + " port " + std::to_string(dev.params.port) + ", GID [" +
         std::to_string(dev.gid.index) + "] " + gid_to_string(dev.gid.gid) + " (" + gid_type_name(dev.gid.type) +
         "), path_mtu " + std::to_string(mtu_bytes(dev.params.path_mtu));
}

ibv_mtu agree_path_mtu(ibv_mtu ours, std::uint32_t peer_bytes) { return std::min(ours, mtu_enum(peer_bytes)); }

wire::endpoint local_endpoint(const rdma_device& dev, const ibv_qp* qp) {
  std::random_device random;
  wire::endpoint e;
  e.qp_num = qp->qp_num;
  e.psn = random() & 0xffffff;
  e.gid = dev.gid.gid;
  e.mtu = static_cast<std::uint32_t>(mtu_bytes(dev.params.path_mtu));
  return e;
}

void connect_to_peer(ibv_qp* qp, const wire::endpoint& ours, const wire::endpoint& peer, const qp_params& params) {
  // The path MTU both ends agree on: the smaller port's. Each side's own
  // active_mtu says only what its port takes; a packet longer than the
  // other port's (or than a switch's between them) is dropped, and RC
  // then resends it until retry_cnt runs out.
  qp_params agreed = params;
  agreed.path_mtu = agree_path_mtu(params.path_mtu, std::min(ours.mtu, peer.mtu));
  connect_qp_rts(qp, "our QP", ours.psn, peer_info{peer.qp_num, peer.psn, peer.gid}, agreed);
}

std::string connect_and_describe(ibv_qp* qp, const wire::endpoint& ours, const wire::endpoint& peer,
                                 const qp_params& params, bool with_retries) {
  connect_to_peer(qp, ours, peer, params);
  char line[160];
  std::snprintf(line, sizeof line, "QP 0x%x: RESET -> INIT -> RTR -> RTS (sq_psn 0x%x, rq_psn 0x%x", qp->qp_num, ours.psn,
                peer.psn);
  std::string text = line;
  if (with_retries) {
    std::snprintf(line, sizeof line, ", retry_cnt %u, rnr_retry %u", params.retry_cnt, params.rnr_retry);
    text += line;
  }
  return text + ")";
}

peer_link accept_peer(const tcp::socket& listener, int accept_ms, int wait_ms) {
  tcp::socket client = tcp::accept_one(listener, tcp::after_ms(accept_ms));
  const wire::endpoint peer = tcp::receive_endpoint(client, tcp::after_ms(wait_ms));
  return {std::move(client), peer};
}

peer_link connect_peer(const std::string& host, std::uint16_t port, const wire::endpoint& ours, int wait_ms) {
  tcp::socket server = tcp::connect_to(host, port, tcp::after_ms(wait_ms));
  tcp::send_endpoint(server, ours, tcp::after_ms(wait_ms));
  const wire::endpoint peer = tcp::receive_endpoint(server, tcp::after_ms(wait_ms));
  return {std::move(server), peer};
}

// Called once every looks_per_clock looks, and at every look once napping
// (wait_while_connected, peer.hpp). The deadline and the grace period are
// read on the coarse clock, never a system call (coarse_clock.hpp); only a
// wait that may nap reads the precise one, until it naps, since 100 us is
// finer than the coarse clock's tick.
bool wait_bound::peer_closed() {
  const auto now = coarse_clock::now();
  if (!start_) start_ = last_socket_look_ = now;
  if (now - *start_ > std::chrono::milliseconds(wait_ms_)) {
    throw tutorial_error("nothing within " + std::to_string(wait_ms_) + " ms while we waited for " + std::string(what_),
                         silent_hint_.empty()
                             ? std::string(who_) + " is stuck or its packets do not arrive; its own output says which"
                             : std::string(silent_hint_));
  }
  if (how_ == waiting::backs_off && !napping_) {
    const auto fine = std::chrono::steady_clock::now();
    if (!fine_start_) fine_start_ = fine;
    napping_ = fine - *fine_start_ > waiting_policy::spin_before_napping;
  }
  if (!napping_ && now - last_socket_look_ < waiting_policy::socket_look_every) return false;
  last_socket_look_ = now;
  if (tcp::peer_closed(peer_, napping_ ? waiting_policy::nap_on_socket_ms : 0)) {
    grace_end_ = coarse_clock::now() + waiting_policy::grace_after_close;
    return true;
  }
  return false;
}

bool wait_bound::in_grace() const { return coarse_clock::now() < grace_end_; }

void wait_bound::throw_closed() const {
  throw tutorial_error(std::string(who_) + " closed the connection while we waited for " + std::string(what_),
                       std::string(who_) + " failed or gave up; its own output says why");
}

}  // namespace rdma
