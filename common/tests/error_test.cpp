#include <doctest/doctest.h>

#include <cerrno>
#include <string>

#include "rdma_tutorial/error.hpp"

TEST_CASE("check_ptr should throw with the errno the call left behind") {
  errno = ENOMEM;
  int* nothing = nullptr;
  try {
    rdma::check_ptr(nothing, "ibv_reg_mr");
    FAIL("no exception");
  } catch (const rdma::verbs_error& e) {
    CHECK(e.code().value() == ENOMEM);
    CHECK(std::string(e.what()).starts_with("ibv_reg_mr failed (ENOMEM)"));
    CHECK(e.hint().find("memlock") != std::string::npos);
  }
}

TEST_CASE("check_ptr should pass a valid pointer through") {
  int value = 3;
  CHECK(rdma::check_ptr(&value, "x") == &value);
}

TEST_CASE("check_ptr should not report 'Success' when errno was left at zero") {
  errno = 0;
  int* nothing = nullptr;
  try {
    rdma::check_ptr(nothing, "ibv_create_cq");
    FAIL("no exception");
  } catch (const rdma::verbs_error& e) {
    CHECK(e.code().value() != 0);
  }
}

TEST_CASE("check_rc should take the returned value as the errno, ignoring errno itself") {
  errno = EPERM;
  try {
    rdma::check_rc(EINVAL, "ibv_query_port(port 0)");
    FAIL("no exception");
  } catch (const rdma::verbs_error& e) {
    CHECK(e.code().value() == EINVAL);
    CHECK(e.call() == "ibv_query_port(port 0)");
    CHECK(e.hint().find("start at 1") != std::string::npos);
  }
  CHECK_NOTHROW(rdma::check_rc(0, "ibv_modify_qp"));
}

TEST_CASE("check_errno should read errno after a -1 return and pass non-negative values through") {
  errno = ETIMEDOUT;
  CHECK_THROWS_AS(rdma::check_errno(-1, "rdma_resolve_addr"), rdma::verbs_error);
  CHECK(rdma::check_errno(5, "read") == 5);
}

TEST_CASE("check_neg should turn a negative return into its errno and pass counts through") {
  try {
    rdma::check_neg(-EOPNOTSUPP, "ibv_query_gid_table");
    FAIL("no exception");
  } catch (const rdma::verbs_error& e) {
    CHECK(e.code().value() == EOPNOTSUPP);
  }
  CHECK(rdma::check_neg(2L, "ibv_query_gid_table") == 2L);
}

TEST_CASE("likely_fix should match on the call name without its context and on errno") {
  CHECK(rdma::likely_fix("ibv_get_device_list", ENOSYS).find("rxe_vm.sh") != std::string::npos);
  CHECK(rdma::likely_fix("ibv_reg_mr(64 MiB)", ENOMEM).find("ulimit -l") != std::string::npos);
  CHECK(rdma::likely_fix("ibv_reg_mr", ENOSYS).empty());
  CHECK(rdma::likely_fix("anything", EPERM).find("privileges") != std::string::npos);
}

TEST_CASE("errno_name should give the symbolic name") {
  CHECK(rdma::errno_name(EINVAL) == "EINVAL");
  CHECK(rdma::errno_name(ENOMEM) == "ENOMEM");
}

TEST_CASE("a hint given by the caller should be kept with the call and the errno") {
  const rdma::verbs_error e(EINVAL, "ibv_modify_qp(QP A, INIT -> RTR)", "the mask lacks MIN_RNR_TIMER");
  CHECK(e.code().value() == EINVAL);
  CHECK(e.call() == "ibv_modify_qp(QP A, INIT -> RTR)");
  CHECK(e.hint() == "the mask lacks MIN_RNR_TIMER");
  CHECK(std::string(e.what()) == "ibv_modify_qp(QP A, INIT -> RTR) failed (EINVAL): Invalid argument");
  try {
    rdma::check_rc(ENOMEM, "ibv_post_send(QP A)", "QP A's send queue is full");
    FAIL("no exception");
  } catch (const rdma::verbs_error& thrown) {
    CHECK(thrown.code().value() == ENOMEM);
    CHECK(thrown.hint() == "QP A's send queue is full");
  }
}

TEST_CASE("an unreachable peer at INIT -> RTR should get the netdev hint") {
  const rdma::verbs_error e(ENETUNREACH, "ibv_modify_qp(QP A, INIT -> RTR)");
  CHECK(e.hint().find("netdev") != std::string::npos);
}

TEST_CASE("a TCP connect with no route, or nobody answering ARP, should each get their own hint") {
  const rdma::verbs_error no_route(ENETUNREACH, "connect(198.51.100.7:18515)");
  CHECK(no_route.hint().find("ip route get") != std::string::npos);
  const rdma::verbs_error silent(EHOSTUNREACH, "connect(203.0.113.99:18515)");
  CHECK(silent.hint().find("no ARP reply") != std::string::npos);
}

TEST_CASE("a server that dropped clients should say how many of how many, in words that agree") {
  CHECK(std::string(rdma::clients_dropped(1, 1).what()) == "1 of 1 client broke the protocol and was dropped");
  CHECK(std::string(rdma::clients_dropped(2, 4).what()) == "2 of 4 clients broke the protocol and were dropped");
  CHECK(rdma::clients_dropped(1, 4).hint().find("letting it go") != std::string::npos);
}
