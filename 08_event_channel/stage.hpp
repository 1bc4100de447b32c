// Stage 08 — sleeping instead of spinning (docs/08-event-channel.md).
//
// Reading order, as the chapter tells it. The lesson:
//   protocol.hpp        who sends what to whom; the run the client asks for
//   event_channel.cpp   main: the device, the channel and its CQ, either story,
//                       and a deadline on the teardown
//   channel.cpp         the lesson: a completion channel, a CQ bound to it,
//                       arm, take the event, ack, re-arm, drain; the acks an
//                       object owes before ibv_destroy_cq
//   sleep.hpp           the sleep between the arm and the event: poll() on
//                       the channel's fd and the peer's socket, --wait-ms at most
//   server.cpp          the server's story
//   client.cpp          the client's story
//   exchange.cpp        the ping-pong of Sends and the three ways to wait
//   hybrid.cpp          spin a bounded time, then sleep (pure)
//   options.cpp         the command line
// What earlier stages taught, from common/include/rdma_tutorial/ (and src/):
//   peer.hpp            stage 04's device and handshake; wait_while_connected,
//                       the loop --poll waits in (stage 05)
//   waiting.hpp         that loop's numbers, and the ACK timeout's
//   send_window.hpp     send_queue_room: a burst is posted only when it fits
//   handles.hpp         comp_channel_ptr, cq_ptr: each destroyed by its deleter
//   completion.hpp      check_poll, check_wc: a failed completion in one line
// Not the lesson: the measurement around it, for the chapter's figures:
//   bench.hpp, bench.cpp  a sample per round (tick_clock.hpp), --rate's pace,
//                         the report (latency_report.hpp)
//   cpu.cpp             CPU seconds per message from getrusage (pure)
//   function_ref.hpp    a C++26 std::function_ref: a drain allocates nothing
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "function_ref.hpp"
#include "protocol.hpp"
#include "sleep.hpp"
#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/peer.hpp"

namespace stage08 {

// What to do with each completion a drain takes.
using take_completion = function_ref<void(const ibv_wc&)>;

// options.cpp ------------------------------------------------------------------

enum class wait_mode { poll, event, hybrid };
const char* mode_name(wait_mode mode);

// --rate: at most a million rounds a second (a round is a microsecond apart).
inline constexpr std::uint32_t max_rate = 1000000;

struct options {
  rdma::device_options device;
  rdma::peer_options peer;        // -s, --bind, -p, --wait-ms, --accept-ms
  std::optional<std::uint8_t> ack_timeout;  // --ack-timeout; unset: rdma::default_ack_timeout
  wait_mode mode = wait_mode::event;
  std::uint32_t spin_us = 50;     // --hybrid: how long to spin before sleeping
  run_params run;                 // client: --iters, --burst, --size, --solicited-every
  std::uint32_t rate = 0;         // client: rounds per second; 0, back to back
};
bool parse_options(int argc, const char* const* argv, options& out);

// channel.cpp ------------------------------------------------------------------

// What ibv_get_cq_event handed out and ibv_ack_cq_events has not yet taken
// back. ibv_destroy_cq waits, with no deadline, until every event of its CQ
// is acked; acking takes a lock, so it is done in batches, and whatever is
// left is acked here, in the destructor, before the CQ goes.
class event_acks {
 public:
  static constexpr unsigned batch = 16;
  explicit event_acks(ibv_cq* cq) : cq_(cq) {}
  ~event_acks();
  event_acks(const event_acks&) = delete;
  event_acks& operator=(const event_acks&) = delete;

  void count_one();  // one more event taken; acks a full batch
  unsigned ack_calls() const noexcept { return calls_; }

 private:
  ibv_cq* cq_;
  unsigned unacked_ = 0;
  unsigned calls_ = 0;
};

// A CQ bound to a completion channel. Members declared channel, CQ, acks:
// C++ destroys them in reverse, so the acks owed go first, then the CQ,
// then the channel.
class notified_cq {
 public:
  // ibv_create_comp_channel, its fd made non-blocking, ibv_create_cq bound
  // to it.
  notified_cq(ibv_context* ctx, int entries);

  ibv_cq* cq() const noexcept { return cq_.get(); }

  // The next completion (all of them, from now on) raises an event; with
  // solicited_only, only a solicited one (or an error) does.
  void arm(bool solicited_only);

  // ibv_poll_cq until it finds nothing; each completion goes to `take`.
  // Returns how many there were.
  std::size_t drain(take_completion take);

  // Sleeps until the channel has an event, then takes it: poll() on the
  // channel's fd and the peer's socket, for at most wait_ms;
  // ibv_get_cq_event; ack; re-arm; drain. Throws when wait_ms pass without
  // an event or the peer closes the connection. Returns how many
  // completions the drain took.
  std::size_t sleep_and_drain(const rdma::tcp::socket& peer, std::string_view who, std::string_view what,
                              int wait_ms, bool solicited_only, take_completion take);

  // Takes and acks, without sleeping, the events raised while we were not
  // waiting for any: the CQ was left armed (sleep_and_drain re-arms before
  // it drains) and a completion polled meanwhile raised one. Not taken, it
  // would end the next sleep at once, on a CQ already drained. Returns how
  // many there were.
  std::size_t take_stale_events();

  std::uint64_t wake_ups() const noexcept { return wake_ups_; }
  std::uint64_t empty_wake_ups() const noexcept { return empty_wake_ups_; }
  unsigned ack_calls() const noexcept { return acks_.ack_calls(); }
  void reset_counts() noexcept { wake_ups_ = empty_wake_ups_ = 0; }

 private:
  rdma::comp_channel_ptr channel_;
  rdma::cq_ptr cq_;
  event_acks acks_;
  std::uint64_t wake_ups_ = 0;
  std::uint64_t empty_wake_ups_ = 0;

 public:
  notified_cq(const notified_cq&) = delete;
  notified_cq& operator=(const notified_cq&) = delete;
};

// hybrid.cpp -------------------------------------------------------------------

// The hybrid's one decision, kept pure: after another empty look at the CQ,
// spin on or go to sleep? `elapsed_us` is asked only every `looks_per_clock`
// looks (reading the clock can be a system call in a guest), and never when
// spin_us is 0 (then the answer is "sleep" at once).
class spin_then_sleep {
 public:
  explicit spin_then_sleep(std::uint32_t spin_us, std::uint32_t looks_per_clock = 64)
      : spin_us_(spin_us), looks_per_clock_(looks_per_clock) {}
  // `looks`: empty looks so far in this wait, from 1.
  bool keep_spinning(std::uint32_t looks, function_ref<double()> elapsed_us);

 private:
  std::uint32_t spin_us_;
  std::uint32_t looks_per_clock_;
  bool spent_ = false;
};

// exchange.cpp, server.cpp, client.cpp -----------------------------------------

// One side's memory: `burst` messages to send from, and 2 x burst Recv
// slots (a whole burst can arrive while the last one is being reposted).
struct message_buffers {
  message_buffers(ibv_pd* pd, const run_params& run);
  // One Recv into `slot` (its wr_id), or one into every slot.
  void post_receive(ibv_qp* qp, std::uint64_t slot) const;
  void post_receives(ibv_qp* qp) const;
  std::uint32_t slots() const noexcept { return 2 * run.burst; }

  run_params run;
  rdma::registered_buffer send;
  rdma::registered_buffer recv;
};

// Everything one side of the ping-pong needs.
struct side {
  const options& opts;
  const run_params& run;
  notified_cq& events;
  ibv_qp* qp;
  const message_buffers& buffers;
  const rdma::tcp::socket& peer;
  const char* peer_name;  // "the server", "the client"
  bool client;
};
// Room for the largest burst: 2 x 256 Recvs and the sends in flight.
inline constexpr int cq_entries = 1024;
// The QP for the exchange: room for 2 x burst Recvs and the unsignaled sends.
rdma::qp_ptr create_qp(const rdma::rdma_device& dev, const notified_cq& events, const run_params& run, bool client);
// "rounds: 1000 after a warm-up, 1 x 8 bytes each way" and how this side
// waits (bench.cpp).
void describe_run(const side& s);
// The warm-up round and run.rounds more, waiting the side's way; then the
// report (bench.hpp): the latency line, a paced client its late rounds, the
// wake-ups and the CPU per message.
void exchange(const side& s);

int run_server(const options& opts, const rdma::rdma_device& dev, notified_cq& events);
int run_client(const options& opts, const rdma::rdma_device& dev, notified_cq& events);

}  // namespace stage08
