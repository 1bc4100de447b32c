// The client's story: choose the run, meet the server, post the Recvs,
// send every burst and wait for the answer, the way --poll, --event or
// --hybrid says.
#include <cstdio>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage08 {

int run_client(const options& opts, const rdma::rdma_device& dev, notified_cq& events) {
  const run_params& run = opts.run;
  const message_buffers buffers(dev.pd.get(), run);
  const rdma::qp_ptr qp = create_qp(dev, events, run, true);
  const rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());

  // Stage 04's handshake (common/src/peer.cpp's connect_peer), with the run
  // between our endpoint and the server's.
  const auto deadline = [&] { return rdma::tcp::after_ms(opts.peer.wait_ms); };
  const rdma::tcp::socket server = rdma::tcp::connect_to(opts.peer.server, opts.peer.port, deadline());
  rdma::tcp::send_endpoint(server, ours, deadline());
  rdma::tcp::send_all(server, encode(run), deadline(), "the run");
  const rdma::wire::endpoint peer = rdma::tcp::receive_endpoint(server, deadline());
  std::printf("server %s: %s\n", server.peer().c_str(), rdma::wire::describe(peer).c_str());
  std::printf("%s\n", rdma::connect_and_describe(qp.get(), ours, peer, dev.params).c_str());
  buffers.post_receives(qp.get());
  std::printf("posted %u Recvs\n", buffers.slots());

  const side s{opts, run, events, qp.get(), buffers, server, "the server", true};
  describe_run(s);
  exchange(s);
  // Leaving closes the connection: the server's sign that we have every answer.
  return 0;
}

}  // namespace stage08
