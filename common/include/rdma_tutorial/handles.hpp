// Owning handles for verbs objects: std::unique_ptr with one small deleter per
// type. Stages 01-03 show each create/destroy pair in raw verbs; from then on
// these handles release everything on every path, exceptions included. A
// handle joins this file in the stage that teaches its object (the SRQ in
// 06, rdma_cm in 07, the completion channel in 08, the memory window in 09),
// not before.
//
// Teardown order matters: an MR or QP keeps its PD busy (ibv_dealloc_pd fails
// with EBUSY), a QP keeps its CQs busy, everything keeps the device context
// busy. Declare handles in creation order (context, pd, cq, qp, ...) and C++
// destroys them in reverse, which is exactly the order the verbs need.
//
// A destroy call that fails cannot throw from a destructor; it prints one
// warning line naming the call, because a failed destroy usually means
// something still uses the object, which is a bug worth seeing. (The one place
// common/ prints on its own: a destructor has no caller to hand the news to.)
// It is also counted: run_main (main.hpp) then ends the program with exit 1,
// so a script sees it too.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>

namespace rdma {

namespace detail {

// A string usable as a template argument, so each deleter carries the name of
// its destroy call for the warning.
template <std::size_t N>
struct call_name {
  char text[N];
  constexpr call_name(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit on purpose
};

// rc is 0 on success; otherwise the errno value (most destroy verbs) or -1
// with errno set. Prints one warning line on stderr, after flushing stdout so
// the warning lands after what the program printed before it.
void warn_destroy_failed(const char* call, int rc) noexcept;

template <typename T, auto Destroy, call_name Name>
struct deleter {
  void operator()(T* p) const noexcept {
    if constexpr (std::is_void_v<decltype(Destroy(p))>) {
      Destroy(p);
    } else if (int rc = Destroy(p); rc != 0) {
      warn_destroy_failed(Name.text, rc);
    }
  }
};

}  // namespace detail

// How many destroy calls of these handles failed so far (each warned).
int release_failures() noexcept;

using device_list_ptr =
    std::unique_ptr<ibv_device*, detail::deleter<ibv_device*, ibv_free_device_list, "ibv_free_device_list">>;
using context_ptr = std::unique_ptr<ibv_context, detail::deleter<ibv_context, ibv_close_device, "ibv_close_device">>;
using pd_ptr = std::unique_ptr<ibv_pd, detail::deleter<ibv_pd, ibv_dealloc_pd, "ibv_dealloc_pd">>;
using mr_ptr = std::unique_ptr<ibv_mr, detail::deleter<ibv_mr, ibv_dereg_mr, "ibv_dereg_mr">>;
using cq_ptr = std::unique_ptr<ibv_cq, detail::deleter<ibv_cq, ibv_destroy_cq, "ibv_destroy_cq">>;
using qp_ptr = std::unique_ptr<ibv_qp, detail::deleter<ibv_qp, ibv_destroy_qp, "ibv_destroy_qp">>;
// Stage 06: one receive queue shared by many QPs (destroy it after them).
using srq_ptr = std::unique_ptr<ibv_srq, detail::deleter<ibv_srq, ibv_destroy_srq, "ibv_destroy_srq">>;
// Stage 08: where a CQ's "a completion arrived" events are read (destroy it
// after every CQ bound to it, and after acking every event it delivered).
using comp_channel_ptr =
    std::unique_ptr<ibv_comp_channel, detail::deleter<ibv_comp_channel, ibv_destroy_comp_channel, "ibv_destroy_comp_channel">>;

// Stage 07, rdma_cm. The event channel carries the events of every id made
// on it: destroy it after them. rdma_destroy_id waits until every event of
// that id has been acked (rdma_ack_cm_event): an unacked event blocks it.
using event_channel_ptr =
    std::unique_ptr<rdma_event_channel, detail::deleter<rdma_event_channel, rdma_destroy_event_channel, "rdma_destroy_event_channel">>;
using cm_id_ptr = std::unique_ptr<rdma_cm_id, detail::deleter<rdma_cm_id, rdma_destroy_id, "rdma_destroy_id">>;
// The QP that rdma_create_qp hangs on an id (id->qp): rdma_destroy_qp(id)
// releases it. This handle points at the id but owns only its QP; declare
// it after the id's handle (and after the MRs the QP may touch).
using cm_qp_ptr = std::unique_ptr<rdma_cm_id, detail::deleter<rdma_cm_id, rdma_destroy_qp, "rdma_destroy_qp">>;

// Stage 09: a memory window, a second rkey over part of a registered region
// (bound to one QP, type 2). Deallocate it after the QP it was bound on
// can no longer use it.
// (ibv_dealloc_mw is a static inline in verbs.h: a type naming it would have
// internal linkage, so the deleter calls it through this function.)
int dealloc_mw(ibv_mw* mw) noexcept;
using mw_ptr = std::unique_ptr<ibv_mw, detail::deleter<ibv_mw, dealloc_mw, "ibv_dealloc_mw">>;

}  // namespace rdma
