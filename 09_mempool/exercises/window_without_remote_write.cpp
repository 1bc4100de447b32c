// EXERCISE: every client's first write into its window fails
//
// This is clients.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh window_without_remote_write
//
// TODO: the client connects, gets its grant and its window's rkey, waits
// for its credits, and its very first write fails with a remote access
// error; the server sees the same error on its Recv. The pool is
// registered, the window is bound over the right chunk on the right QP.
// Read what the bind allows. (Hint: docs/09-mempool.md, section "A window
// per client".)
// The server's comings and goings (server.hpp has the state): a client
// asks to connect and is given a chunk of the pool and a memory window
// over it; the window is bound once the connection is up, and only then
// does the client get credits. However a client leaves (done, killed,
// disconnected for breaking the rules), its QP goes to ERR and is drained
// before the window, the QP and the id go and its chunk returns to the pool:
// a chunk is never granted again while its last owner could still write it.
#include <cerrno>
#include <cstdio>
#include <string>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/transport.hpp"
#include "server.hpp"

namespace stage09 {

client* server::by_qp(std::uint32_t qp_num) {
  for (auto& c : clients_) {
    if (c->qp_num == qp_num) return c.get();
  }
  return nullptr;
}

client* server::by_id(const rdma_cm_id* id) {
  for (auto& c : clients_) {
    if (c->id.get() == id) return c.get();
  }
  return nullptr;
}

void server::on_cm_event(const rdma::cm::cm_event& ev) {
  if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
    join(ev);
    return;
  }
  client* c = by_id(ev.id);
  if (c == nullptr) {
    if (ev.id == listener_.get()) {
      // The listener's own: its device gone ends the server (every client
      // with it); anything else is said (stage 07's rule: no event is
      // dropped without a word).
      if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL) throw rdma::cm::explain(ev, "a client's connect request", "rdma_listen");
      std::printf("listener: %s (status %d); listening on\n", rdma_event_str(ev.type), ev.status);
    } else {
      // About an id already gone: a client forgotten, or one turned away.
      std::printf("%s about an id no client holds now: passed over\n", rdma_event_str(ev.type));
    }
    std::fflush(stdout);
    return;
  }
  switch (ev.type) {
    case RDMA_CM_EVENT_ESTABLISHED:
      if (c->leaving) return;
      // A bind the device refuses now costs this client only (its QP is
      // gone, its window was not made for it...): it goes, the others stay.
      try {
        bind_window(*c);
      } catch (const rdma::verbs_error& e) {
        let_go(*c, parting::lost, e.what());
      }
      return;
    case RDMA_CM_EVENT_DISCONNECTED:
      let_go(*c, c->finished ? parting::done : parting::lost,
             c->finished ? "done" : "disconnected before its END (killed?)");
      return;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return;
    default:
      // CONNECT_ERROR, UNREACHABLE (the client vanished between our
      // accept and its answer), anything else: this client only.
      let_go(*c, parting::lost, rdma::cm::explain(ev, "its connection's events", "client " + std::to_string(c->number)).what());
  }
}

// rdma_reject with the reason as text (the client prints it); the
// request's id is destroyed on the way out.
void server::turn_away(rdma_cm_id* id, const std::string& why) {
  const rdma::cm_id_ptr owned(id);
  const auto text = rdma::cm::encode_reject_text(why);
  ++rejected_;
  std::printf("turned away a client: %s\n", why.c_str());
  // A failed reject costs only that client (it times out); the server goes on.
  if (rdma_reject(owned.get(), text.data(), static_cast<std::uint8_t>(text.size())) != 0) {
    std::printf("  (rdma_reject failed too: %s)\n", rdma::errno_name(errno).c_str());
  }
  std::fflush(stdout);
}

void server::join(const rdma::cm::cm_event& request) {
  if (joined_ == opts_.clients) {
    turn_away(request.id, "this server has served its " + std::to_string(opts_.clients) + " clients");
    return;
  }
  hello h;
  try {
    h = decode_hello(request.private_data);
  } catch (const rdma::tutorial_error& e) {
    turn_away(request.id, e.what());
    return;
  }
  if (h.record_size != opts_.record_size) {
    turn_away(request.id, "records of " + std::to_string(h.record_size) + " bytes; this server takes " +
                              std::to_string(opts_.record_size) + " (--record-size)");
    return;
  }
  if (request.id->verbs != ctx_) {
    turn_away(request.id, "it came in on another RDMA device than the pool's");
    return;
  }
  // The grant: one chunk, taken in O(1) with no verbs call.
  const std::optional<chunk> taken = pool_.try_alloc();
  if (!taken) {
    turn_away(request.id, "the pool is exhausted: every chunk is granted (" + std::to_string(pool_.count()) +
                              "); try again when a client has left");
    return;
  }
  auto c = std::make_unique<client>();
  c->number = joined_ + 1;
  c->id.reset(request.id);  // ours now: destroyed when the client is forgotten
  c->granted = *taken;
  c->slots = grant{layout_.first_slot(taken->index), layout_.slots};
  c->credit_addr = h.credit_addr;
  c->credit_rkey = h.credit_rkey;
  c->credit_batch = (h.flags & flag_latency) != 0 ? 1 : credit_batch_;
  try {
    // A QP on the request's id: its Recvs come from the SRQ, its
    // completions (both ways) go to the one CQ.
    ibv_qp_init_attr attr{};
    attr.send_cq = cq_.get();
    attr.recv_cq = cq_.get();
    attr.srq = srq_.get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = send_queue;
    attr.cap.max_send_sge = 1;
    attr.cap.max_inline_data = 8;  // the credit edge travels inside the WQE
    rdma::check_errno(rdma_create_qp(c->id.get(), pd_.get(), &attr), "rdma_create_qp(on the SRQ)");
    c->qp.reset(c->id.get());
    c->qp_num = c->id->qp->qp_num;
    // The memory window: a second rkey over part of a registration made
    // at start-up (the chunk's). Type 2 is bound to one QP by a work
    // request on it, so this rkey is useless through any other connection,
    // and opens only what the bind names (on Soft-RoCE: only what the
    // chunk's region holds). Its key is ours to choose: the next one.
    c->window.reset(rdma::check_ptr(ibv_alloc_mw(pd_.get(), IBV_MW_TYPE_2), "ibv_alloc_mw(IBV_MW_TYPE_2)"));
    c->window_rkey = ibv_inc_rkey(c->window->rkey);

    grant_msg g;
    g.first_slot = c->slots.first;
    g.slots = c->slots.count;
    g.rkey = c->window_rkey;
    g.addr = reinterpret_cast<std::uintptr_t>(taken->addr);
    g.record_size = layout_.record_size;
    g.chunk_bytes = layout_.chunk_size;
    const auto grant_bytes = encode_grant(g);
    rdma_conn_param param{};
    param.private_data = grant_bytes.data();
    param.private_data_len = grant_size;
    param.responder_resources = 0;  // nobody reads from us
    param.initiator_depth = 0;
    param.rnr_retry_count = 0;      // the client's writes: with credits an RNR NAK is a bug, fail at the first
    // 18 (1.07 s a try) on Soft-RoCE, 14 on a NIC (waiting.hpp), or --ack-timeout.
    rdma::cm::set_ack_timeout(c->id.get(), opts_.ack_timeout.value_or(rdma::default_ack_timeout(limits_.attr())));
    rdma::check_errno(rdma_accept(c->id.get(), &param), "rdma_accept");
  } catch (const std::exception& e) {
    // Nothing reached the client yet: refuse it and put everything back.
    c->window.reset();
    c->qp.reset();
    pool_.release(taken->addr);
    turn_away(c->id.release(), std::string("the server could not set up the connection: ") + e.what());
    if (const std::string hint = rdma::hint_of(e); !hint.empty()) std::printf("  likely fix: %s\n", hint.c_str());
    return;
  }
  ++joined_;
  std::printf("client %u %s: QP 0x%x on the SRQ; granted chunk %u, slots %u..%u, window rkey 0x%x\n", c->number,
              rdma::cm::describe_id(c->id.get()).c_str(), c->qp_num, taken->index, c->slots.first,
              c->slots.first + c->slots.count - 1, c->window_rkey);
  std::fflush(stdout);
  clients_.push_back(std::move(c));
}

// The connection is up (ESTABLISHED: the client's QP can take our writes
// now): bind the window over this client's slots, on its QP. Its
// completion (server.cpp) opens the credits; before that the client has an
// edge of 0 and writes nothing, so it never uses an rkey not yet bound.
void server::bind_window(client& c) {
  ibv_send_wr wr{};
  wr.wr_id = bind_tag | c.number;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.bind_mw.mw = c.window.get();
  wr.bind_mw.rkey = c.window_rkey;
  wr.bind_mw.bind_info.mr = pool_.mr(c.granted.index);
  wr.bind_mw.bind_info.addr = reinterpret_cast<std::uintptr_t>(c.granted.addr);
  wr.bind_mw.bind_info.length = std::uint64_t{c.slots.count} * layout_.record_size;
  wr.bind_mw.bind_info.mw_access_flags = 0;  // TODO
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(c.qp->qp, &wr, &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_send(bind the memory window of client " + std::to_string(c.number) + ")");
  }
}

void server::on_async_event(const ibv_async_event& e) {
  switch (e.event_type) {
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      // Fewer than the limit are posted: repost everything consumed now,
      // without waiting for a full batch; the limit fires once per arming.
      ++limit_events_;
      rdma::post_srq_receives(srq_.get(), recvs_waiting_);
      recvs_waiting_ = 0;
      rdma::arm_srq_limit(srq_.get(), srq_limit_);
      return;
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
      // A write our device refused (outside the window: a remote access
      // error) or a broken QP: that client only. Marked here, handled in
      // let_go; the event is acked after this returns.
      if (client* c = by_qp(e.element.qp->qp_num); c != nullptr && !c->leaving) {
        let_go(*c, parting::dropped, rdma::async_event_name(e.event_type) + " on its QP (a write outside its window?)");
      }
      return;
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
      // Every client's completions or Recvs are gone with it: nothing to serve.
      throw rdma::tutorial_error(rdma::async_event_name(e.event_type) + ": the server's shared " +
                                     (e.event_type == IBV_EVENT_CQ_ERR ? "CQ" : e.event_type == IBV_EVENT_SRQ_ERR ? "SRQ" : "device") +
                                     " failed",
                                 "a CQ overrun means more completions than its entries: see the sizes printed at start-up");
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      // In ERR, the QP takes no more Recvs from the SRQ and those it held
      // have completed: forget_drained destroys it once the CQ has been
      // polled empty after this (stage 06's order, let_go below). Unasked,
      // the QP broke on its own: the completion that says how (a write our
      // device refused) was posted before this event, but the CQ's channel
      // and this queue are two descriptors, and this one may be read first
      // (measured on Soft-RoCE, Linux 6.12, 1 run in 3). So it is judged
      // once the CQ has been polled empty after it (rdma::last_wqe_notice).
      if (client* c = by_qp(e.element.qp->qp_num); c != nullptr) c->last_wqe.event(c->departure, cq_empties_);
      return;
    case IBV_EVENT_COMM_EST:
      return;
    default:
      std::printf("async event: %s\n", rdma::async_event_name(e.event_type).c_str());
  }
}

// A client that must go: rdma_disconnect (our QP to ERR, a DREQ to the
// client, or our answer to its own), then a marker WR that comes back
// flushed behind everything its send queue held. The rest waits, in
// forget_drained, for what stage 06 taught (rdma::srq_qp_departure):
// IBV_EVENT_QP_LAST_WQE_REACHED, the CQ polled empty after it, and the
// marker; on Soft-RoCE, which sends no such event on Linux 6.1, the marker
// and rdma::last_wqe_wait. Bounded by --wait-ms.
void server::let_go(client& c, parting how, const std::string& why) {
  if (c.leaving) return;
  c.leaving = true;
  c.how = how;
  c.why = why;
  if (how == parting::lost) ++lost_;
  if (how == parting::dropped) ++dropped_;
  if (how != parting::done) {
    std::printf("client %u (QP 0x%x): %s; letting it go after %llu records\n", c.number, c.qp_num, why.c_str(),
                static_cast<unsigned long long>(c.records));
    std::fflush(stdout);
  }
  // EINVAL when the connection is already torn down on our side: fine.
  if (rdma_disconnect(c.id.get()) != 0 && errno != EINVAL) rdma::check_errno(-1, "rdma_disconnect");
  ibv_send_wr marker{};
  marker.wr_id = drain_tag | c.number;
  marker.opcode = IBV_WR_RDMA_WRITE;  // never executed: flushed
  marker.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  // A full send queue refuses it (ENOMEM): then the event alone decides.
  const int rc = ibv_post_send(c.qp->qp, &marker, &bad);
  if (rc != 0) {
    std::printf("client %u: %s; its QP's last WQE event decides when it may go\n", c.number,
                rdma::verbs_error(rc, "ibv_post_send(drain marker)").what());
    std::fflush(stdout);
  }
  c.departure.emplace(steady::now(), last_wqe_wait_, rc == 0);
  c.last_wqe.pass_to(*c.departure);
}

// Clients are forgotten here only, between completions: the window, the
// QP and the id released (in that order: server.hpp says why), the chunk back in the pool.
void server::forget_drained() {
  const auto now = steady::now();
  for (std::size_t i = 0; i < clients_.size(); ++i) {
    client& c = *clients_[i];
    if (!c.leaving && c.last_wqe.due(cq_empties_)) {
      let_go(c, parting::lost, "its QP went to the error state (IBV_EVENT_QP_LAST_WQE_REACHED)");
    }
    if (!c.leaving) continue;
    const auto done = c.departure->check(now, cq_empties_);
    if (done == rdma::srq_qp_departure::outcome::waiting) continue;
    char line[256];
    std::snprintf(line, sizeof line, "client %u: %s; %llu records, %llu bytes, gaps %llu, duplicates %llu, corrupt %llu",
                  c.number, c.how == parting::done ? "done" : c.how == parting::lost ? "lost" : "dropped",
                  static_cast<unsigned long long>(c.records), static_cast<unsigned long long>(c.bytes),
                  static_cast<unsigned long long>(c.seq.gaps()), static_cast<unsigned long long>(c.seq.duplicates()),
                  static_cast<unsigned long long>(c.seq.corrupt()));
    parted_.push_back(line);
    const std::uint32_t number = c.number;
    const chunk granted = c.granted;
    const std::string how = c.departure->describe(done);
    clients_.erase(clients_.begin() + static_cast<std::ptrdiff_t>(i));  // window, QP, id: in that order
    --i;
    pool_.release(granted.addr);
    std::printf("client %u gone (%s); chunk %u back in the pool (%u of %u free)\n", number,
                how.c_str(), granted.index, pool_.free_count(),
                pool_.count());
  }
  std::fflush(stdout);
}

}  // namespace stage09
