#include "rdma_tutorial/buffer.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rdma_tutorial/error.hpp"

namespace rdma {

aligned_buffer::aligned_buffer(std::size_t size) : size_(size) {
  void* p = nullptr;
  // Whole pages, so that the pages a registration pins hold this buffer and
  // nothing else (5000 bytes take two pages; the other 3192 are ours too).
  if (size > SIZE_MAX - page_size) throw tutorial_error("a buffer of " + std::to_string(size) + " bytes is too large");
  const std::size_t pages = (size + page_size - 1) / page_size * page_size;
  // posix_memalign returns the errno value itself (check_rc's convention).
  check_rc(posix_memalign(&p, page_size, pages), "posix_memalign(" + std::to_string(pages) + " bytes)");
  data_ = static_cast<char*>(p);
  std::memset(data_, 0, pages);  // touch every page now, not inside ibv_reg_mr
}

aligned_buffer::~aligned_buffer() { std::free(data_); }

aligned_buffer::aligned_buffer(aligned_buffer&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

registered_buffer::registered_buffer(ibv_pd* pd, std::size_t size, int access, std::string_view name)
    : memory_(size),
      // ibv_reg_mr is a macro over __ibv_reg_mr, which takes the flags unsigned.
      mr_(check_ptr(ibv_reg_mr(pd, memory_.data(), memory_.size(), static_cast<unsigned>(access)),
                    "ibv_reg_mr(" + std::string(name) + ")")) {}

}  // namespace rdma
