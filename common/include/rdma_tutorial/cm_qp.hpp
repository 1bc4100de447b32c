// What a side makes on the device rdma_cm chose, as stage 07 teaches it
// (docs/07-cm-events.md, "Finding the server"): once the address is
// resolved (or a connect request arrives), id->verbs is that device's
// context, opened by rdma_cm and closed by it; our PD, CQ and QP go on it.
// Stages 07 and 09 connect this way.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdma_tutorial/handles.hpp"

namespace rdma::cm {

// What we create on id->verbs. Members in teardown order: the CQ goes
// first, then the PD (the QP and MRs on it are the caller's, gone before).
struct on_device {
  pd_ptr pd;
  cq_ptr cq;
};

// A PD and one CQ of `cq_entries` on the device rdma_cm picked for `id`:
// the one whose interface holds the address (server) or routes to it
// (client). Checking what is asked of it against its limits comes first,
// and is each stage's (device_limits, limits.hpp).
on_device open_on(rdma_cm_id* id, int cq_entries);

// rdma_create_qp: an RC QP on the id (id->qp), on dev's PD, with dev's CQ
// for both queues and `cap` for its sizes. rdma_cm walks it to INIT at
// once and on to RTR and RTS while the connection is made; the handle
// destroys it (rdma_destroy_qp) before the id goes.
cm_qp_ptr create_qp(rdma_cm_id* id, const on_device& dev, const ibv_qp_cap& cap);

}  // namespace rdma::cm
