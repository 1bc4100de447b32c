// The client's story: connect by rdma_cm with a hello (where our credit
// word is), learn the grant from the accept (our slots, the window's rkey),
// wait for the server to open the window, then stream --records records
// inside the credit edge, END, and disconnect. --hostile breaks one rule
// (on the first record, or the credits), to watch the server refuse it.
#include <arpa/inet.h>
#include <endian.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "rdma_tutorial/transport.hpp"
#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/cm_qp.hpp"
#include "rdma_tutorial/credit_stream.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/latency_report.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/record.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage09 {

namespace {

using clock = std::chrono::steady_clock;

constexpr std::uint32_t send_queue = 128;

// Our QP on the id, on stage 07's PD and CQ (common/src/cm_qp.cpp).
rdma::cm_qp_ptr create_qp(rdma_cm_id* id, const rdma::cm::on_device& dev) {
  ibv_qp_cap cap{};
  cap.max_send_wr = send_queue;
  cap.max_recv_wr = 1;  // nothing is ever sent to us; a provider may refuse 0
  cap.max_send_sge = 1;
  cap.max_recv_sge = 1;
  return rdma::cm::create_qp(id, dev, cap);
}

// The stream around rdma::credit_stream (stage 06's): what a write is in
// this stage, and the credit word read as an edge.
struct stream {
  const options& opts;
  const grant_msg& g;
  const rdma::registered_buffer& source;
  std::uint64_t edge = 0;  // the last edge read
  std::uint32_t signal_every;
  rdma::credit_stream out;

  stream(const options& o, rdma_event_channel* channel, ibv_qp* qp, ibv_cq* cq, std::uint64_t* credit_word,
         const grant_msg& grant, const rdma::registered_buffer& src)
      : opts(o), g(grant), source(src), signal_every(std::max(1u, std::min(grant.slots, 64u) / 2)),
        out(qp, cq, credit_word, grant.slots, send_queue, o.peer.wait_ms,
            {[this](std::uint64_t now) { on_edge(now); },
             [this](const char* what) {
               return "no credit within --wait-ms " + std::to_string(opts.peer.wait_ms) + " while we waited for " + what +
                      " (edge " + std::to_string(edge) + ", " + std::to_string(out.posted()) + " sent)";
             },
             [this, channel](const char* what) {
               if (const auto ev = rdma::cm::try_event(channel)) {
                 throw rdma::tutorial_error("the server ended the connection (" + std::string(rdma_event_str(ev->type)) +
                                                ") while we waited for " + what + ", after " +
                                                std::to_string(out.posted()) + " writes",
                                            "its output says why");
               }
             }}) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  // An edge only grows; one beyond what the grant allows (a torn read
  // could make one) is refused.
  void on_edge(std::uint64_t now) {
    if (now <= edge) return;
    if (now > out.posted() + g.slots) {
      throw rdma::tutorial_error("the server's credit edge " + std::to_string(now) + " is beyond " +
                                 std::to_string(out.posted()) + " sent + " + std::to_string(g.slots) + " slots",
                                 "the credit word holds what the server made up: its bug");
    }
    edge = now;
  }
  std::uint64_t credits() const { return edge > out.posted() ? edge - out.posted() : 0; }

  // One write: record `seq` into its slot, or END when seq == records.
  void fill_wr(ibv_send_wr& wr, ibv_sge& sge, std::uint64_t seq) {
    const std::uint32_t index = static_cast<std::uint32_t>(seq % g.slots);
    wr = ibv_send_wr{};
    wr.wr_id = seq;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.wr.rdma.remote_addr = g.addr + std::uint64_t{index} * g.record_size;
    wr.wr.rdma.rkey = g.rkey;  // the memory window's: it opens our slots, nothing else
    if (seq == opts.records) {  // END: 0 bytes, the count in the immediate
      wr.imm_data = htonl(rdma::imm::encode(imm_end, static_cast<std::uint32_t>(seq % rdma::imm::index_limit)));
    } else {
      // Slot i of our source is refilled only once the WR that last read it
      // is known complete (credit_stream::room says when).
      char* at = source.data() + std::size_t{index} * g.record_size;
      rdma::fill_record({at, g.record_size}, seq);
      sge = {reinterpret_cast<std::uintptr_t>(at), g.record_size, source.lkey()};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.imm_data = htonl(rdma::imm::encode(imm_data, g.first_slot + index));
      if (seq == 0) break_a_rule(opts.hostile, g, wr, sge);  // the tests' --hostile (hostile.cpp)
    }
    if (seq == opts.records || (seq + 1) % signal_every == 0) wr.send_flags = IBV_SEND_SIGNALED;
  }

  // Records, then END: every credit we hold goes out as one linked list of
  // WRs in one ibv_post_send.
  void post_all() {
    if (opts.hostile == hostile_kind::silent) {
      // Connected, granted a chunk, and then nothing: the server must not
      // let us hold it for ever.
      std::printf("hostile: writes nothing, holding its chunk\n");
      std::fflush(stdout);
      out.wait_until("the server to let a silent client go", [] { return false; });
    }
    std::vector<ibv_send_wr> wrs(send_queue);
    std::vector<ibv_sge> sges(send_queue);
    // --hostile ignore-credits: as many writes as the send queue holds,
    // whatever the edge and whatever its source slots hold; a burst past
    // what the server's SRQ was sized for.
    const bool heed_credits = opts.hostile != hostile_kind::ignore_credits;
    if (!heed_credits) {
      std::printf("hostile: ignores the credit edge, up to %u writes in flight\n", send_queue);
      std::fflush(stdout);
    }
    // A write may go while the edge is ahead of it, with room in the send
    // queue and its source slot free (credit_stream::room).
    const auto room = [&] { return heed_credits ? out.room(credits()) : out.queue_room(); };
    while (out.posted() <= opts.records) {
      out.wait_until("a credit", [&] { return room() > 0; });
      const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(room(), opts.records + 1 - out.posted()));
      for (std::size_t i = 0; i < k; ++i) {
        fill_wr(wrs[i], sges[i], out.posted() + i);
        wrs[i].next = i + 1 < k ? &wrs[i + 1] : nullptr;
      }
      out.post(wrs.data(), k);
    }
  }

  // --latency: one record at a time, each timed from its post until the
  // edge says the server took it (the server returns a credit per record).
  std::vector<double> one_at_a_time() {
    std::vector<double> samples;
    std::vector<ibv_send_wr> wr(1);
    std::vector<ibv_sge> sge(1);
    while (out.posted() <= opts.records) {
      out.wait_until("a credit", [&] { return out.room(credits()) > 0; });
      const auto posted = clock::now();
      fill_wr(wr[0], sge[0], out.posted());
      out.post(wr.data(), 1);
      out.wait_until("the record's credit", [&] { return edge >= out.posted() + g.slots; });
      if (out.posted() <= opts.records) samples.push_back(std::chrono::duration<double, std::micro>(clock::now() - posted).count());
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
  const rdma::cm::on_device dev = rdma::cm::open_on(id.get(), static_cast<int>(send_queue) + 2);
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
  stream s(opts, channel, id->qp, dev.cq.get(), reinterpret_cast<std::uint64_t*>(credit.data()), g, *source);
  // The server opens the window once it is bound: until then the edge is 0.
  s.out.wait_until("the window to open", [&] { return s.edge > 0; });
  const auto start = clock::now();
  std::vector<double> samples;
  if (opts.latency) {
    samples = s.one_at_a_time();
  } else {
    s.post_all();
  }
  // Everything counts once the server has consumed it, END included.
  s.out.wait_until("the last credit", [&] { return s.edge >= opts.records + 1 + g.slots; });
  s.out.wait_until("the last completion", [&] { return s.out.completed() == s.out.posted(); });
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
