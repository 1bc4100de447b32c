// EXERCISE: size the SRQ for every client's window, not one
// SYMPTOM: IBV_WC_RNR_RETRY_EXC_ERR
// FIXED: ^served 4 clients: 4 finished, 0 lost, 0 dropped; 8000 records in all$
// FIXED: ^sent 2000 records and END; the server consumed all 2001
// ARGS: -s 127.0.0.1 --records 2000
// SERVER: --accept-ms 20000
// CLIENTS: 4
// TIMEOUT: 90
//
// This is server.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh srq_for_one_window
//
// TODO: one client streams fine. Four at once, and clients fail with
// "receiver not ready" although every one keeps to its credits. Read the
// sizing line the server prints first, then the line marked TODO. (Hint:
// docs/06-srq-credits.md, section "How deep".)
// The server's story: one SRQ and one CQ for every client. Clients join
// whenever they come (up to --clients); each gets a QP on the shared SRQ
// and a window of slots; the loop takes completions from all of them,
// checks each before it reads the slot, reposts Recvs in batches, hands
// credits back, and lets a client go (finished, killed or misbehaving)
// without disturbing the others.
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage06 {

namespace {

using clock = std::chrono::steady_clock;

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
  rdma::qp_ptr qp;
  char* slots = nullptr;       // its window in the landing region
  credit_ledger ledger;
  std::uint64_t records = 0;
  std::uint64_t credit_writes = 0;   // posted
  std::uint64_t credit_reaped = 0;   // known complete
  bool finished = false;             // END checked
  bool leaving = false;              // QP in ERR, waiting for its last WQE
  clock::time_point last_heard = clock::now();
  clock::time_point left_at{};

  client(std::uint32_t n, rdma::tcp::socket s, const rdma::wire::endpoint& p, rdma::qp_ptr q, char* window_slots,
         const srq_sizing& sizing, std::uint32_t credit_batch)
      : number(n), socket(std::move(s)), peer(p), qp(std::move(q)), slots(window_slots),
        ledger(sizing.window, credit_batch) {}
};

class server {
 public:
  server(const options& opts, const rdma::rdma_device& dev, const srq_sizing& sizing)
      : opts_(opts), dev_(dev), sizing_(sizing),
        landing_(dev.pd.get(), std::size_t{sizing.clients} * sizing.window * opts.size,
                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "landing region"),
        srq_(create_srq(dev.pd.get(), sizing.depth)),
        refill_(srq_.get(), sizing),
        events_(dev.ctx.get()),
        listener_(rdma::tcp::listen_on(opts.peer.bind, opts.peer.port)) {
    std::printf("posted %u Recvs on the SRQ%s\n", sizing.depth,
                sizing.limit != 0 ? (", limit armed at " + std::to_string(sizing.limit)).c_str() : "");
    std::printf("landing region: %u x %u slots of %u bytes, one window per client, rkey 0x%x\n", sizing.clients,
                sizing.window, opts.size, landing_.rkey());
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

  const options& opts_;
  const rdma::rdma_device& dev_;
  srq_sizing sizing_;
  rdma::registered_buffer landing_;
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
  clock::time_point first_record_{};  // the aggregate rate's span: first record to last END
  clock::time_point last_end_{};
  clock::time_point join_deadline_ = clock::now() + std::chrono::milliseconds(opts_.peer.accept_ms);
};

client* server::by_qp(std::uint32_t qp_num) {
  for (auto& c : clients_) {
    if (c->qp->qp_num == qp_num) return c.get();
  }
  return nullptr;
}

// A client connects: a QP on the shared SRQ (its own send queue, the
// shared CQ), its window of slots, the walk to RTS, our endpoint back.
void server::join() {
  // The listener is readable: the client is there, accept takes it at once.
  auto [socket, peer] = rdma::accept_peer(listener_, opts_.peer.wait_ms, opts_.peer.wait_ms);
  const std::uint32_t number = joined_ + 1;
  if (peer.length < 8 || peer.rkey == 0) {
    throw rdma::tutorial_error("client " + std::to_string(number) + " exposes no credit word (" +
                               std::to_string(peer.length) + " bytes)", "it is not a srq_credits client");
  }
  ibv_qp_init_attr init{};
  init.send_cq = dev_.cq.get();
  init.recv_cq = dev_.cq.get();
  init.srq = srq_.get();  // Recvs come from the shared queue: no receive queue of its own
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = send_queue;
  init.cap.max_send_sge = 1;
  init.cap.max_inline_data = 8;  // the credit word travels inside the WQE
  rdma::qp_ptr qp(rdma::check_ptr(ibv_create_qp(dev_.pd.get(), &init), "ibv_create_qp(on the SRQ)"));

  rdma::wire::endpoint ours = rdma::local_endpoint(dev_, qp.get());
  char* slots = landing_.data() + std::size_t{number - 1} * sizing_.window * opts_.size;
  ours.addr = reinterpret_cast<std::uintptr_t>(slots);
  ours.rkey = landing_.rkey();
  ours.length = sizing_.window * opts_.size;
  rdma::qp_params params = dev_.params;
  params.min_rnr_timer = 12;
  rdma::connect_to_peer(qp.get(), ours, peer, params);
  rdma::tcp::send_endpoint(socket, ours, rdma::tcp::after_ms(opts_.peer.wait_ms));
  std::printf("client %u %s: QP 0x%x on the SRQ <-> QP 0x%x, window %u slots, credit word at 0x%llx\n", number,
              socket.peer().c_str(), qp->qp_num, peer.qp_num, sizing_.window,
              static_cast<unsigned long long>(peer.addr));
  std::fflush(stdout);
  ++joined_;
  clients_.push_back(std::make_unique<client>(number, std::move(socket), peer, std::move(qp), slots, sizing_,
                                              opts_.credit_batch.value_or(std::max(1u, sizing_.window / 2))));
}

void server::take(const ibv_wc& wc) {
  client* c = by_qp(wc.qp_num);
  if ((wc.wr_id & drain_tag) != 0) {
    // Flushed behind everything the QP had: it is finished with the SRQ.
    if (c != nullptr && c->leaving) forget(*c, "drained: its marker WR came back flushed");
    return;
  }
  if ((wc.wr_id & credit_write_tag) != 0) {
    if (c == nullptr || c->leaving) return;  // a departed client's: nothing to learn
    if (wc.status != IBV_WC_SUCCESS) {
      let_go(*c, parting::lost, "a credit write failed: " + rdma::describe_wc(wc));
      return;
    }
    c->credit_reaped = wc.wr_id & ~credit_write_tag;
    return;
  }
  // A Recv of the SRQ was consumed, whoever's QP consumed it.
  refill_.consumed();
  if (c == nullptr) {
    ++stray_;
    return;
  }
  if (c->leaving) return;
  if (wc.status != IBV_WC_SUCCESS) {
    let_go(*c, parting::lost, "completion failed: " + rdma::describe_wc(wc));
    return;
  }
  c->last_heard = clock::now();
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
  if (rule->type == imm_end) {
    if (index != c.records % rdma::imm::index_limit) {
      let_go(c, parting::dropped, "END says " + std::to_string(index) + " records; " + std::to_string(c.records) + " arrived");
      return;
    }
    c.ledger.on_consumed();
    c.ledger.make_urgent();
    c.finished = true;
    ++finished_;
    last_end_ = clock::now();
    std::printf("client %u: END after %llu records: every one in order, checksums good\n", c.number,
                static_cast<unsigned long long>(c.records));
    std::fflush(stdout);
    return;
  }
  if (wc.byte_len != opts_.size) {
    let_go(c, parting::dropped, "wrote " + std::to_string(wc.byte_len) + " bytes into a slot of " + std::to_string(opts_.size));
    return;
  }
  // Credits: record n may be written once we returned n - window + 1 or
  // more. One beyond that was written without a credit: a client that
  // ignores its window would drain the SRQ the others rely on.
  if (c.records >= c.ledger.returned() + sizing_.window) {
    let_go(c, parting::dropped, "wrote record " + std::to_string(c.records) + " with only " +
                                    std::to_string(c.ledger.returned()) + " credits returned (window " +
                                    std::to_string(sizing_.window) + ")");
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
  if (all_records_ == 0) first_record_ = clock::now();
  ++c.records;
  ++all_records_;
  c.ledger.on_consumed();
}

// The credit word: the count of records consumed, as one inline RDMA Write
// of 8 bytes (inline: the value is copied into the WQE when posted, so
// the variable it came from may change at once).
void server::return_credits() {
  for (auto& c : clients_) {
    if (c->leaving || !c->ledger.due()) continue;
    if (c->credit_writes - c->credit_reaped >= send_queue - 1) continue;  // full: the next return carries this one
    const std::uint64_t consumed = c->ledger.take_return();
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(&consumed), sizeof consumed, 0};
    ibv_send_wr wr{};
    wr.wr_id = credit_write_tag | (c->credit_writes + 1);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_INLINE;
    if ((c->credit_writes + 1) % signal_every == 0 || c->finished) wr.send_flags |= IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = c->peer.addr;
    wr.wr.rdma.rkey = c->peer.rkey;
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(c->qp.get(), &wr, &bad); rc != 0) {
      throw rdma::verbs_error(rc, "ibv_post_send(credit write to client " + std::to_string(c->number) + ")");
    }
    ++c->credit_writes;
  }
}

void server::on_async_event(const ibv_async_event& e) {
  switch (e.event_type) {
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      // Fewer than the limit are posted: repost everything consumed now,
      // without waiting for a full batch, and arm the limit again.
      refill_.on_limit_event();
      return;
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      // A QP on an SRQ, moved to ERR, will take no more Recvs from it: now
      // it may be destroyed (ibv_destroy_qp(3): wait for this event first).
      if (client* c = by_qp(e.element.qp->qp_num); c != nullptr && c->leaving) forget(*c, "its last WQE reached");
      return;
    case IBV_EVENT_COMM_EST:
      return;  // the first packet on a QP still in RTR: nothing to do
    default:
      std::printf("async event: %s\n", async_event_name(e.event_type).c_str());
  }
}

// A client that must go: its QP to ERR (flushes its sends; no more of its
// writes are accepted), its state kept until the QP is done with the SRQ.
// The verbs' way to learn that is IBV_EVENT_QP_LAST_WQE_REACHED; Soft-RoCE
// on Linux 6.1 never sends it (measured), so we also post a marker WR
// after the move to ERR: it comes back flushed (IBV_WC_WR_FLUSH_ERR) after
// everything the QP did before, whichever of the two comes first. Bounded
// by --wait-ms.
void server::let_go(client& c, parting how, const std::string& why) {
  if (c.leaving) return;
  if (how == parting::lost) ++lost_;
  if (how == parting::dropped) ++dropped_;
  if (how != parting::done) {
    std::printf("client %u (QP 0x%x): %s; letting it go after %llu records\n", c.number, c.qp->qp_num, why.c_str(),
                static_cast<unsigned long long>(c.records));
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  rdma::check_rc(ibv_modify_qp(c.qp.get(), &attr, IBV_QP_STATE), "ibv_modify_qp(client " + std::to_string(c.number) + " to ERR)");
  c.leaving = true;
  c.left_at = clock::now();
  ibv_send_wr marker{};
  marker.wr_id = drain_tag;
  marker.opcode = IBV_WR_RDMA_WRITE;  // never executed: flushed
  marker.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  // A full send queue refuses it (ENOMEM): then the event or --wait-ms decides.
  (void)ibv_post_send(c.qp.get(), &marker, &bad);
}

void server::forget(client& c, const char* how) {
  if (c.finished) {
    std::printf("client %u: done, %llu records; QP destroyed (%s)\n", c.number,
                static_cast<unsigned long long>(c.records), how);
  } else {
    std::printf("client %u: gone after %llu records; QP destroyed (%s); the others go on\n", c.number,
                static_cast<unsigned long long>(c.records), how);
  }
  std::fflush(stdout);
  for (auto it = clients_.begin(); it != clients_.end(); ++it) {
    if (it->get() == &c) {
      clients_.erase(it);
      return;
    }
  }
}

// The TCP side: a client joining, one closing its connection, the async
// events, deadlines. `wait_ms` > 0 when the loop has been idle a while.
void server::look_around(int wait_ms) {
  std::vector<pollfd> fds{{events_.fd(), POLLIN, 0}};
  if (joined_ < sizing_.clients) fds.push_back({listener_.fd(), POLLIN, 0});
  const std::size_t first_client = fds.size();
  for (auto& c : clients_) fds.push_back({c->socket.fd(), POLLIN, 0});
  rdma::check_errno(::poll(fds.data(), fds.size(), wait_ms), "poll");
  if (fds[0].revents != 0) events_.drain([&](const ibv_async_event& e) { on_async_event(e); });
  if (first_client == 2 && fds[1].revents != 0) {
    // A client whose handshake fails costs only itself.
    try {
      join();
    } catch (const std::exception& e) {
      std::printf("a client could not join: %s\n", e.what());
      std::fflush(stdout);
    }
  }

  const auto now = clock::now();
  for (std::size_t i = first_client; i < fds.size() && i - first_client < clients_.size(); ++i) {
    client& c = *clients_[i - first_client];
    if (fds[i].revents != 0 && !c.leaving && rdma::tcp::peer_closed(c.socket)) {
      if (c.finished) {
        let_go(c, parting::done, "closed");
      } else {
        let_go(c, parting::lost, "closed its connection before END (killed?)");
      }
    }
  }
  for (std::size_t i = 0; i < clients_.size(); ++i) {
    client& c = *clients_[i];
    if (c.leaving && now - c.left_at > std::chrono::milliseconds(opts_.peer.wait_ms)) {
      forget(c, "neither its last WQE nor its marker came back within --wait-ms");
      --i;
    } else if (!c.leaving && !c.finished && now - c.last_heard > std::chrono::milliseconds(opts_.peer.accept_ms)) {
      let_go(c, parting::dropped, "silent for " + std::to_string(opts_.peer.accept_ms) + " ms");
    }
  }
  if (joined_ < sizing_.clients && now > join_deadline_) {
    throw rdma::tutorial_error(std::to_string(joined_) + " of " + std::to_string(sizing_.clients) +
                                   " clients came within " + std::to_string(opts_.peer.accept_ms) + " ms",
                               "start every client, or give --clients the number you start");
  }
}

int server::run() {
  std::array<ibv_wc, srq_sizing::poll_batch> wcs{};
  clock::time_point idle_since{};
  for (std::uint64_t loop = 1; joined_ < sizing_.clients || !clients_.empty(); ++loop) {
    const int n = rdma::check_poll(ibv_poll_cq(dev_.cq.get(), static_cast<int>(wcs.size()), wcs.data()));
    for (int i = 0; i < n; ++i) take(wcs[static_cast<std::size_t>(i)]);
    refill_.repost_if_due();
    return_credits();
    // The async events are looked at every round while Recvs wait to be
    // reposted and the limit can fire (its event must be seen at once), the
    // rest every 64th round and whenever the CQ was empty. With nothing to
    // do for 50 ms (no client streaming), the loop sleeps in poll().
    if (n != 0) idle_since = {};
    if (n == 0 && idle_since == clock::time_point{}) idle_since = clock::now();
    const bool asleep = n == 0 && loop % 1024 == 0 && clock::now() - idle_since > std::chrono::milliseconds(50);
    const bool limit_matters = sizing_.limit_can_fire() && refill_.waiting() != 0;
    if (limit_matters || loop % 64 == 0 || n == 0) look_around(asleep ? 10 : 0);
    if (n == 0) sched_yield();  // clients may share our CPU: let them run
  }
  const std::uint32_t armed = refill_.armed_limit();
  std::printf("served %u client%s: %u finished, %u lost, %u dropped; %llu records in all\n", joined_, joined_ == 1 ? "" : "s", finished_, lost_,
              dropped_, static_cast<unsigned long long>(all_records_));
  std::printf("SRQ limit events: %u; the limit is %s\n", refill_.limit_events(),
              armed != 0 ? ("armed at " + std::to_string(armed)).c_str() : "not armed");
  if (all_records_ > 0 && last_end_ > first_record_) {
    // Every client's records together, as ib_send_bw -q N prints its QPs'.
    std::printf("all clients, first record to last END:\n%s",
                rdma::bw_report(opts_.size, static_cast<std::uint32_t>(all_records_),
                                std::chrono::duration<double>(last_end_ - first_record_).count()).c_str());
  }
  return dropped_ == 0 ? 0 : 1;
}

}  // namespace

int run_server(const options& opts, const rdma::rdma_device& dev) {
  srq_sizing sizing;
  sizing.clients = opts.clients;
  sizing.window = opts.window;
  sizing.batch = opts.repost_batch;
  sizing.depth = opts.srq_depth.value_or(opts.window);  // TODO: one client's window
  sizing.limit = opts.srq_limit.value_or(sizing.depth / 4);
  std::printf("%s\n", sizing.describe().c_str());
  if (opts.plan) return 0;
  server s(opts, dev, sizing);
  return s.run();
}

}  // namespace stage06
