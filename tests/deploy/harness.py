"""Shared pieces of the deployment tests: each runs the commands docs/operations.md gives,
against real copsd processes, in a fresh temporary directory.

A test is a script: exit 0 passes, exit 77 is a skip (CTest SKIP_RETURN_CODE) whose reason
is printed, anything else fails with the message printed.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def build_dir():
    return os.environ.get("COPS_BUILD_DIR", os.getcwd())


def source_dir():
    return os.environ.get("COPS_SOURCE_DIR", os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))


def run(args, **kwargs):
    """Runs a command to completion; returns the CompletedProcess (text output captured)."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    if kwargs["text"]:
        kwargs.setdefault("errors", "replace")
    kwargs.setdefault("timeout", 300)
    return subprocess.run([str(a) for a in args], **kwargs)


def run_ok(args, **kwargs):
    r = run(args, **kwargs)
    check(r.returncode == 0, f"{' '.join(map(str, args))} exited {r.returncode}:\n"
          f"{r.stdout}\n{r.stderr}")
    return r


class TempDir:
    """A fresh directory removed on exit (kept when COPS_KEEP_TEST_DIR is set)."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=f"cops_{prefix}_")

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if not os.environ.get("COPS_KEEP_TEST_DIR"):
            shutil.rmtree(self.path, ignore_errors=True)


def server_env(extra=None):
    """The environment for a copsd under test: none of the caller's COPS_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COPS_")}
    env.update(extra or {})
    return env


class Copsd:
    """One copsd process on an ephemeral loopback port with its log in `workdir`."""

    def __init__(self, exe, workdir, data_dir=None, args=(), env=None):
        self.exe = exe
        self.workdir = workdir
        self.data_dir = data_dir or os.path.join(workdir, "data")
        self.args = list(args)
        self.env = server_env(env)
        self.log_path = os.path.join(workdir, "copsd.log")
        self.port_file = os.path.join(workdir, "copsd.port")
        self.proc = None
        self.port = None

    def start(self, wait_for_port=True):
        if os.path.exists(self.port_file):
            os.remove(self.port_file)
        argv = [self.exe, "--data-dir", self.data_dir, "--listen", "127.0.0.1:0",
                "--port-file", self.port_file] + self.args
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, env=self.env)
        if wait_for_port:
            self.wait_serving()
        return self

    def wait_serving(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.port_file):
                self.port = int(open(self.port_file).read())
                return
            if self.proc.poll() is not None:
                fail(f"copsd exited {self.proc.returncode} before serving:\n{self.log()}")
            time.sleep(0.05)
        fail(f"copsd did not serve within {timeout}s:\n{self.log()}")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self, timeout=60):
        """SIGTERM, then the exit code of the graceful shutdown."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            fail(f"copsd did not stop within {timeout}s of SIGTERM:\n{self.log()}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
