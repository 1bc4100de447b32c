// The exchange: a ping-pong of Sends, burst against burst, the way
// ib_send_lat measures (with -e: asleep on events). What differs between
// --poll, --event and --hybrid is only how a side waits for the peer's
// burst: wait_for_burst below. Only one Send in 64 is signaled, so a side
// wakes for the peer's messages, not for its own sends; a burst is posted
// only once the send queue has room for all of it (rdma::send_queue_room).
// The work requests are built once. What is measured and printed around
// the rounds is bench.cpp's, not the lesson.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage08 {

namespace {

constexpr std::uint32_t signal_every = 64;

// Unsignaled sends leave the queue only when a later signaled one is
// polled: up to 2 x 64 of them, plus the burst being posted.
std::uint32_t send_queue_depth(const run_params& run) { return 2 * signal_every + run.burst; }

class ping_pong {
 public:
  explicit ping_pong(const side& s)
      : s_(s), solicited_only_(s.run.solicited_every != 0), room_(send_queue_depth(s.run), signal_every),
        sges_(s.run.burst), wrs_(s.run.burst), bench_(s, counts_) {
    // The burst's work requests, built once: a round changes only their
    // wr_id, their flags and the header in each message.
    for (std::uint32_t i = 0; i < s.run.burst; ++i) {
      const char* message = s.buffers.send.data() + std::size_t{i} * s.run.size;
      sges_[i] = {reinterpret_cast<std::uintptr_t>(message), s.run.size, s.buffers.send.lkey()};
      ibv_send_wr& wr = wrs_[i];
      wr.sg_list = &sges_[i];
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.next = i + 1 < s.run.burst ? &wrs_[i + 1] : nullptr;
    }
  }

  void run() {
    if (s_.opts.mode != wait_mode::poll) {
      // Armed before the first wait; then one look, since whatever arrived
      // before the arm raised no event. That look may already take part of
      // round 0 (the server: the client sends as soon as it has our
      // endpoint), so it counts toward round 0 like any other.
      s_.events.arm(solicited_only_);
      s_.events.drain([this](const ibv_wc& wc) { take(wc); });
    }
    for (round_ = 0; round_ <= s_.run.rounds; ++round_) {
      what_.name(round_);
      if (s_.client) {
        bench_.before_post(round_);  // --rate: the round's time
        post_burst();
      }
      wait_for_burst();
      received_ = 0;  // the next round's burst comes only after our answer
      if (!s_.client) post_burst();
      bench_.after_round(round_);  // round 0, the warm-up, is not counted
    }
    bench_.report();
  }

 private:
  // One completion: a signaled send's, or a Recv of the peer's burst.
  void take(const ibv_wc& wc) {
    rdma::check_wc(wc);
    if (wc.opcode == IBV_WC_SEND) {  // its only news: the send queue has room again
      room_.completed(wc.wr_id);
      return;
    }
    if (wc.opcode != IBV_WC_RECV) throw rdma::tutorial_error("an unexpected completion: " + rdma::describe_wc(wc));
    const char* message = s_.buffers.recv.data() + wc.wr_id * s_.run.size;
    const header h = read_header(message);
    // RC delivers in order, and a burst comes only after ours: anything
    // else means a message was lost, or taken twice.
    if (wc.byte_len != s_.run.size || h.round != round_ || h.index != received_) {
      throw rdma::tutorial_error("message round " + std::to_string(h.round) + " #" + std::to_string(h.index) + " (" +
                                 std::to_string(wc.byte_len) + " bytes) arrived; round " + std::to_string(round_) +
                                 " #" + std::to_string(received_) + " (" + std::to_string(s_.run.size) +
                                 " bytes) was due");
    }
    s_.buffers.post_receive(s_.qp, wc.wr_id);
    ++received_;
  }

  bool burst_complete() const { return received_ == s_.run.burst; }

  // The burst of this round as one list of work requests (one ibv_post_send),
  // once the send queue has room for all of it. ACKs normally free it long
  // before (a round trip per round); a slow peer or a short queue must not
  // make us post into a full one.
  void post_burst() {
    const run_params& run = s_.run;
    rdma::wait_for_room(room_, run.burst, s_.peer, s_.peer_name, s_.opts.peer.wait_ms, [this] {
      s_.events.drain([this](const ibv_wc& wc) { take(wc); });
    });
    for (std::uint32_t i = 0; i < run.burst; ++i) {
      write_header(s_.buffers.send.data() + std::size_t{i} * run.size, round_, i);
      ibv_send_wr& wr = wrs_[i];
      wr.wr_id = room_.next() + i;
      wr.send_flags = 0;
      if (room_.signaled(wr.wr_id)) wr.send_flags |= IBV_SEND_SIGNALED;
      if (run.size <= 64) wr.send_flags |= IBV_SEND_INLINE;
      // Solicited: the receiver's CQ, armed for solicited completions
      // only, raises an event for this one (and for no unsolicited one).
      if (solicited(run, i)) wr.send_flags |= IBV_SEND_SOLICITED;
    }
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(s_.qp, wrs_.data(), &bad); rc != 0) {
      throw rdma::verbs_error(rc, "ibv_post_send(round " + std::to_string(round_) + ")");
    }
    room_.posted(run.burst);
  }

  void wait_for_burst() {
    auto take_one = [this](const ibv_wc& wc) { take(wc); };
    notified_cq& events = s_.events;
    const int wait_ms = s_.opts.peer.wait_ms;
    const std::string_view what = what_.view();
    switch (s_.opts.mode) {
      case wait_mode::poll:
        // Stage 05's way: look, look again, never sleep.
        rdma::wait_while_connected(s_.peer, s_.peer_name, what, wait_ms, [this] {
          s_.events.drain([this](const ibv_wc& wc) { take(wc); });
          return burst_complete();
        }, rdma::waiting::spins);
        return;
      case wait_mode::event:
        while (!burst_complete()) events.sleep_and_drain(s_.peer, s_.peer_name, what, wait_ms, solicited_only_, take_one);
        return;
      case wait_mode::hybrid: {
        using clock = std::chrono::steady_clock;
        spin_then_sleep policy(s_.opts.spin_us);
        std::optional<clock::time_point> start;
        auto elapsed_us = [&] {
          const auto now = clock::now();
          if (!start) start = now;
          return std::chrono::duration<double, std::micro>(now - *start).count();
        };
        for (std::uint32_t looks = 1;; ++looks) {
          events.drain(take_one);
          if (burst_complete()) {
            ++counts_.spinning;
            return;
          }
          if (!policy.keep_spinning(looks, elapsed_us)) break;
        }
        // Going to sleep. The CQ may still be armed from the last sleep, and
        // what we polled while spinning raised its event: take those first
        // (or the sleep would end at once, on nothing). Then arm, then look
        // once more: a completion that came after the last look and before
        // the arm raised no event.
        events.take_stale_events();
        events.arm(solicited_only_);
        events.drain(take_one);
        if (burst_complete()) {
          ++counts_.after_arm;
          return;
        }
        while (!burst_complete()) events.sleep_and_drain(s_.peer, s_.peer_name, what, wait_ms, solicited_only_, take_one);
        ++counts_.slept;
        return;
      }
    }
  }

  const side& s_;
  const bool solicited_only_;
  std::uint32_t round_ = 0;
  std::uint32_t received_ = 0;  // of this round's burst (zeroed only once the burst is complete)
  rdma::send_queue_room room_;
  std::vector<ibv_sge> sges_;       // one per message of the burst, built once
  std::vector<ibv_send_wr> wrs_;    // chained by next, built once
  round_words what_;                // "round N's messages"
  wait_counts counts_;
  round_bench bench_;
};

}  // namespace

message_buffers::message_buffers(ibv_pd* pd, const run_params& r)
    : run(r),
      send(pd, std::size_t{r.burst} * r.size, 0, "send buffer"),
      recv(pd, std::size_t{2} * r.burst * r.size, IBV_ACCESS_LOCAL_WRITE, "receive buffer") {}

void message_buffers::post_receive(ibv_qp* qp, std::uint64_t slot) const {
  ibv_sge sge{reinterpret_cast<std::uintptr_t>(recv.data() + slot * run.size), run.size, recv.lkey()};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp, &wr, &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_recv(slot " + std::to_string(slot) + ")");
  }
}

void message_buffers::post_receives(ibv_qp* qp) const {
  for (std::uint32_t slot = 0; slot < slots(); ++slot) post_receive(qp, slot);
}

rdma::qp_ptr create_qp(const rdma::rdma_device& dev, const notified_cq& events, const run_params& run, bool client) {
  // The queues the run needs, against what the device takes: too many for
  // the client's own --burst is a usage error; the server, which only
  // follows the client's, cannot serve that run (exit 1).
  const char* burst = client ? "--burst" : "";
  dev.limits.queue_depth(send_queue_depth(run), client ? "Sends in the send queue" : "Sends in the send queue for the client's burst", burst);
  dev.limits.queue_depth(2 * run.burst, client ? "Recvs posted" : "Recvs posted for the client's burst", burst);
  ibv_qp_cap cap{};
  cap.max_send_wr = send_queue_depth(run);
  cap.max_recv_wr = 2 * run.burst;
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  cap.max_inline_data = 64;  // small Sends travel inside the WQE
  // One CQ, bound to the channel, for both queues.
  return rdma::create_rc_qp(dev.pd.get(), events.cq(), events.cq(), cap, "our QP");
}

void exchange(const side& s) { ping_pong(s).run(); }

}  // namespace stage08
