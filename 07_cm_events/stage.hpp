// Stage 07 — connections the rdma_cm way (docs/07-cm-events.md).
//
// Reading order, as the chapter tells it:
//   protocol.hpp     stage 04's story with the TCP side channel gone: who
//                    sends what, in which CM message, which event it raises
//   cm_events.cpp    main; the device rdma_cm chose, and our QP on an id
//   ../common/src/cm_qp.cpp
//                    the PD, the CQ and rdma_create_qp on that device
//   ../common/src/cm_events.cpp
//                    how a step ends: an event, copied, acked, judged
//   client.cpp       resolve the address and the route, connect, write,
//                    read back, tell, disconnect (each request posted and
//                    waited for by stage 04's post_and_wait,
//                    ../common/src/completion.cpp)
//   server.cpp       listen, accept on the request's own id, wait for the
//                    notice and the disconnect
//   protocol.cpp     the private data, byte by byte
//   options.cpp      the command line
// Stage 04 did by hand what rdma_cm does here: the TCP meeting, the endpoint
// exchange, the GID choice, the walk to RTS (rdma_cm moves our QP through
// INIT, RTR and RTS as the connection is made).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol.hpp"
#include "rdma_tutorial/cm_events.hpp"
#include "rdma_tutorial/cm_qp.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/command_line.hpp"

namespace stage07 {

// options.cpp
struct options {
  rdma::peer_options peer;               // -s, --bind, -p, --wait-ms, --accept-ms
  std::uint32_t size = 4096;             // server: the region's size; client: bytes to write and read back
  int resolve_ms = 2000;                 // client: rdma_resolve_addr's and rdma_resolve_route's timeout
  std::uint8_t retry_count = 3;          // client: resends before IBV_WC_RETRY_EXC_ERR (< 7)
  std::uint8_t rnr_retry_count = 3;      // the peer's retries after our RNR NAKs (< 7: 7 is forever)
  std::uint8_t initiator_depth = 1;      // client: RDMA Reads we keep in flight
  std::uint8_t responder_resources = 1;  // server: RDMA Reads of the peer it answers at once
  std::uint32_t iters = 1;               // client: rounds of write, read back, compare
  std::optional<std::uint8_t> ack_timeout;  // client: the QP's ACK timeout; unset: rdma_cm's
  std::optional<std::uint8_t> tos;          // client: the packets' IP type of service; unset: the port's default
};

// Returns false after --help. Throws rdma::usage_error on a bad command line.
bool parse_options(int argc, const char* const* argv, options& out);

// cm_events.cpp. What we create on the device rdma_cm chose for an id
// (id->verbs; librdmacm owns that context, we never close it): a PD and a
// CQ (common/include/rdma_tutorial/cm_qp.hpp).
using rdma::cm::on_device;
// The RDMA Reads this side asks for (the client's --initiator-depth, the
// server's --responder-resources) are checked against the device's
// limits first: past them rdma_connect or rdma_accept would fail with a
// bare EINVAL.
on_device open_on(rdma_cm_id* id, int cq_entries, const options& opts);
// rdma_create_qp (rdma::cm::create_qp): an RC QP on the id, on dev's PD
// and CQ, with room for `send_wr` sends and one receive. rdma_cm walks it
// to INIT at once and on to RTR and RTS while the connection is made.
rdma::cm_qp_ptr create_qp(rdma_cm_id* id, const on_device& dev, std::uint32_t send_wr);
// What rdma_cm set on the QP, from ibv_query_qp: "QP 0x11 as rdma_cm left
// it: RTS, timeout 19 (2147 ms), retry_cnt 3, rnr_retry 3, max_rd_atomic 1,
// max_dest_rd_atomic 0"
std::string describe_qp(ibv_qp* qp);

// How a step ends (common/include/rdma_tutorial/cm_events.hpp, where stage 07's
// events.cpp moved once stage 09 needed it too): one event, copied out of the
// library's struct and acked, and judged by one table.
using rdma::cm::await;
using rdma::cm::cm_bounds_it;
using rdma::cm::cm_event;
using rdma::cm::describe_id;
using rdma::cm::describe_status;
using rdma::cm::explain;
using rdma::cm::ms_left;
using rdma::cm::next_event;
using rdma::cm::reject_reason;
using rdma::cm::try_event;

// server.cpp, client.cpp: each side's story; the exit code.
int run_server(const options& opts, rdma_event_channel* channel);
int run_client(const options& opts, rdma_event_channel* channel);

}  // namespace stage07
