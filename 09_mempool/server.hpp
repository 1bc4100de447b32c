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
#include "rdma_tutorial/srq.hpp"
#include "stage.hpp"

namespace stage09 {

using steady = std::chrono::steady_clock;

// wr_id of the server's own work requests; the SRQ's Recvs use small
// numbers. The top bits tell a completion's kind even when its status is an
// error (and its opcode garbage); the low bits the client's number (a
// credit write's: how many that client has had).
constexpr std::uint64_t credit_tag = 1ull << 63;  // a credit write
constexpr std::uint64_t bind_tag = 1ull << 62;    // the memory window's bind
constexpr std::uint64_t drain_tag = 1ull << 61;   // the marker after the QP went to ERR
constexpr std::uint64_t number_mask = 0xffffffffull;
// Each client's send queue: credit writes (one in signal_every signaled),
// the bind and the marker.
constexpr std::uint32_t send_queue = 32;
constexpr std::uint32_t signal_every = 8;
// Consumed Recvs are reposted together, this many at a time.
constexpr std::uint32_t repost_batch = 16;

// How a client goes: done (END checked, then disconnected), lost (it
// disconnected or failed mid-stream: its process or host died) or dropped
// (it broke the rules: the server disconnected it).
enum class parting { done, lost, dropped };

struct client {
  std::uint32_t number = 0;  // 1, 2, ... in order of arrival
  // Members in teardown order, the reverse of this list: the window first,
  // then the QP, then the id. By then the QP is in ERR and drained, so
  // nothing comes through the window; and on Soft-RoCE a window bound on a
  // QP holds that QP: ibv_destroy_qp before ibv_dealloc_mw blocked the
  // whole server in the kernel for seconds (measured).
  rdma::cm_id_ptr id;
  rdma::cm_qp_ptr qp;
  rdma::mw_ptr window;
  std::uint32_t qp_num = 0;
  chunk granted;             // back to the pool only once the QP is gone
  grant slots;
  std::uint32_t window_rkey = 0;
  std::uint64_t credit_addr = 0;
  std::uint32_t credit_rkey = 0;
  std::uint32_t credit_batch = 1;  // records consumed per credit return (1 in latency mode)
  bool open = false;         // the window is bound and the first edge went out
  bool finished = false;     // END checked
  bool leaving = false;      // QP in ERR: `departure` says when it may be destroyed
  std::optional<rdma::srq_qp_departure> departure;
  rdma::last_wqe_notice last_wqe;  // the event, asked for or not (common/include/rdma_tutorial/srq.hpp)
  parting how = parting::done;
  std::string why;
  sequence_tracker seq;
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
  std::uint64_t consumed = 0;      // records and END taken: what the edge counts
  std::uint64_t edge_told = 0;     // the last edge written into its credit word
  std::uint64_t credit_writes = 0; // posted
  std::uint64_t credit_reaped = 0; // known complete
  steady::time_point last_heard = steady::now();
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
  void post_credit(client& c, std::uint64_t edge);
  void refill_srq();
  void look_around(int wait_ms);
  void report() const;
  // clients.cpp
  void on_cm_event(const rdma::cm::cm_event& ev);
  void join(const rdma::cm::cm_event& request);
  void turn_away(rdma_cm_id* id, const std::string& why);
  void bind_window(client& c);
  void on_async_event(const ibv_async_event& e);
  void let_go(client& c, parting how, const std::string& why);
  void forget_drained();
  client* by_qp(std::uint32_t qp_num);
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
  rdma::async_events async_;
  std::vector<std::unique_ptr<client>> clients_;

  std::uint32_t joined_ = 0;
  std::uint32_t finished_ = 0;
  std::uint32_t lost_ = 0;
  std::uint32_t dropped_ = 0;
  std::uint32_t rejected_ = 0;
  std::uint64_t all_records_ = 0;
  std::uint64_t stray_ = 0;         // completions of QPs already gone
  std::uint64_t cq_empties_ = 0;    // polls that found the CQ empty: a leaving QP's last WQE is counted after one
  std::chrono::milliseconds last_wqe_wait_{0};  // how long a leaving QP waits for IBV_EVENT_QP_LAST_WQE_REACHED
  std::uint32_t recvs_waiting_ = 0; // consumed, not yet reposted
  std::uint32_t limit_events_ = 0;
  std::uint64_t wake_ups_ = 0;      // CQ events taken
  std::uint64_t empty_wake_ups_ = 0;
  std::vector<std::string> parted_;  // one line per client gone, for the report
  steady::time_point first_record_{};
  steady::time_point last_end_{};
  steady::time_point join_deadline_;
};

}  // namespace stage09
