// The server's story: one pool, one SRQ, one CQ on a completion channel,
// and a loop that sleeps until something happens. Each completion names
// its QP, so its client; what it claims (type, slot, length) is checked
// against that client's grant before the slot is read; then the record's
// own sequence number and checksum. Credits go back as an edge written
// into the client's credit word. clients.cpp has the comings and goings.
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/record.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "rdma_tutorial/transport.hpp"
#include "rdma_tutorial/waiting.hpp"
#include "server.hpp"

namespace stage09 {

namespace waiting_policy = rdma::waiting_policy;

namespace {

// The listener's device. Bound to an address, the listener has one
// (listener->verbs); bound to every address it has none, and requests come
// on the devices librdmacm opened: take the first, and turn away requests
// that arrive on another.
ibv_context* listening_device(rdma_cm_id* listener) {
  if (listener->verbs != nullptr) return listener->verbs;
  int count = 0;
  ibv_context** devices = rdma::check_ptr(rdma_get_devices(&count), "rdma_get_devices");
  ibv_context* first = count > 0 ? devices[0] : nullptr;
  rdma_free_devices(devices);
  if (first == nullptr) throw rdma::tutorial_error("rdma_get_devices: no RDMA device", "rdma link show");
  return first;
}

// What the server will ask of the listener's device, against what it takes
// (ibv_query_device): refused here in one line naming the limit and the
// option, not by the create call that would fail.
rdma::device_limits checked_limits(ibv_context* ctx, const options& opts, std::uint32_t srq_depth, std::uint32_t cq_entries) {
  rdma::device_limits limits(ctx);
  // What the whole pipeline stands on, before any number: the clients'
  // records are Writes with Immediate (transport.hpp: siw posts none).
  rdma::refuse_without_write_with_imm(ctx, limits.attr(), "every record the clients stream is one");
  const char* pool = opts.pool_chunks ? "--pool-chunks" : "--clients";
  limits.srq_depth(srq_depth, std::string(pool) + " and --window");
  limits.cq_entries(cq_entries, std::string(pool) + " and --window");
  limits.qps(opts.chunk_count(), pool);
  limits.memory_windows(opts.chunk_count(), pool);  // one per client served at once
  limits.memory_window_type_2();                     // bound on the client's QP (clients.cpp)
  limits.queue_depth(rdma::credit_send_queue, "credit writes, the bind and the marker in each client's send queue");
  limits.registration(opts.chunk_bytes(), "bytes per chunk", opts.chunk_size ? "--chunk-size" : "--window and --record-size");
  return limits;
}

std::uint32_t cq_size(const options& opts, std::uint32_t srq_depth) { return srq_depth + opts.chunk_count() * rdma::credit_send_queue + 16; }

rdma::cm_id_ptr listen_on(rdma_event_channel* channel, const rdma::peer_options& peer) {
  rdma_cm_id* raw = nullptr;
  rdma::check_errno(rdma_create_id(channel, &raw, nullptr, RDMA_PS_TCP), "rdma_create_id");
  rdma::cm_id_ptr id(raw);
  sockaddr_in addr = rdma::cm::ipv4_address(peer.bind.empty() ? "0.0.0.0" : peer.bind, peer.port);
  rdma::check_errno(rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&addr)),
                    "rdma_bind_addr(" + (peer.bind.empty() ? std::string("every address") : peer.bind) + ":" +
                        std::to_string(peer.port) + ")");
  rdma::check_errno(rdma_listen(id.get(), 16), "rdma_listen");
  return id;
}

}  // namespace

server::server(const options& opts, rdma_event_channel* channel)
    : opts_(opts), channel_(channel), listener_(listen_on(channel, opts.peer)), ctx_(listening_device(listener_.get())),
      layout_{opts.window, opts.record_size, opts.chunk_bytes(), opts.chunk_count()},
      // Every client's whole window at once, twice over, so a batch waiting
      // to be reposted never leaves the queue short; the limit at a quarter
      // catches a loop that fell behind.
      srq_depth_(2 * (opts.chunk_count() * opts.window + repost_batch)),
      srq_limit_(srq_depth_ / 4),
      credit_batch_(opts.credit_batch.value_or(std::max(1u, opts.window / 2))),
      limits_(checked_limits(ctx_, opts, srq_depth_, cq_size(opts, srq_depth_))),
      pd_(rdma::check_ptr(ibv_alloc_pd(ctx_), "ibv_alloc_pd")),
      // Registered at start-up for every client there will ever be, one
      // region per chunk (pool.hpp: on Soft-RoCE a window reaches as far as
      // its region does). MW_BIND: each client's slots are opened by a
      // memory window bound over its chunk, never by a region's rkey, so
      // the regions themselves need no remote access at all.
      pool_(pd_.get(), opts.chunk_bytes(), opts.chunk_count(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
            registration::per_chunk),
      comp_channel_(rdma::check_ptr(ibv_create_comp_channel(ctx_), "ibv_create_comp_channel")),
      cq_(rdma::check_ptr(ibv_create_cq(ctx_, static_cast<int>(cq_size(opts, srq_depth_)), nullptr,
                                        comp_channel_.get(), 0),
                          "ibv_create_cq")),
      srq_(rdma::create_srq(pd_.get(), srq_depth_)),
      // Posts the SRQ's Recvs and arms its limit (stage 06's refill).
      refill_(srq_.get(), srq_depth_, repost_batch, srq_limit_),
      async_(ctx_),
      clients_(rdma::last_wqe_wait(limits_.attr(), std::chrono::milliseconds(opts.peer.wait_ms))),
      join_deadline_(coarse::now() + std::chrono::milliseconds(opts.peer.accept_ms)) {
  // Non-blocking: ibv_get_cq_event then fails with EAGAIN instead of
  // blocking, and the channel's fd sleeps in one poll() with the CM's.
  const int flags = rdma::check_errno(fcntl(comp_channel_->fd, F_GETFL), "fcntl(the channel's fd, F_GETFL)");
  rdma::check_errno(fcntl(comp_channel_->fd, F_SETFL, flags | O_NONBLOCK), "fcntl(the channel's fd, F_SETFL)");
  std::printf("pool: %s\n", pool_.describe().c_str());
  std::printf("slots: %u per chunk of %u bytes, %u in all; each client is granted one chunk\n", layout_.slots,
              layout_.record_size, layout_.slot_count());
  std::printf("SRQ: %u Recvs, limit %u; CQ on a completion channel (%s)\n", srq_depth_, srq_limit_,
              opts.spin_us == 0 ? "sleep when empty" : ("spin " + std::to_string(opts.spin_us) + " us, then sleep").c_str());
  std::printf("listening on %s (rdma_listen) for %u client%s\n",
              rdma::cm::address_text(rdma_get_local_addr(listener_.get())).c_str(), opts.clients, opts.clients == 1 ? "" : "s");
  std::fflush(stdout);
}

// Every completion there is now, each taken; how many.
std::size_t server::drain_cq() {
  std::array<ibv_wc, 32> wcs{};
  std::size_t taken = 0;
  for (;;) {
    const int n = rdma::check_poll(ibv_poll_cq(cq_.get(), static_cast<int>(wcs.size()), wcs.data()));
    for (int i = 0; i < n; ++i) take(wcs[static_cast<std::size_t>(i)]);
    taken += static_cast<std::size_t>(n);
    clients_.polled(n, wcs.size());
    if (n < static_cast<int>(wcs.size())) return taken;  // fewer than asked: nothing was left
  }
}

void server::take(const ibv_wc& wc) {
  client* c = clients_.by_qp(wc.qp_num);
  const std::uint64_t tag = rdma::wr_tag(wc.wr_id);
  if (tag == rdma::drain_tag) {
    // Flushed behind everything its send queue held.
    if (c != nullptr && c->leaving) c->departure->marker_flushed();
    return;
  }
  if (tag == bind_tag) {
    if (c != nullptr && !c->leaving) window_bound(*c, wc);  // clients.cpp
    return;
  }
  if (tag == rdma::credit_tag) {
    if (c == nullptr || c->leaving) return;
    if (wc.status != IBV_WC_SUCCESS) {
      let_go(*c, parting::lost, "a credit write failed: " + rdma::describe_wc(wc));
      return;
    }
    c->credit_done(wc);
    return;
  }
  // A Recv of the SRQ: counted for the refill, and a failed one lets its
  // client go (stage 06's rdma::srq_clients::recv_taken); a write outside
  // its window fails at the responder, IBV_WC_REM_ACCESS_ERR at the client.
  c = clients_.recv_taken(wc, refill_, [&](client& who, parting how, const std::string& why) { let_go(who, how, why); });
  if (c != nullptr) take_record(*c, wc);
}

// The order is the lesson: first what the completion claims, against what
// we granted; only then the bytes in the slot.
void server::take_record(client& c, const ibv_wc& wc) {
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
    let_go(c, parting::dropped, "sent something that is not a Write with Immediate (" + rdma::wc_opcode_name(wc.opcode) + ")");
    return;
  }
  if (c.finished) {
    let_go(c, parting::dropped, "wrote after its END");
    return;
  }
  const arrival a = judge(layout_, c.slots, ntohl(wc.imm_data), wc.byte_len, c.records);
  if (a.what == arrival::kind::bad) {
    let_go(c, parting::dropped, a.why);
    return;
  }
  // Credits: write n (a record or END) may come once the edge passed n.
  // One beyond the edge we told was written without a credit.
  if (c.consumed >= c.edge_told) {
    let_go(c, parting::dropped, "wrote write " + std::to_string(c.consumed) + " beyond its credit edge " +
                                    std::to_string(c.edge_told));
    return;
  }
  if (a.what == arrival::kind::end) {
    if (a.count != c.records % rdma::imm::index_limit) {
      let_go(c, parting::dropped, "END says " + std::to_string(a.count) + " records; " + std::to_string(c.records) + " arrived");
      return;
    }
    ++c.consumed;
    c.finished = true;
    ++finished_;
    last_end_ = steady::now();
    std::printf("client %u: END after %llu records\n", c.number, static_cast<unsigned long long>(c.records));
    std::fflush(stdout);
    return;
  }
  const std::span<const char> record(pool_.base() + layout_.offset(a.slot), layout_.record_size);
  const std::uint64_t expected = c.seq.next();
  if (std::string wrong = rdma::check_record(record, expected); !wrong.empty()) {
    const std::uint64_t seq = rdma::record_seq(record);
    if (wrong.find("checksum") != std::string::npos) {
      c.seq.on_corrupt();
    } else if (seq >= c.edge_told) {
      // Credits keep a slot from being written again before we read it: a
      // record the edge did not allow yet wrote over the one we expected.
      wrong = "slot " + std::to_string(a.slot) + " holds record " + std::to_string(seq) + ", beyond its credit edge " +
              std::to_string(c.edge_told) + " (record " + std::to_string(expected) + " was written over)";
    } else {
      wrong = c.seq.on_record(seq);
    }
    let_go(c, parting::dropped, wrong);
    return;
  }
  c.seq.on_record(expected);
  if (all_records_ == 0) first_record_ = steady::now();
  ++c.records;
  c.bytes += wc.byte_len;
  ++c.consumed;
  ++all_records_;
}

// The credit word: the edge, written into the client's memory as stage 06
// writes its count (rdma::srq_client::post_credit: 8 bytes, big-endian,
// one inline RDMA Write).
void server::post_edge(client& c, std::uint64_t edge) {
  c.post_credit(edge);
  c.edge_told = edge;
}

void server::return_credits() {
  for (const auto& c : clients_.all()) {
    if (!c->open || c->leaving) continue;
    const std::uint64_t edge = credit_edge(c->consumed, layout_.slots);
    if (edge == c->edge_told) continue;
    if (edge - c->edge_told < c->credit_batch && !c->finished) continue;
    if (!c->credit_room(2)) continue;  // full (the marker needs one): the next return carries this one
    post_edge(*c, edge);
  }
}

// Asleep until the CQ's channel, the CM's channel or the device's async
// queue has something, or wait_ms pass; then whatever each has.
void server::look_around(int wait_ms) {
  std::array<pollfd, 3> fds{{{comp_channel_->fd, POLLIN, 0}, {channel_->fd, POLLIN, 0}, {async_.fd(), POLLIN, 0}}};
  if (::poll(fds.data(), fds.size(), wait_ms) < 0) {
    if (errno == EINTR) return;
    rdma::check_errno(-1, "poll(the completion channel, the CM channel, the async events)");
  }
  if (fds[0].revents != 0) {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(comp_channel_.get(), &cq, &context) == 0) {
      // Acked at once: ibv_destroy_cq waits for every event it delivered
      // to be acked (stage 08 batches them; one lock a wake-up is cheap here).
      ibv_ack_cq_events(cq, 1);
      ++wake_ups_;
    } else if (errno != EAGAIN) {
      rdma::check_errno(-1, "ibv_get_cq_event");
    }
  }
  if (fds[1].revents != 0) {
    while (const auto ev = rdma::cm::try_event(channel_)) on_cm_event(*ev);
  }
  if (fds[2].revents != 0) async_.drain([&](const ibv_async_event& e) { on_async_event(e); });
  let_go_the_silent();
  // Clients are forgotten here only, between completions (clients.cpp).
  clients_.settle([&](client& c, parting how, const std::string& why) { let_go(c, how, why); },
                  [&](std::unique_ptr<client> c, const std::string& how) { forget(std::move(c), how); });
  std::fflush(stdout);
  if (joined_ < opts_.clients && coarse::now() > join_deadline_) {
    throw rdma::tutorial_error(std::to_string(joined_) + " of " + std::to_string(opts_.clients) +
                                   " clients came within --accept-ms " + std::to_string(opts_.peer.accept_ms),
                               "start every client, or give --clients the number you start");
  }
}

int server::run() {
  rdma::check_rc(ibv_req_notify_cq(cq_.get(), 0), "ibv_req_notify_cq");
  // --spin-us is a bound of microseconds, finer than the coarse clock: the
  // precise clock is read for it, and only when it is asked for.
  auto busy_since = steady::now();
  for (std::uint64_t round = 1; joined_ < opts_.clients || !clients_.empty(); ++round) {
    std::size_t n = drain_cq();
    refill_.repost_if_due();
    return_credits();
    if (n > 0 && opts_.spin_us > 0) busy_since = steady::now();
    // While completions flow, the CM channel and the async queue are
    // looked at every 64th round without sleeping (a client may be
    // joining or leaving meanwhile).
    if (n > 0 || (opts_.spin_us > 0 && steady::now() - busy_since < std::chrono::microseconds(opts_.spin_us))) {
      if (round % waiting_policy::server_look_every == 0) look_around(0);
      continue;
    }
    // Nothing came: arm, then look once more, then sleep. The event is
    // edge-triggered: a completion that came after the last look and
    // before the arm raises none, so the look after the arm finds it.
    rdma::check_rc(ibv_req_notify_cq(cq_.get(), 0), "ibv_req_notify_cq");
    n = drain_cq();
    if (n > 0) continue;
    const std::uint64_t before = wake_ups_;
    look_around(waiting_policy::channel_sleep_ms);  // a deadline to check now and then (waiting.hpp)
    if (wake_ups_ != before && drain_cq() == 0) ++empty_wake_ups_;
  }
  report();
  // Exit 1 says the run was not clean; this line says why (each client
  // dropped was named above, with what it did).
  if (clients_.dropped() != 0) throw rdma::clients_dropped(clients_.dropped(), joined_);
  return 0;
}

void server::report() const {
  for (const std::string& line : parted_) std::printf("%s\n", line.c_str());
  std::printf("served %u client%s: %u finished, %u lost, %u dropped; %u turned away; %llu records in all\n", joined_,
              joined_ == 1 ? "" : "s", finished_, clients_.lost(), clients_.dropped(), rejected_, static_cast<unsigned long long>(all_records_));
  std::printf("pool: %u of %u chunks free again; SRQ limit events: %u; completion channel: %llu wake-ups, %llu empty\n",
              pool_.free_count(), pool_.count(), refill_.limit_events(), static_cast<unsigned long long>(wake_ups_),
              static_cast<unsigned long long>(empty_wake_ups_));
  if (clients_.stray() != 0) std::printf("completions of QPs already destroyed: %llu\n", static_cast<unsigned long long>(clients_.stray()));
  if (all_records_ > 0 && last_end_ > first_record_) {
    // Every client's records together, as ib_send_bw -q N prints its QPs'.
    std::printf("all clients, first record to last END:\n%s",
                rdma::bw_report(opts_.record_size, static_cast<std::uint32_t>(all_records_),
                                std::chrono::duration<double>(last_end_ - first_record_).count()).c_str());
  }
}

int run_server(const options& opts, rdma_event_channel* channel) {
  server s(opts, channel);
  return s.run();
}

}  // namespace stage09
