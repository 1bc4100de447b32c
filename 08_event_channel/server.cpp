// The server's story: take the client's endpoint and the run it asks for,
// post the Recvs, hand out our endpoint, answer every burst, wait for the
// client to leave.
#include <cstdio>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage08 {

int run_server(const options& opts, const rdma::rdma_device& dev, notified_cq& events) {
  const rdma::tcp::socket listener = rdma::tcp::listen_on(opts.peer.bind, opts.peer.port);
  std::printf("waiting for a client on %s\n", listener.peer().c_str());
  std::fflush(stdout);
  const auto [client, peer] = rdma::accept_peer(listener, opts.peer.accept_ms, opts.peer.wait_ms);
  std::printf("client %s: %s\n", client.peer().c_str(), rdma::wire::describe(peer).c_str());
  std::array<std::byte, run_params_bytes> wire{};
  rdma::tcp::recv_exact(client, wire, rdma::tcp::after_ms(opts.peer.wait_ms), "the run");
  const run_params run = decode(wire);
  // The client's parser checked these; a peer is checked all the same.
  if (run.rounds == 0 || run.rounds > max_rounds || run.burst == 0 || run.burst > max_burst || run.size < min_size ||
      run.size > max_size ||
      (run.solicited_every != 0 && run.burst % run.solicited_every != 0)) {
    throw rdma::tutorial_error("the client asks for a run this program cannot do: " + std::to_string(run.rounds) +
                                   " rounds of " + std::to_string(run.burst) + " x " + std::to_string(run.size) +
                                   " bytes, 1 in " + std::to_string(run.solicited_every) + " solicited (it does 1 to " +
                                   std::to_string(max_rounds) + " rounds, bursts of 1 to " + std::to_string(max_burst) +
                                   ", Sends of " + std::to_string(min_size) + " to " + std::to_string(max_size) +
                                   " bytes, a burst a multiple of solicited_every)",
                               "is the peer this stage's client?");
  }

  const message_buffers buffers(dev.pd.get(), run);
  const rdma::qp_ptr qp = create_qp(dev, events, run, false);
  const rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());
  std::printf("%s\n", rdma::connect_and_describe(qp.get(), ours, peer, dev.params).c_str());
  // Before the client has our endpoint, so before it can send.
  buffers.post_receives(qp.get());
  std::printf("posted %u Recvs\n", buffers.slots());
  rdma::tcp::send_endpoint(client, ours, rdma::tcp::after_ms(opts.peer.wait_ms));

  const side s{opts, run, events, qp.get(), buffers, client, "the client", false};
  describe_run(s);
  exchange(s);
  // Our last answers are still on their way until the client has them.
  rdma::tcp::wait_for_close(client, rdma::tcp::after_ms(opts.peer.wait_ms));
  std::printf("the client closed the connection\n");
  return 0;
}

}  // namespace stage08
