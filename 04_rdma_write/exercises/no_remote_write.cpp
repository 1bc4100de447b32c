// EXERCISE: the client's RDMA Write completes in error
//
// This is server.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh no_remote_write
//
// TODO: the handshake works, both QPs reach RTS, the client posts its RDMA
// Write without an error, and yet its completion is an error. Look at what
// the server allows on the memory it advertises. (Hint: docs/04-rdma-write.md,
// section "What the server exposes".)
// The server's story: expose one landing region, tell the client where it
// is, and find out that the client wrote it, which the RDMA Write itself
// never says. (protocol.hpp has the messages in order.)
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage04 {

namespace {

// A client silent for --wait-ms after our endpoint. Its writes leave no
// trace here, so one still streaming (--iters) looks the same.
constexpr std::string_view silent_client_hint =
    "an RDMA Write leaves no trace at its target, so a client still writing looks the same as a silent one: "
    "give the server a --wait-ms longer than the client's writes take, or see the client's output";

// --notify send: the notice arrives as a Send into the posted Recv. The
// write before it made no completion here; the Recv is the first and only
// one, and RC delivers the Send after the write's data is in place.
notice wait_for_send(const rdma::rdma_device& dev, const rdma::tcp::socket& client,
                     const rdma::registered_buffer& notice_buf, int wait_ms) {
  std::printf("waiting for the notice: a Send (polling the CQ)\n");
  ibv_wc wc{};
  rdma::wait_while_connected(client, "the client", "its notice", wait_ms,
                             [&] { return rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)) == 1; },
                             rdma::waiting::backs_off, silent_client_hint);
  rdma::check_wc(wc);
  std::printf("  completion: %s\n", rdma::describe_wc(wc).c_str());
  if (wc.opcode != IBV_WC_RECV || wc.byte_len != notice_size) {
    throw rdma::tutorial_error("the notice should be an " + std::to_string(notice_size) + "-byte Send, got " +
                               rdma::describe_wc(wc));
  }
  std::printf("  the only completion here: the RDMA Write itself left none\n");
  return decode_notice(std::span<const std::byte, notice_size>(
      reinterpret_cast<const std::byte*>(notice_buf.data()), notice_size));
}

// --notify flag: the client writes the notice into the flag word at the
// end of the region; no completion at all arrives here. The word is read
// with an acquire load: the device writes it behind the compiler's back,
// and nothing after the load may be read before it.
notice wait_for_flag(const rdma::rdma_device& dev, const rdma::tcp::socket& client, char* flag_word, int wait_ms) {
  std::printf("waiting for the notice: the flag word (polling memory)\n");
  std::atomic_ref<std::uint64_t> flag(*reinterpret_cast<std::uint64_t*>(flag_word));
  rdma::wait_while_connected(client, "the client", "its notice", wait_ms,
                             [&] { return flag.load(std::memory_order_acquire) != 0; }, rdma::waiting::backs_off,
                             silent_client_hint);
  std::array<std::byte, notice_size> bytes{};
  std::memcpy(bytes.data(), flag_word, notice_size);
  const notice n = decode_notice(bytes);
  std::printf("  flag word: %u bytes, %u write(s)\n", n.bytes, n.writes);
  ibv_wc wc{};
  std::printf("  ibv_poll_cq: %d completions: no RDMA Write leaves one at its target\n",
              rdma::check_poll(ibv_poll_cq(dev.cq.get(), 1, &wc)));
  return n;
}

}  // namespace

int run_server(const options& opts, const rdma::rdma_device& dev) {
  // The landing region: the one piece of this process the client may touch.
  // REMOTE_WRITE lets it write there (LOCAL_WRITE must come with it); no
  // REMOTE_READ, and nothing else is registered with a remote flag. Its
  // last 8 bytes are the flag word of --notify flag, at an 8-byte boundary
  // (protocol.hpp, payload_capacity).
  const std::uint32_t capacity = payload_capacity(opts.size);
  const rdma::registered_buffer landing(dev.pd.get(), capacity + notice_size,
                                        IBV_ACCESS_LOCAL_WRITE, "landing region");  // TODO
  // Where a Send's notice lands: local access only.
  const rdma::registered_buffer notice_buf(dev.pd.get(), notice_size, IBV_ACCESS_LOCAL_WRITE, "notice");
  // Declared after both buffers, so destroyed before them: once the QP is
  // gone no write can arrive, and only then is the region released.
  const rdma::qp_ptr qp = create_qp(dev, 1);
  std::printf("landing region: %zu bytes at %p, rkey 0x%x (%u for the payload, 8 for the flag word)\n",
              landing.size(), static_cast<void*>(landing.data()), landing.rkey(), capacity);

  const rdma::tcp::socket listener = rdma::tcp::listen_on(opts.peer.bind, opts.peer.port);
  std::printf("waiting for a client on %s\n", listener.peer().c_str());
  std::fflush(stdout);
  const auto [client, peer] = rdma::accept_peer(listener, opts.peer.accept_ms, opts.peer.wait_ms);
  std::printf("client %s: %s\n", client.peer().c_str(), rdma::wire::describe(peer).c_str());
  if (peer.length != 0) {
    throw rdma::tutorial_error("the client offers memory to write; in this stage only the server does",
                               "run the client of the same stage");
  }

  // Ready before we answer: once the client has our endpoint it may write
  // at once, and a QP not yet in RTR would drop those packets.
  rdma::wire::endpoint ours = rdma::local_endpoint(dev, qp.get());
  std::printf("%s\n", rdma::connect_and_describe(qp.get(), ours, peer, dev.params).c_str());
  if (opts.notify == notify_by::send) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(notice_buf.data()), notice_size, notice_buf.lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    rdma::check_rc(ibv_post_recv(qp.get(), &wr, &bad), "ibv_post_recv(notice)");
  }
  ours.addr = reinterpret_cast<std::uintptr_t>(landing.data());
  ours.rkey = landing.rkey();
  ours.length = static_cast<std::uint32_t>(landing.size());
  rdma::tcp::send_endpoint(client, ours, rdma::tcp::after_ms(opts.peer.wait_ms));
  std::printf("sent our endpoint: the client may write now\n");

  // The notice must come within --wait-ms (a client that leaves ends the
  // wait at once): our only sign of a client that went silent.
  const notice n = opts.notify == notify_by::send ? wait_for_send(dev, client, notice_buf, opts.peer.wait_ms)
                                                   : wait_for_flag(dev, client, landing.data() + capacity, opts.peer.wait_ms);
  // The notice comes from the peer: check it before reading what it points at.
  if (n.bytes == 0 || n.bytes > capacity || n.writes == 0) {
    throw rdma::tutorial_error("the notice says " + std::to_string(n.bytes) + " bytes, " + std::to_string(n.writes) +
                               " writes; the region holds " + std::to_string(capacity));
  }
  const std::span<const char> payload(landing.data(), n.bytes);
  std::printf("the client wrote %u bytes, %u time(s): \"%.*s\", fnv1a 0x%08x\n", n.bytes, n.writes,
              static_cast<int>(std::min<std::size_t>(n.bytes, payload_text.size())), payload.data(), fnv1a(payload));

  // The client may write until it is done with its QP; it says so by
  // closing the connection. Only then is the region ours again.
  rdma::tcp::wait_for_close(client, rdma::tcp::after_ms(opts.peer.wait_ms));
  std::printf("the client closed the connection; releasing the region\n");
  return 0;
}

}  // namespace stage04
