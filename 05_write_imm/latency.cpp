// Latency mode (--latency --iters N): a ping-pong of Writes with Immediate,
// the way ib_write_lat measures, but with the notice in the completion
// instead of a polled byte. The client writes DATA|0 into slot 0 and waits
// for the server's answer, a Write with Immediate into the client's own
// region; half of each round trip is one sample. Only one write in 64 is
// signaled (rdma::signal_interval): the send completions are reaped on the
// way, and a write is posted only while the send queue has room for it
// (rdma::send_queue_room), on either side.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "rdma_tutorial/tick_clock.hpp"
#include "stage.hpp"

namespace stage05 {

namespace {

// A Write with Immediate DATA|0 of `bytes` from `from` to `to_addr`; inline
// when small (the device then need not read our buffer), signaled as
// `room` says. The caller has made sure the queue has room for it.
void post_ping(ibv_qp* qp, const char* from, std::uint32_t bytes, std::uint32_t lkey,
               const rdma::wire::endpoint& to, rdma::send_queue_room& room) {
  const std::uint64_t n = room.next();
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(from), bytes, lkey};
  ibv_send_wr wr{};
  wr.wr_id = pong_tag | n;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = room.signaled(n) ? unsigned{IBV_SEND_SIGNALED} : 0u;
  if (bytes <= 64) wr.send_flags |= IBV_SEND_INLINE;
  wr.imm_data = htonl(rdma::imm::encode(imm_data, 0));
  wr.wr.rdma.remote_addr = to.addr;
  wr.wr.rdma.rkey = to.rkey;
  ibv_send_wr* bad = nullptr;
  // The hot path builds no string: the call's name is made only on failure.
  if (const int rc = ibv_post_send(qp, &wr, &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_send(ping " + std::to_string(n) + ")");
  }
  room.posted();
}

}  // namespace

void ping_pong(const rdma::rdma_device& dev, ibv_qp* qp, const rdma::registered_buffer& source,
               const rdma::tcp::socket& server, const rdma::wire::endpoint& peer, const options& opts) {
  std::vector<double> samples;
  samples.reserve(*opts.iters);
  rdma::send_queue_room room(opts.tx_depth, rdma::signal_interval(opts.tx_depth));
  auto reap = [&](const ibv_wc& wc) {  // one completion: a send's, or the answer's Recv
    rdma::check_wc(wc);
    if ((wc.wr_id & pong_tag) != 0) {
      room.completed(wc.wr_id & ~pong_tag);
      return false;
    }
    if (immediate_of(wc) != rdma::imm::encode(imm_data, 0)) {
      throw rdma::tutorial_error("an answer that is not DATA|0: " + rdma::describe_wc(wc));
    }
    repost_receive(qp);
    return true;
  };
  // One read of the CPU's counter per round trip: each sample is the time
  // from one ping's post to the next's, in ticks, made microseconds once at
  // the end (tick_clock.hpp: in the guests here steady_clock is a system
  // call of about 1 us, as much as part of what is measured).
  rdma::tick_calibration calibration;
  calibration.start();
  rdma::ticks start = rdma::read_ticks();
  for (std::uint32_t n = 0; n < *opts.iters; ++n) {
    // A full queue (a short --tx-depth, ACKs late) waits for a signaled
    // send to complete; an answer polled meanwhile is this round's.
    bool answered = false;
    ibv_wc wc{};
    rdma::wait_for_room(room, 1, server, "the server", opts.peer.wait_ms, [&] {
      while (!room.fits() && rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1) answered = reap(wc) || answered;
    });
    if (answered) throw rdma::tutorial_error("an answer before our ping " + std::to_string(n) + ": " + rdma::describe_wc(wc));
    post_ping(qp, source.data(), opts.size, source.lkey(), peer, room);
    rdma::wait_while_connected(server, "the server", "an answer", opts.peer.wait_ms, [&] {
      while (!answered && rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1) answered = reap(wc);
      return answered;
    }, rdma::waiting::spins);
    const rdma::ticks now = rdma::read_ticks();
    samples.push_back(rdma::tick_span(start, now));
    start = now;
  }
  const double us_per_half_tick = calibration.us_per_tick() / 2;
  for (double& sample : samples) sample *= us_per_half_tick;
  // The signaled pings still due, so that the next completion polled is
  // END's (the unsignaled pings after them leave the queue with END).
  rdma::wait_while_connected(server, "the server", "the last pings' completions", opts.peer.wait_ms, [&] {
    ibv_wc wc{};
    while (room.signaled_due() && rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1) reap(wc);
    return !room.signaled_due();
  });
  std::printf("%s", latency_report(opts.size, std::move(samples)).c_str());
}

void answer(const target& t, std::uint32_t slot, std::uint32_t bytes) {
  // The client's pings wait for our answers, so only our own completions
  // can be late: poll for them (a Recv polled meanwhile would be a ping
  // the client sent without waiting, which its protocol never does).
  rdma::wait_for_room(*t.answers, 1, t.client, "the client", t.opts.peer.wait_ms, [&] {
    ibv_wc wc{};
    while (!t.answers->fits() && rdma::check_poll(ibv_poll_cq(t.dev.cq.get(), 1, &wc)) == 1) {
      rdma::check_wc(wc);
      if ((wc.wr_id & pong_tag) == 0) throw rdma::tutorial_error("a ping before our answer: " + rdma::describe_wc(wc));
      t.answers->completed(wc.wr_id & ~pong_tag);
    }
  });
  post_ping(t.qp, t.landing.data() + std::size_t{slot} * t.opts.size, bytes, t.landing.lkey(), t.peer, *t.answers);
}

}  // namespace stage05
