// The client's rdma_connect, retried while nobody listens yet (cm_events.hpp).
#include <chrono>
#include <string>
#include <thread>

#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/error.hpp"

namespace rdma::cm {

cm_event connect(rdma_event_channel* channel, cm_id_ptr& id, const connect_target& to, const rdma_conn_param& param,
                 int wait_ms, const std::function<void(rdma_cm_id* next)>& move_qp) {
  const std::string step = "rdma_connect(" + to.name + ")";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  // rdma_connect takes a non-const pointer and only reads through it.
  rdma_conn_param ours = param;
  for (;;) {
    check_errno(rdma_connect(id.get(), &ours), step);
    // Our own deadline: an unanswered connect request is retried by the CM
    // for about 100 s before UNREACHABLE arrives.
    cm_event answer = next_event(channel, ms_left(deadline),
                                 "answer to " + step + " (ESTABLISHED) within --wait-ms " + std::to_string(wait_ms),
                                 "is a server running there? The CM would retry for about 100 s before "
                                 "RDMA_CM_EVENT_UNREACHABLE; --wait-ms bounds our wait");
    if (answer.id != id.get()) throw about_another_id(answer, rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), step);
    if (answer.type == RDMA_CM_EVENT_ESTABLISHED) return answer;
    // Nobody listens yet: a server started beside us may still be on its
    // way. A rejected id cannot connect again; take a new one and retry
    // until the deadline.
    const bool nobody_listens = answer.type == RDMA_CM_EVENT_REJECTED && answer.status == reject_no_listener;
    if (!nobody_listens || ms_left(deadline) < 200) {
      throw explain(answer, rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), step);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cm_id_ptr next = resolve(channel, to.address, to.name, to.resolve_ms, to.ack_timeout);
    // The caller's PD and CQ belong to the device the first id resolved to.
    if (next->verbs != id->verbs) {
      throw tutorial_error(step + ": the address is now reached through another device");
    }
    move_qp(next.get());
    id = std::move(next);
  }
}

}  // namespace rdma::cm
