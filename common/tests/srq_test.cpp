// The books of a QP leaving its SRQ (rdma::srq_qp_departure): destroyed
// only after IBV_EVENT_QP_LAST_WQE_REACHED, a poll that found the CQ empty
// after it, and its marker back; without the event, after its marker and
// the wait; without either, after the wait.
#include <doctest/doctest.h>

#include <chrono>

#include "rdma_tutorial/srq.hpp"

using namespace std::chrono_literals;
using departure = rdma::srq_qp_departure;

TEST_CASE("a departing QP should wait for its last WQE, then for a poll that found the CQ empty, then for its marker") {
  const auto t0 = departure::clock::now();
  departure d(t0, 5000ms, true);
  CHECK(d.check(t0 + 1ms, 7) == departure::outcome::waiting);
  d.last_wqe_reached(7);
  // The CQ was last found empty before the event: the Recvs it flushed may
  // still sit in the CQ.
  CHECK(d.check(t0 + 2ms, 7) == departure::outcome::waiting);
  // Found empty after it, but the marker is still out.
  CHECK(d.check(t0 + 3ms, 8) == departure::outcome::waiting);
  d.marker_flushed();
  CHECK(d.check(t0 + 4ms, 8) == departure::outcome::last_wqe);
  CHECK(d.describe(departure::outcome::last_wqe) == "IBV_EVENT_QP_LAST_WQE_REACHED, then the CQ polled empty");
}

TEST_CASE("the first last-WQE event should count, not a repeat after the CQ was found empty") {
  const auto t0 = departure::clock::now();
  departure d(t0, 5000ms, true);
  d.marker_flushed();
  d.last_wqe_reached(3);
  d.last_wqe_reached(9);  // Soft-RoCE on 6.12 raises it again when its responder looks again
  CHECK(d.check(t0, 4) == departure::outcome::last_wqe);
}

TEST_CASE("without the event, the marker alone should let the QP go once the wait is over, and not before") {
  const auto t0 = departure::clock::now();
  departure d(t0, 500ms, true);
  d.marker_flushed();
  CHECK(d.check(t0 + 499ms, 100) == departure::outcome::waiting);
  CHECK(d.check(t0 + 500ms, 100) == departure::outcome::no_event);
  CHECK(d.describe(departure::outcome::no_event) ==
        "no IBV_EVENT_QP_LAST_WQE_REACHED within 500 ms: after its marker WR came back flushed");
}

TEST_CASE("with neither the event nor the marker, the wait's end should say a Recv may be lost") {
  const auto t0 = departure::clock::now();
  departure d(t0, 500ms, true);
  CHECK(d.check(t0 + 600ms, 1) == departure::outcome::gave_up);
  CHECK(d.describe(departure::outcome::gave_up) ==
        "no IBV_EVENT_QP_LAST_WQE_REACHED and no marker back within 500 ms: a Recv it held may be lost to the SRQ");
  // The event without the marker: the send queue never said it was done.
  d.last_wqe_reached(1);
  CHECK(d.check(t0 + 600ms, 2) == departure::outcome::gave_up);
}

TEST_CASE("a marker the send queue refused should leave the decision to the event") {
  const auto t0 = departure::clock::now();
  departure d(t0, 5000ms, false);
  d.last_wqe_reached(0);
  CHECK(d.check(t0 + 1ms, 1) == departure::outcome::last_wqe);
}

TEST_CASE("an unasked last-WQE event should wait for an empty poll after it, then count for the departure begun later") {
  const auto t0 = departure::clock::now();
  std::optional<departure> d;
  rdma::last_wqe_notice notice;
  CHECK_FALSE(notice.due(3));
  notice.event(d, 3);  // no departure yet: the QP broke on its own
  CHECK_FALSE(d.has_value());
  CHECK_FALSE(notice.due(3));  // its failed completion may still be in the CQ
  CHECK(notice.due(4));
  d.emplace(t0, 500ms, true);
  notice.pass_to(*d);
  d->marker_flushed();
  CHECK(d->event_seen());
  CHECK(d->check(t0 + 1ms, 4) == departure::outcome::last_wqe);
}

TEST_CASE("an asked-for last-WQE event should go to the departure at once") {
  const auto t0 = departure::clock::now();
  std::optional<departure> d(std::in_place, t0, 500ms, true);
  rdma::last_wqe_notice notice;
  notice.event(d, 7);
  CHECK(d->event_seen());
  CHECK_FALSE(notice.due(100));  // nothing left to judge
  d->marker_flushed();
  CHECK(d->check(t0 + 1ms, 7) == departure::outcome::waiting);
  CHECK(d->check(t0 + 1ms, 8) == departure::outcome::last_wqe);
}

TEST_CASE("Soft-RoCE should be waited for briefly, any other device for the whole wait") {
  ibv_device_attr rxe{};
  rxe.vendor_id = rdma::soft_roce_vendor_id;
  CHECK(rdma::last_wqe_wait(rxe, 5000ms) == rdma::soft_roce_last_wqe_wait);
  CHECK(rdma::last_wqe_wait(rxe, 100ms) == 100ms);
  ibv_device_attr nic{};
  nic.vendor_id = 0x02c9;  // Mellanox
  CHECK(rdma::last_wqe_wait(nic, 5000ms) == 5000ms);
}
