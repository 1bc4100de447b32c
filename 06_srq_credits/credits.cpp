// The sizing rule and the two credit ledgers (credits.hpp says why they
// look the way they do).
#include "credits.hpp"

#include "rdma_tutorial/error.hpp"

namespace stage06 {

std::string srq_sizing::describe() const {
  std::string text = "SRQ: " + std::to_string(depth) + " Recvs for " + std::to_string(clients) +
                     (clients == 1 ? " client" : " clients") + " x window " + std::to_string(window) + " = " +
                     std::to_string(in_flight()) + " writes in flight at most; reposted in batches of " +
                     std::to_string(batch);
  if (fewest_posted() > 0) {
    text += ", so at least " + std::to_string(fewest_posted()) + " stay posted";
  } else {
    text += "; " + std::to_string(in_flight()) + " in flight + " + std::to_string(batch - 1) +
            " waiting for a batch can exceed the " + std::to_string(depth) + " posted";
  }
  if (limit != 0) {
    text += "\n  limit " + std::to_string(limit) + ": an event when fewer are posted, then every consumed Recv is reposted";
    if (!limit_can_fire()) {
      text += " (it fires only if the server falls behind)";
    } else if (limit_rescues()) {
      text += " (it will fire, and " + std::to_string(limit) + " > " + std::to_string(in_flight()) + " in flight + " +
              std::to_string(poll_batch) + " keeps the queue from running dry)";
    } else {
      text += " (it can fire, but too late: " + std::to_string(in_flight()) + " in flight + " +
              std::to_string(poll_batch) + " >= " + std::to_string(limit) + ")";
    }
  }
  if (can_run_dry()) {
    text += "\n  TOO SMALL: a write can find no Recv posted (RNR): give the SRQ at least " +
            std::to_string(in_flight() + batch) + " Recvs";
  }
  return text;
}

std::uint32_t default_depth(std::uint32_t clients, std::uint32_t window, std::uint32_t batch) {
  return 2 * (clients * window + batch);
}

void credit_window::on_sent() {
  if (!can_send()) throw rdma::tutorial_error("a write was posted without a credit (internal error)");
  ++sent_;
  if (in_flight() > most_in_flight_) most_in_flight_ = in_flight();
}

void credit_window::on_credit(std::uint64_t consumed) {
  if (consumed <= consumed_) return;
  if (consumed > sent_) {
    throw rdma::tutorial_error("the server returned credits for " + std::to_string(consumed) + " writes; we sent " +
                               std::to_string(sent_), "the credit word holds a count the server made up: its bug");
  }
  consumed_ = consumed;
}

credit_ledger::credit_ledger(std::uint32_t window, std::uint32_t batch) : batch_(batch) {
  if (batch == 0 || batch > window) {
    throw rdma::tutorial_error("credit batch " + std::to_string(batch) + " must be 1.." + std::to_string(window),
                               "a batch above the window leaves a client waiting for a return that never comes");
  }
}

}  // namespace stage06
