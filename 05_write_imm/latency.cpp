// Latency mode (--latency --iters N): a ping-pong of Writes with Immediate,
// the way ib_write_lat measures, but with the notice in the completion
// instead of a polled byte. The client writes DATA|0 into slot 0 and waits
// for the server's answer, a Write with Immediate into the client's own
// region; half of each round trip is one sample. Only one write in 64 is
// signaled: the send completions are reaped on the way, never waited for.
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage05 {

namespace {

constexpr std::uint32_t signal_every = 64;

// A Write with Immediate DATA|0 of `bytes` from `from` to `to_addr`; inline
// when small (the device then need not read our buffer), signaled one in 64.
void post_ping(ibv_qp* qp, const char* from, std::uint32_t bytes, std::uint32_t lkey,
               const rdma::wire::endpoint& to, std::uint32_t n) {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(from), bytes, lkey};
  ibv_send_wr wr{};
  wr.wr_id = n;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = (n + 1) % signal_every == 0 ? unsigned{IBV_SEND_SIGNALED} : 0u;
  if (bytes <= 64) wr.send_flags |= IBV_SEND_INLINE;
  wr.imm_data = htonl(rdma::imm::encode(imm_data, 0));
  wr.wr.rdma.remote_addr = to.addr;
  wr.wr.rdma.rkey = to.rkey;
  ibv_send_wr* bad = nullptr;
  // The hot path builds no string: the call's name is made only on failure.
  if (const int rc = ibv_post_send(qp, &wr, &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_send(ping " + std::to_string(n) + ")");
  }
}

}  // namespace

void ping_pong(const rdma::rdma_device& dev, ibv_qp* qp, const rdma::registered_buffer& source,
               const rdma::tcp::socket& server, const rdma::wire::endpoint& peer, const options& opts) {
  std::vector<double> samples;
  samples.reserve(*opts.iters);
  std::uint32_t sends_due = 0;  // signaled pings whose completion has not been seen
  auto reap = [&](const ibv_wc& wc) {  // one completion: a send's, or the answer's Recv
    rdma::check_wc(wc);
    if ((wc.opcode & IBV_WC_RECV) == 0) {
      --sends_due;
      return false;
    }
    if (immediate_of(wc) != rdma::imm::encode(imm_data, 0)) {
      throw rdma::tutorial_error("an answer that is not DATA|0: " + rdma::describe_wc(wc));
    }
    post_receives(qp, 1);
    return true;
  };
  // One clock read per round trip: each sample is the time from one ping's
  // post to the next's (reading the clock can be a system call, see
  // common/src/peer.cpp, and would otherwise count twice).
  auto start = std::chrono::steady_clock::now();
  for (std::uint32_t n = 0; n < *opts.iters; ++n) {
    post_ping(qp, source.data(), opts.size, source.lkey(), peer, n);
    if ((n + 1) % signal_every == 0) ++sends_due;
    bool answered = false;
    ibv_wc wc{};
    rdma::wait_while_connected(server, "the server", "an answer", opts.peer.wait_ms, [&] {
      while (!answered && rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1) answered = reap(wc);
      return answered;
    }, rdma::waiting::spins);
    const auto now = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::micro>(now - start).count() / 2);
    start = now;
  }
  // The signaled sends still due, so the send queue is empty for END.
  rdma::wait_while_connected(server, "the server", "the last pings' completions", opts.peer.wait_ms, [&] {
    ibv_wc wc{};
    while (sends_due > 0 && rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1) reap(wc);
    return sends_due == 0;
  });
  std::printf("%s", latency_report(opts.size, std::move(samples)).c_str());
}

void answer(const target& t, std::uint32_t slot, std::uint32_t bytes, std::uint32_t n) {
  post_ping(t.qp, t.landing.data() + std::size_t{slot} * t.opts.size, bytes, t.landing.lkey(), t.peer, n);
}

}  // namespace stage05
