#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace rdma::testing {

namespace {

void throw_errno(const char* call) { throw std::system_error(errno, std::generic_category(), call); }

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

int status_to_exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

process::process(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("process: empty argv");
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw_errno("pipe2");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw_errno("pipe2");
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) throw_errno("fork");
  if (pid_ == 0) {
    // Own process group, so a timeout kills a shell and everything it started.
    ::setpgid(0, 0);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    // O_CLOEXEC: the program gets /dev/null as stdin (dup2 clears the flag on
    // fd 0) and no stray copy of it; valgrind's --track-fds would see one.
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execvp(args[0], args.data());
    const std::string msg = "cannot execute " + argv[0] + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
}

process::~process() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
}

bool process::wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  while (out_fd_ >= 0 && out_so_far_.find(text) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fd{out_fd_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) throw_errno("poll");
    if (ready <= 0) continue;
    const ssize_t n = ::read(out_fd_, buffer, sizeof buffer);
    if (n > 0) {
      out_so_far_.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      close_fd(out_fd_);
    }
  }
  return out_so_far_.find(text) != std::string::npos;
}

run_result process::wait(std::chrono::milliseconds timeout) {
  run_result result;
  result.out = std::move(out_so_far_);
  out_so_far_.clear();
  if (pid_ <= 0) throw std::logic_error("process::wait called twice");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  // Read until both pipes close; a program that keeps them open past the
  // deadline is killed.
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid_, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) throw_errno("poll");
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close_fd(i == 0 ? out_fd_ : err_fd_);
      }
    }
  }
  // Both pipes closed, but the program may still run (it closed them itself).
  int status = 0;
  while (!result.timed_out && ::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      ::kill(-pid_, SIGKILL);
      break;
    }
    ::usleep(10000);
  }
  if (result.timed_out) ::waitpid(pid_, &status, 0);
  pid_ = -1;
  close_fd(out_fd_);
  close_fd(err_fd_);
  result.exit_code = status_to_exit_code(status);
  return result;
}

std::chrono::milliseconds scaled(std::chrono::milliseconds timeout) {
  const char* scale = std::getenv("RDMA_TUTORIAL_TIME_SCALE");
  const long factor = scale != nullptr ? std::strtol(scale, nullptr, 10) : 1;
  return factor > 1 ? timeout * factor : timeout;
}

namespace {

std::vector<std::string> wrapped(const std::vector<std::string>& argv) {
  std::vector<std::string> command;
  if (const char* wrapper = std::getenv("RDMA_TUTORIAL_WRAPPER"); wrapper != nullptr && *wrapper != '\0') {
    command.emplace_back(wrapper);
  }
  command.insert(command.end(), argv.begin(), argv.end());
  return command;
}

// The server's command behind its prefix (scripts/on_peer.sh: it then runs
// on the peer guest, wrapped as here).
std::vector<std::string> prefixed(const std::vector<std::string>& prefix, const std::vector<std::string>& argv) {
  std::vector<std::string> command = prefix;
  for (auto& word : wrapped(argv)) command.push_back(std::move(word));
  return command;
}

}  // namespace

run_result run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  process p(wrapped(argv));
  return p.wait(scaled(timeout));
}

std::unique_ptr<process> start(const std::vector<std::string>& argv) { return std::make_unique<process>(wrapped(argv)); }

pair_result run_pair(const std::vector<std::string>& server, const std::vector<std::string>& client,
                     std::chrono::milliseconds timeout, const std::vector<std::string>& server_prefix) {
  process server_process(prefixed(server_prefix, server));
  const auto deadline = std::chrono::steady_clock::now() + scaled(timeout);
  pair_result r;
  r.client = run(client, timeout);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  r.server = server_process.wait(std::max(left, std::chrono::milliseconds(1000)));
  return r;
}

run_result pair_result::combined() const {
  run_result r;
  r.exit_code = client.exit_code != 0 ? client.exit_code : server.exit_code;
  r.timed_out = client.timed_out || server.timed_out;
  r.out = client.out + server.out;
  r.err = client.err + server.err;
  return r;
}

group_result run_group(const std::vector<std::string>& server, const std::vector<std::vector<std::string>>& clients,
                       std::chrono::milliseconds timeout, const std::vector<std::string>& server_prefix) {
  process server_process(prefixed(server_prefix, server));
  const auto deadline = std::chrono::steady_clock::now() + scaled(timeout);
  std::vector<std::unique_ptr<process>> started;
  for (const auto& client : clients) started.push_back(start(client));
  const auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
                    std::chrono::milliseconds(1000));
  };
  group_result r;
  for (auto& p : started) r.clients.push_back(p->wait(left()));
  r.server = server_process.wait(left());
  return r;
}

run_result group_result::combined() const {
  run_result r;
  r.exit_code = server.exit_code;
  for (auto it = clients.rbegin(); it != clients.rend(); ++it) {
    if (it->exit_code != 0) r.exit_code = it->exit_code;
  }
  for (const auto& c : clients) {
    r.timed_out = r.timed_out || c.timed_out;
    r.out += c.out;
    r.err += c.err;
  }
  r.timed_out = r.timed_out || server.timed_out;
  r.out += server.out;
  r.err += server.err;
  return r;
}

run_result run_shell(const std::string& command, std::chrono::milliseconds timeout) {
  process p({"/bin/sh", "-c", command});  // never wrapped: the shell is not under test
  return p.wait(scaled(timeout));
}

std::string program_from_env(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') {
    throw std::runtime_error(std::string("environment variable ") + variable + " is not set (see meson.build)");
  }
  return value;
}

std::string describe(const run_result& r) {
  std::string text = r.timed_out ? "timed out and was killed" : "exit code " + std::to_string(r.exit_code);
  text += "\n--- stdout ---\n" + r.out + "--- stderr ---\n" + r.err;
  return text;
}

// The server last: what went wrong at the clients usually follows from how
// the server ended, and a report that keeps only the end of a failure's
// output (scripts/test.sh's) then still shows it.
std::string describe(const group_result& r) {
  std::string text;
  for (std::size_t i = 0; i < r.clients.size(); ++i) {
    text += "--- client " + std::to_string(i + 1) + " ---\n" + describe(r.clients[i]) + "\n";
  }
  return text + "--- server ---\n" + describe(r.server);
}

}  // namespace rdma::testing
