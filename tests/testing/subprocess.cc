#include "tests/testing/subprocess.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cops::testing {

pid_t Spawn(const std::vector<std::string>& argv, const std::filesystem::path& in,
            const std::filesystem::path& out, const std::filesystem::path& err) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int i = open(in.empty() ? "/dev/null" : in.c_str(), O_RDONLY);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = err == out ? o : open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(i, 0);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace cops::testing
