// The target's side of Write with Immediate. The payload lands in the slot
// the sender chose, without the target's CPU, as in stage 04; what is new
// happens in the receive queue: each Write with Immediate consumes one
// posted Recv and completes it, with the 32-bit immediate in the
// completion. No Recv posted: the target's device answers "receiver not
// ready" (an RNR NAK), and the sender retries rnr_retry times.
#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage05 {

void post_receives(ibv_qp* qp, std::uint32_t count) {
  // One linked list, one ibv_post_recv (stage 04's batching, for Recvs).
  std::vector<ibv_recv_wr> wrs(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    wrs[i].wr_id = 0;    // a Recv (ping-pong's writes carry pong_tag)
    wrs[i].num_sge = 0;  // no buffer: a Write with Immediate puts nothing in its Recv
    wrs[i].next = i + 1 < count ? &wrs[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp, wrs.data(), &bad); rc != 0) {
    throw rdma::verbs_error(rc, "ibv_post_recv(" + std::to_string(count) + " Recvs)");
  }
}

void repost_receive(ibv_qp* qp) {
  ibv_recv_wr wr{};  // wr_id 0, no scatter entry: as post_receives'
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp, &wr, &bad); rc != 0) throw rdma::verbs_error(rc, "ibv_post_recv(1 Recv)");
}

std::optional<std::uint32_t> immediate_of(const ibv_wc& wc) {
  // Both say "with immediate": the opcode that a Write with Immediate
  // completes with (a Send with Immediate would be IBV_WC_RECV), and the
  // flag that says imm_data is valid.
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || (wc.wc_flags & IBV_WC_WITH_IMM) == 0) return std::nullopt;
  // The device hands the 4 bytes over as they came off the wire, in network
  // byte order; ntohl here, once, and nowhere else.
  return ntohl(wc.imm_data);
}

namespace {

// What a failed completion here says about the client. Our Recvs (wr_id 0)
// fail only because of what arrived; the answers of ping-pong (pong_tag and
// their number, one in 64 signaled) for the reasons check_wc names. The
// wr_id tells them apart: a failed completion's opcode is undefined.
void check_at_target(const ibv_wc& wc, std::uint64_t region_bytes) {
  if (wc.status == IBV_WC_SUCCESS) return;
  if ((wc.wr_id & pong_tag) != 0) rdma::check_wc(wc);
  switch (wc.status) {
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
      // A Send with bytes into a Recv with no buffer: the verbs' status is
      // LOC_LEN_ERR; Soft-RoCE says LOC_QP_OP_ERR (measured on Linux 6.1,
      // the same path in 6.12's source), and the sender gets
      // IBV_WC_REM_OP_ERR. A Send of 0 bytes fits: it completes as
      // IBV_WC_RECV, and checked_immediate refuses it.
      throw rdma::tutorial_error("a message that does not fit our Recvs: " + rdma::describe_wc(wc),
                                 "our Recvs take no bytes, since this protocol sends only Writes with Immediate; "
                                 "the peer sent a Send with a payload: is it this stage's client?");
    case IBV_WC_WR_FLUSH_ERR:
      throw rdma::tutorial_error("our Recv came back flushed: " + rdma::describe_wc(wc),
                                 "a request of the client broke the connection, and its own completion says "
                                 "which; usually a remote access error: a write outside our " +
                                     std::to_string(region_bytes) + "-byte region, or a wrong rkey");
    default:
      rdma::check_wc(wc);
  }
}

// The next completion of a Recv. Send completions (ping-pong's answers)
// share the CQ; they are checked and passed over. Each is bounded by
// --wait-ms: a client that stops writing, after the handshake or in the
// middle of a stream, is given up on that long after its last write.
ibv_wc next_receive(const target& t, const char* waiting_for) {
  for (;;) {
    ibv_wc wc{};
    // In ping-pong every microsecond counts: spin. Otherwise back off.
    rdma::wait_while_connected(t.client, "the client", waiting_for, t.opts.peer.wait_ms,
                               [&] { return rdma::check_poll(ibv_poll_cq(t.dev.cq.get(), 1, &wc)) == 1; },
                               t.peer.length != 0 ? rdma::waiting::spins : rdma::waiting::backs_off);
    check_at_target(wc, t.landing.size());
    if ((wc.wr_id & pong_tag) == 0) return wc;
    t.answers->completed(wc.wr_id & ~pong_tag);  // a signaled answer: room in our send queue
  }
}

std::uint32_t checked_immediate(const ibv_wc& wc) {
  const std::optional<std::uint32_t> imm = immediate_of(wc);
  if (!imm) {
    throw rdma::tutorial_error("a completion without an immediate: " + rdma::describe_wc(wc),
                               "this protocol sends only Writes with Immediate; is the peer this stage's client?");
  }
  return *imm;
}

}  // namespace

std::uint32_t serve(const target& t) {
  // Each consumed Recv is replaced at once, so the queue stays full.
  auto repost = [&] { repost_receive(t.qp); };

  for (const std::uint32_t sent : self_test_values) {
    const ibv_wc wc = next_receive(t, "the self-test");
    std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
    const std::uint32_t imm = checked_immediate(wc);
    repost();
    if (imm != sent) {
      throw rdma::tutorial_error("self-test: imm " + rdma::imm::hex(imm) + " arrived, " + rdma::imm::hex(sent) +
                                     " was sent",
                                 "a byte swap is missing or doubled: htonl once at the sender (wr.imm_data), ntohl "
                                 "once at the target (wc.imm_data), nowhere else");
    }
    std::printf("self-test: imm %s arrived as sent\n", rdma::imm::hex(imm).c_str());
  }

  // What this server accepts: DATA naming one of its slots, END with any count.
  const std::array<rdma::imm::accepted, 2> rules{{{imm_data, "DATA", t.opts.slots},
                                                  {imm_end, "END", rdma::imm::index_limit}}};
  for (std::uint32_t data = 0;; ++data) {
    const ibv_wc wc = next_receive(t, "the next write");
    const std::uint32_t value = checked_immediate(wc);
    repost();
    // The value comes from the peer: check it before it names any memory.
    const rdma::imm::accepted& rule = rdma::imm::validate(value, rules);
    const std::uint32_t index = rdma::imm::decode(value).index;
    if (rule.type == imm_end) {
      if (index != data % rdma::imm::index_limit) {
        throw rdma::tutorial_error("imm " + rdma::imm::hex(value) + ": END counts " + std::to_string(index) +
                                       " DATA writes, " + std::to_string(data) + " arrived",
                                   "END carries how many DATA writes the sender made before it, mod 2^24, and RC "
                                   "delivers every one: the sender counted wrong; is the peer this stage's client?");
      }
      std::printf("imm %s: END after %u DATA write(s)\n", rdma::imm::hex(value).c_str(), data);
      return data;
    }
    // byte_len is how many bytes the write put into the slot; the sender
    // chose it, so it is checked before the slot is read.
    if (wc.byte_len > t.opts.size) {
      throw rdma::tutorial_error("imm " + rdma::imm::hex(value) + ": a write of " + std::to_string(wc.byte_len) +
                                     " bytes into a slot of " + std::to_string(t.opts.size),
                                 "give both sides the same --size");
    }
    const std::span<const char> slot(t.landing.data() + std::size_t{index} * t.opts.size, wc.byte_len);
    if (data < 8) {
      std::printf("imm %s: DATA, slot %u: %u bytes \"%.*s\", fnv1a 0x%08x\n", rdma::imm::hex(value).c_str(), index,
                  wc.byte_len, static_cast<int>(std::min(slot.size(), slot_text(index).size())), slot.data(),
                  fnv1a(slot));
    } else if (data == 8) {
      std::printf("(further DATA writes are counted, not printed)\n");
      std::fflush(stdout);  // a stream is under way: say so now, not at exit
    }
    if (t.peer.length != 0) answer(t, index, wc.byte_len);
  }
}

}  // namespace stage05
