// The client's story: expose one 8-byte credit word, learn the window the
// server granted, and stream --records records through it: a write only
// while fewer than `window` are unconsumed, then END, then wait until the
// server has consumed everything.
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/credit_stream.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage06 {

namespace {

using clock = std::chrono::steady_clock;

constexpr std::uint32_t send_queue = 128;

// Records 0..count-1, then END: every write the credits, the send queue
// and the source slots allow goes out as one linked list of WRs, one
// ibv_post_send (common/src/credit_stream.cpp).
//
// Record `seq` is built in source slot seq % window, over the bytes of
// record seq - window: credit_stream::room lets no write into a slot
// before the one that last used it is known complete (WR n is record n).
void post_all(rdma::credit_stream& s, credit_window& credits, const rdma::wire::endpoint& peer, std::uint32_t size,
              std::uint64_t count, const rdma::registered_buffer& source) {
  const std::uint32_t window = credits.window();
  std::vector<ibv_send_wr> wrs(window);
  std::vector<ibv_sge> sges(window);
  const std::uint32_t signal_every = std::max(1u, std::min(window, 64u) / 2);
  for (std::uint64_t seq = 0; seq <= count;) {
    s.wait_until("a credit", [&] { return s.room(window - credits.in_flight()) > 0; });
    const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(s.room(window - credits.in_flight()), count + 1 - seq));
    for (std::size_t i = 0; i < k; ++i, ++seq) {
      const std::uint32_t slot = static_cast<std::uint32_t>(seq % window);
      ibv_send_wr& wr = wrs[i];
      wr = ibv_send_wr{};
      wr.wr_id = seq;
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.wr.rdma.remote_addr = peer.addr + std::uint64_t{slot} * size;
      wr.wr.rdma.rkey = peer.rkey;
      if (seq == count) {  // END: 0 bytes, the count in the immediate
        wr.imm_data = htonl(rdma::imm::encode(imm_end, static_cast<std::uint32_t>(seq % rdma::imm::index_limit)));
      } else {
        fill_record(source.bytes().subspan(std::size_t{slot} * size, size), seq);
        sges[i] = {reinterpret_cast<std::uintptr_t>(source.data() + std::size_t{slot} * size), size, source.lkey()};
        wr.sg_list = &sges[i];
        wr.num_sge = 1;
        wr.imm_data = htonl(rdma::imm::encode(imm_data, slot));
      }
      if (seq == count || (seq + 1) % signal_every == 0) wr.send_flags = IBV_SEND_SIGNALED;
      wr.next = i + 1 < k ? &wrs[i + 1] : nullptr;
    }
    s.post(wrs.data(), k);
    for (std::size_t i = 0; i < k; ++i) credits.on_sent();
  }
}

}  // namespace

int run_client(const options& opts, const rdma::rdma_device& dev) {
  // The only memory the server may write: the credit word.
  const rdma::registered_buffer credit(dev.pd.get(), sizeof(std::uint64_t),
                                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "credit word");
  // What we write from: one record per slot of the window, registered once
  // the server told us the window. Declared before the QP all the same, so
  // that C++ destroys the QP first (stage 04's rule: no registration goes
  // while a QP that may still read it lives).
  std::optional<rdma::registered_buffer> source;
  dev.limits.queue_depth(send_queue, "writes in flight");
  ibv_qp_cap cap{};
  cap.max_send_wr = send_queue;
  cap.max_recv_wr = 1;  // nothing is ever sent to us; a provider may refuse 0
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  const rdma::qp_ptr qp = rdma::create_rc_qp(dev.pd.get(), dev.cq.get(), dev.cq.get(), cap, "our QP");

  rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());
  ours.addr = reinterpret_cast<std::uintptr_t>(credit.data());
  ours.rkey = credit.rkey();
  ours.length = sizeof(std::uint64_t);
  const auto [server, peer] = rdma::connect_peer(opts.peer.server, opts.peer.port, ours, opts.peer.wait_ms);
  if (peer.length == 0 || peer.length % opts.size != 0) {
    throw rdma::tutorial_error("the server granted " + std::to_string(peer.length) + " bytes, not a whole number of " +
                                   std::to_string(opts.size) + "-byte slots",
                               "give both sides the same --size");
  }
  const std::uint32_t window = peer.length / opts.size;
  // From the peer: checked before anything is sized by it (a window of a
  // million slots would be a million work requests and a registration
  // beyond what this device takes).
  if (window > max_window) {
    throw rdma::tutorial_error("the server granted a window of " + std::to_string(window) + " slots; a server of this "
                                   "stage grants " + std::to_string(max_window) + " at most",
                               "is the peer this stage's server?");
  }
  dev.limits.registration(std::uint64_t{window} * opts.size, "bytes of records the server's window asks us to hold");
  rdma::connect_to_peer(qp.get(), ours, peer, dev.params);
  std::printf("server %s: QP 0x%x <-> QP 0x%x, window %u slots of %u bytes (rnr_retry %u)\n", server.peer().c_str(),
              qp->qp_num, peer.qp_num, window, opts.size, dev.params.rnr_retry);
  std::fflush(stdout);

  source.emplace(dev.pd.get(), std::size_t{window} * opts.size, 0, "records");
  credit_window credits(window);
  // The credit word counts what the server consumed; a count beyond what
  // we sent is refused (credit_window::on_credit).
  rdma::credit_stream s(qp.get(), dev.cq.get(), reinterpret_cast<std::uint64_t*>(credit.data()), window, send_queue,
                        opts.peer.wait_ms,
                        {[&](std::uint64_t consumed) { credits.on_credit(consumed); },
                         [&](const char* what) {
                           return "no credit within " + std::to_string(opts.peer.wait_ms) + " ms while we waited for " +
                                  what + " (" + std::to_string(credits.consumed()) + " of " +
                                  std::to_string(credits.sent()) + " consumed)";
                         },
                         [&](const char* what) {
                           if (rdma::tcp::peer_closed(server)) {
                             throw rdma::tutorial_error("the server closed the connection while we waited for " +
                                                        std::string(what));
                           }
                         }});
  const auto start = clock::now();
  post_all(s, credits, peer, opts.size, opts.records, *source);
  // Everything counts once the server has consumed it, END included.
  s.wait_until("the last credit", [&] { return credits.consumed() == opts.records + 1; });
  s.wait_until("the last completion", [&] { return s.completed() == s.posted(); });
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("sent %u records and END; the server consumed all %u; at most %llu in flight (window %u)\n",
              opts.records, opts.records + 1, static_cast<unsigned long long>(credits.most_in_flight()), window);
  std::printf("%s", rdma::bw_report(opts.size, opts.records, seconds).c_str());
  return 0;
}

}  // namespace stage06
