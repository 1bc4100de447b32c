// EXERCISE: one client streams fine; four at once find no Recv posted
//
// This is server.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh srq_for_one_window
//
// TODO: one client streams fine. Four at once, and clients fail with
// "receiver not ready" although every one keeps to its credits. Read the
// sizing line the server prints first, then the line marked TODO. (Hint:
// docs/06-srq-credits.md, section "How deep".)
// The server's story: one SRQ and one CQ for every client. The loop takes
// completions from all of them, checks each before it reads the slot,
// reposts Recvs in batches, and hands credits back; clients.cpp lets
// clients join and go (finished, killed or misbehaving) without disturbing
// the others. server.hpp holds the state both halves share.
#include <arpa/inet.h>
#include <sched.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "rdma_tutorial/waiting.hpp"
#include "server.hpp"

namespace stage06 {

namespace waiting_policy = rdma::waiting_policy;

void server::take(const ibv_wc& wc) {
  client* c = clients_.by_qp(wc.qp_num);
  if (rdma::wr_tag(wc.wr_id) == rdma::drain_tag) {
    // Flushed behind everything its send queue held.
    if (c != nullptr && c->leaving) c->departure->marker_flushed();
    return;
  }
  if (rdma::wr_tag(wc.wr_id) == rdma::credit_tag) {
    if (c == nullptr || c->leaving) return;  // a departed client's: nothing to learn
    if (wc.status != IBV_WC_SUCCESS) {
      let_go(*c, c->finished ? parting::done : parting::lost, "a credit write failed: " + rdma::describe_wc(wc));
      return;
    }
    c->credit_done(wc);
    // The last return after END has landed: the client has all it waits
    // for. It goes now, whether or not it ever closes its connection.
    if (c->finished && c->credit_reaped == c->credit_writes && c->ledger.returned() == c->ledger.consumed()) {
      let_go(*c, parting::done, "done");
    }
    return;
  }
  // A Recv of the SRQ: counted for the refill, and a failed one lets its
  // client go (rdma::srq_clients::recv_taken); a good one is a record.
  c = clients_.recv_taken(wc, refill_, [&](client& who, parting how, const std::string& why) { let_go(who, how, why); });
  if (c == nullptr) return;
  if (c->finished) {
    let_go(*c, parting::dropped, "wrote after its END");
    return;
  }
  take_record(*c, wc);
}

// Everything about the completion is checked before the slot it names is
// read: the opcode, the immediate's type and index, the length.
void server::take_record(client& c, const ibv_wc& wc) {
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
    let_go(c, parting::dropped, "sent something that is not a Write with Immediate (" + rdma::wc_opcode_name(wc.opcode) + ")");
    return;
  }
  const std::uint32_t imm = ntohl(wc.imm_data);
  const std::array<rdma::imm::accepted, 2> rules{{{imm_data, "DATA", sizing_.window},
                                                  {imm_end, "END", rdma::imm::index_limit}}};
  const rdma::imm::accepted* rule = nullptr;
  try {
    rule = &rdma::imm::validate(imm, rules);
  } catch (const rdma::tutorial_error& e) {
    let_go(c, parting::dropped, e.what());
    return;
  }
  const std::uint32_t index = rdma::imm::decode(imm).index;
  // Credits: write n (a record, or END after n records) may come once we
  // returned n - window + 1 or more. One beyond that was written without a
  // credit: a client that ignores its window would drain the SRQ the
  // others rely on. END spends a credit like a record: it consumes a Recv.
  if (c.records >= c.ledger.returned() + sizing_.window) {
    const std::string what = rule->type == imm_end ? "END" : "record " + std::to_string(c.records);
    let_go(c, parting::dropped, "wrote " + what + " with only " + std::to_string(c.ledger.returned()) + " credits returned (window " +
                                    std::to_string(sizing_.window) + ")");
    return;
  }
  if (rule->type == imm_end) {
    if (index != c.records % rdma::imm::index_limit) {
      let_go(c, parting::dropped, "END says " + std::to_string(index) + " records; " + std::to_string(c.records) + " arrived");
      return;
    }
    c.ledger.on_consumed();
    c.ledger.make_urgent();
    c.finished = true;
    ++finished_;
    last_end_ = steady::now();
    std::printf("client %u: END after %llu records: every one in order, checksums good\n", c.number,
                static_cast<unsigned long long>(c.records));
    std::fflush(stdout);
    return;
  }
  if (wc.byte_len != opts_.size) {
    let_go(c, parting::dropped, "wrote " + std::to_string(wc.byte_len) + " bytes into a slot of " + std::to_string(opts_.size));
    return;
  }
  if (index != c.records % sizing_.window) {
    let_go(c, parting::dropped, "record " + std::to_string(c.records) + " came in slot " + std::to_string(index) + ", not " +
                  std::to_string(c.records % sizing_.window));
    return;
  }
  const std::span<const char> record(c.slots + std::size_t{index} * opts_.size, opts_.size);
  if (const std::string wrong = check_record(record, c.records); !wrong.empty()) {
    let_go(c, parting::dropped, wrong);
    return;
  }
  if (all_records_ == 0) first_record_ = next_progress_ = steady::now();
  ++c.records;
  ++all_records_;
  if (opts_.progress_ms != 0) {
    if (tally_.size() < c.number) tally_.resize(c.number);
    tally_[c.number - 1] = c.records;
  }
  c.ledger.on_consumed();
}

// The credit word: the count of records consumed, written into the
// client's memory (rdma::srq_client::post_credit: 8 bytes, big-endian, one
// inline RDMA Write). A count replaces the one before, so a return skipped
// while the send queue is full is carried by the next.
void server::return_credits() {
  for (const auto& c : clients_.all()) {
    if (c->leaving || !c->ledger.due() || !c->credit_room(1)) continue;
    c->post_credit(c->ledger.take_return());
  }
}

int server::run() {
  std::array<ibv_wc, srq_sizing::poll_batch> wcs{};
  coarse::time_point idle_since{};
  for (std::uint64_t loop = 1; joined_ < sizing_.clients || !clients_.empty(); ++loop) {
    const int n = rdma::check_poll(ibv_poll_cq(dev_.cq.get(), static_cast<int>(wcs.size()), wcs.data()));
    for (int i = 0; i < n; ++i) take(wcs[static_cast<std::size_t>(i)]);
    clients_.polled(n, wcs.size());  // fewer than asked: the CQ is empty
    refill_.repost_if_due();
    return_credits();
    // The async events are looked at every round while Recvs wait to be
    // reposted and the limit can fire (its event must be seen at once), the
    // rest every few rounds and whenever the CQ was empty. With nothing to
    // do for a while (no client streaming), the loop sleeps in poll(). The
    // numbers, and what a NIC would pick: waiting.hpp.
    if (n != 0) idle_since = {};
    if (n == 0 && idle_since == coarse::time_point{}) idle_since = coarse::now();
    const bool asleep = n == 0 && loop % 1024 == 0 && coarse::now() - idle_since > waiting_policy::server_idle;
    const bool limit_matters = sizing_.limit_can_fire() && refill_.waiting() != 0;
    if (limit_matters || loop % waiting_policy::server_look_every == 0 || n == 0) {
      look_around(asleep ? waiting_policy::server_nap_ms : 0);
    }
    if (n == 0) sched_yield();  // clients may share our CPU: let them run (waiting.hpp)
    if (opts_.progress_ms != 0 && all_records_ != 0) {
      if (const auto now = steady::now(); now >= next_progress_) print_progress(now);
    }
  }
  // The last counts, unless the last line already has them.
  if (opts_.progress_ms != 0 && all_records_ != progress_printed_) print_progress(steady::now());
  const std::uint32_t armed = refill_.armed_limit();
  std::printf("served %u client%s: %u finished, %u lost, %u dropped; %llu records in all\n", joined_, joined_ == 1 ? "" : "s", finished_,
              clients_.lost(), clients_.dropped(), static_cast<unsigned long long>(all_records_));
  if (clients_.stray() != 0) std::printf("completions of QPs already destroyed: %llu\n", static_cast<unsigned long long>(clients_.stray()));
  std::printf("SRQ limit events: %u; the limit is %s\n", refill_.limit_events(),
              armed != 0 ? ("armed at " + std::to_string(armed)).c_str() : "not armed");
  if (all_records_ > 0 && last_end_ > first_record_) {
    // Every client's records together, as ib_send_bw -q N prints its QPs'.
    std::printf("all clients, first record to last END:\n%s",
                rdma::bw_report(opts_.size, static_cast<std::uint32_t>(all_records_),
                                std::chrono::duration<double>(last_end_ - first_record_).count()).c_str());
  }
  // Exit 1 says the run was not clean; this line says why (each client
  // dropped was named above, with what it did).
  if (clients_.dropped() != 0) throw rdma::clients_dropped(clients_.dropped(), joined_);
  return 0;
}

int run_server(const options& opts, const rdma::rdma_device& dev) {
  srq_sizing sizing;
  sizing.clients = opts.clients;
  sizing.window = opts.window;
  sizing.batch = opts.repost_batch;
  sizing.depth = opts.srq_depth.value_or(opts.window);  // TODO: one client's window
  sizing.limit = opts.srq_limit.value_or(sizing.depth / 4);
  std::printf("%s\n", sizing.describe().c_str());
  if (opts.plan) return 0;
  // What the server will ask of the device, against what it takes
  // (ibv_query_device): one line naming the limit, not the create's EINVAL.
  dev.limits.srq_depth(sizing.depth, opts.srq_depth ? "--srq-depth" : "--clients and --window");
  dev.limits.qps(opts.clients, "--clients");
  dev.limits.queue_depth(rdma::credit_send_queue, "credit writes in flight to each client");
  server s(opts, dev, sizing);
  return s.run();
}

}  // namespace stage06
