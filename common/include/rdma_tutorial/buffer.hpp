// Memory for the device, as stage 02 teaches it (docs/02-pd-mr.md):
// page-aligned, every page touched before registration, registered with the
// access flags its job needs, and deregistered before it is freed.
#pragma once

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "rdma_tutorial/handles.hpp"

namespace rdma {

// The system's page (sysconf(_SC_PAGESIZE): 4096 on x86-64, 4096 or 65536
// on arm64 and ppc64le kernels); registrations pin and translate whole pages.
inline const std::size_t page_size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// Page-aligned memory from posix_memalign, zero-filled (so every page exists
// before ibv_reg_mr pins it, and no byte is ever read uninitialised),
// released with free().
class aligned_buffer {
 public:
  explicit aligned_buffer(std::size_t size);
  ~aligned_buffer();
  aligned_buffer(aligned_buffer&& other) noexcept;
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  aligned_buffer& operator=(aligned_buffer&&) = delete;

  char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::span<char> bytes() const noexcept { return {data_, size_}; }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

// An aligned_buffer and its registration, in teardown order: the memory is
// declared first, so C++ deregisters the MR before it frees the memory.
class registered_buffer {
 public:
  // ibv_reg_mr(pd, ..., access); `name` goes into the error message.
  registered_buffer(ibv_pd* pd, std::size_t size, int access, std::string_view name);

  char* data() const noexcept { return memory_.data(); }
  std::size_t size() const noexcept { return memory_.size(); }
  std::span<char> bytes() const noexcept { return memory_.bytes(); }
  std::uint32_t lkey() const noexcept { return mr_->lkey; }
  std::uint32_t rkey() const noexcept { return mr_->rkey; }

 private:
  aligned_buffer memory_;
  mr_ptr mr_;
};

}  // namespace rdma
