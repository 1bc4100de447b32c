// Owning handles for verbs and rdma_cm objects: std::unique_ptr with one small
// deleter per type. Stages 01-03 show each create/destroy pair in raw verbs;
// from then on these handles release everything on every path, exceptions
// included.
//
// Teardown order matters: an MR or QP keeps its PD busy (ibv_dealloc_pd fails
// with EBUSY), a QP keeps its CQs busy, everything keeps the device context
// busy. Declare handles in creation order (context, pd, cq, qp, ...) and C++
// destroys them in reverse, which is exactly the order the verbs need.
//
// A destroy call that fails cannot throw from a destructor; it prints one
// warning line naming the call, because a failed destroy usually means
// something still uses the object, which is a bug worth seeing.
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

// rc is 0 on success; otherwise either the errno value (verbs) or -1 with
// errno set (rdma_cm). Prints one warning line on stderr.
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

using device_list_ptr =
    std::unique_ptr<ibv_device*, detail::deleter<ibv_device*, ibv_free_device_list, "ibv_free_device_list">>;
using context_ptr = std::unique_ptr<ibv_context, detail::deleter<ibv_context, ibv_close_device, "ibv_close_device">>;
using pd_ptr = std::unique_ptr<ibv_pd, detail::deleter<ibv_pd, ibv_dealloc_pd, "ibv_dealloc_pd">>;
using mr_ptr = std::unique_ptr<ibv_mr, detail::deleter<ibv_mr, ibv_dereg_mr, "ibv_dereg_mr">>;
using comp_channel_ptr = std::unique_ptr<
    ibv_comp_channel, detail::deleter<ibv_comp_channel, ibv_destroy_comp_channel, "ibv_destroy_comp_channel">>;
using cq_ptr = std::unique_ptr<ibv_cq, detail::deleter<ibv_cq, ibv_destroy_cq, "ibv_destroy_cq">>;
using srq_ptr = std::unique_ptr<ibv_srq, detail::deleter<ibv_srq, ibv_destroy_srq, "ibv_destroy_srq">>;
using qp_ptr = std::unique_ptr<ibv_qp, detail::deleter<ibv_qp, ibv_destroy_qp, "ibv_destroy_qp">>;
using ah_ptr = std::unique_ptr<ibv_ah, detail::deleter<ibv_ah, ibv_destroy_ah, "ibv_destroy_ah">>;

using event_channel_ptr = std::unique_ptr<
    rdma_event_channel, detail::deleter<rdma_event_channel, rdma_destroy_event_channel, "rdma_destroy_event_channel">>;
using cm_id_ptr = std::unique_ptr<rdma_cm_id, detail::deleter<rdma_cm_id, rdma_destroy_id, "rdma_destroy_id">>;
// Every CM event must be acked, and an unacked event blocks rdma_destroy_id.
using cm_event_ptr =
    std::unique_ptr<rdma_cm_event, detail::deleter<rdma_cm_event, rdma_ack_cm_event, "rdma_ack_cm_event">>;

}  // namespace rdma
