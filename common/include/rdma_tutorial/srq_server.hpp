// A server with many clients on one SRQ, as stage 06 teaches it
// (docs/06-srq-credits.md): the Recvs reposted in batches and on the limit
// event, each client's credit word written back, and a client let go
// through ERR and a drain without losing a Recv. Stage 09 reuses all of it.
// The stage keeps its own client (what it joins with, what it checks) and
// derives it from srq_client; the books below are the same for both.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdma_tutorial/coarse_clock.hpp"
#include "rdma_tutorial/completion.hpp"
#include "rdma_tutorial/srq.hpp"

namespace rdma {

// What the server does with the SRQ between completions: counts consumed
// Recvs, reposts them `batch` at a time (one doorbell each), and reposts
// everything at once when the limit event says the queue runs low, then
// arms the limit again (common/src/srq_refill.cpp).
class srq_refill {
 public:
  // Posts `depth` Recvs and arms the limit (0: never armed).
  srq_refill(ibv_srq* srq, std::uint32_t depth, std::uint32_t batch, std::uint32_t limit);
  void consumed() { ++waiting_; }
  // Reposts when a batch is complete; returns how many were posted.
  std::uint32_t repost_if_due();
  // IBV_EVENT_SRQ_LIMIT_REACHED: repost what waits, arm again.
  void on_limit_event();
  std::uint32_t limit_events() const { return limit_events_; }
  std::uint32_t waiting() const { return waiting_; }
  // ibv_query_srq: the limit the device holds now (0: not armed).
  std::uint32_t armed_limit() const;

 private:
  ibv_srq* srq_;
  std::uint32_t batch_;
  std::uint32_t limit_;
  std::uint32_t waiting_ = 0;
  std::uint32_t limit_events_ = 0;
};

// wr_id of the server's own work requests. The SRQ's Recvs use small
// numbers; the top bits tell a completion's kind even when its status is
// an error (and its opcode garbage), the low 32 bits a client's number or
// a count. Bit 62 is left for a stage's own (09's memory window bind).
inline constexpr std::uint64_t credit_tag = 1ull << 63;  // a credit write; low bits: how many so far
inline constexpr std::uint64_t drain_tag = 1ull << 61;   // the marker after the QP went to ERR
inline constexpr std::uint64_t wr_number_mask = 0xffffffffull;
inline std::uint64_t wr_tag(std::uint64_t wr_id) { return wr_id & ~wr_number_mask; }

// Credit writes each client's send queue holds; one in `credit_signal_every`
// asks for a completion, which frees it and every one before it.
inline constexpr std::uint32_t credit_send_queue = 32;
inline constexpr std::uint32_t credit_signal_every = 8;

// How a client goes: done (END checked, then closed), lost (closed or
// failed mid-stream: its process or host died) or dropped (it broke the
// protocol: that one counts as a failure of the run).
enum class parting { done, lost, dropped };
const char* parting_name(parting how);  // "done", "lost", "dropped"

// One client as the SRQ, the CQ and its credit word see it. The stage's
// client derives from this and owns the QP (`qp` only points at it).
struct srq_client {
  std::uint32_t number = 0;  // 1, 2, ... in order of arrival
  ibv_qp* qp = nullptr;
  std::uint32_t qp_num = 0;
  // Its credit word, in its memory.
  std::uint64_t credit_addr = 0;
  std::uint32_t credit_rkey = 0;
  std::uint64_t credit_writes = 0;  // posted
  std::uint64_t credit_reaped = 0;  // known complete
  std::uint64_t records = 0;
  bool finished = false;  // END checked
  bool leaving = false;   // QP in ERR: `departure` says when it may be destroyed
  parting how = parting::done;
  std::optional<srq_qp_departure> departure;
  last_wqe_notice last_wqe;  // the event, asked for or not (srq.hpp)
  // On the coarse clock, read once for each completion (coarse_clock.hpp).
  coarse_clock::time_point last_heard = coarse_clock::now();

  srq_client() = default;
  srq_client(const srq_client&) = delete;
  srq_client& operator=(const srq_client&) = delete;
  virtual ~srq_client() = default;

  // Room in the send queue for another credit write, `spare` WRs kept free.
  bool credit_room(std::uint32_t spare) const { return credit_writes - credit_reaped < credit_send_queue - spare; }
  // The credit word: `value`, 8 bytes big-endian, as one inline RDMA Write
  // (inline: copied into the WQE when posted, so the variable may change at
  // once); one in credit_signal_every signaled, and every one after END.
  void post_credit(std::uint64_t value);
  // A credit write's completion, successful: it and every one before it done.
  void credit_done(const ibv_wc& wc) { credit_reaped = wc.wr_id & wr_number_mask; }
};

// The async events of a server on one SRQ, sorted by what it does with them.
enum class srq_server_event {
  limit_reached,  // IBV_EVENT_SRQ_LIMIT_REACHED: the refill's
  last_wqe,       // IBV_EVENT_QP_LAST_WQE_REACHED: a client's QP is done with the SRQ
  client_broke,   // QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR: that client goes, the others stay
  shared_failed,  // CQ_ERR, SRQ_ERR, DEVICE_FATAL: nobody can be served
  ignored,        // COMM_EST: the first packet on a QP still in RTR
  said,           // anything else (PORT_ERR, GID_CHANGE...): printed, not acted on
};
srq_server_event sort_server_event(ibv_event_type type);
// The error for a shared_failed event, naming the CQ, the SRQ or the device.
[[noreturn]] void throw_shared_failure(ibv_event_type type);

// The part of leaving that knows no stage (srq_server.cpp): says why the
// client goes (unless done), posts the marker WR behind everything its
// send queue holds, begins its srq_qp_departure.
void begin_srq_departure(srq_client& c, parting how, const std::string& why, std::chrono::milliseconds last_wqe_wait);

// The server's clients and their comings and goings: the order of a
// departure (srq.hpp's srq_qp_departure) kept for each, and the counts.
template <typename Client>
class srq_clients {
 public:
  explicit srq_clients(std::chrono::milliseconds last_wqe_wait) : last_wqe_wait_(last_wqe_wait) {}

  void add(std::unique_ptr<Client> c) { list_.push_back(std::move(c)); }
  Client* by_qp(std::uint32_t qp_num) const {
    for (const auto& c : list_) {
      if (c->qp_num == qp_num) return c.get();
    }
    return nullptr;
  }
  const std::vector<std::unique_ptr<Client>>& all() const { return list_; }
  bool empty() const { return list_.empty(); }

  // After each ibv_poll_cq: one that returned fewer than asked found the CQ
  // empty, and a leaving QP's last completions are counted after one.
  void polled(int n, std::size_t asked) {
    if (n < static_cast<int>(asked)) ++cq_empties_;
  }

  // A Recv of the SRQ was consumed, whoever's QP consumed it: counted for
  // the refill. Returns its client if the record is the stage's to check:
  // not one of a QP already gone (counted as stray), nor of a client
  // leaving; a failed one lets the client go through let_go(client, how,
  // why): a flush means its QP broke (it died, or we let it go), anything
  // else that it did what a client must not (a Send finds a Recv with no
  // buffer; a write outside its window fails at the responder).
  template <typename LetGo>
  Client* recv_taken(const ibv_wc& wc, srq_refill& refill, LetGo let_go) {
    refill.consumed();
    Client* c = by_qp(wc.qp_num);
    if (c == nullptr) {
      ++stray_;
      return nullptr;
    }
    if (c->leaving) return nullptr;
    if (wc.status != IBV_WC_SUCCESS) {
      let_go(*c, wc.status == IBV_WC_WR_FLUSH_ERR ? parting::lost : parting::dropped, "its completion failed: " + describe_wc(wc));
      return nullptr;
    }
    c->last_heard = coarse_clock::now();
    return c;
  }
  std::uint64_t stray() const { return stray_; }  // completions of QPs already gone

  // IBV_EVENT_QP_LAST_WQE_REACHED, asked for or not.
  void last_wqe_event(std::uint32_t qp_num) {
    if (Client* c = by_qp(qp_num); c != nullptr) c->last_wqe.event(c->departure, cq_empties_);
  }

  // A client that must go, its QP moved to ERR by the stage (which says
  // how: ibv_modify_qp, rdma_disconnect): the marker, the departure begun.
  void leave(Client& c, parting how, const std::string& why) {
    if (how == parting::lost) ++lost_;
    if (how == parting::dropped) ++dropped_;
    begin_srq_departure(c, how, why, last_wqe_wait_);
  }

  // Between completions, never while one about a client is being handled:
  // a QP in ERR that nobody let go (an unasked last WQE, now due) goes
  // through let_go(client, how, why); a client whose departure is decided
  // is taken off the list and handed to forget(client, how it went), which
  // destroys it (its QP with it) when the stage is ready.
  template <typename LetGo, typename Forget>
  void settle(LetGo let_go, Forget forget) {
    const auto now = coarse_clock::now();
    for (std::size_t i = 0; i < list_.size(); ++i) {
      Client& c = *list_[i];
      if (!c.leaving && c.last_wqe.due(cq_empties_)) {
        let_go(c, parting::lost, "its QP went to the error state (IBV_EVENT_QP_LAST_WQE_REACHED)");
      }
      if (!c.leaving) continue;
      const auto done = c.departure->check(now, cq_empties_);
      if (done == srq_qp_departure::outcome::waiting) continue;
      const std::string how = c.departure->describe(done);
      std::unique_ptr<Client> gone = std::move(list_[i]);
      list_.erase(list_.begin() + static_cast<std::ptrdiff_t>(i));
      --i;
      forget(std::move(gone), how);
    }
  }

  std::uint32_t lost() const { return lost_; }
  std::uint32_t dropped() const { return dropped_; }

 private:
  std::vector<std::unique_ptr<Client>> list_;
  std::chrono::milliseconds last_wqe_wait_;
  std::uint64_t cq_empties_ = 0;
  std::uint64_t stray_ = 0;
  std::uint32_t lost_ = 0;
  std::uint32_t dropped_ = 0;
};

}  // namespace rdma
