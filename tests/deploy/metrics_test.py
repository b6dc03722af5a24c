#!/usr/bin/env python3
"""copsd --metrics-listen: after a registration and a check, /metrics counts both RPCs and
shows the document; `promtool check metrics` accepts the page (format and naming lint); a
real Prometheus on loopback scrapes it and answers a query with the document count."""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from harness import Copsd, TempDir, build_dir, check, fail, run, run_ok, skip


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def scrape_with_prometheus(tmp, target):
    """Starts Prometheus scraping `target` every second; returns its answer to cops_documents."""
    port = free_port()
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n"
                f"  - job_name: copsd\n    static_configs:\n      - targets: ['{target}']\n")
    run_ok(["promtool", "check", "config", config])
    log = open(os.path.join(tmp, "prometheus.log"), "wb")
    prometheus = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp}/tsdb",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log)
    try:
        query = urllib.parse.urlencode({"query": 'cops_documents{job="copsd"}'})
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            check(prometheus.poll() is None, "prometheus exited:\n" +
                  open(os.path.join(tmp, "prometheus.log")).read())
            try:
                answer = json.loads(get(f"http://127.0.0.1:{port}/api/v1/query?{query}"))
                if answer["data"]["result"]:
                    return answer["data"]["result"][0]["value"][1]
            except OSError:
                pass  # not listening yet
            time.sleep(0.5)
        fail("prometheus scraped nothing within 90s:\n" +
             open(os.path.join(tmp, "prometheus.log")).read())
    finally:
        prometheus.terminate()
        prometheus.wait(30)
        log.close()


def main():
    if shutil.which("promtool") is None or shutil.which("prometheus") is None:
        skip("promtool and prometheus are not installed (Debian package prometheus)")
    with TempDir("metrics") as tmp:
        copsd = os.path.join(build_dir(), "server", "copsd")
        cops = os.path.join(build_dir(), "client", "cops")
        with Copsd(copsd, tmp, args=["--metrics-listen=127.0.0.1:0"]).start() as server:
            match = re.search(r"metrics_port=(\d+)", server.log())
            check(match, f"copsd logged no metrics port:\n{server.log()}")
            metrics = f"127.0.0.1:{match.group(1)}"
            doc = os.path.join(tmp, "doc.txt")
            with open(doc, "w") as f:
                f.write("the quick brown fox jumps over the lazy dog " * 30)
            run_ok([cops, "--server", server.address, "register", doc])
            run([cops, "--server", server.address, "check", doc])

            text = get(f"http://{metrics}/metrics")
            with open(os.path.join(tmp, "metrics.txt"), "w") as f:
                f.write(text)
            for line in (
                    'grpc_server_started_total{grpc_method="RegisterDocument",'
                    'grpc_service="cops.v1.CopyDetection",grpc_type="unary"} 1',
                    'grpc_server_handled_total{grpc_code="OK",grpc_method="CheckDocument",'
                    'grpc_service="cops.v1.CopyDetection",grpc_type="unary"} 1',
                    'grpc_server_handling_seconds_count{grpc_method="CheckDocument",'
                    'grpc_service="cops.v1.CopyDetection",grpc_type="unary"} 1',
                    "cops_documents 1"):
                check(line in text.splitlines(), f"no line {line!r} in:\n{text}")
            lint = run(["promtool", "check", "metrics"], input=text)
            check(lint.returncode == 0, f"promtool check metrics:\n{lint.stdout}{lint.stderr}")

            documents = scrape_with_prometheus(tmp, metrics)
            check(documents == "1", f"Prometheus reports cops_documents {documents}")
            check(server.stop() == 0, f"copsd did not stop cleanly:\n{server.log()}")
    print("PASS")


if __name__ == "__main__":
    main()
