#include "tools/conformance/isolated_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "exporter/ops/op_schemas.h"

namespace ember {
namespace conformance {
namespace {

using Clock = std::chrono::steady_clock;

// An unnamed temporary file (removed when closed).
int temp_fd() {
  FILE* f = std::tmpfile();
  if (f == nullptr) return -1;
  int fd = dup(fileno(f));
  std::fclose(f);
  return fd;
}

std::string read_all(int fd) {
  std::string out;
  if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  size_t start = text.find_last_of('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = text.substr(start, end - start + 1);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

struct Running {
  size_t job = 0;
  pid_t pid = -1;
  int result_fd = -1;
  int log_fd = -1;
  Clock::time_point start;
  bool killed = false;
};

CaseResult finish(const CaseJob& job, Running& r, int status, double timeout) {
  CaseResult res;
  res.name = job.info.name;
  res.form = job.form;
  std::string payload = read_all(r.result_fd);
  std::string log = last_line(read_all(r.log_fd));
  close(r.result_fd);
  close(r.log_fd);
  if (r.killed) {
    res.outcome = Outcome::Fail;
    res.reason = "timeout: killed after " + std::to_string(static_cast<int>(timeout)) + " s";
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    res.outcome = Outcome::Fail;
    res.reason = "crashed: signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    if (!log.empty()) res.reason += "; last message: " + log;
  } else if (payload.size() >= 2 && payload[1] == '\n' && payload[0] >= '0' && payload[0] <= '2') {
    res.outcome = static_cast<Outcome>(payload[0] - '0');
    res.reason = payload.substr(2);
  } else {
    res.outcome = Outcome::Fail;
    res.reason = "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                 " without a result";
    if (!log.empty()) res.reason += "; last message: " + log;
  }
  return res;
}

}  // namespace

std::vector<CaseResult> run_cases(const std::vector<CaseJob>& jobs, const IsolationOptions& options,
                                  const std::function<void(const CaseResult&)>& on_result) {
  std::vector<CaseResult> results(jobs.size());
  std::vector<bool> done(jobs.size(), false);
  size_t reported = 0;
  auto report = [&]() {
    while (reported < jobs.size() && done[reported]) {
      if (on_result) on_result(results[reported]);
      ++reported;
    }
  };
  if (!options.isolate) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      results[i] = run_case(jobs[i].info, jobs[i].form, options.run);
      done[i] = true;
      report();
    }
    return results;
  }
  // The exporter parses its operator schema table (thousands of signatures) on first use: do it
  // here, once, so every child inherits it instead of parsing it again (2/3 of a case's time).
  exporter::preload_op_schemas();
  std::fflush(stdout);
  std::fflush(stderr);
  size_t parallel = options.parallel == 0 ? 1 : options.parallel;
  std::vector<Running> running;
  size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    while (running.size() < parallel && next < jobs.size()) {
      Running r;
      r.job = next++;
      r.result_fd = temp_fd();
      r.log_fd = temp_fd();
      r.start = Clock::now();
      pid_t pid = (r.result_fd < 0 || r.log_fd < 0) ? -1 : fork();
      if (pid == 0) {
        // Child: run the case, write "<outcome>\n<reason>" and leave without cleanup.
        int null_fd = open("/dev/null", O_WRONLY);
        if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
        dup2(r.log_fd, STDERR_FILENO);
        CaseResult res = run_case(jobs[r.job].info, jobs[r.job].form, options.run);
        write_all(r.result_fd, std::string(1, static_cast<char>('0' + static_cast<int>(res.outcome))) + "\n" +
                                   res.reason);
        _exit(0);
      }
      if (pid < 0) {  // cannot fork: run here
        if (r.result_fd >= 0) close(r.result_fd);
        if (r.log_fd >= 0) close(r.log_fd);
        results[r.job] = run_case(jobs[r.job].info, jobs[r.job].form, options.run);
        done[r.job] = true;
        report();
        continue;
      }
      r.pid = pid;
      running.push_back(r);
    }
    bool progressed = false;
    for (size_t i = 0; i < running.size();) {
      Running& r = running[i];
      int status = 0;
      pid_t w = waitpid(r.pid, &status, WNOHANG);
      if (w == r.pid || w < 0) {  // w < 0: the child is gone (reaped elsewhere)
        results[r.job] = finish(jobs[r.job], r, status, options.timeout_seconds);
        done[r.job] = true;
        running.erase(running.begin() + static_cast<long>(i));
        progressed = true;
        continue;
      }
      double elapsed = std::chrono::duration<double>(Clock::now() - r.start).count();
      if (!r.killed && elapsed > options.timeout_seconds) {
        kill(r.pid, SIGKILL);
        r.killed = true;
      }
      ++i;
    }
    if (progressed) {
      report();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  report();
  return results;
}

}  // namespace conformance
}  // namespace ember
