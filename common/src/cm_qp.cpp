// The PD, CQ and QP on the device rdma_cm chose (cm_qp.hpp).
#include "rdma_tutorial/cm_qp.hpp"

#include "rdma_tutorial/error.hpp"

namespace rdma::cm {

on_device open_on(rdma_cm_id* id, int cq_entries) {
  // id->verbs is ours to use and librdmacm's to close.
  on_device dev;
  dev.pd.reset(check_ptr(ibv_alloc_pd(id->verbs), "ibv_alloc_pd"));
  dev.cq.reset(check_ptr(ibv_create_cq(id->verbs, cq_entries, nullptr, nullptr, 0), "ibv_create_cq"));
  return dev;
}

cm_qp_ptr create_qp(rdma_cm_id* id, const on_device& dev, const ibv_qp_cap& cap) {
  ibv_qp_init_attr attr{};
  attr.send_cq = dev.cq.get();
  attr.recv_cq = dev.cq.get();
  attr.qp_type = IBV_QPT_RC;
  attr.cap = cap;
  check_errno(rdma_create_qp(id, dev.pd.get(), &attr), "rdma_create_qp");
  return cm_qp_ptr(id);
}

}  // namespace rdma::cm
