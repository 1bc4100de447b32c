// The server's state, shared by its two halves: server.cpp (the loop, the
// records, the credits) and clients.cpp (clients joining with a grant and
// a memory window, and leaving, however they leave).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/srq_server.hpp"
#include "stage.hpp"

namespace stage09 {

using steady = std::chrono::steady_clock;  // what is measured
using coarse = rdma::coarse_clock;         // deadlines (coarse_clock.hpp)
using rdma::parting;

// wr_id of the memory window's bind; the credit writes and the drain
// marker are tagged as every SRQ server tags them (rdma::credit_tag,
// rdma::drain_tag: srq_server.hpp), the low bits the client's number.
constexpr std::uint64_t bind_tag = 1ull << 62;
// Consumed Recvs are reposted together, this many at a time.
constexpr std::uint32_t repost_batch = 16;

// A client: stage 06's book-keeping (rdma::srq_client: its QP's number,
// its credit writes, how it leaves) and what this stage adds: the
// connection's id, the chunk and the memory window over it, the edge.
struct client : rdma::srq_client {
  // Members in teardown order, the reverse of this list: the window first,
  // then the QP, then the id. By then the QP is in ERR and drained, so
  // nothing comes through the window; and on Soft-RoCE a window bound on a
  // QP holds that QP: ibv_destroy_qp before ibv_dealloc_mw blocked the
  // whole server in the kernel for seconds (measured).
  rdma::cm_id_ptr id;
  rdma::cm_qp_ptr owned_qp;
  rdma::mw_ptr window;
  chunk granted;             // back to the pool only once the QP is gone
  grant slots;
  std::uint32_t window_rkey = 0;
  std::uint32_t credit_batch = 1;  // records consumed per credit return (1 in latency mode)
  bool open = false;         // the window is bound and the first edge went out
  std::string why;           // why it left
  sequence_tracker seq;
  std::uint64_t bytes = 0;
  std::uint64_t consumed = 0;      // records and END taken: what the edge counts
  std::uint64_t edge_told = 0;     // the last edge written into its credit word
};

class server {
 public:
  server(const options& opts, rdma_event_channel* channel);
  int run();

 private:
  // server.cpp
  std::size_t drain_cq();
  void take(const ibv_wc& wc);
  void take_record(client& c, const ibv_wc& wc);
  void return_credits();
  void post_edge(client& c, std::uint64_t edge);
  void look_around(int wait_ms);
  void report() const;
  // clients.cpp, in the order a client lives
  void join(const rdma::cm::cm_event& request);
  void turn_away(rdma_cm_id* id, const std::string& why);
  void bind_window(client& c);
  void window_bound(client& c, const ibv_wc& wc);
  void on_cm_event(const rdma::cm::cm_event& ev);
  void on_async_event(const ibv_async_event& e);
  void let_go_the_silent();
  void let_go(client& c, parting how, const std::string& why);
  void forget(std::unique_ptr<client> c, const std::string& how);
  client* by_id(const rdma_cm_id* id);

  const options& opts_;
  rdma_event_channel* channel_;
  rdma::cm_id_ptr listener_;
  ibv_context* ctx_ = nullptr;  // librdmacm's, for the listener's device
  slot_layout layout_;
  std::uint32_t srq_depth_ = 0;
  std::uint32_t srq_limit_ = 0;
  std::uint32_t credit_batch_ = 0;
  // The device's limits, each request below checked against them before it
  // is made (server.cpp, checked_limits).
  rdma::device_limits limits_;
  // Members in teardown order, the reverse of this list: the clients' QPs
  // go first, then the SRQ, the CQ, the channel, the pool's registration,
  // the PD.
  rdma::pd_ptr pd_;
  memory_pool pool_;
  rdma::comp_channel_ptr comp_channel_;
  rdma::cq_ptr cq_;
  rdma::srq_ptr srq_;
  rdma::srq_refill refill_;
  rdma::async_events async_;
  // The clients and their departures (stage 06's: srq_server.hpp).
  rdma::srq_clients<client> clients_;

  std::uint32_t joined_ = 0;
  std::uint32_t finished_ = 0;
  std::uint32_t rejected_ = 0;
  std::uint64_t all_records_ = 0;
  std::uint64_t wake_ups_ = 0;      // CQ events taken
  std::uint64_t empty_wake_ups_ = 0;
  std::vector<std::string> parted_;  // one line per client gone, for the report
  steady::time_point first_record_{};
  steady::time_point last_end_{};
  coarse::time_point join_deadline_;
};

}  // namespace stage09
