// The memory pool: memory registered at start-up, carved into fixed-size
// chunks. Registering is expensive (stage 02 measured it: every page pinned
// and translated, a system call each way); taking a chunk from the pool is
// a few instructions. The server hands each client one chunk as its grant,
// and takes it back when the client has gone.
//
// Two layers, so the unit tests can hold the bookkeeping to its word without
// a device:
//   chunk_ledger   which of N chunks are free: O(1) take and give back, a
//                  double release or an index out of range is an error
//   memory_pool    the memory (hugepages when the system has them, else
//                  ordinary pages, and it says which), registered once at
//                  start-up (one ibv_reg_mr, or one per chunk), and chunks
//                  as (address, lkey, rkey, offset)
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdma_tutorial/handles.hpp"

namespace stage09 {

// Pure bookkeeping: a stack of free indices and one flag per chunk.
class chunk_ledger {
 public:
  explicit chunk_ledger(std::uint32_t count);

  // O(1): the most recently given back chunk first (its pages are warm).
  // Empty when every chunk is in use.
  std::optional<std::uint32_t> take();
  // O(1). Throws rdma::tutorial_error for an index out of range or a chunk
  // that is not in use (released twice).
  void give_back(std::uint32_t index);

  std::uint32_t count() const noexcept { return static_cast<std::uint32_t>(in_use_.size()); }
  std::uint32_t free_count() const noexcept { return static_cast<std::uint32_t>(free_.size()); }
  bool in_use(std::uint32_t index) const { return index < count() && in_use_[index] != 0; }

 private:
  std::vector<std::uint32_t> free_;
  std::vector<std::uint8_t> in_use_;
};

// One chunk, as the code that uses it needs it.
struct chunk {
  std::uint32_t index = 0;
  char* addr = nullptr;
  std::uint64_t offset = 0;  // from the start of the pool
  std::uint32_t size = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

// How the pool is registered. whole: one ibv_reg_mr over every chunk, the
// fewest registrations (the cost table's pool). per_chunk: one ibv_reg_mr per
// chunk, all of them at start-up, so a memory window bound over a chunk can
// never reach past it even on a device that checks a window's range only
// against its region (Soft-RoCE on Linux 6.1 does: measured, see
// docs/09-mempool.md, "A window is only as narrow as its region").
enum class registration { whole, per_chunk };

class memory_pool {
 public:
  // count x chunk_size bytes (chunk_size a multiple of the page size),
  // mapped with MAP_HUGETLB first when the total is a multiple of the
  // hugepage size (2 MiB on x86-64), else (or when
  // that fails: no hugepages reserved) ordinary pages; every page touched;
  // then ibv_reg_mr with `access`, once or once per chunk (`how`).
  memory_pool(ibv_pd* pd, std::uint32_t chunk_size, std::uint32_t count, int access,
              registration how = registration::whole);
  ~memory_pool();
  memory_pool(const memory_pool&) = delete;
  memory_pool& operator=(const memory_pool&) = delete;

  // O(1), no verbs call. Throws rdma::tutorial_error when every chunk is in use.
  chunk alloc();
  // The same, empty when every chunk is in use.
  std::optional<chunk> try_alloc();
  // O(1), no verbs call. Throws rdma::tutorial_error for an address that is
  // not the start of one of this pool's chunks (a foreign pointer), or a
  // chunk that is not in use (a double release).
  void release(const void* addr);

  // The registration that covers chunk `index`.
  ibv_mr* mr(std::uint32_t index = 0) const { return mrs_.size() == 1 ? mrs_[0].get() : mrs_.at(index).get(); }
  char* base() const noexcept { return base_; }
  std::uint32_t chunk_size() const noexcept { return chunk_size_; }
  std::uint32_t count() const noexcept { return ledger_.count(); }
  std::uint32_t free_count() const noexcept { return ledger_.free_count(); }
  // The chunk at `index` (in use or not): for code that checked the index.
  chunk at(std::uint32_t index) const;
  // "16 chunks of 4096 bytes, 64 KiB in 4 KiB pages (no hugepages: mmap(MAP_HUGETLB) failed, ENOMEM)"
  std::string describe() const;

 private:
  std::uint32_t chunk_size_;
  chunk_ledger ledger_;
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::string backing_;
  registration how_;
  // Last, so C++ would destroy them first; but ~memory_pool's body (the
  // munmap) runs before any member is destroyed, so the body clears them first.
  std::vector<rdma::mr_ptr> mrs_;
};

// "64 KiB", "4 MiB"; plain bytes when neither divides evenly.
std::string size_text(std::uint64_t bytes);

// Stage 02's registration-cost table with the pool beside it: for each size
// from 4 KiB to 4 MiB (doubling), the median of `runs` ibv_reg_mr +
// ibv_dereg_mr, and of `runs` x 1000 pool alloc + release pairs from a pool of
// one chunk of that size (registered before its timing, and gone before the
// registrations are timed, so at most 4 MiB is pinned at once); the ratio.
// Printed as a table; one line per size:
//   "pool-cost <bytes> <reg_us> <pool_us> <ratio>"
// which scripts/bench.sh gathers into docs/data/09-pool-cost.csv.
void print_pool_cost(ibv_pd* pd, int runs);

}  // namespace stage09
