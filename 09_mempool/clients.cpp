// A client's life on this server, in order (server.hpp has the state,
// server.cpp the records it writes meanwhile): it asks to connect and is
// given a chunk of the pool and a memory window over it (join); the window
// is bound once the connection is up (bind_window), and only its bind's
// completion gives the client credits (window_bound). However it leaves
// (done, killed, silent, disconnected for breaking the rules), its QP goes
// to ERR and is drained as stage 06 taught (let_go), before the window, the
// QP and the id go and its chunk returns to the pool (forget): a chunk is
// never granted again while its last owner could still write it.
#include <cerrno>
#include <cstdio>
#include <string>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/transport.hpp"
#include "server.hpp"

namespace stage09 {

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
    attr.cap.max_send_wr = rdma::credit_send_queue;
    attr.cap.max_send_sge = 1;
    attr.cap.max_inline_data = 8;  // the credit edge travels inside the WQE
    rdma::check_errno(rdma_create_qp(c->id.get(), pd_.get(), &attr), "rdma_create_qp(on the SRQ)");
    c->owned_qp.reset(c->id.get());
    c->qp = c->id->qp;
    c->qp_num = c->qp->qp_num;
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
    c->owned_qp.reset();
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
  clients_.add(std::move(c));
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

// The connection is up (ESTABLISHED: the client's QP can take our writes
// now): bind the window over this client's slots, on its QP. Its
// completion (window_bound) opens the credits; before that the client has an
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
  wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(c.qp, &wr, &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_send(bind the memory window of client " + std::to_string(c.number) + ")");
  }
}

// The bind's completion: the window now opens the client's slots, so the
// first edge tells it how far it may go.
void server::window_bound(client& c, const ibv_wc& wc) {
  if (wc.status != IBV_WC_SUCCESS) {
    let_go(c, parting::dropped, "binding its memory window failed: " + rdma::describe_wc(wc));
    return;
  }
  c.open = true;
  c.last_heard = coarse::now();
  post_edge(c, credit_edge(0, layout_.slots));
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

// The async events, sorted as stage 06 sorts them (rdma::sort_server_event);
// each is acked after this returns.
void server::on_async_event(const ibv_async_event& e) {
  switch (rdma::sort_server_event(e.event_type)) {
    case rdma::srq_server_event::limit_reached:
      // Fewer than the limit are posted: repost everything consumed now,
      // without waiting for a full batch; the limit fires once per arming.
      refill_.on_limit_event();
      return;
    case rdma::srq_server_event::client_broke:
      // A write our device refused (outside the window: a remote access
      // error) or a broken QP: that client only.
      if (client* c = clients_.by_qp(e.element.qp->qp_num); c != nullptr && !c->leaving) {
        let_go(*c, parting::dropped, rdma::async_event_name(e.event_type) + " on its QP (a write outside its window?)");
      }
      return;
    case rdma::srq_server_event::shared_failed:
      rdma::throw_shared_failure(e.event_type);  // every client's completions or Recvs are gone with it
    case rdma::srq_server_event::last_wqe:
      // Stage 06's: asked for (let_go) or not (the QP broke on its own,
      // and the completion that says how may be read after this, measured
      // on Soft-RoCE, Linux 6.12, 1 run in 3), srq.hpp says what it decides.
      clients_.last_wqe_event(e.element.qp->qp_num);
      return;
    case rdma::srq_server_event::ignored:
      return;
    case rdma::srq_server_event::said:
      std::printf("async event: %s\n", rdma::async_event_name(e.event_type).c_str());
  }
}

// A client that holds a chunk and says nothing (stopped, or stuck) would
// hold it, and this server, for ever; one done that never disconnects, too.
void server::let_go_the_silent() {
  const auto now = coarse::now();
  const auto wait = std::chrono::milliseconds(opts_.peer.wait_ms);
  for (const auto& c : clients_.all()) {
    if (c->leaving || now - c->last_heard <= wait) continue;
    if (c->open && !c->finished) {
      let_go(*c, parting::dropped, "silent for --wait-ms " + std::to_string(opts_.peer.wait_ms));
    } else if (c->finished) {
      let_go(*c, parting::done, "no disconnect within --wait-ms after its END");
    }
  }
}

// A client that must go: rdma_disconnect (our QP to ERR, a DREQ to the
// client, or our answer to its own), then stage 06's departure
// (rdma::srq_clients::leave): a marker WR that comes back flushed behind
// everything its send queue held, IBV_EVENT_QP_LAST_WQE_REACHED, the CQ
// polled empty after it; on Soft-RoCE, which sends no such event on Linux
// 6.1, the marker and rdma::last_wqe_wait. Bounded by --wait-ms.
void server::let_go(client& c, parting how, const std::string& why) {
  if (c.leaving) return;
  c.why = why;
  // EINVAL when the connection is already torn down on our side: fine.
  if (rdma_disconnect(c.id.get()) != 0 && errno != EINVAL) rdma::check_errno(-1, "rdma_disconnect");
  clients_.leave(c, how, why);
}

// Its departure decided (rdma::srq_clients::settle, between completions):
// the line for the report; the window, the QP and the id released (in that
// order: server.hpp says why); only then the chunk back in the pool.
void server::forget(std::unique_ptr<client> c, const std::string& how) {
  char line[256];
  std::snprintf(line, sizeof line, "client %u: %s; %llu records, %llu bytes, gaps %llu, duplicates %llu, corrupt %llu",
                c->number, rdma::parting_name(c->how), static_cast<unsigned long long>(c->records),
                static_cast<unsigned long long>(c->bytes), static_cast<unsigned long long>(c->seq.gaps()),
                static_cast<unsigned long long>(c->seq.duplicates()), static_cast<unsigned long long>(c->seq.corrupt()));
  parted_.push_back(line);
  const std::uint32_t number = c->number;
  const chunk granted = c->granted;
  c.reset();
  pool_.release(granted.addr);
  std::printf("client %u gone (%s); chunk %u back in the pool (%u of %u free)\n", number, how.c_str(), granted.index,
              pool_.free_count(), pool_.count());
}

client* server::by_id(const rdma_cm_id* id) {
  for (const auto& c : clients_.all()) {
    if (c->id.get() == id) return c.get();
  }
  return nullptr;
}

}  // namespace stage09
