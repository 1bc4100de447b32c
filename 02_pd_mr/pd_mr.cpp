// Stage 02 — protection and registration.
//
// Shows the limit every registration is held to (RLIMIT_MEMLOCK), allocates
// a protection domain, registers page-aligned buffers in it with access flags
// chosen for what each buffer is for, and prints the keys a registration
// hands out and who each key is for. A loopback QP shows the device enforcing
// the PD boundary at run time (not on iWARP, whose QPs rdma_cm connects).
// Then what a registration costs by size, and the ENOMEM a process gets past
// its limit. Nothing leaves the machine: both RDMA Writes go from a QP to
// itself.
//
//   pd_mr [-d NAME] [-i PORT] [-g INDEX] [--size BYTES] [--iters N] [--memlock KIB]
//
// Read it beside docs/02-pd-mr.md; stage.hpp lists the files in reading order.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>

#include "rdma_tutorial/device.hpp"
#include "rdma_tutorial/error.hpp"
#include "rdma_tutorial/handles.hpp"
#include "rdma_tutorial/main.hpp"
#include "rdma_tutorial/command_line.hpp"
#include "rdma_tutorial/limits.hpp"
#include "rdma_tutorial/transport.hpp"
#include "stage.hpp"

namespace {

// The PD is the root every MR (and later every QP) hangs off. While anything
// still hangs off it, the kernel refuses to free it: EBUSY.
void show_pd_is_busy(rdma::pd_ptr& pd) {
  rdma::aligned_buffer buf(stage02::page_size);
  rdma::mr_ptr mr(rdma::check_ptr(ibv_reg_mr(pd.get(), buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE), "ibv_reg_mr"));
  const int rc = ibv_dealloc_pd(pd.get());  // EBUSY: mr still lives in it
  if (rc == 0) {
    pd.release();  // it is gone: the handle must not free it a second time
    throw rdma::tutorial_error("ibv_dealloc_pd succeeded with an MR still registered on the PD");
  }
  if (rc != EBUSY) throw rdma::verbs_error(rc, "ibv_dealloc_pd (with an MR still on the PD, EBUSY was due)");
  std::printf("ibv_dealloc_pd with an MR still on the PD: %s   <- expected\n",
              rdma::verbs_error(rc, "ibv_dealloc_pd").what());
}

}  // namespace

int main(int argc, char** argv) {
  return rdma::run_main("pd_mr", [&] {
    rdma::device_options opts;
    std::size_t size = 2 * stage02::page_size;
    constexpr long largest_demo_buffer = 64L << 20;  // three of them are allocated, zeroed and registered
    int iters = 5;
    std::optional<rlim_t> memlock_kib;
    rdma::option_parser parser("pd_mr", "Allocates a PD, registers memory, and measures what registration costs.");
    parser.add_device_options(opts);
    parser.add(0, "size", "BYTES", "size of each demo buffer, up to 64 MiB (default 8192)", [&](std::string_view v) {
      size = static_cast<std::size_t>(rdma::parse_integer(v, "--size", 1, largest_demo_buffer));
    });
    parser.add(0, "iters", "N", "runs per size in the cost table; the median is shown (default 5)",
               [&](std::string_view v) { iters = static_cast<int>(rdma::parse_integer(v, "--iters", 1, 1000)); });
    parser.add(0, "memlock", "KIB", "lower the soft memlock limit to KIB first, as ulimit -S -l KIB does",
               [&](std::string_view v) { memlock_kib = static_cast<rlim_t>(rdma::parse_integer(v, "--memlock", 4, 1L << 30)); });
    if (!parser.parse(argc, argv)) return 0;

    // 1. The limit every registration below is held to (as for any user, root
    //    too). Before the device is opened: the kernel refuses verbs that go
    //    through write() (ibv_post_send on Soft-RoCE) with EACCES once the
    //    process's credentials differ from those that opened the device, and
    //    dropping a capability makes new credentials. Listing the devices
    //    opens none of them; it only makes sure there is one (stage 01).
    rdma::get_device_list();
    const rlimit memlock = stage02::apply_memlock_limit(memlock_kib);

    rdma::context_ptr ctx = rdma::open_device(opts.device);  // stage 01
    std::printf("\ndevice %s\n", ibv_get_device_name(ctx->device));
    // What this program will ask of the device, against what it takes
    // (ibv_query_device; 01_devices lists the limits): refused here in one
    // line, not by the create call that would fail.
    const rdma::device_limits limits(ctx.get());
    limits.registration(size, "bytes per demo buffer", "--size");
    limits.queue_depth(4, "send WRs on the loopback QP");  // loopback.cpp
    limits.cq_entries(4);

    // 2. The protection domain: raw, then owned (ibv_dealloc_pd on every path).
    ibv_pd* raw_pd = rdma::check_ptr(ibv_alloc_pd(ctx.get()), "ibv_alloc_pd");
    rdma::pd_ptr pd(raw_pd);
    std::printf("protection domain allocated (ibv_alloc_pd), handle %u\n", raw_pd->handle);

    // 3. Registration: keys, access flags, deregister before free.
    stage02::register_buffers(pd.get(), stage02::buffer_plans(), size);

    // 4. What the PD protects: a QP may use only memory of its own PD, and
    //    the PD cannot go while anything still hangs off it.
    //    The demo connects a QP to itself by hand, which an iWARP QP cannot
    //    be (transport.hpp): there the line says so and the rest runs.
    if (rdma::is_iwarp(ctx.get())) {
      std::printf("\nthe PD boundary: not shown on %s, an iWARP device: the demo connects a QP to itself by hand, "
                  "and an iWARP QP is connected by rdma_cm (stage 07)\n",
                  ibv_get_device_name(ctx->device));
    } else {
      stage02::show_pd_boundary(ctx.get(), pd.get(), opts);
    }
    show_pd_is_busy(pd);

    // 5. What a registration costs, and what happens past the limit.
    stage02::print_cost_table(pd.get(), memlock, iters);
    stage02::memlock_demo(pd.get(), memlock);
    return 0;
  });  // pd, then ctx: ibv_dealloc_pd before ibv_close_device
}
