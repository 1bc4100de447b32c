// The server's rules for what a client may write, kept pure so the unit
// tests can hold them to their word: where a slot lives in the pool, which
// slots a client was granted, whether one completion's immediate and length
// may be believed, the credit edge, and what a record's sequence number says.
//
// The order matters more than any rule: everything a completion claims is
// checked against what the server itself granted before a byte of the slot
// is read. The client chose the immediate and the length; a slot index
// taken on trust is an address the client chose.
#pragma once

#include <cstdint>
#include <string>

namespace stage09 {

// Slot numbers and where they live. Every chunk holds `slots` slots of
// `record_size` bytes; slot s is in chunk s / slots.
struct slot_layout {
  std::uint32_t slots = 16;         // per chunk, and so per client
  std::uint32_t record_size = 64;
  std::uint32_t chunk_size = 4096;
  std::uint32_t chunks = 4;

  std::uint32_t slot_count() const { return chunks * slots; }
  std::uint64_t offset(std::uint32_t slot) const {
    return std::uint64_t{slot / slots} * chunk_size + std::uint64_t{slot % slots} * record_size;
  }
  std::uint32_t first_slot(std::uint32_t chunk) const { return chunk * slots; }
};

// One client's grant: slots first .. first + count - 1.
struct grant {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  bool holds(std::uint32_t slot) const { return slot >= first && slot - first < count; }
  // Record n goes into the grant's slots in turn.
  std::uint32_t slot_for(std::uint64_t record) const { return first + static_cast<std::uint32_t>(record % count); }
};

// One Write with Immediate, judged from its completion alone.
struct arrival {
  enum class kind { data, end, bad };
  kind what = kind::bad;
  std::uint32_t slot = 0;     // data: the slot to read, already checked
  std::uint32_t count = 0;    // end: the records it says came before, mod 2^24
  std::string why;            // bad: what is wrong, in a line
};
// `imm` in host order (ntohl done), `byte_len` as the completion says,
// `records` the client's records so far. Checks, in order: the type; for
// DATA the slot against the pool, then against the grant, then that it is
// the slot record n goes to, then byte_len against the record size; for
// END a length of 0.
arrival judge(const slot_layout& layout, const grant& g, std::uint32_t imm, std::uint32_t byte_len,
              std::uint64_t records);

// The credit word holds an edge: how many writes the client may have sent
// in all (records and END). 0 until the server opens the window; then
// consumed + slots, so a slot is written again only after the server took
// what it held.
inline std::uint64_t credit_edge(std::uint64_t consumed, std::uint32_t slots) { return consumed + slots; }

// What the sequence numbers say, counted rather than thrown: a reliable
// connection delivers in order, so any of these is a bug somewhere (the
// client's or ours), and the server's report shows it.
class sequence_tracker {
 public:
  // "" when `seq` is the one expected; otherwise what happened.
  std::string on_record(std::uint64_t seq);
  void on_corrupt() { ++corrupt_; }
  std::uint64_t next() const { return next_; }
  std::uint64_t gaps() const { return gaps_; }              // numbers skipped: records lost
  std::uint64_t duplicates() const { return duplicates_; }  // numbers seen before (or late: reordered)
  std::uint64_t corrupt() const { return corrupt_; }
  bool clean() const { return gaps_ == 0 && duplicates_ == 0 && corrupt_ == 0; }

 private:
  std::uint64_t next_ = 0;
  std::uint64_t gaps_ = 0;
  std::uint64_t duplicates_ = 0;
  std::uint64_t corrupt_ = 0;
};

}  // namespace stage09
