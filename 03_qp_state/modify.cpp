// The one verb this stage is about: ibv_modify_qp, raw, and ibv_query_qp to
// see where the QP really is afterwards.
//
// ibv_modify_qp returns the errno value itself (0 on success), so it is
// checked with rdma::check_rc. The kernel's message is only an errno, almost
// always EINVAL; the hint says which transition it was and what to look at
// (a missing mask bit is named exactly).
#include <cstdio>
#include <string>

#include "rdma_tutorial/error.hpp"
#include "stage.hpp"

namespace stage03 {

ibv_qp_state query_state(ibv_qp* qp, std::string_view label) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init_attr{};
  rdma::check_rc(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init_attr), "ibv_query_qp(" + std::string(label) + ")");
  return attr.qp_state;
}

void modify_qp(ibv_qp* qp, std::string_view label, const transition& t) {
  const std::string step = state_name(t.from) + " -> " + state_name(t.to);
  ibv_qp_attr attr = t.attr;  // ibv_modify_qp takes a non-const pointer
  try {
    rdma::check_rc(ibv_modify_qp(qp, &attr, t.mask), "ibv_modify_qp(" + std::string(label) + ", " + step + ")");
  } catch (const rdma::verbs_error& e) {
    throw rdma::tutorial_error(e.what(), modify_hint(t, e.code().value()));
  }
  std::printf("  %-14s now %-5s mask %s\n", step.c_str(), state_name(query_state(qp, label)).c_str(),
              mask_names(t.mask).c_str());
  std::printf("  %-14s %s\n", "", describe_values(t).c_str());
}

}  // namespace stage03
