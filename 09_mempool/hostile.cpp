// Not the lesson: the tests' client that breaks one of the server's rules
// on purpose (--hostile KIND), so that a test can watch the server refuse
// it (docs/09-mempool.md, "What a completion may claim"). client.cpp calls
// break_a_rule on record 0 and, for ignore-credits and silent, does what
// post_all says.
#include <arpa/inet.h>

#include <cstdio>
#include <string>

#include "rdma_tutorial/imm.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "stage.hpp"

namespace stage09 {

namespace {

struct hostile_entry {
  hostile_kind kind;
  const char* name;
};
constexpr hostile_entry hostile_kinds[] = {
    {hostile_kind::slot_out_of_range, "slot-out-of-range"},  // record 0 claims slot 2^24 - 1
    {hostile_kind::slot_not_granted, "slot-not-granted"},    // record 0 claims a slot of another chunk
    {hostile_kind::oversized, "oversized"},                  // record 0 is twice the record size
    {hostile_kind::outside_grant, "outside-grant"},          // record 0 goes into a neighbour's chunk
    {hostile_kind::past_window, "past-window"},              // record 0 goes just past our window
    {hostile_kind::ignore_credits, "ignore-credits"},        // writes past the credit edge
    {hostile_kind::silent, "silent"},                        // connects, then writes nothing
};

}  // namespace

const char* hostile_name(hostile_kind kind) {
  for (const hostile_entry& e : hostile_kinds) {
    if (e.kind == kind) return e.name;
  }
  return "none";
}

std::string hostile_kinds_text() {
  std::string kinds;
  for (const hostile_entry& e : hostile_kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(e.name);
  return kinds;
}

hostile_kind parse_hostile(std::string_view name) {
  for (const hostile_entry& e : hostile_kinds) {
    if (name == e.name) return e.kind;
  }
  throw rdma::usage_error("--hostile takes one of " + hostile_kinds_text() + ", not '" + std::string(name) + "'");
}

void break_a_rule(hostile_kind kind, const grant_msg& g, ibv_send_wr& wr, ibv_sge& sge) {
  switch (kind) {
    case hostile_kind::none:
    case hostile_kind::ignore_credits:  // not one record: post_all
    case hostile_kind::silent:
      return;
    case hostile_kind::slot_out_of_range:
      wr.imm_data = htonl(rdma::imm::encode(imm_data, rdma::imm::index_limit - 1));
      break;
    case hostile_kind::slot_not_granted:
      // A slot of another chunk: the one after ours, or chunk 0's.
      wr.imm_data = htonl(rdma::imm::encode(imm_data, g.first_slot == 0 ? g.slots : 0));
      break;
    case hostile_kind::oversized:
      sge.length = 2 * g.record_size;  // the source has room; the slot after ours in the window too
      break;
    case hostile_kind::outside_grant:
      // Into a neighbour's first slot: the chunk before ours, or after it.
      wr.wr.rdma.remote_addr = g.first_slot == 0 ? g.addr + g.chunk_bytes : g.addr - g.chunk_bytes;
      break;
    case hostile_kind::past_window:
      // Just past our window's end: the unused tail of our own chunk when
      // the window is shorter than the chunk (the immediate still names
      // slot 0, which the write then never reaches).
      wr.wr.rdma.remote_addr = g.addr + std::uint64_t{g.slots} * g.record_size;
      break;
  }
  const std::uint64_t window_bytes = std::uint64_t{g.slots} * g.record_size;
  const std::string past_window =
      "is written just past the window's end, at offset " + std::to_string(window_bytes) +
      (window_bytes < g.chunk_bytes ? " of our own " + std::to_string(g.chunk_bytes) + "-byte chunk"
                                    : ": the window fills our chunk, so that is the next one");
  std::printf("hostile: record 0 %s\n",
              kind == hostile_kind::slot_out_of_range  ? "claims slot 16777215 (out of range)"
              : kind == hostile_kind::slot_not_granted ? "claims a slot of another client's chunk"
              : kind == hostile_kind::oversized        ? "writes twice the record size"
              : kind == hostile_kind::past_window      ? past_window.c_str()
                                                       : "is written into a neighbour's chunk");
  std::fflush(stdout);
}

}  // namespace stage09
