#include <doctest/doctest.h>

#include <string>

#include "rdma_tutorial/completion.hpp"

TEST_CASE("a successful completion should show its opcode, and its length only for a receive") {
  ibv_wc wc{};
  wc.wr_id = 7;
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RDMA_WRITE;
  wc.byte_len = 64;
  CHECK(rdma::describe_wc(wc) == "wr_id 7: IBV_WC_RDMA_WRITE");
  wc.opcode = IBV_WC_RECV;
  CHECK(rdma::describe_wc(wc) == "wr_id 7: IBV_WC_RECV, 64 bytes");
}

TEST_CASE("a completion with immediate data should say so") {
  ibv_wc wc{};
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
  wc.wc_flags = IBV_WC_WITH_IMM;
  CHECK(rdma::describe_wc(wc) == "wr_id 0: IBV_WC_RECV_RDMA_WITH_IMM, 0 bytes, with imm");
}

TEST_CASE("an error completion should show status name, number, text and vendor_err, not the opcode") {
  ibv_wc wc{};
  wc.wr_id = 3;
  wc.status = IBV_WC_REM_ACCESS_ERR;
  wc.opcode = IBV_WC_RECV;  // garbage for an error completion: must not be shown
  wc.vendor_err = 0x81;
  const std::string text = rdma::describe_wc(wc);
  CHECK(text == std::string("wr_id 3: IBV_WC_REM_ACCESS_ERR (10, ") + ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR) +
                    "), vendor_err 0x81");
  CHECK(text.find("RECV") == std::string::npos);
}

TEST_CASE("check_wc should throw a completion_error with a hint for a failed completion") {
  ibv_wc wc{};
  wc.status = IBV_WC_RNR_RETRY_EXC_ERR;
  try {
    rdma::check_wc(wc);
    FAIL("no exception");
  } catch (const rdma::completion_error& e) {
    CHECK(e.status() == IBV_WC_RNR_RETRY_EXC_ERR);
    CHECK(std::string(e.what()).find("IBV_WC_RNR_RETRY_EXC_ERR") != std::string::npos);
    CHECK(e.hint().find("receive") != std::string::npos);
  }
  wc.status = IBV_WC_SUCCESS;
  CHECK_NOTHROW(rdma::check_wc(wc));
}

TEST_CASE("every status up to IBV_WC_TM_RNDV_INCOMPLETE should have a name") {
  for (int s = IBV_WC_SUCCESS; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
    CHECK(rdma::wc_status_name(static_cast<ibv_wc_status>(s)).starts_with("IBV_WC_"));
  }
  CHECK(rdma::wc_status_name(static_cast<ibv_wc_status>(30)) == "status 30");
}

TEST_CASE("check_poll should pass counts through and report a negative return as a number, not an errno") {
  CHECK(rdma::check_poll(0) == 0);
  CHECK(rdma::check_poll(3) == 3);
  CHECK_THROWS_WITH_AS(rdma::check_poll(-2), "ibv_poll_cq failed (returned -2)", rdma::tutorial_error);
}
