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
#include "rdma_tutorial/srq_server.hpp"
#include "stage.hpp"

namespace stage06 {

using steady = std::chrono::steady_clock;  // what is measured
using coarse = rdma::coarse_clock;         // deadlines (coarse_clock.hpp)
using rdma::parting;

// A client as this stage knows it: the book-keeping every SRQ server keeps
// (rdma::srq_client: its QP's number, its credit writes, how it leaves)
// and what stage 06 adds: the TCP connection, its window and its ledger.
struct client : rdma::srq_client {
  rdma::tcp::socket socket;
  rdma::wire::endpoint peer;  // its QP and its credit word
  // Its window's own registration, declared before the QP so the QP goes
  // first: the rkey this client holds opens its window and nothing else.
  rdma::mr_ptr window;
  rdma::qp_ptr owned_qp;
  char* slots = nullptr;  // its window in the landing memory
  credit_ledger ledger;

  client(std::uint32_t n, rdma::tcp::socket s, const rdma::wire::endpoint& p, rdma::mr_ptr mr, rdma::qp_ptr q,
         char* window_slots, const srq_sizing& sizing, std::uint32_t credit_batch)
      : socket(std::move(s)), peer(p), window(std::move(mr)), owned_qp(std::move(q)), slots(window_slots),
        ledger(sizing.window, credit_batch) {
    number = n;
    qp = owned_qp.get();
    qp_num = qp->qp_num;
    credit_addr = peer.addr;
    credit_rkey = peer.rkey;
  }
};

class server {
 public:
  server(const options& opts, const rdma::rdma_device& dev, const srq_sizing& sizing)
      : opts_(opts), dev_(dev), sizing_(sizing),
        landing_(std::size_t{sizing.clients} * sizing.window * opts.size),
        srq_(create_srq(dev.pd.get(), sizing.depth)),
        refill_(srq_.get(), sizing.depth, sizing.batch, sizing.limit),
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
  void let_go(client& c, parting how, const std::string& why);
  void forget(std::unique_ptr<client> c, const std::string& how);
  void print_progress(steady::time_point now);

  const options& opts_;
  const rdma::rdma_device& dev_;
  srq_sizing sizing_;
  rdma::aligned_buffer landing_;
  // The SRQ outlives every QP made with it (the QPs sit in clients_, which
  // is declared later and so destroyed first).
  rdma::srq_ptr srq_;
  rdma::srq_refill refill_;
  async_events events_;
  rdma::tcp::socket listener_;
  // The clients and their departures (common/include/rdma_tutorial/srq_server.hpp); a
  // leaving QP waits this long for IBV_EVENT_QP_LAST_WQE_REACHED.
  rdma::srq_clients<client> clients_{rdma::last_wqe_wait(dev_.limits.attr(), std::chrono::milliseconds(opts_.peer.wait_ms))};
  std::uint32_t joined_ = 0;
  std::uint32_t finished_ = 0;
  std::uint64_t all_records_ = 0;
  steady::time_point first_record_{};  // the aggregate rate's span: first record to last END
  steady::time_point last_end_{};
  // --progress-ms: records per client number, kept after the client leaves.
  std::vector<std::uint64_t> tally_;
  steady::time_point next_progress_{};
  std::uint64_t progress_printed_ = 0;  // all_records_ at the last progress line
  coarse::time_point join_deadline_ = coarse::now() + std::chrono::milliseconds(opts_.peer.accept_ms);
};

}  // namespace stage06
