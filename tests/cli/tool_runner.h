// Runs a tool binary as a user would and captures what it did.

#ifndef FPSTORE_TESTS_CLI_TOOL_RUNNER_H_
#define FPSTORE_TESTS_CLI_TOOL_RUNNER_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace fpstore::testing {

struct ToolResult {
  int exit_code = -1;  // the exit status, or 128 + signal if killed
  std::string out;
  std::string err;
};

// Runs `binary` with `args`, feeding it `input` on standard input, and
// waits for it. Both output streams are drained concurrently, so outputs
// of any size work.
inline ToolResult RunTool(const std::string& binary, const std::vector<std::string>& args,
                          const std::string& input = "") {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (spawned != 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    throw std::runtime_error("cannot run " + binary + ": " + std::strerror(spawned));
  }

  // A tool that exits without reading all of its input must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  ToolResult result;
  std::size_t written = 0;
  int in_fd = in[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  }
  bool out_open = true;
  bool err_open = true;
  char buffer[1 << 16];
  while (out_open || err_open || in_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out[0], POLLIN, 0};
    if (err_open) fds[n++] = {err[0], POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (::poll(fds, static_cast<nfds_t>(n), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = ::write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 || written == input.size()) {
          ::close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      const ssize_t r = ::read(fds[i].fd, buffer, sizeof(buffer));
      std::string& sink = fds[i].fd == out[0] ? result.out : result.err;
      if (r > 0) {
        sink.append(buffer, static_cast<std::size_t>(r));
      } else {
        (fds[i].fd == out[0] ? out_open : err_open) = false;
      }
    }
  }
  ::close(out[0]);
  ::close(err[0]);
  if (in_fd >= 0) ::close(in_fd);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// A tool driven line by line through pipes, as a program uses one as a coprocess: write a line,
// read its answer, write the next. Standard error goes to the test's.
class Coprocess {
 public:
  Coprocess(const std::string& binary, const std::vector<std::string>& args) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const int spawned =
        ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
    if (spawned != 0)
      throw std::runtime_error("cannot run " + binary + ": " + std::strerror(spawned));
    ::signal(SIGPIPE, SIG_IGN);
  }
  Coprocess(const Coprocess&) = delete;
  Coprocess& operator=(const Coprocess&) = delete;
  ~Coprocess() {
    CloseInput();
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0) (void)Wait();
  }

  bool Write(const std::string& text) {
    return ::write(in_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  }

  // The next line of output without its newline, or nullopt if none comes within `timeout_ms`
  // (or the output ends).
  std::optional<std::string> ReadLine(int timeout_ms = 20'000) {
    for (;;) {
      if (const std::size_t end = buffer_.find('\n'); end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return line;
      }
      pollfd fd = {out_, POLLIN, 0};
      const int ready = ::poll(&fd, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return std::nullopt;
      char chunk[4096];
      const ssize_t r = ::read(out_, chunk, sizeof chunk);
      if (r <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(r));
    }
  }

  void CloseInput() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }

  // Closes the input and waits: the exit status, or 128 + signal.
  int Wait() {
    CloseInput();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
};

// The fixtures directory, tests/cli/data.
inline const std::string kData = FPSTORE_CLI_TEST_DATA;

// The fixture `name` in kData.
inline std::string Data(const std::string& name) { return kData + "/" + name; }

// Whether a tool's output `text` holds `part`.
inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The lines of a tool's output, without their line feeds; sorted, for output in no set order.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}
inline std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines = Lines(text);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The whole file at `path`; empty if it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_CLI_TOOL_RUNNER_H_
