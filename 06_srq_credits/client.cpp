// The client's story: expose one 8-byte credit word, learn the window the
// server granted, and stream --records records through it: a write only
// while fewer than `window` are unconsumed, then END, then wait until the
// server has consumed everything.
#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/nap_wait.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage06 {

namespace {

using clock = std::chrono::steady_clock;

constexpr std::uint32_t send_queue = 128;

struct stream {
  const options& opts;
  const rdma::rdma_device& dev;
  ibv_qp* qp;
  const rdma::tcp::socket& server;
  const rdma::wire::endpoint& peer;
  std::uint64_t* credit_word;  // written by the server's device
  credit_window credits;
  std::uint32_t signal_every;
  std::uint64_t posted = 0;      // WRs in the send queue, signaled or not
  std::uint64_t completed = 0;   // WRs known complete

  // The credit word changes under us (the server's device writes it), so
  // it is read with an atomic acquire load, stage 04's std::atomic_ref:
  // the compiler must read memory each time. The word is page-aligned (registered_buffer), so the load is one
  // aligned 8-byte access; that the device's store is one too is what
  // Soft-RoCE's memcpy and a NIC's cache-line writes do in practice, not
  // what the verbs promise (docs/06-srq-credits.md, "Credits"). A count
  // beyond what we sent is refused (credit_window::on_credit).
  void read_credits() { credits.on_credit(be64toh(std::atomic_ref<std::uint64_t>(*credit_word).load(std::memory_order_acquire))); }

  void reap() {
    std::array<ibv_wc, 16> wcs{};
    const int n = rdma::check_poll(ibv_poll_cq(dev.cq.get(), static_cast<int>(wcs.size()), wcs.data()));
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[static_cast<std::size_t>(i)];
      rdma::check_wc(wc);  // an RNR here means the server's SRQ ran dry: its sizing is wrong
      completed = wc.wr_id + 1;  // sends complete in order: every WR up to this one is done
    }
  }

  // Until `ready` holds: reap completions and read the credit word, at
  // the pace of common/include/rdma_tutorial/nap_wait.hpp (flat out, then
  // napping: the server and Soft-RoCE's kernel work need these CPUs too).
  // Bounded by --wait-ms without progress, and by the server closing the
  // connection.
  template <typename Ready>
  void wait_until(const char* what, Ready ready) {
    rdma::nap_until(
        ready,
        [&] {
          reap();
          read_credits();
        },
        [&](std::uint32_t looks, std::chrono::steady_clock::duration waited) {
          if (waited > std::chrono::milliseconds(opts.peer.wait_ms)) {
            throw rdma::tutorial_error("no credit within " + std::to_string(opts.peer.wait_ms) + " ms while we waited for " +
                                           what + " (" + std::to_string(credits.consumed()) + " of " +
                                           std::to_string(credits.sent()) + " consumed)",
                                       "the server stopped consuming: its output says why");
          }
          if (looks % rdma::waiting_policy::looks_per_peer_check == 0 && rdma::tcp::peer_closed(server)) {
            throw rdma::tutorial_error("the server closed the connection while we waited for " + std::string(what));
          }
        });
  }

  // Records first..count-1, then END (when `end`): every credit we hold
  // goes out as one linked list of WRs, one ibv_post_send (on Soft-RoCE each
  // post is a system call: one per credit return, not one per record).
  //
  // Record `seq` is built in source slot seq % window, over the bytes of
  // record seq - window. A credit says the server consumed that one; it
  // does not say our device is done reading its source: until the WR's own
  // completion (ibv_post_send(3)), a resend after a lost ACK reads those
  // bytes again. So a slot is refilled only once the WR that last used it
  // is known complete (WR n is record n: one WR per record, END last).
  void post_all(std::uint64_t count, const rdma::registered_buffer& source) {
    const std::uint32_t window = credits.window();
    std::vector<ibv_send_wr> wrs(window);
    std::vector<ibv_sge> sges(window);
    for (std::uint64_t seq = 0; seq <= count;) {
      wait_until("a credit", [&] {
        return credits.can_send() && posted - completed < send_queue && posted < completed + window;
      });
      const std::uint64_t room = std::min({std::uint64_t{window} - credits.in_flight(), send_queue - (posted - completed),
                                           completed + window - posted});
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(room, count + 1 - seq));
      for (std::size_t i = 0; i < k; ++i, ++seq) {
        const std::uint32_t slot = static_cast<std::uint32_t>(seq % window);
        ibv_send_wr& wr = wrs[i];
        wr = ibv_send_wr{};
        wr.wr_id = posted + i;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.wr.rdma.remote_addr = peer.addr + std::uint64_t{slot} * opts.size;
        wr.wr.rdma.rkey = peer.rkey;
        if (seq == count) {  // END: 0 bytes, the count in the immediate
          wr.imm_data = htonl(rdma::imm::encode(imm_end, static_cast<std::uint32_t>(seq % rdma::imm::index_limit)));
        } else {
          fill_record(source.bytes().subspan(std::size_t{slot} * opts.size, opts.size), seq);
          sges[i] = {reinterpret_cast<std::uintptr_t>(source.data() + std::size_t{slot} * opts.size), opts.size,
                     source.lkey()};
          wr.sg_list = &sges[i];
          wr.num_sge = 1;
          wr.imm_data = htonl(rdma::imm::encode(imm_data, slot));
        }
        if (seq == count || (posted + i + 1) % signal_every == 0) wr.send_flags = IBV_SEND_SIGNALED;
        wr.next = i + 1 < k ? &wrs[i + 1] : nullptr;
      }
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(qp, wrs.data(), &bad); rc != 0) {
        throw rdma::verbs_error(rc, "ibv_post_send(records " + std::to_string(seq - k) + "-" + std::to_string(seq - 1) + ")");
      }
      posted += k;
      for (std::size_t i = 0; i < k; ++i) credits.on_sent();
    }
  }
};

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
  stream s{opts, dev, qp.get(), server, peer, reinterpret_cast<std::uint64_t*>(credit.data()),
           credit_window(window), std::max(1u, std::min(window, 64u) / 2)};
  const auto start = clock::now();
  s.post_all(opts.records, *source);
  // Everything counts once the server has consumed it, END included.
  s.wait_until("the last credit", [&] { return s.credits.consumed() == opts.records + 1; });
  s.wait_until("the last completion", [&] { return s.completed == s.posted; });
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("sent %u records and END; the server consumed all %u; at most %llu in flight (window %u)\n",
              opts.records, opts.records + 1, static_cast<unsigned long long>(s.credits.most_in_flight()), window);
  std::printf("%s", rdma::bw_report(opts.size, opts.records, seconds).c_str());
  return 0;
}

}  // namespace stage06
