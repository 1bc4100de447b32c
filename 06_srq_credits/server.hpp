// The server's state, shared by its two halves: server.cpp (the stream:
// completions, records, credits) and clients.cpp (the comings and goings:
// a client joining, leaving, dying, misbehaving; the async events).
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdma_tutorial/buffer.hpp"
#include "stage.hpp"

namespace stage06 {

using steady = std::chrono::steady_clock;

// wr_id of the server's own sends (the credit writes); SRQ Recvs use small
// numbers, so the top bit tells a completion's kind even when its status is
// an error and its opcode is garbage.
constexpr std::uint64_t credit_write_tag = 1ull << 63;
// wr_id of the marker posted after a QP went to ERR (see let_go).
constexpr std::uint64_t drain_tag = 1ull << 62;
// Credit writes a client's send queue holds; one in `signal_every` asks for
// a completion, which frees it and every one before it.
constexpr std::uint32_t send_queue = 32;
constexpr std::uint32_t signal_every = 8;

struct client {
  std::uint32_t number = 0;  // 1, 2, ... in order of arrival
  rdma::tcp::socket socket;
  rdma::wire::endpoint peer;  // its QP and its credit word
  // Its window's own registration, declared before the QP so the QP goes
  // first: the rkey this client holds opens its window and nothing else.
  rdma::mr_ptr window;
  rdma::qp_ptr qp;
  char* slots = nullptr;       // its window in the landing memory
  credit_ledger ledger;
  std::uint64_t records = 0;
  std::uint64_t credit_writes = 0;   // posted
  std::uint64_t credit_reaped = 0;   // known complete
  bool finished = false;             // END checked
  bool leaving = false;              // QP in ERR: `departure` says when it may be destroyed
  std::optional<rdma::srq_qp_departure> departure;
  rdma::last_wqe_notice last_wqe;  // the event, asked for or not (common/include/rdma_tutorial/srq.hpp)
  steady::time_point last_heard = steady::now();

  client(std::uint32_t n, rdma::tcp::socket s, const rdma::wire::endpoint& p, rdma::mr_ptr mr, rdma::qp_ptr q,
         char* window_slots, const srq_sizing& sizing, std::uint32_t credit_batch)
      : number(n), socket(std::move(s)), peer(p), window(std::move(mr)), qp(std::move(q)), slots(window_slots),
        ledger(sizing.window, credit_batch) {}
};

class server {
 public:
  server(const options& opts, const rdma::rdma_device& dev, const srq_sizing& sizing)
      : opts_(opts), dev_(dev), sizing_(sizing),
        landing_(std::size_t{sizing.clients} * sizing.window * opts.size),
        srq_(create_srq(dev.pd.get(), sizing.depth)),
        refill_(srq_.get(), sizing),
        events_(dev.ctx.get()),
        listener_(rdma::tcp::listen_on(opts.peer.bind, opts.peer.port)) {
    std::printf("posted %u Recvs on the SRQ%s\n", sizing.depth,
                sizing.limit != 0 ? (", limit armed at " + std::to_string(sizing.limit)).c_str() : "");
    std::printf("landing memory: %u x %u slots of %u bytes, one window per client, each registered when its "
                "client joins\n", sizing.clients, sizing.window, opts.size);
    std::printf("waiting for %u client%s on %s\n", sizing.clients, sizing.clients == 1 ? "" : "s",
                listener_.peer().c_str());
    std::fflush(stdout);
  }

  int run();

 private:
  void join();
  void take(const ibv_wc& wc);
  void take_record(client& c, const ibv_wc& wc);
  void return_credits();
  void look_around(int wait_ms);
  void on_async_event(const ibv_async_event& e);
  // How a client goes: done (END checked, then closed), lost (closed or
  // failed mid-stream: its process or host died) or dropped (it broke the
  // protocol: that one counts as a failure of the run).
  enum class parting { done, lost, dropped };
  void let_go(client& c, parting how, const std::string& why);
  void forget(client& c, const char* how);
  client* by_qp(std::uint32_t qp_num);
  void print_progress(steady::time_point now);

  const options& opts_;
  const rdma::rdma_device& dev_;
  srq_sizing sizing_;
  rdma::aligned_buffer landing_;
  // The SRQ outlives every QP made with it (the QPs sit in clients_, which
  // is declared later and so destroyed first).
  rdma::srq_ptr srq_;
  srq_refill refill_;
  async_events events_;
  rdma::tcp::socket listener_;
  std::vector<std::unique_ptr<client>> clients_;
  std::uint32_t joined_ = 0;
  std::uint32_t finished_ = 0;
  std::uint32_t lost_ = 0;
  std::uint32_t dropped_ = 0;
  std::uint64_t all_records_ = 0;
  std::uint64_t stray_ = 0;  // completions of QPs already gone
  std::uint64_t cq_empties_ = 0;  // polls that found the CQ empty: a leaving QP's last WQE is counted after one
  // How long a leaving QP waits for IBV_EVENT_QP_LAST_WQE_REACHED (clients.cpp).
  std::chrono::milliseconds last_wqe_wait_ = rdma::last_wqe_wait(dev_.limits.attr(), std::chrono::milliseconds(opts_.peer.wait_ms));
  steady::time_point first_record_{};  // the aggregate rate's span: first record to last END
  steady::time_point last_end_{};
  // --progress-ms: records per client number, kept after the client leaves.
  std::vector<std::uint64_t> tally_;
  steady::time_point next_progress_{};
  std::uint64_t progress_printed_ = 0;  // all_records_ at the last progress line
  steady::time_point join_deadline_ = steady::now() + std::chrono::milliseconds(opts_.peer.accept_ms);
};

}  // namespace stage06
