// The server's comings and goings (server.hpp has the state): a client
// joining, with a QP on the shared SRQ and a window registered for it
// alone; the async events; a client leaving (done, lost or dropped) through
// ERR and a drain, and forgotten only between completions.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rdma_tutorial/error.hpp"
#include "server.hpp"

namespace stage06 {

// A client connects: a QP on the shared SRQ (its own send queue, the
// shared CQ), its window of slots, the walk to RTS, our endpoint back.
void server::join() {
  // The listener is readable: the client is there, accept takes it at once.
  // Its endpoint gets at most a second: meanwhile nobody else is served.
  const int handshake_ms = std::min(opts_.peer.wait_ms, static_cast<int>(rdma::waiting_policy::join_handshake_limit.count()));
  auto [socket, peer] = rdma::accept_peer(listener_, handshake_ms, handshake_ms);
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
  init.cap.max_send_wr = rdma::credit_send_queue;
  init.cap.max_send_sge = 1;
  init.cap.max_inline_data = 8;  // the credit word travels inside the WQE
  rdma::qp_ptr qp(rdma::check_ptr(ibv_create_qp(dev_.pd.get(), &init), "ibv_create_qp(on the SRQ)"));

  // One registration per window (one region for all would hand every
  // client an rkey that opens every other client's slots too).
  char* slots = landing_.data() + std::size_t{number - 1} * sizing_.window * opts_.size;
  const std::uint32_t length = sizing_.window * opts_.size;
  rdma::mr_ptr window(rdma::check_ptr(ibv_reg_mr(dev_.pd.get(), slots, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
                                      "ibv_reg_mr(client " + std::to_string(number) + "'s window)"));
  rdma::wire::endpoint ours = rdma::local_endpoint(dev_, qp.get());
  ours.addr = reinterpret_cast<std::uintptr_t>(slots);
  ours.rkey = window->rkey;
  ours.length = length;
  rdma::qp_params params = dev_.params;
  params.min_rnr_timer = 12;
  rdma::connect_to_peer(qp.get(), ours, peer, params);
  rdma::tcp::send_endpoint(socket, ours, rdma::tcp::after_ms(opts_.peer.wait_ms));
  std::printf("client %u %s: QP 0x%x on the SRQ <-> QP 0x%x, window %u slots (rkey 0x%x), credit word at 0x%llx\n",
              number, socket.peer().c_str(), qp->qp_num, peer.qp_num, sizing_.window, window->rkey,
              static_cast<unsigned long long>(peer.addr));
  std::fflush(stdout);
  ++joined_;
  clients_.add(std::make_unique<client>(number, std::move(socket), peer, std::move(window), std::move(qp), slots, sizing_,
                                       opts_.credit_batch.value_or(std::max(1u, sizing_.window / 2))));
}

// The async events, sorted as every SRQ server sorts them
// (rdma::sort_server_event); each is acked after this returns.
void server::on_async_event(const ibv_async_event& e) {
  switch (rdma::sort_server_event(e.event_type)) {
    case rdma::srq_server_event::limit_reached:
      // Fewer than the limit are posted: repost everything consumed now,
      // without waiting for a full batch, and arm the limit again.
      refill_.on_limit_event();
      return;
    case rdma::srq_server_event::last_wqe:
      // A QP in ERR takes no more Recvs from the SRQ, and those it took
      // have completed, flushed. Only noted here (ibv_destroy_qp waits for
      // its QP's events to be acked); asked for or not, srq.hpp's
      // srq_qp_departure and last_wqe_notice say what it decides.
      clients_.last_wqe_event(e.element.qp->qp_num);
      return;
    case rdma::srq_server_event::client_broke:
      // One client's QP broke (a request our device could not carry out, a
      // write it refused): that client goes, the others stay.
      if (client* c = clients_.by_qp(e.element.qp->qp_num); c != nullptr && !c->leaving) {
        let_go(*c, parting::dropped, async_event_name(e.event_type) + " on its QP");
      }
      return;
    case rdma::srq_server_event::shared_failed:
      rdma::throw_shared_failure(e.event_type);  // the CQ, the SRQ or the device every client shares
    case rdma::srq_server_event::ignored:
      return;
    case rdma::srq_server_event::said:
      // PORT_ERR, PORT_ACTIVE, GID_CHANGE...: a client whose packets stop
      // reaching us goes silent and --wait-ms lets it go.
      std::printf("async event: %s\n", async_event_name(e.event_type).c_str());
      std::fflush(stdout);
  }
}

// A client that must go: its QP to ERR (flushes its sends; no more of its
// writes are accepted), then a marker WR and the departure
// (rdma::srq_clients::leave). Its state is kept until the QP is done with
// the SRQ and the CQ with the QP, in the order the InfiniBand specification
// asks for (srq.hpp): the last WQE event, the CQ polled empty after it, the
// marker back flushed. Destroyed earlier, the QP would take the Recvs it
// held with it, and the SRQ would be that much shorter for good.
void server::let_go(client& c, parting how, const std::string& why) {
  if (c.leaving) return;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  rdma::check_rc(ibv_modify_qp(c.qp, &attr, IBV_QP_STATE), "ibv_modify_qp(client " + std::to_string(c.number) + " to ERR)");
  clients_.leave(c, how, why);
}

// Its departure decided (rdma::srq_clients::settle): destroyed, its QP first.
void server::forget(std::unique_ptr<client> c, const std::string& how) {
  const std::uint32_t number = c->number;
  const std::uint64_t records = c->records;
  const bool finished = c->finished;
  c.reset();
  if (finished) {
    std::printf("client %u: done, %llu records; QP destroyed (%s)\n", number, static_cast<unsigned long long>(records),
                how.c_str());
  } else {
    std::printf("client %u: gone after %llu records; QP destroyed (%s); the others go on\n", number,
                static_cast<unsigned long long>(records), how.c_str());
  }
  std::fflush(stdout);
}

// The TCP side: a client joining, one closing its connection, the async
// events, deadlines. `wait_ms` > 0 when the loop has been idle a while.
void server::look_around(int wait_ms) {
  std::vector<pollfd> fds{{events_.fd(), POLLIN, 0}};
  if (joined_ < sizing_.clients) fds.push_back({listener_.fd(), POLLIN, 0});
  const std::size_t first_client = fds.size();
  std::vector<client*> watched;  // the clients whose sockets are in fds
  for (const auto& c : clients_.all()) {
    if (c->leaving) continue;
    fds.push_back({c->socket.fd(), POLLIN, 0});
    watched.push_back(c.get());
  }
  rdma::check_errno(::poll(fds.data(), fds.size(), wait_ms), "poll");
  if (fds[0].revents != 0) events_.drain([&](const ibv_async_event& e) { on_async_event(e); });
  for (std::size_t i = 0; i < watched.size(); ++i) {
    client& c = *watched[i];
    if (fds[first_client + i].revents == 0 || c.leaving) continue;
    if (rdma::tcp::peer_closed(c.socket)) {
      let_go(c, c.finished ? parting::done : parting::lost,
             c.finished ? "closed" : "closed its connection before END (killed?)");
    } else {
      // After the handshake the protocol has nothing to say over TCP.
      let_go(c, parting::dropped, "sent bytes on its TCP connection after the handshake");
    }
  }
  if (first_client == 2 && fds[1].revents != 0) {
    // A client whose handshake fails costs only itself.
    try {
      join();
    } catch (const std::exception& e) {
      std::printf("a client could not join: %s\n", e.what());
      if (const std::string hint = rdma::hint_of(e); !hint.empty()) std::printf("  likely fix: %s\n", hint.c_str());
      std::fflush(stdout);
    }
  }

  // Clients are forgotten here only, never while a completion or an event
  // about them is being handled.
  clients_.settle([&](client& c, parting how, const std::string& why) { let_go(c, how, why); },
                  [&](std::unique_ptr<client> c, const std::string& how) { forget(std::move(c), how); });
  const auto now = coarse::now();
  const auto wait = std::chrono::milliseconds(opts_.peer.wait_ms);
  for (const auto& c : clients_.all()) {
    if (c->leaving || now - c->last_heard <= wait) continue;
    if (!c->finished) {
      // Stopped, or stuck: it would hold its window, and this server, for ever.
      let_go(*c, parting::dropped, "silent for --wait-ms " + std::to_string(opts_.peer.wait_ms));
    } else {
      let_go(*c, parting::done, "done");  // its last credits never confirmed: no reason to wait longer
    }
  }
  if (joined_ < sizing_.clients && now > join_deadline_) {
    throw rdma::tutorial_error(std::to_string(joined_) + " of " + std::to_string(sizing_.clients) +
                                   " clients came within " + std::to_string(opts_.peer.accept_ms) + " ms",
                               "start every client, or give --clients the number you start");
  }
}

}  // namespace stage06
