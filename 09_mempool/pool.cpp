// The pool: the bookkeeping first (no device), then the memory and its one
// registration. Nothing after the constructor calls a verb: alloc and
// release only move an index between the free stack and the in-use flags.
#include "pool.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "rdma_tutorial/buffer.hpp"
#include "rdma_tutorial/error.hpp"

namespace stage09 {

namespace {

// The system's page size (sysconf: 4 KiB on x86-64, 16 or 64 KiB on some
// arm64 and POWER kernels) and its default hugepage size, the one a
// MAP_HUGETLB mapping without a size flag takes (/proc/meminfo's
// Hugepagesize: 2 MiB on x86-64; read once; 2 MiB when it says nothing).
const std::size_t page_bytes = rdma::page_size;
std::size_t hugepage_bytes() {
  static const std::size_t bytes = [] {
    std::ifstream meminfo("/proc/meminfo");
    for (std::string line; std::getline(meminfo, line);) {
      unsigned long kib = 0;
      if (std::sscanf(line.c_str(), "Hugepagesize: %lu kB", &kib) == 1 && kib > 0) return std::size_t{kib} * 1024;
    }
    return std::size_t{2} << 20;
  }();
  return bytes;
}

std::string address_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

// "64 KiB", "4 MiB"; plain bytes when neither divides evenly.
std::string size_text(std::uint64_t bytes) {
  constexpr std::uint64_t kib = 1024;
  if (bytes != 0 && bytes % (kib * kib) == 0) return std::to_string(bytes / (kib * kib)) + " MiB";
  if (bytes != 0 && bytes % kib == 0) return std::to_string(bytes / kib) + " KiB";
  return std::to_string(bytes) + " bytes";
}

// chunk_ledger ---------------------------------------------------------------

chunk_ledger::chunk_ledger(std::uint32_t count) : in_use_(count, 0) {
  // Pushed in reverse, so the first take() hands out chunk 0, then 1, ...:
  // a fresh pool fills from its start, which is easier to read in a trace.
  free_.reserve(count);
  for (std::uint32_t i = count; i > 0; --i) free_.push_back(i - 1);
}

std::optional<std::uint32_t> chunk_ledger::take() {
  if (free_.empty()) return std::nullopt;
  const std::uint32_t index = free_.back();
  free_.pop_back();
  in_use_[index] = 1;
  return index;
}

void chunk_ledger::give_back(std::uint32_t index) {
  if (index >= count()) {
    throw rdma::tutorial_error("chunk " + std::to_string(index) + " is not in this pool of " +
                               std::to_string(count()));
  }
  // Without this flag a second give_back would push the index twice, and two
  // later takes would hand the same memory to two owners: a corruption that
  // shows up far from its cause. Caught here, it names the chunk.
  if (in_use_[index] == 0) {
    throw rdma::tutorial_error("chunk " + std::to_string(index) + " released twice: it is not in use");
  }
  in_use_[index] = 0;
  free_.push_back(index);
}

// memory_pool ----------------------------------------------------------------

memory_pool::memory_pool(ibv_pd* pd, std::uint32_t chunk_size, std::uint32_t count, int access, registration how)
    : chunk_size_(chunk_size), ledger_(count), how_(how) {
  // Whole pages per chunk: every chunk then starts on a page boundary, and no
  // two chunks share a page, so handing one out never exposes its neighbour's
  // bytes through a page-granular mapping.
  if (chunk_size == 0 || chunk_size % page_bytes != 0) {
    throw rdma::tutorial_error("chunk size " + std::to_string(chunk_size) + " is not a multiple of the page size, " +
                                   std::to_string(page_bytes) + " bytes",
                               "round the chunk size up to a whole number of pages");
  }
  if (count == 0) throw rdma::tutorial_error("a pool needs at least one chunk");
  bytes_ = std::size_t{chunk_size} * count;

  // Hugepages first: one 2 MiB page is one entry in the device's translation
  // table instead of 512, so the registration is cheaper and the NIC misses
  // its cache less. The kernel hands them out only in whole hugepages and
  // only from a pool the administrator reserved (vm.nr_hugepages); a private
  // MAP_HUGETLB mapping reserves its pages at mmap time, so "none left" is
  // ENOMEM here, not a SIGBUS at the first touch.
  void* p = MAP_FAILED;
  const std::string pages = size_text(page_bytes) + " pages";
  if (bytes_ % hugepage_bytes() == 0) {
    p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    const int err = errno;  // before anything else can overwrite it
    if (p != MAP_FAILED) {
      backing_ = size_text(hugepage_bytes()) + " hugepages";
    } else {
      backing_ = pages + " (no hugepages: mmap(MAP_HUGETLB) failed, " + rdma::errno_name(err) + ")";
    }
  } else {
    backing_ = pages + " (the pool is not a multiple of " + size_text(hugepage_bytes()) + ")";
  }
  if (p == MAP_FAILED) {
    p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw rdma::verbs_error(errno, "mmap(" + size_text(bytes_) + ")");
  }
  base_ = static_cast<char*>(p);

  // The constructor has not finished, so no destructor will run for us: if
  // the registration fails, the mapping is ours to undo before rethrowing.
  try {
    // Touch every page now. An anonymous page never written is the shared
    // zero page; writing it here gives each page its own frame before
    // ibv_reg_mr pins it, and the page faults are paid once, at start-up,
    // instead of on the first messages.
    std::memset(base_, 0, bytes_);
    // ibv_reg_mr is a macro over a function that takes the flags unsigned.
    if (how == registration::whole) {
      mrs_.emplace_back(rdma::check_ptr(ibv_reg_mr(pd, base_, bytes_, static_cast<unsigned>(access)),
                                        "ibv_reg_mr(pool of " + size_text(bytes_) + ")"));
    } else {
      for (std::uint32_t i = 0; i < count; ++i) {
        mrs_.emplace_back(rdma::check_ptr(ibv_reg_mr(pd, base_ + std::size_t{i} * chunk_size, chunk_size, static_cast<unsigned>(access)),
                                          "ibv_reg_mr(pool chunk " + std::to_string(i) + " of " + size_text(chunk_size) + ")"));
      }
    }
  } catch (...) {
    mrs_.clear();
    munmap(base_, bytes_);
    throw;
  }
}

memory_pool::~memory_pool() {
  // A destructor's body runs before its members are destroyed, so mrs_' own
  // destructor would come too late: the memory would be unmapped while the
  // device still had it pinned and translated. Deregister first, by hand.
  mrs_.clear();
  if (munmap(base_, bytes_) != 0) rdma::detail::warn_destroy_failed("munmap", -1);
}

std::optional<chunk> memory_pool::try_alloc() {
  const auto index = ledger_.take();
  if (!index) return std::nullopt;
  return at(*index);
}

chunk memory_pool::alloc() {
  if (auto c = try_alloc()) return *c;
  throw rdma::tutorial_error(
      "pool exhausted: all " + std::to_string(count()) + " chunks of " + std::to_string(chunk_size_) +
          " bytes are in use",
      "release each chunk when its user is done with it (a missing release leaks a chunk for good), "
      "or build the pool with more chunks; registering more memory here would put ibv_reg_mr back "
      "on the data path");
}

void memory_pool::release(const void* addr) {
  // Compared as integers: ordering pointers into different objects with <
  // is undefined in C++, and a foreign pointer is exactly that case.
  const auto p = reinterpret_cast<std::uintptr_t>(addr);
  const auto start = reinterpret_cast<std::uintptr_t>(base_);
  if (p < start || p - start >= bytes_) {
    throw rdma::tutorial_error("release(" + address_text(addr) + "): not in this pool (" + address_text(base_) +
                                   ", " + size_text(bytes_) + ")",
                               "give each chunk back to the pool it came from");
  }
  const std::uint64_t offset = p - start;
  const auto index = static_cast<std::uint32_t>(offset / chunk_size_);
  if (offset % chunk_size_ != 0) {
    throw rdma::tutorial_error("release(" + address_text(addr) + "): inside chunk " + std::to_string(index) +
                                   " at byte " + std::to_string(offset % chunk_size_) + ", not at a chunk's start",
                               "release the address alloc() returned (chunk.addr), not a pointer into the chunk");
  }
  ledger_.give_back(index);
}

chunk memory_pool::at(std::uint32_t index) const {
  if (index >= count()) {
    throw rdma::tutorial_error("chunk " + std::to_string(index) + " is not in this pool of " +
                               std::to_string(count()));
  }
  const std::uint64_t offset = std::uint64_t{index} * chunk_size_;
  // With one registration every chunk shares its lkey and rkey, and a chunk
  // is told apart by its address (and offset), not by its keys.
  const ibv_mr* covering = mr(index);
  return chunk{index, base_ + offset, offset, chunk_size_, covering->lkey, covering->rkey};
}

std::string memory_pool::describe() const {
  return std::to_string(count()) + (count() == 1 ? " chunk of " : " chunks of ") + std::to_string(chunk_size_) +
         " bytes, " + size_text(bytes_) + " in " + backing_ +
         (how_ == registration::whole ? ", one ibv_reg_mr" : ", one ibv_reg_mr per chunk, all at start-up");
}

}  // namespace stage09
