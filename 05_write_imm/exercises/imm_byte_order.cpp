// EXERCISE: the server's self-test finds the immediate's bytes reversed
//
// This is client.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh imm_byte_order
//
// TODO: every write completes, but the server's self-test finds the four
// bytes of the immediate reversed. Find where the client puts the value
// into the work request. (Hint: docs/05-write-imm.md, section "Byte order".)
// The client's story: learn where the slots are, prove the immediate's byte
// order, write one slot per Write with Immediate (DATA|slot), then END.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/send_window.hpp"
#include "stage.hpp"

namespace stage05 {

void post_write_imm(ibv_qp* qp, std::uint64_t wr_id, const ibv_sge* sge, const rdma::wire::endpoint& peer,
                    std::uint64_t remote_addr, std::uint32_t imm) {
  ibv_sge local{};
  if (sge != nullptr) local = *sge;
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &local;
  wr.num_sge = sge != nullptr ? 1 : 0;  // 0 bytes: the immediate alone
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = imm;  // TODO
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = peer.rkey;
  ibv_send_wr* bad = nullptr;
  rdma::check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send(Write with Immediate, wr_id " + std::to_string(wr_id) + ")");
}

namespace {

// The completion of the one write in flight; its status is checked.
void wait_and_show(const rdma::rdma_device& dev, const options& opts, const char* what) {
  const ibv_wc wc = rdma::poll_one(dev.cq.get(), opts.peer.wait_ms, what);
  std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
  rdma::check_wc(wc);
}

// --iters N: N DATA writes through the send window, slot n % slots each.
// With up to --tx-depth writes in flight and only --slots slots, a slot is
// written again while the server may still be reading its last record:
// harmless here only because slot s always receives the same bytes. A
// stream whose records differ needs the receiver to say which slots it is
// done with, and the sender to wait for that: stage 06's credits.
void stream(const rdma::rdma_device& dev, ibv_qp* qp, const rdma::registered_buffer& source,
            const rdma::wire::endpoint& peer, const options& opts) {
  std::vector<ibv_sge> sges;
  for (std::uint32_t s = 0; s < opts.slots; ++s) {
    sges.push_back({reinterpret_cast<std::uintptr_t>(source.data() + std::size_t{s} * opts.size), opts.size,
                    source.lkey()});
  }
  const rdma::window_params window{*opts.iters, opts.tx_depth, opts.cq_mod, opts.peer.wait_ms};
  const double seconds = rdma::post_window(qp, dev.cq.get(), window, [&](ibv_send_wr& wr, std::uint32_t n) {
    const std::uint32_t slot = n % opts.slots;
    wr.sg_list = &sges[slot];
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(rdma::imm::encode(imm_data, slot));
    wr.wr.rdma.remote_addr = peer.addr + std::uint64_t{slot} * opts.size;
    wr.wr.rdma.rkey = peer.rkey;
  });
  std::printf("%s", rdma::bw_report(opts.size, *opts.iters, seconds).c_str());
}

}  // namespace

int run_client(const options& opts, const rdma::rdma_device& dev) {
  // What we write from: one slot's worth per slot. In ping-pong mode also
  // a region the server answers into (REMOTE_WRITE) and Recvs, without a
  // buffer, for those answers, which arrive as Writes with Immediate too.
  const rdma::registered_buffer source(dev.pd.get(), std::size_t{opts.slots} * opts.size, 0, "slots");
  const rdma::registered_buffer pong(dev.pd.get(), opts.size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                     "answer region");
  const rdma::qp_ptr qp = create_qp(dev, opts);
  for (std::uint32_t s = 0; s < opts.slots; ++s) {
    fill_slot(source.bytes().subspan(std::size_t{s} * opts.size, opts.size), s);
  }

  rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());
  if (opts.latency) {
    ours.addr = reinterpret_cast<std::uintptr_t>(pong.data());
    ours.rkey = pong.rkey();
    ours.length = opts.size;
  }
  const auto [server, peer] = rdma::connect_peer(opts.peer.server, opts.peer.port, ours, opts.peer.wait_ms);
  std::printf("server %s: %s\n", server.peer().c_str(), rdma::wire::describe(peer).c_str());
  if (peer.length != std::uint64_t{opts.slots} * opts.size) {
    throw rdma::tutorial_error("the server's region is " + std::to_string(peer.length) + " bytes; --slots " +
                                   std::to_string(opts.slots) + " of --size " + std::to_string(opts.size) + " make " +
                                   std::to_string(std::uint64_t{opts.slots} * opts.size),
                               "give both sides the same --slots and --size");
  }
  std::printf("%s\n", rdma::connect_and_describe(qp.get(), ours, peer, dev.params, true).c_str());  // with the retry counts
  if (opts.latency) post_receives(qp.get(), opts.rx_depth);

  std::uint64_t wr_id = 1;
  for (const std::uint32_t value : self_test_values) {
    std::printf("Write with Immediate: 0 bytes, imm %s (self-test)\n", rdma::imm::hex(value).c_str());
    post_write_imm(qp.get(), wr_id++, nullptr, peer, peer.addr, value);
    wait_and_show(dev, opts, "the self-test's write");
  }

  std::uint32_t data = opts.slots;
  if (opts.latency) {
    data = *opts.iters;
    ping_pong(dev, qp.get(), source, server, peer, opts);
  } else if (opts.iters) {
    data = *opts.iters;
    stream(dev, qp.get(), source, peer, opts);
  } else {
    for (std::uint32_t s = 0; s < opts.slots; ++s) {
      const std::uint32_t imm = rdma::imm::encode(imm_data, s);
      std::printf("Write with Immediate: %u bytes into slot %u, imm %s (DATA %u)\n", opts.size, s,
                  rdma::imm::hex(imm).c_str(), s);
      const ibv_sge sge{reinterpret_cast<std::uintptr_t>(source.data() + std::size_t{s} * opts.size), opts.size,
                        source.lkey()};
      post_write_imm(qp.get(), wr_id++, &sge, peer, peer.addr + std::uint64_t{s} * opts.size, imm);
      wait_and_show(dev, opts, "a DATA write");
    }
  }
  if (opts.send_imm) {
    std::printf("Write with Immediate: 0 bytes, imm %s (--send-imm)\n", rdma::imm::hex(*opts.send_imm).c_str());
    post_write_imm(qp.get(), wr_id++, nullptr, peer, peer.addr, *opts.send_imm);
    wait_and_show(dev, opts, "the --send-imm write");
  }
  const std::uint32_t end = rdma::imm::encode(imm_end, data % rdma::imm::index_limit);
  std::printf("Write with Immediate: 0 bytes, imm %s (END %u)\n", rdma::imm::hex(end).c_str(), data);
  post_write_imm(qp.get(), wr_id++, nullptr, peer, peer.addr, end);
  wait_and_show(dev, opts, "the END write");
  if (!opts.iters) {
    for (std::uint32_t s = 0; s < opts.slots; ++s) {
      const auto slot = source.bytes().subspan(std::size_t{s} * opts.size, opts.size);
      std::printf("wrote slot %u \"%.*s\", fnv1a 0x%08x\n", s,
                  static_cast<int>(std::min(slot.size(), slot_text(s).size())), slot.data(), fnv1a(slot));
    }
  }
  // Leaving closes the connection: the server's sign that we are done.
  return 0;
}

}  // namespace stage05
