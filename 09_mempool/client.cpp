// The client's story: connect by rdma_cm with a hello (where our credit
// word is), learn the grant from the accept (our slots, the window's rkey),
// wait for the server to open the window, then stream --records records
// inside the credit edge, END, and disconnect. --hostile breaks one rule
// (on the first record, or the credits), to watch the server refuse it.
#include <arpa/inet.h>
#include <endian.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "rdma_tutorial/transport.hpp"
#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/latency_report.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/nap_wait.hpp"
#include "rdma_tutorial/record.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage09 {

namespace {

using clock = std::chrono::steady_clock;

constexpr std::uint32_t send_queue = 128;

// What we create on the device rdma_cm chose (id->verbs), in teardown order.
struct on_device {
  rdma::pd_ptr pd;
  rdma::cq_ptr cq;
};

rdma::cm_qp_ptr create_qp(rdma_cm_id* id, const on_device& dev) {
  ibv_qp_init_attr attr{};
  attr.send_cq = dev.cq.get();
  attr.recv_cq = dev.cq.get();
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = send_queue;
  attr.cap.max_recv_wr = 1;  // nothing is ever sent to us; a provider may refuse 0
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  rdma::check_errno(rdma_create_qp(id, dev.pd.get(), &attr), "rdma_create_qp");
  return rdma::cm_qp_ptr(id);
}

struct stream {
  const options& opts;
  rdma_event_channel* channel;
  ibv_cq* cq;
  ibv_qp* qp;
  const grant_msg& g;
  std::uint64_t* credit_word;  // written by the server's device
  const rdma::registered_buffer& source;
  std::uint64_t sent = 0;       // writes posted: records, then END
  std::uint64_t completed = 0;  // WRs known complete
  std::uint64_t edge = 0;       // the last edge read
  std::uint32_t signal_every = 1;

  // The word changes under us (the server's device writes it): an atomic
  // acquire load (stage 04's std::atomic_ref), so the compiler reads memory
  // each time. The word is page-aligned
  // (registered_buffer), so the load is one aligned 8-byte access; that the
  // device stores it at once too is what devices do in practice, not what
  // the verbs promise (docs/06-srq-credits.md, "Credits"). An edge only
  // grows; one beyond what the grant allows (a torn read could make one)
  // is refused.
  void read_edge() {
    const std::uint64_t now = be64toh(std::atomic_ref<std::uint64_t>(*credit_word).load(std::memory_order_acquire));
    if (now <= edge) return;
    if (now > sent + g.slots) {
      throw rdma::tutorial_error("the server's credit edge " + std::to_string(now) + " is beyond " +
                                 std::to_string(sent) + " sent + " + std::to_string(g.slots) + " slots",
                                 "the credit word holds what the server made up: its bug");
    }
    edge = now;
  }

  void reap() {
    std::array<ibv_wc, 16> wcs{};
    const int n = rdma::check_poll(ibv_poll_cq(cq, static_cast<int>(wcs.size()), wcs.data()));
    for (int i = 0; i < n; ++i) {
      const ibv_wc& wc = wcs[static_cast<std::size_t>(i)];
      if (wc.status != IBV_WC_SUCCESS) {
        throw rdma::tutorial_error("write " + std::to_string(wc.wr_id) + " failed: " + rdma::describe_wc(wc),
                                   rdma::wc_status_hint(wc.status));
      }
      completed = wc.wr_id + 1;  // sends complete in order: every WR up to this one is done
    }
  }

  // Until `ready` holds: reap completions and read the edge, at the pace
  // of common/include/rdma_tutorial/nap_wait.hpp (stage 06: spinning flat
  // out starves the server and Soft-RoCE's own kernel work of CPU). Bounded
  // by --wait-ms without progress, and by the server disconnecting us.
  template <typename Ready>
  void wait_until(const char* what, Ready ready) {
    rdma::nap_until(
        ready,
        [&] {
          reap();
          read_edge();
        },
        [&](std::uint32_t looks, std::chrono::steady_clock::duration waited) {
          if (waited > std::chrono::milliseconds(opts.peer.wait_ms)) {
            throw rdma::tutorial_error("no credit within --wait-ms " + std::to_string(opts.peer.wait_ms) +
                                           " while we waited for " + what + " (edge " + std::to_string(edge) + ", " +
                                           std::to_string(sent) + " sent)",
                                       "the server stopped consuming: its output says why");
          }
          if (looks % rdma::waiting_policy::looks_per_peer_check != 0) return;
          if (const auto ev = rdma::cm::try_event(channel)) {
            throw rdma::tutorial_error("the server ended the connection (" + std::string(rdma_event_str(ev->type)) +
                                           ") while we waited for " + what + ", after " + std::to_string(sent) + " writes",
                                       "its output says why");
          }
        });
  }

  // One write: record `seq` into its slot, or END when seq == records.
  void fill_wr(ibv_send_wr& wr, ibv_sge& sge, std::uint64_t seq) {
    const std::uint32_t index = static_cast<std::uint32_t>(seq % g.slots);
    wr = ibv_send_wr{};
    wr.wr_id = sent;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.wr.rdma.remote_addr = g.addr + std::uint64_t{index} * g.record_size;
    wr.wr.rdma.rkey = g.rkey;  // the memory window's: it opens our slots, nothing else
    if (seq == opts.records) {  // END: 0 bytes, the count in the immediate
      wr.imm_data = htonl(rdma::imm::encode(imm_end, static_cast<std::uint32_t>(seq % rdma::imm::index_limit)));
    } else {
      // Slot i of our source is refilled only once the WR that last read it
      // is known complete (post_all and one_at_a_time wait for that): the
      // edge passing its record says the server took it, not that our
      // device is done with these bytes; a resend after a lost ACK reads
      // them again (ibv_post_send(3): reusable after the completion).
      char* at = source.data() + std::size_t{index} * g.record_size;
      rdma::fill_record({at, g.record_size}, seq);
      sge = {reinterpret_cast<std::uintptr_t>(at), g.record_size, source.lkey()};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.imm_data = htonl(rdma::imm::encode(imm_data, g.first_slot + index));
      if (seq == 0) break_a_rule(opts.hostile, g, wr, sge);  // the tests' --hostile (hostile.cpp)
    }
    if (seq == opts.records || (sent + 1) % signal_every == 0) wr.send_flags = IBV_SEND_SIGNALED;
  }

  // Records, then END: every credit we hold goes out as one linked list of
  // WRs in one ibv_post_send.
  void post_all() {
    if (opts.hostile == hostile_kind::silent) {
      // Connected, granted a chunk, and then nothing: the server must not
      // let us hold it for ever.
      std::printf("hostile: writes nothing, holding its chunk\n");
      std::fflush(stdout);
      wait_until("the server to let a silent client go", [] { return false; });
    }
    std::vector<ibv_send_wr> wrs(send_queue);
    std::vector<ibv_sge> sges(send_queue);
    // --hostile ignore-credits: as many writes as the send queue holds,
    // whatever the edge; a burst past what the server's SRQ was sized for.
    const bool heed_credits = opts.hostile != hostile_kind::ignore_credits;
    if (!heed_credits) {
      std::printf("hostile: ignores the credit edge, up to %u writes in flight\n", send_queue);
      std::fflush(stdout);
    }
    while (sent <= opts.records) {
      // A credit, room in the send queue, and the source slot free: the WR
      // `slots` before this one known complete (WR n is record n).
      wait_until("a credit", [&] {
        return (!heed_credits || (sent < edge && sent < completed + g.slots)) && sent - completed < send_queue;
      });
      const std::uint64_t credits = heed_credits ? std::min(edge - sent, completed + g.slots - sent) : send_queue;
      const std::uint64_t room = std::min<std::uint64_t>(credits, send_queue - (sent - completed));
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(room, opts.records + 1 - sent));
      const std::uint64_t first = sent;
      for (std::size_t i = 0; i < k; ++i) {
        fill_wr(wrs[i], sges[i], first + i);
        wrs[i].next = i + 1 < k ? &wrs[i + 1] : nullptr;
        ++sent;
      }
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(qp, wrs.data(), &bad); rc != 0) {
        throw rdma::verbs_error(rc, "ibv_post_send(writes " + std::to_string(first) + "-" + std::to_string(sent - 1) + ")");
      }
    }
  }

  // --latency: one record at a time, each timed from its post until the
  // edge says the server took it (the server returns a credit per record).
  std::vector<double> one_at_a_time() {
    std::vector<double> samples;
    std::vector<ibv_send_wr> wr(1);
    std::vector<ibv_sge> sge(1);
    while (sent <= opts.records) {
      wait_until("a credit", [&] { return sent < edge && sent < completed + g.slots && sent - completed < send_queue; });
      const auto posted = clock::now();
      fill_wr(wr[0], sge[0], sent);
      ++sent;
      ibv_send_wr* bad = nullptr;
      if (const int rc = ibv_post_send(qp, wr.data(), &bad); rc != 0) {
        throw rdma::verbs_error(rc, "ibv_post_send(record " + std::to_string(sent - 1) + ")");
      }
      wait_until("the record's credit", [&] { return edge >= sent + g.slots; });
      if (sent <= opts.records) samples.push_back(std::chrono::duration<double, std::micro>(clock::now() - posted).count());
    }
    return samples;
  }
};

}  // namespace

int run_client(const options& opts, rdma_event_channel* channel) {
  const sockaddr_in server = rdma::cm::ipv4_address(opts.peer.server, opts.peer.port);
  const std::string to = opts.peer.server + ":" + std::to_string(opts.peer.port);
  // Address and route (stage 07, common/src/cm_events.cpp).
  rdma::cm_id_ptr id = rdma::cm::resolve(channel, server, to, opts.resolve_ms, std::nullopt);

  // What we will ask of the device rdma_cm chose, against what it takes.
  const rdma::device_limits limits(id->verbs);
  rdma::refuse_without_write_with_imm(id->verbs, limits.attr(), "every record this client streams is one");
  // The ACK timeout: --ack-timeout, else the device's (waiting.hpp: 18,
  // 1.07 s a try, on Soft-RoCE, where less failed across the two-guest wire;
  // 14 on a NIC), known only now that rdma_cm has chosen the device.
  const std::uint8_t ack_timeout = opts.ack_timeout.value_or(rdma::default_ack_timeout(limits.attr()));
  rdma::cm::set_ack_timeout(id.get(), ack_timeout);
  limits.queue_depth(send_queue, "writes in flight");
  limits.cq_entries(send_queue + 2);
  on_device dev;
  dev.pd.reset(rdma::check_ptr(ibv_alloc_pd(id->verbs), "ibv_alloc_pd"));
  dev.cq.reset(rdma::check_ptr(ibv_create_cq(id->verbs, static_cast<int>(send_queue) + 2, nullptr, nullptr, 0), "ibv_create_cq"));
  // The only memory the server may write: the credit word, 0 until it opens our window.
  const rdma::registered_buffer credit(dev.pd.get(), sizeof(std::uint64_t), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                       "credit word");
  // What we write from, registered once the grant says how much: declared
  // before the QP all the same, so the QP is destroyed before it (stage
  // 04's rule: no registration goes while a QP that may read it lives).
  std::optional<rdma::registered_buffer> source;
  rdma::cm_qp_ptr qp = create_qp(id.get(), dev);

  hello h;
  h.flags = opts.latency ? flag_latency : 0;
  h.record_size = opts.record_size;
  h.credit_rkey = credit.rkey();
  h.credit_addr = reinterpret_cast<std::uintptr_t>(credit.data());
  const auto hello_bytes = encode_hello(h);
  rdma_conn_param param{};
  param.private_data = hello_bytes.data();
  param.private_data_len = hello_size;
  param.retry_count = 3;      // < 7, or a dead server is retried forever
  param.rnr_retry_count = 0;  // the server sends us nothing
  // A server started beside us may not listen yet: retried on a new id
  // until --wait-ms, our QP moved to it (stage 07, common/src/cm_connect.cpp).
  const rdma::cm::connect_target target{server, to, opts.resolve_ms, ack_timeout, std::nullopt};
  const rdma::cm::cm_event established =
      rdma::cm::connect(channel, id, target, param, opts.peer.wait_ms, [&](rdma_cm_id* next) {
        qp.reset();
        qp = create_qp(next, dev);
      });
  const grant_msg g = decode_grant(established.private_data);
  if (g.record_size != opts.record_size) {
    throw rdma::tutorial_error("the server granted slots of " + std::to_string(g.record_size) + " bytes; we write " +
                               std::to_string(opts.record_size), "give both sides the same --record-size");
  }
  std::printf("ESTABLISHED: %s; granted slots %u..%u (%u of %u bytes) at 0x%llx, window rkey 0x%x\n",
              rdma::cm::describe_id(id.get()).c_str(), g.first_slot, g.first_slot + g.slots - 1, g.slots, g.record_size,
              static_cast<unsigned long long>(g.addr), g.rkey);
  std::fflush(stdout);

  // What we write from: one record per slot (twice the last one's room, for --hostile oversized).
  source.emplace(dev.pd.get(), (std::size_t{g.slots} + 1) * g.record_size, 0, "records");
  stream s{opts, channel, dev.cq.get(), id->qp, g, reinterpret_cast<std::uint64_t*>(credit.data()), *source};
  s.signal_every = std::max(1u, std::min(g.slots, 64u) / 2);
  // The server opens the window once it is bound: until then the edge is 0.
  s.wait_until("the window to open", [&] { return s.edge > 0; });
  const auto start = clock::now();
  std::vector<double> samples;
  if (opts.latency) {
    samples = s.one_at_a_time();
  } else {
    s.post_all();
  }
  // Everything counts once the server has consumed it, END included.
  s.wait_until("the last credit", [&] { return s.edge >= opts.records + 1 + g.slots; });
  s.wait_until("the last completion", [&] { return s.completed == s.sent; });
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("sent %llu records and END; the server took them all\n", static_cast<unsigned long long>(opts.records));
  if (opts.latency) {
    std::printf("%s", rdma::latency_report(opts.record_size, samples).c_str());
  } else {
    std::printf("%s", rdma::bw_report(opts.record_size, static_cast<std::uint32_t>(opts.records), seconds).c_str());
  }
  std::fflush(stdout);

  rdma::check_errno(rdma_disconnect(id.get()), "rdma_disconnect");
  rdma::cm::await(channel, id.get(), RDMA_CM_EVENT_DISCONNECTED, "rdma_disconnect", opts.peer.wait_ms);
  std::printf("DISCONNECTED\n");
  return 0;
}

}  // namespace stage09
