// The send queue's room, one post at a time (rdma::send_queue_room): what
// the ping-pongs of stages 05 and 08 may post, and when they must wait.
#include <doctest/doctest.h>

#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/send_window.hpp"

TEST_CASE("a send queue should take WRs until it is full, and room should come back only with a signaled completion") {
  rdma::send_queue_room room(4, 2);  // WRs 1, 3, 5, ... signaled
  for (int i = 0; i < 4; ++i) {
    REQUIRE(room.fits());
    room.posted();
  }
  CHECK_FALSE(room.fits());
  CHECK(room.in_queue() == 4);
  CHECK(room.signaled(1));
  CHECK_FALSE(room.signaled(2));
  room.completed(1);  // WR 1's completion: 0 and 1 have left
  CHECK(room.in_queue() == 2);
  CHECK(room.fits(2));
  CHECK_FALSE(room.fits(3));
}

TEST_CASE("a queue of one should signal every WR and hold one at a time") {
  rdma::send_queue_room room(1, rdma::signal_interval(1));
  CHECK(room.signaled(0));
  room.posted();
  CHECK_FALSE(room.fits());
  CHECK(room.signaled_due());
  room.completed(0);
  CHECK(room.fits());
  CHECK_FALSE(room.signaled_due());
}

TEST_CASE("signaled WRs still due should be known, the unsignaled ones after the last not") {
  rdma::send_queue_room room(128, 64);
  room.posted(70);  // WR 63 signaled; 64..69 not
  CHECK(room.signaled_due());
  room.completed(63);
  CHECK_FALSE(room.signaled_due());
  CHECK(room.in_queue() == 6);
}

TEST_CASE("the signal interval should be 64, or half a shorter queue, and never more than the queue") {
  CHECK(rdma::signal_interval(1) == 1);
  CHECK(rdma::signal_interval(2) == 1);
  CHECK(rdma::signal_interval(65) == 32);
  CHECK(rdma::signal_interval(128) == 64);
  CHECK(rdma::signal_interval(4096) == 64);
  CHECK_THROWS_AS(rdma::send_queue_room(4, 5), rdma::tutorial_error);
  CHECK_THROWS_AS(rdma::send_queue_room(4, 0), rdma::tutorial_error);
}
