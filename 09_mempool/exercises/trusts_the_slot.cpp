// EXERCISE: a client's record fails its checksum in bytes it never wrote
//
// This is grants.cpp with one bug. Build and check it with
//   scripts/check_exercise.sh trusts_the_slot
//
// TODO: a client whose immediate names slot 16, which belongs to the next
// chunk (granted to nobody yet), gets that slot read as if it were its
// record: the server reports a checksum mismatch in bytes the client never
// wrote. A fixed server refuses the immediate before it reads anything,
// naming the slot and the client's grant (and so exits 1, as does the
// client: that is the right answer here). Read what judge() believes.
// (Hint: docs/09-mempool.md, section "What a completion may claim".)
// The server's rules, in the order it applies them (grants.hpp says why the
// order matters).
#include "grants.hpp"

#include "protocol.hpp"
#include "rdma_tutorial/imm.hpp"

namespace stage09 {

arrival judge(const slot_layout& layout, const grant& g, std::uint32_t imm, std::uint32_t byte_len,
              std::uint64_t records) {
  const rdma::imm::tagged t = rdma::imm::decode(imm);
  arrival a;
  if (t.type == imm_end) {
    if (byte_len != 0) {
      a.why = "END with " + std::to_string(byte_len) + " bytes (END carries none)";
      return a;
    }
    a.what = arrival::kind::end;
    a.count = t.index;
    return a;
  }
  if (t.type != imm_data) {
    a.why = "immediate " + rdma::imm::hex(imm) + ": type " + std::to_string(t.type) + " is neither DATA nor END";
    return a;
  }
  if (t.index >= layout.slot_count()) {
    a.why = "immediate " + rdma::imm::hex(imm) + ": slot " + std::to_string(t.index) + " is out of range (the pool has " +
            std::to_string(layout.slot_count()) + ")";
    return a;
  }
  (void)g, (void)records;  // TODO: the slot is in range, and the client says it is its own
  if (byte_len != layout.record_size) {
    a.why = "wrote " + std::to_string(byte_len) + " bytes into slot " + std::to_string(t.index) + " of " +
            std::to_string(layout.record_size);
    return a;
  }
  a.what = arrival::kind::data;
  a.slot = t.index;
  return a;
}

std::string sequence_tracker::on_record(std::uint64_t seq) {
  if (seq == next_) {
    ++next_;
    return "";
  }
  if (seq > next_) {
    const std::uint64_t lost = seq - next_;
    gaps_ += lost;
    const std::string why = "record " + std::to_string(seq) + " after " + std::to_string(next_) + ": " +
                            std::to_string(lost) + " lost";
    next_ = seq + 1;
    return why;
  }
  ++duplicates_;
  return "record " + std::to_string(seq) + " again (expected " + std::to_string(next_) + "): a duplicate, or late";
}

}  // namespace stage09
