// Proof that the pair is connected: one Send from `from` to `to`, matched by
// a Recv posted beforehand, both completions polled from the shared CQ.
//
// Every wait is bounded (rdma::poll_cq_until). A packet that the peer drops
// (wrong PSN, wrong GID) produces no completion at all until the sender's
// retries run out, and with retry_cnt 7 on Soft-RoCE they never do; a program
// that polls forever then just hangs. Here it says what it waited for instead.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage03 {

namespace {

// ibv_post_send/ibv_post_recv return the errno value. On EINVAL the usual
// cause in this stage is the QP's state, so the hint asks the QP; other
// errors keep the table's hint (ENOMEM: the queue is full, not a state issue).
void check_post(int rc, const char* verb, const qp_buffers& qp) {
  if (rc == 0) return;
  std::string hint;
  if (rc == EINVAL) {
    hint = std::string(qp.label) + " is in " + rdma::qp_state_name(rdma::query_qp_state(qp.qp, qp.label)) + "; " +
           (std::string(verb) == "ibv_post_send" ? "sending needs RTS" : "receiving needs INIT or later");
  }
  throw rdma::verbs_error(rc, std::string(verb) + "(" + std::string(qp.label) + ")", hint);
}

}  // namespace

void send_message(ibv_cq* cq, const qp_buffers& from, const qp_buffers& to, std::string_view text,
                  std::size_t size, std::uint64_t first_wr_id, int wait_ms) {
  std::printf("%.*s -> %.*s: \"%.*s\"\n", static_cast<int>(from.label.size()), from.label.data(),
              static_cast<int>(to.label.size()), to.label.data(), static_cast<int>(text.size()), text.data());

  // The receive first: a Send that finds no receive WQE is answered with an
  // RNR NAK ("receiver not ready") and retried rnr_retry times.
  ibv_sge recv_sge{reinterpret_cast<std::uintptr_t>(to.recv_buf.data()), static_cast<std::uint32_t>(to.recv_buf.size()),
                   to.lkey};
  ibv_recv_wr recv_wr{};
  recv_wr.wr_id = first_wr_id + 1;
  recv_wr.sg_list = &recv_sge;
  recv_wr.num_sge = 1;
  ibv_recv_wr* bad_recv = nullptr;
  check_post(ibv_post_recv(to.qp, &recv_wr, &bad_recv), "ibv_post_recv", to);

  // `size` bytes: the text, then zeros (--size makes a message span packets).
  std::memset(from.send_buf.data(), 0, size);
  std::memcpy(from.send_buf.data(), text.data(), text.size());
  ibv_sge send_sge{reinterpret_cast<std::uintptr_t>(from.send_buf.data()), static_cast<std::uint32_t>(size),
                   from.lkey};
  ibv_send_wr send_wr{};
  send_wr.wr_id = first_wr_id;
  send_wr.sg_list = &send_sge;
  send_wr.num_sge = 1;
  send_wr.opcode = IBV_WR_SEND;
  send_wr.send_flags = IBV_SEND_SIGNALED;  // unsignaled sends produce no completion to wait for
  // Small payloads can travel inside the WQE: the device need not read the buffer.
  if (size <= from.max_inline_data) send_wr.send_flags |= IBV_SEND_INLINE;
  ibv_send_wr* bad_send = nullptr;
  check_post(ibv_post_send(from.qp, &send_wr, &bad_send), "ibv_post_send", from);

  // Two completions are due: the send at `from`, the receive at `to`. They
  // may arrive in either order; each is checked as it comes, and they are
  // printed in a fixed order.
  ibv_wc send_wc{};
  ibv_wc recv_wc{};
  bool send_done = false;
  bool recv_done = false;
  const auto deadline = rdma::coarse_clock::now() + std::chrono::milliseconds(wait_ms);
  while (!send_done || !recv_done) {
    ibv_wc wc{};
    if (rdma::poll_cq_until(cq, {&wc, 1}, deadline) == 0) {
      throw rdma::tutorial_error(
          "no completion within " + std::to_string(wait_ms) + " ms (still waiting for" +
              (send_done ? "" : " the send on " + std::string(from.label)) + (send_done || recv_done ? "" : " and") +
              (recv_done ? "" : " the receive on " + std::string(to.label)) + ")",
          "the message was lost and nobody gave up yet: check that each rq_psn equals the peer's sq_psn, "
          "the path MTU and the GIDs; with timeout 0, or retry_cnt 7 on Soft-RoCE, the sender never gives up");
    }
    rdma::check_wc(wc);  // wc.status first: on error only wr_id, status, qp_num and vendor_err are valid
    (wc.wr_id == first_wr_id ? send_wc : recv_wc) = wc;
    (wc.wr_id == first_wr_id ? send_done : recv_done) = true;
  }
  std::printf("  %.*s send completion: %s\n", static_cast<int>(from.label.size()), from.label.data(),
              rdma::describe_wc(send_wc).c_str());
  std::printf("  %.*s recv completion: %s\n", static_cast<int>(to.label.size()), to.label.data(),
              rdma::describe_wc(recv_wc).c_str());
  std::printf("  %.*s received \"%s\"\n", static_cast<int>(to.label.size()), to.label.data(),
              std::string(to.recv_buf.data(), std::min<std::size_t>(recv_wc.byte_len, to.recv_buf.size())).c_str());
}

}  // namespace stage03
