#include "rdma_tutorial/imm.hpp"

#include <cstdio>

#include "rdma_tutorial/error.hpp"

namespace rdma::imm {

std::string hex(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

void throw_index_too_big(std::uint32_t index) {
  throw tutorial_error("immediate index " + std::to_string(index) + " does not fit 24 bits",
                       "an index or sequence number travels modulo 2^24; wrap it before encoding");
}

const accepted& validate(std::uint32_t value, std::span<const accepted> rules) {
  const tagged t = decode(value);
  for (const accepted& rule : rules) {
    if (rule.type != t.type) continue;
    if (t.index >= rule.limit) {
      throw tutorial_error("imm " + hex(value) + ": " + rule.name + " index " + std::to_string(t.index) +
                               " is outside 0.." + std::to_string(rule.limit - 1),
                           "the sender names something this side never exposed; refuse it before touching memory");
    }
    return rule;
  }
  std::string names;
  for (const accepted& rule : rules) names += (names.empty() ? "" : ", ") + std::string(rule.name);
  char type_text[8];
  std::snprintf(type_text, sizeof type_text, "0x%02x", t.type);
  throw tutorial_error("imm " + hex(value) + ": type " + type_text + " is none of " + names,
                       "the sender speaks another protocol, or its byte order is wrong (htonl once at the sender, "
                       "ntohl once at the target)");
}

}  // namespace rdma::imm
