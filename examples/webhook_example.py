#!/usr/bin/env python3
"""The COPS HTTP API (docs/api.md) with Python's standard library only: registers a
document, checks a copy of it as a job that calls back, and verifies the signed webhook.

    COPS_URL=http://127.0.0.1:7412 COPS_KEY=cops_... python3 examples/webhook_example.py paper.txt

The script receives the webhook itself on 127.0.0.1, so copsd must allow that address:
`copsd --http-listen 127.0.0.1:7412 --webhook-allow 127.0.0.1`. It exits 0 once a delivery
with a valid signature brought the finished job.
"""

import argparse
import hashlib
import hmac
import http.server
import json
import os
import queue
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def call(method, path, body=b"", content_type="application/json"):
    """One API request; its JSON answer (exits with the API's error otherwise)."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    request = urllib.request.Request(os.environ["COPS_URL"] + path, data=body, method=method)
    request.add_header("Authorization", "Bearer " + os.environ["COPS_KEY"])
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: HTTP {e.code} {e.read().decode(errors='replace')}")


def signature_is_valid(secret, header, body, tolerance_seconds=300):
    """X-COPS-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    t, v1 = fields.get("t", ""), fields.get("v1", "")
    if not t.isdigit() or abs(time.time() - int(t)) > tolerance_seconds:
        return False  # an old delivery replayed
    expected = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, v1)


def start_receiver(port):
    """An HTTP server on 127.0.0.1 queueing each POST as (signature header, raw body)."""
    deliveries = queue.Queue()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            deliveries.put((self.headers.get("X-COPS-Signature", ""), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, deliveries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a text document: registered, then checked as a copy")
    parser.add_argument("--collection", default="examples")
    parser.add_argument("--receiver-port", type=int, default=0, help="default: any free port")
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        text = f.read()

    server, deliveries = start_receiver(args.receiver_port)
    hook = f"http://127.0.0.1:{server.server_address[1]}/cops"
    secret = call("PUT", "/v1/webhook", {"url": hook})["secret"]  # shown this once

    query = urllib.parse.urlencode({"title": os.path.basename(args.file),
                                    "collection": args.collection})
    registered = call("POST", "/v1/documents?" + query, text, "text/plain")
    print(f"registered #{registered['doc_id']}")
    job = call("POST", "/v1/jobs?" + urllib.parse.urlencode({"collection": args.collection}),
               text, "text/plain")
    print(f"job {job['id']} {job['state']}")

    try:
        header, body = deliveries.get(timeout=60)
    except queue.Empty:
        sys.exit("no webhook within 60 s: is 127.0.0.1 in copsd --webhook-allow?")
    if not signature_is_valid(secret, header, body):
        sys.exit("webhook with a wrong signature: refused")
    finished = json.loads(body)
    if finished["state"] != "done":
        sys.exit(f"job {finished['id']} {finished['state']}: {finished.get('error')}")
    matches = [m["doc_id"] for m in finished["result"]["matches"]]
    print(f"webhook verified: job {finished['id']} done, "
          f"violation={str(finished['result']['violation']).lower()}, matches={matches}")
    server.shutdown()


if __name__ == "__main__":
    main()
