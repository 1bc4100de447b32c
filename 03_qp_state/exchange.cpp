// Proof that the pair is connected: one Send from `from` to `to`, matched by
// a Recv posted beforehand, both completions polled from the shared CQ.
//
// Every wait is bounded. A packet that the peer drops (wrong PSN, wrong GID)
// produces no completion at all until the sender's retries run out, and with
// retry_cnt 7 on Soft-RoCE they never do; a program that polls forever then
// just hangs. Here it says what it waited for instead.
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
// cause in this stage is the QP's state, so the hint asks the QP. Other
// errors keep the general hint (ENOMEM: the queue is full, not a state issue).
void check_post(int rc, const char* verb, const qp_buffers& qp) {
  try {
    rdma::check_rc(rc, std::string(verb) + "(" + std::string(qp.label) + ")");
  } catch (const rdma::verbs_error& e) {
    if (e.code().value() != EINVAL) throw;
    const std::string state = state_name(query_state(qp.qp, qp.label));
    throw rdma::tutorial_error(e.what(), std::string(qp.label) + " is in " + state + "; " +
                                             (std::string(verb) == "ibv_post_send" ? "sending needs RTS"
                                                                                   : "receiving needs INIT or later"));
  }
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
  // may arrive in either order; they are printed in a fixed one.
  ibv_wc send_wc{};
  ibv_wc recv_wc{};
  bool send_done = false;
  bool recv_done = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (!send_done || !recv_done) {
    ibv_wc wc{};
    const int n = rdma::check_poll(ibv_poll_cq(cq, 1, &wc));
    if (n == 0) {
      if (std::chrono::steady_clock::now() < deadline) continue;
      throw rdma::tutorial_error(
          "no completion within " + std::to_string(wait_ms) + " ms (still waiting for" +
              (send_done ? "" : " the send on " + std::string(from.label)) + (send_done || recv_done ? "" : " and") +
              (recv_done ? "" : " the receive on " + std::string(to.label)) + ")",
          "the message was lost and nobody gave up yet: check that each rq_psn equals the peer's sq_psn, "
          "the path MTU and the GIDs; with timeout 0, or retry_cnt 7 on Soft-RoCE, the sender never gives up");
    }
    rdma::check_wc(wc);  // wc.status first: on error only wr_id, status, qp_num and vendor_err are valid
    if (wc.wr_id == first_wr_id) {
      send_wc = wc;
      send_done = true;
    } else {
      recv_wc = wc;
      recv_done = true;
    }
  }
  std::printf("  %.*s send completion: %s\n", static_cast<int>(from.label.size()), from.label.data(),
              rdma::describe_wc(send_wc).c_str());
  std::printf("  %.*s recv completion: %s\n", static_cast<int>(to.label.size()), to.label.data(),
              rdma::describe_wc(recv_wc).c_str());
  std::printf("  %.*s received \"%s\"\n", static_cast<int>(to.label.size()), to.label.data(),
              std::string(to.recv_buf.data(), std::min<std::size_t>(recv_wc.byte_len, to.recv_buf.size())).c_str());
}

}  // namespace stage03
