#!/usr/bin/env python3
"""Side-by-side mail gateway benchmark: cops-milter (+ copsd) against rspamd's fuzzy storage.

Driven by bench/mail-gateway.sh, which starts both on loopback. Subcommands:
  make DIR                     registered messages, exact copies, excerpts, unrelated messages
  milter HOST:PORT DIR SET     sends SET's messages through cops-milter over the milter protocol
  rspamd HOST:PORT DIR SET     sends them to rspamd's /checkv2 (its whole scanning pipeline)
  smtp HOST:PORT DIR SET       sends them to an SMTP server (Postfix), one session each
  latency --system NAME        reads cops-milter log lines on stdin: its own time per message
The senders keep --inflight connections busy (or pace the total at --rate) and print one JSON
line: messages per second, latency percentiles and how many messages were flagged (for smtp:
rejected).
"""
import argparse
import http.client
import itertools
import json
import os
import random
import re
import smtplib
import socket
import struct
import sys
import threading
import time

WORDS_FILE = "/usr/share/dict/american-english"


def words():
    with open(WORDS_FILE, encoding="utf-8", errors="replace") as f:
        ws = [w.strip() for w in f if w.strip().isalpha() and w.strip().islower()]
    return ws


def sentence(rng, vocab, zipf, n):
    # Words by Zipf's law (s = 1) over the shuffled dictionary, as in English prose: the most
    # frequent word is ~8% of all words, and most words are rare.
    out = rng.choices(vocab, cum_weights=zipf, k=n)
    return " ".join(out).capitalize() + "."


def paragraph(rng, vocab, zipf, nwords):
    parts, left = [], nwords
    while left > 0:
        n = min(left, rng.randint(8, 20))
        parts.append(sentence(rng, vocab, zipf, n))
        left -= n
    return " ".join(parts)


def email(subject, body, i):
    return ("From: sender%d@example.org\r\nTo: staff@example.com\r\nSubject: %s\r\n"
            "Message-ID: <%d.bench@example.org>\r\nMIME-Version: 1.0\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n"
            % (i, subject, i, body.replace("\n", "\r\n")))


def make(args):
    rng = random.Random(20)
    vocab = words()
    rng.shuffle(vocab)
    zipf = list(itertools.accumulate(1.0 / rank for rank in range(1, len(vocab) + 1)))
    os.makedirs(args.dir, exist_ok=True)
    sets = {name: [] for name in ("registered", "copies", "excerpts", "unrelated")}
    # ~3 KB messages: 5 paragraphs of 60 words.
    for i in range(args.registered):
        paras = [paragraph(rng, vocab, zipf, 60) for _ in range(5)]
        sets["registered"].append(email("Report %d" % i, "\n\n".join(paras), i))
    for i in range(args.checks):
        src = sets["registered"][rng.randrange(args.registered)]
        sets["copies"].append(src.replace("Message-ID: <", "Message-ID: <copy", 1))
        # A ~60-word paragraph of a registered message inside a new ~300-word message.
        body = src.split("\r\n\r\n", 1)[1]
        paras = [p for p in body.split("\r\n\r\n") if p.strip()]
        excerpt = " ".join(rng.choice(paras).split()[:60])
        new = [paragraph(rng, vocab, zipf, 120), excerpt, paragraph(rng, vocab, zipf, 120)]
        sets["excerpts"].append(email("Notes %d" % i, "\n\n".join(new), 10**6 + i))
        sets["unrelated"].append(
            email("Other %d" % i, "\n\n".join(paragraph(rng, vocab, zipf, 60) for _ in range(5)),
                  2 * 10**6 + i))
    for name, messages in sets.items():
        d = os.path.join(args.dir, name)
        os.makedirs(d, exist_ok=True)
        for i, m in enumerate(messages):
            with open(os.path.join(d, "%06d.eml" % i), "w", encoding="utf-8") as f:
                f.write(m)
    # The registered messages' texts as the email converter reads them (the subject, then the
    # body), for registering as plain text: no converter process per message.
    d = os.path.join(args.dir, "registered-text")
    os.makedirs(d, exist_ok=True)
    for i, m in enumerate(sets["registered"]):
        head, _, body = m.partition("\r\n\r\n")
        subject = re.search(r"^Subject: (.*)$", head, re.M).group(1).rstrip("\r")
        with open(os.path.join(d, "%06d.txt" % i), "w", encoding="utf-8") as f:
            f.write(subject + "\n\n" + body.replace("\r\n", "\n"))
    print(json.dumps({k: len(v) for k, v in sets.items()}))


def load(dir_, name):
    d = os.path.join(dir_, name)
    out = []
    for f in sorted(os.listdir(d)):
        with open(os.path.join(d, f), "rb") as fh:
            out.append(fh.read())
    return out


# Milter protocol step flags (libmilter/mfdef.h): "do not send this step" and "send it but
# expect no reply", per command.
NO_SEND = {b"C": 0x1, b"M": 0x4, b"R": 0x8, b"B": 0x10, b"L": 0x20, b"N": 0x40, b"T": 0x200}
NO_REPLY = {b"C": 0x1000, b"M": 0x4000, b"R": 0x8000, b"T": 0x10000, b"L": 0x80, b"N": 0x40000,
            b"B": 0x80000}


class MilterConnection:
    """The MTA side of the milter protocol (version 6), as Postfix speaks it."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.out = []  # commands that wait for no reply, sent with the next one that does
        # Offer what Postfix offers: every action, every "skip this step" and every "no
        # reply" flag; the milter picks.
        offer = 0
        for flags in (NO_SEND, NO_REPLY):
            for bit in flags.values():
                offer |= bit
        self.send(b"O", struct.pack(">III", 6, 0x1FF, offer))
        cmd, data = self.recv()
        assert cmd == b"O", cmd
        _, self.actions, self.protocol = struct.unpack(">III", data[:12])
        self.step(b"C", b"localhost\x004" + struct.pack(">H", 25) + b"127.0.0.1\x00")

    def send(self, cmd, data=b"", flush=True):
        self.out.append(struct.pack(">I", len(data) + 1) + cmd + data)
        if flush:
            self.sock.sendall(b"".join(self.out))
            self.out = []

    def recv(self):
        while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack(">I", self.buf[:4])[0]:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("milter closed the connection")
            self.buf += chunk
        n = struct.unpack(">I", self.buf[:4])[0]
        packet, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        return packet[:1], packet[1:]

    def step(self, cmd, data):
        """Sends a command unless the milter asked to skip it; returns its reply code ("c"
        without waiting when the milter asked for no reply)."""
        if self.protocol & NO_SEND[cmd]:
            return b"c"
        if self.protocol & NO_REPLY[cmd]:
            self.send(cmd, data, flush=False)
            return b"c"
        self.send(cmd, data)
        while True:
            code, _ = self.recv()
            if code != b"p":  # progress
                return code

    def message(self, raw):
        """One message; returns (final reply, added headers)."""
        head, _, body = raw.partition(b"\r\n\r\n")
        self.send(b"D", b"M" + b"i\x00" + b"BENCH%d\x00" % id(raw), flush=False)
        self.step(b"M", b"<sender@example.org>\x00")
        self.step(b"R", b"<staff@example.com>\x00")
        self.step(b"T", b"")
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            self.step(b"L", name + b"\x00" + value.strip() + b"\x00")
        self.step(b"N", b"")
        for i in range(0, len(body), 65535):
            self.step(b"B", body[i:i + 65535])
        self.send(b"E")
        headers = {}
        while True:
            code, data = self.recv()
            if code == b"h":
                name, value = data.split(b"\x00")[:2]
                headers[name.decode()] = value.decode()
            elif code in (b"c", b"a", b"r", b"t", b"d", b"y"):
                # Abort: back to the state before MAIL FROM (no reply; sent with the next).
                self.send(b"A", flush=False)
                return code, headers


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def host_ticks():
    """CPU ticks of the whole host since boot: (all, idle or waiting for I/O)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return sum(ticks[:8]), ticks[3] + ticks[4]


def drive(messages, inflight, one_message, rate=0.0):
    """Sends every message over `inflight` workers; `rate` > 0 paces the total to that many
    messages per second. Returns wall seconds, latencies (ms), per-message verdicts, errors,
    this driver's CPU seconds and the host's idle cores (on average) over the run."""
    lock = threading.Lock()
    next_index = [0]
    latencies, flagged = [0.0] * len(messages), [False] * len(messages)
    errors = []
    start = time.perf_counter()
    cpu_start = time.process_time()
    host_start = host_ticks()

    def worker(state):
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(messages):
                return
            if rate > 0:
                delay = start + i / rate - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            t0 = time.perf_counter()
            try:
                flagged[i] = one_message(state, messages[i])
            except Exception as e:  # noqa: BLE001 - reported in the summary
                errors.append(repr(e))
            latencies[i] = (time.perf_counter() - t0) * 1000.0

    threads = [threading.Thread(target=worker, args=({},)) for _ in range(inflight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    host_end = host_ticks()
    all_ticks = max(host_end[0] - host_start[0], 1)
    idle_cores = (os.cpu_count() or 1) * (host_end[1] - host_start[1]) / all_ticks
    return (time.perf_counter() - start, sorted(latencies), flagged, errors,
            time.process_time() - cpu_start, idle_cores)


def report(system, set_name, seconds, latencies, flagged, errors, driver_cpu, idle_cores, rate):
    # driver_cpu_ms: this process's CPU per message (sending and parsing replies), which
    # shares the host with the systems measured; host_idle_cores: cores left idle on average
    # during the run (near 0: the run was CPU-bound, its rate the share of the host it got).
    print(json.dumps({
        "system": system, "set": set_name, "messages": len(latencies),
        "rate_limit": rate, "per_second": round(len(latencies) / seconds, 1),
        "p50_ms": round(percentile(latencies, 50), 2), "p99_ms": round(percentile(latencies, 99), 2),
        "flagged": sum(flagged), "errors": len(errors), "first_error": errors[0] if errors else "",
        "driver_cpu_ms": round(driver_cpu * 1000 / max(len(latencies), 1), 3),
        "host_idle_cores": round(idle_cores, 2),
    }))


def run_milter(args):
    host, port = args.address.rsplit(":", 1)
    messages = load(args.dir, args.set)

    def one(state, raw):
        if "conn" not in state:
            state["conn"] = MilterConnection(host, int(port))
        code, headers = state["conn"].message(raw)
        return code in (b"r", b"y") or headers.get("X-COPS-Result", "").startswith("violation")

    report(args.system or "cops-milter", args.set, *drive(messages, args.inflight, one, args.rate),
           args.rate)


def run_rspamd(args):
    host, port = args.address.rsplit(":", 1)
    messages = load(args.dir, args.set)

    def one(state, raw):
        if "conn" not in state:
            state["conn"] = http.client.HTTPConnection(host, int(port), timeout=30)
        conn = state["conn"]
        conn.request("POST", "/checkv2", body=raw, headers={"Content-Type": "message/rfc822"})
        reply = json.loads(conn.getresponse().read())
        return any(s.startswith(args.symbol) for s in reply.get("symbols", {}))

    report("rspamd", args.set, *drive(messages, args.inflight, one, args.rate), args.rate)


def run_smtp(args):
    """One SMTP session per message (connect, EHLO, MAIL, RCPT, DATA, QUIT), timed from
    connecting to the server's reply to the end of data, as a client of a gateway sees it."""
    host, port = args.address.rsplit(":", 1)
    messages = load(args.dir, args.set)

    def one(state, raw):
        with smtplib.SMTP(host, int(port), timeout=30) as smtp:
            smtp.ehlo("bench.example.org")
            try:
                smtp.sendmail("sender@example.org", [args.to], raw)
            except smtplib.SMTPDataError as e:
                if 500 <= e.smtp_code < 600:
                    return True  # rejected by the milter's policy
                raise
        return False

    report(args.system or "smtp " + args.address, args.set,
           *drive(messages, args.inflight, one, args.rate), args.rate)


def milter_latency(args):
    """Percentiles of the latency_ms field of cops-milter's milter_message log lines."""
    latencies = sorted(float(m.group(1)) for m in
                       (re.search(r'latency_ms[":= ]+([0-9.]+)', line) for line in sys.stdin) if m)
    print(json.dumps({"system": args.system, "measure": "milter latency_ms", "messages": len(latencies),
                      "p50_ms": round(percentile(latencies, 50), 2) if latencies else None,
                      "p90_ms": round(percentile(latencies, 90), 2) if latencies else None,
                      "p99_ms": round(percentile(latencies, 99), 2) if latencies else None}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--registered", type=int, default=2000)
    m.add_argument("--checks", type=int, default=500)
    for name in ("milter", "rspamd", "smtp"):
        s = sub.add_parser(name)
        s.add_argument("address")
        s.add_argument("dir")
        s.add_argument("set")
        s.add_argument("--inflight", type=int, default=8)
        s.add_argument("--rate", type=float, default=0.0, help="messages/s in all (0 = flat out)")
        s.add_argument("--symbol", default="LOCAL_FUZZY_DENIED")
        s.add_argument("--to", default="staff@bench.localdomain", help="smtp: the recipient")
        s.add_argument("--system", default="", help="the name to report")
    lat = sub.add_parser("latency")
    lat.add_argument("--system", default="cops-milter")
    args = p.parse_args()
    {"make": make, "milter": run_milter, "rspamd": run_rspamd, "smtp": run_smtp,
     "latency": milter_latency}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
