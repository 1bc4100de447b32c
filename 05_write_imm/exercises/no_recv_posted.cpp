// EXERCISE: the client's first Write with Immediate fails: receiver not ready
//
// This is server.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh no_recv_posted
//
// TODO: the handshake works and the region is right, yet the client's very
// first Write with Immediate fails, even one of 0 bytes. Read what the
// target's device needs before it can accept one. (Hint: docs/05-write-imm.md,
// section "The Recv it consumes".)
// The server's story: expose --slots slots, hand out the region, then serve
// (target.cpp).
#include <cstdio>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage05 {

int run_server(const options& opts, const rdma::rdma_device& dev) {
  // The landing region: the only memory the client may write.
  const rdma::registered_buffer landing(dev.pd.get(), std::size_t{opts.slots} * opts.size,
                                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "landing region");
  const rdma::qp_ptr qp = create_qp(dev, opts);
  std::printf("landing region: %zu bytes at %p, rkey 0x%x: %u slots of %u bytes\n", landing.size(),
              static_cast<void*>(landing.data()), landing.rkey(), opts.slots, opts.size);

  const rdma::tcp::socket listener = rdma::tcp::listen_on(opts.peer.bind, opts.peer.port);
  std::printf("waiting for a client on %s\n", listener.peer().c_str());
  std::fflush(stdout);
  const auto [client, peer] = rdma::accept_peer(listener, opts.peer.accept_ms, opts.peer.wait_ms);
  std::printf("client %s: %s\n", client.peer().c_str(), rdma::wire::describe(peer).c_str());
  // A client with a region wants ping-pong: it must hold what we answer.
  if (peer.length != 0 && peer.length < opts.size) {
    throw rdma::tutorial_error("the client's region (" + std::to_string(peer.length) + " bytes) is smaller than --size " +
                               std::to_string(opts.size), "give both sides the same --size");
  }

  rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());
  // Our RNR NAK tells a sender that finds no Recv posted how long to wait
  // before it tries again (min_rnr_timer, set at RTR): 12 is 0.64 ms.
  rdma::qp_params params = dev.params;
  params.min_rnr_timer = 12;
  std::printf("%s\n", rdma::connect_and_describe(qp.get(), ours, peer, params, true).c_str());  // with the retry counts
  // A Write with Immediate is a write: it needs no Recv.  // TODO
  std::printf("posted %u Recvs\n", 0u);  // TODO
  ours.addr = reinterpret_cast<std::uintptr_t>(landing.data());
  ours.rkey = landing.rkey();
  ours.length = static_cast<std::uint32_t>(landing.size());
  rdma::tcp::send_endpoint(client, ours, rdma::tcp::after_ms(opts.peer.wait_ms));

  rdma::send_queue_room answers(opts.tx_depth, rdma::signal_interval(opts.tx_depth));
  const std::uint32_t data = serve({dev, qp.get(), client, landing, peer, opts, &answers});
  std::printf("received %u DATA write(s) and END\n", data);
  // The client may write until it closes the connection.
  rdma::tcp::wait_for_close(client, rdma::tcp::after_ms(opts.peer.wait_ms));
  std::printf("the client closed the connection; releasing the region\n");
  return 0;
}

}  // namespace stage05
