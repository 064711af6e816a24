#!/usr/bin/python3
"""Hostile input against a kubectl-compatible API server over raw sockets (issue 18, item 2).

Standard library only. Loopback only. Every wait has a deadline. What it does, all at once:

  background  kubectl loop: /usr/bin/kubectl `get pods -A` and `get --raw /api/v1/namespaces/default`
              over and over; each must answer, correctly, within 1 s (the acceptance item).
  background  slowloris: 200 connections sending a request's headers one byte a second (half of
              them after the request line and Host at once); each must
              be cut by the server's header timeout (32 s, kube-apiserver's ReadHeaderTimeout)
              and nothing but a well-formed response (kube sends none) may come back.
  background  idle: 2,000 keep-alive connections, each after one request, held open while the rest
              goes on, then each used again (within the 90 s idle timeout): all must answer.
  foreground  the defects of issue 18 over the wire (numbers beyond a double or beyond a field's
              type, header size, list/watch parameters kube refuses, invalid UTF-8 in URLs,
              foreground deletion of objects that own themselves), malformed request lines,
              header floods, pipelining, chunked-size lies, Content-Length lies.
  at the end  a consistency check (every namespace's configmaps and pods listed and each read
              back), the test namespace deleted and gone, the server still alive.

Every response read is parsed strictly as HTTP/1.1 (status line, header syntax, Content-Length or
chunked framing); a JSON body must be valid UTF-8 and strict JSON, and an error answered with JSON
must be a kube Status (kind Status, apiVersion v1, status Failure, code equal to the HTTP status).
A 5xx is a failure unless the check says kube-apiserver answers 5xx there too.

What each check expects is what kube-apiserver (Go's net/http underneath) answers; run the suite
against a real one (scripts/kube-control-plane, with --tls-ca/--tls-cert/--tls-key and
--reference-kube) to see that. --reference-kube relaxes only what is muster's own contract
(issue 18: a refused number names its field) and which kube-apiserver does not keep.

Usage: hostile_suite.py --server http://127.0.0.1:PORT --kubeconfig FILE [--server-pid PID]
Prints one PASS/FAIL line per check and a summary; exit status 1 when any check failed.
"""
import argparse
import base64
import json
import os
import random
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

# --------------------------------------------------------------------------------------------------
# Results

_lock = threading.Lock()
_passed = 0
_failed = []
_responses = 0
_malformed = []


def check(name, ok, got=""):
    global _passed
    with _lock:
        if ok:
            _passed += 1
            print("PASS " + name, flush=True)
        else:
            _failed.append(name)
            print("FAIL " + name, flush=True)
            if got:
                for line in str(got)[:3000].splitlines():
                    print("    " + line, flush=True)
    return ok


def note(text):
    with _lock:
        print("NOTE " + text, flush=True)


def short(data, n=600):
    """bytes for a message: repr, cut."""
    if isinstance(data, (bytes, bytearray)):
        r = repr(bytes(data[:n]))
        return r + ("... (%d bytes)" % len(data) if len(data) > n else "")
    s = str(data)
    return s[:n] + ("..." if len(s) > n else "")


# --------------------------------------------------------------------------------------------------
# Raw HTTP/1.1: connections and a strict response parser

class Timeout(Exception):
    pass


class Malformed(Exception):
    def __init__(self, why, raw):
        super().__init__(why)
        self.why = why
        self.raw = bytes(raw)

    def __str__(self):
        return "malformed response: %s; bytes: %s" % (self.why, short(self.raw))


class Target:
    def __init__(self, url, ca=None, cert=None, key=None):
        u = urllib.parse.urlsplit(url)
        if u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit("the hostile suite runs against loopback only, not %s" % url)
        self.host = u.hostname
        self.port = u.port
        self.tls = u.scheme == "https"
        self.hostport = "%s:%d" % (self.host, self.port)
        self.ctx = None
        if self.tls:
            self.ctx = ssl.create_default_context(cafile=ca)
            if cert:
                self.ctx.load_cert_chain(cert, key)
            self.ctx.set_alpn_protocols(["http/1.1"])

    def connect(self, timeout=10.0):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            s = self.ctx.wrap_socket(s, server_hostname=self.host)
        return s


TOKEN = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
STATUS_LINE = re.compile(rb"^HTTP/1\.([01]) ([1-9][0-9][0-9])(?: ([^\r\n]*))?$")


class Response:
    def __init__(self):
        self.version = None
        self.status = 0
        self.reason = ""
        self.headers = []  # (lower-case name, value)
        self.body = b""
        self.chunked = False
        self.close_delimited = False
        self.interim = []  # 1xx statuses before this one
        self.raw_head = b""

    def header(self, name):
        for n, v in self.headers:
            if n == name:
                return v
        return None

    def wants_close(self):
        conn = (self.header("connection") or "").lower()
        if "close" in conn:
            return True
        return self.version == "1.0" and "keep-alive" not in conn

    def content_type(self):
        return (self.header("content-type") or "").split(";")[0].strip().lower()

    def is_json(self):
        ct = self.content_type()
        return ct == "application/json" or ct.endswith("+json")

    def json(self):
        return strict_json(self.body)

    def __repr__(self):
        return "HTTP/%s %d %s %s" % (self.version, self.status, self.content_type(), short(self.body, 400))


def _no_constants(name):
    raise ValueError("non-JSON constant " + name)


def strict_json(data):
    """JSON as encoding/json reads it: UTF-8 only, no NaN/Infinity."""
    text = bytes(data).decode("utf-8", errors="strict")
    return json.loads(text, parse_constant=_no_constants)


class Conn:
    """A client connection with its own buffer, so that pipelined responses can be read in turn."""

    def __init__(self, target, timeout=10.0, sock=None):
        self.target = target
        self.sock = sock or target.connect(timeout)
        self.buf = bytearray()
        self.eof = False
        self.reset = False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def send_in_background(self, data):
        """For payloads the server may refuse before reading them all: a refusal and a close while
        we still send is fine; the answer sent before is what counts."""
        def run():
            try:
                self.sock.sendall(data)
            except OSError:
                pass
        if isinstance(self.sock, ssl.SSLSocket):  # one SSL object is not for two threads at once
            self.sock.settimeout(10)
            run()
            return None
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def shutdown_write(self):
        try:
            if isinstance(self.sock, ssl.SSLSocket):
                return  # a TLS half-close is not portable; the deadlines bound the wait instead
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _fill(self, deadline):
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout()
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 16)
        except (socket.timeout, TimeoutError):
            raise Timeout()
        except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            self.eof = self.reset = True
            return False
        except ssl.SSLError:
            self.eof = self.reset = True
            return False
        except OSError:
            self.eof = self.reset = True
            return False
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _line(self, deadline, limit, start):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                if not line.endswith(b"\r\n"):
                    raise Malformed("a line ends in a bare LF", start + line)
                return line[:-2]
            if len(self.buf) > limit:
                raise Malformed("a line longer than %d bytes" % limit, start + bytes(self.buf))
            if not self._fill(deadline):
                raise Malformed("the connection ended inside a line", start + bytes(self.buf))

    def _exact(self, n, deadline, start):
        while len(self.buf) < n:
            if not self._fill(deadline):
                raise Malformed("the connection ended %d bytes into a body of %d" % (len(self.buf), n),
                                start + bytes(self.buf))
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def wait_eof(self, seconds):
        """True when the server closes (EOF or reset) within SECONDS with nothing more sent;
        raises Malformed when bytes come instead."""
        deadline = time.monotonic() + seconds
        try:
            while not self.eof:
                if not self._fill(deadline):
                    break
        except Timeout:
            return False
        if self.buf:
            raise Malformed("bytes after the last response", bytes(self.buf))
        return True

    def read_response(self, deadline, method="GET", interim_too=False):
        """The next response, or None when the server closed before sending a byte of one.
        Interim (1xx) responses are skipped, or returned with INTERIM_TOO."""
        interim = []
        while True:
            if not self.buf:
                if not self._fill(deadline):
                    return None
            r = self._read_one(deadline, method)
            if 100 <= r.status < 200 and r.status != 101 and not interim_too:
                interim.append(r.status)
                continue
            r.interim = interim
            return r

    def _read_one(self, deadline, method):
        r = Response()
        start = bytes(self.buf[:200])
        line = self._line(deadline, 1 << 16, b"")
        m = STATUS_LINE.match(line)
        if not m:
            raise Malformed("bad status line %r" % line[:200], start)
        r.version = "1." + m.group(1).decode()
        r.status = int(m.group(2))
        r.reason = (m.group(3) or b"").decode("latin-1")
        head = [line]
        total = len(line)
        while True:
            h = self._line(deadline, 1 << 20, b"\r\n".join(head))
            total += len(h)
            if total > (8 << 20):
                raise Malformed("response headers over 8 MiB", b"\r\n".join(head))
            if h == b"":
                break
            head.append(h)
            if h[:1] in (b" ", b"\t"):
                raise Malformed("obsolete header line folding", b"\r\n".join(head))
            name, sep, value = h.partition(b":")
            if not sep or not TOKEN.match(name):
                raise Malformed("bad header line %r" % h[:200], b"\r\n".join(head))
            if re.search(rb"[\x00-\x08\x0a-\x1f\x7f]", value):
                raise Malformed("control byte in header %r" % h[:200], b"\r\n".join(head))
            r.headers.append((name.decode("latin-1").lower(), value.strip(b" \t").decode("latin-1")))
        r.raw_head = b"\r\n".join(head)
        lengths = {v for n, v in r.headers if n == "content-length"}
        te = [v.lower() for n, v in r.headers if n == "transfer-encoding"]
        if len(lengths) > 1:
            raise Malformed("conflicting Content-Length headers", r.raw_head)
        if lengths and te:
            raise Malformed("both Content-Length and Transfer-Encoding", r.raw_head)
        if 100 <= r.status < 200 or r.status in (204, 304) or method == "HEAD":
            if r.status in (204, 304) and lengths and lengths != {"0"}:
                pass  # allowed (the length the body would have had) but no body follows
            return r
        if te:
            if te != ["chunked"]:
                raise Malformed("Transfer-Encoding %r" % te, r.raw_head)
            r.chunked = True
            parts = []
            while True:
                size_line = self._line(deadline, 4096, r.raw_head)
                size_text = size_line.split(b";")[0].strip()
                if not re.match(rb"^[0-9a-fA-F]{1,16}$", size_text):
                    raise Malformed("bad chunk size %r" % size_line[:100], r.raw_head + b"\r\n\r\n" + b"".join(parts))
                size = int(size_text, 16)
                if size == 0:
                    while True:  # trailers
                        t = self._line(deadline, 1 << 16, r.raw_head)
                        if t == b"":
                            break
                        if b":" not in t:
                            raise Malformed("bad trailer %r" % t[:100], r.raw_head)
                    break
                parts.append(self._exact(size, deadline, r.raw_head))
                if self._exact(2, deadline, r.raw_head) != b"\r\n":
                    raise Malformed("a chunk not followed by CRLF", r.raw_head + b"".join(parts))
            r.body = b"".join(parts)
            return r
        if lengths:
            (n,) = lengths
            if not re.match(r"^[0-9]{1,19}$", n):
                raise Malformed("bad Content-Length %r" % n, r.raw_head)
            r.body = self._exact(int(n), deadline, r.raw_head)
            return r
        # Neither: the body runs to the close (Go's plain-text 400 for a malformed request does).
        r.close_delimited = True
        while self._fill(deadline):
            pass
        r.body = bytes(self.buf)
        self.buf.clear()
        return r


def validate(r, what, allow_5xx=False, stream=False):
    """The checks every response gets; records a malformed one. Returns a list of problems."""
    global _responses
    problems = []
    with _lock:
        _responses += 1
    if r.status >= 500 and not allow_5xx:
        problems.append("a %d (a server error) where kube-apiserver answers 4xx or success" % r.status)
    if r.is_json() and r.body:
        try:
            if stream:
                docs = [strict_json(line) for line in r.body.split(b"\n") if line.strip()]
            else:
                docs = [strict_json(r.body)]
        except (ValueError, UnicodeDecodeError) as e:
            problems.append("Content-Type says JSON but the body does not parse as strict UTF-8 "
                            "JSON: %s" % e)
            docs = []
        if r.status >= 400 and docs and not stream:
            st = docs[0]
            if not (isinstance(st, dict) and st.get("kind") == "Status"
                    and st.get("apiVersion") == "v1" and st.get("code") == r.status
                    and st.get("status") == "Failure"):
                problems.append("an error answered with JSON that is not a kube Status with code %d"
                                % r.status)
    elif r.is_json() and not r.body and r.status not in (204, 304):
        problems.append("Content-Type says JSON but the body is empty")
    if problems:
        with _lock:
            _malformed.append("%s: %s" % (what, "; ".join(problems)))
    return problems


def status_message(r):
    try:
        return r.json().get("message", "")
    except Exception:
        return r.body.decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------------
# Requests

class Api:
    def __init__(self, target, timeout=15.0):
        self.t = target
        self.timeout = timeout

    def raw(self, method, path, body=None, content_type="application/json", headers=None,
            conn=None, close=False):
        """One request; over CONN when given (kept), else over a connection of its own."""
        own = conn is None
        c = conn or Conn(self.t, self.timeout)
        try:
            c.send(build_request(self.t, method, path, body, content_type, headers, close))
            r = c.read_response(time.monotonic() + self.timeout, method)
            if r is None:
                raise Malformed("the server closed the connection without answering %s %s"
                                % (method, path[:200]), b"")
            return r
        finally:
            if own:
                c.close()

    def call(self, method, path, body=None, content_type="application/json", headers=None,
             what=None, allow_5xx=False, stream=False, conn=None):
        """A request whose response must be well-formed; returns (response, problems)."""
        what = what or "%s %s" % (method, path[:120])
        try:
            r = self.raw(method, path, body, content_type, headers, conn=conn)
        except (Malformed, Timeout, OSError) as e:
            with _lock:
                _malformed.append("%s: %s" % (what, e or type(e).__name__))
            return None, ["%s: %s" % (type(e).__name__, e)]
        return r, validate(r, what, allow_5xx=allow_5xx, stream=stream)

    def obj(self, method, path, body=None, content_type="application/json", want=(200, 201)):
        r, problems = self.call(method, path, body if body is None or isinstance(body, bytes)
                                else json.dumps(body).encode(), content_type)
        if r is None or problems or r.status not in want:
            raise SetupError("%s %s: wanted %s, got %r %s" % (method, path, want, r, problems))
        return r.json()


class SetupError(Exception):
    pass


def build_request(target, method, path, body=None, content_type="application/json", headers=None,
                  close=False):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: " + target.hostport,
             "User-Agent: muster-hostile-suite", "Accept: application/json"]
    if body is not None:
        lines.append("Content-Type: " + content_type)
        lines.append("Content-Length: %d" % len(body))
    for k, v in (headers or {}).items():
        lines.append("%s: %s" % (k, v))
    if close:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + (body or b"")


def exchange(target, payload, seconds=10.0, method="GET", background_send=False, half_close=False,
             responses=None):
    """Sends PAYLOAD on a fresh connection and reads responses until the server closes or goes
    quiet (SECONDS), or RESPONSES of them have come on a connection kept open. Returns
    (responses, closed, error): closed when the server ended the connection."""
    c = Conn(target)
    out = []
    err = None
    try:
        if background_send:
            c.send_in_background(payload)
        else:
            try:
                c.send(payload)
            except OSError:
                pass
        if half_close:
            c.shutdown_write()
        deadline = time.monotonic() + seconds
        while True:
            try:
                r = c.read_response(deadline, method)
            except Timeout:
                return out, False, None
            if r is None:
                return out, True, None
            out.append(r)
            if r.wants_close():
                try:
                    return out, c.wait_eof(5.0), None
                except Malformed as e:
                    return out, True, e
            if responses is not None and len(out) >= responses:
                return out, False, None
    except Malformed as e:
        err = e
        return out, True, err
    finally:
        c.close()


# --------------------------------------------------------------------------------------------------
# Background: kubectl loop

class KubectlLoop(threading.Thread):
    def __init__(self, kubectl, kubeconfig, work, limit=1.0):
        super().__init__(daemon=True)
        self.kubectl = kubectl
        self.kubeconfig = kubeconfig
        self.limit = limit
        self.cache = tempfile.mkdtemp(prefix="hostile-kubectl-", dir=work)
        self.stop = threading.Event()
        self.latencies = []
        self.failures = []
        self.slow = []

    def run_once(self, args, timeout=10.0):
        cmd = [self.kubectl, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache,
               "--request-timeout=5s"] + args
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            return time.monotonic() - t0, None, b"", b"timed out after %ds" % timeout
        return time.monotonic() - t0, p.returncode, p.stdout, p.stderr

    def warm_up(self):
        """Fills kubectl's discovery cache (not timed: a first kubectl run asks for discovery)."""
        for _ in range(3):
            _, rc, out, err = self.run_once(["get", "pods", "-A"], timeout=30)
            if rc == 0:
                return True, b""
            time.sleep(0.5)
        return False, out + err

    def run(self):
        i = 0
        while not self.stop.is_set():
            if i % 2 == 0:
                args = ["get", "pods", "-A"]
            else:
                args = ["get", "--raw", "/api/v1/namespaces/default"]
            i += 1
            dt, rc, out, err = self.run_once(args)
            ok = rc == 0
            if ok and args[1] == "--raw":
                try:
                    ok = strict_json(out).get("kind") == "Namespace"
                except Exception:
                    ok = False
            elif ok:
                ok = b"NAMESPACE" in out or b"No resources found" in err
            with _lock:
                self.latencies.append(dt)
                if not ok:
                    self.failures.append("kubectl %s: rc %s, %s %s" % (" ".join(args), rc,
                                                                         short(out, 300), short(err, 300)))
                elif dt > self.limit:
                    self.slow.append("kubectl %s took %.2f s" % (" ".join(args), dt))
            self.stop.wait(0.1)


# --------------------------------------------------------------------------------------------------
# Background: slowloris

class Slowloris(threading.Thread):
    def __init__(self, target, n, header_timeout):
        super().__init__(daemon=True)
        self.t = target
        self.n = n
        self.header_timeout = header_timeout
        self.results = []  # (cut after seconds or None, bytes received, problem)
        self.connect_errors = []
        self.done = threading.Event()

    def run(self):
        try:
            self._run()
        finally:
            self.done.set()

    def _run(self):
        prefix = ("GET /api/v1/namespaces/default HTTP/1.1\r\nHost: %s\r\nUser-Agent: slowloris\r\n"
                  "X-Slowloris: " % self.t.hostport).encode()
        conns = []
        for i in range(self.n):
            try:
                s = self.t.connect(10.0)
            except OSError as e:
                self.connect_errors.append(str(e))
                continue
            t0 = time.monotonic()
            sent = 0
            if i % 2:  # half start with the request line and Host at once, then trickle a header
                try:
                    s.sendall(prefix[:prefix.index(b"User-Agent")])
                    sent = prefix.index(b"User-Agent")
                except OSError as e:
                    self.connect_errors.append(str(e))
            s.setblocking(False)
            conns.append({"sock": s, "t0": t0, "sent": sent, "cut": None, "data": b""})
        # Bounded: the header timeout, then 15 s more at the most.
        deadline = time.monotonic() + self.header_timeout + 15
        tick = time.monotonic()
        while time.monotonic() < deadline:
            open_ = [c for c in conns if c["cut"] is None]
            if not open_:
                break
            for c in open_:
                s = c["sock"]
                try:
                    while True:
                        d = s.recv(4096)
                        if not d:
                            c["cut"] = time.monotonic() - c["t0"]
                            break
                        c["data"] += d
                except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    pass
                except OSError:
                    c["cut"] = time.monotonic() - c["t0"]
                if c["cut"] is not None:
                    continue
                i = c["sent"]
                byte = prefix[i:i + 1] if i < len(prefix) else b"a"
                try:
                    if s.send(byte) == 1:
                        c["sent"] += 1
                except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    pass
                except OSError:
                    c["cut"] = time.monotonic() - c["t0"]
            tick += 1.0
            time.sleep(max(0.0, tick - time.monotonic()))
        for c in conns:
            try:
                c["sock"].close()
            except OSError:
                pass
            self.results.append((c["cut"], c["data"], c["sent"]))


# --------------------------------------------------------------------------------------------------
# Background: idle keep-alive connections

class IdlePool:
    def __init__(self, target, n, workers=8):
        self.t = target
        self.n = n
        self.workers = workers
        self.conns = []
        self.open_errors = []
        self.opened_at = None

    def _parallel(self, items, fn):
        errors = []
        lk = threading.Lock()

        def work(chunk):
            for it in chunk:
                try:
                    fn(it)
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    with lk:
                        errors.append("%s: %s" % (type(e).__name__, e))
        chunks = [items[i::self.workers] for i in range(self.workers)]
        threads = [threading.Thread(target=work, args=(ch,), daemon=True) for ch in chunks]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        return errors

    def one_request(self, c):
        c.send(build_request(self.t, "GET", "/api/v1/namespaces/default"))
        r = c.read_response(time.monotonic() + 20)
        if r is None:
            raise Malformed("closed without an answer", b"")
        problems = validate(r, "idle keep-alive GET")
        if problems or r.status != 200 or r.wants_close():
            raise Malformed("%r %s" % (r, problems), r.raw_head)

    def open_all(self):
        lk = threading.Lock()

        def open_one(_):
            c = Conn(self.t, 10.0)
            try:
                self.one_request(c)
            except Exception:
                c.close()
                raise
            with lk:
                self.conns.append(c)
        self.opened_at = time.monotonic()
        self.open_errors = self._parallel(list(range(self.n)), open_one)

    def reuse_all(self):
        return self._parallel(list(self.conns), self.one_request)

    def close_all(self):
        for c in self.conns:
            c.close()


# --------------------------------------------------------------------------------------------------
# Foreground phases

def expect_status(api, name, method, path, want, body=None, content_type="application/json",
                  headers=None, message_has=(), stream=False, allow_5xx=False):
    r, problems = api.call(method, path, body, content_type, headers, what=name, stream=stream,
                           allow_5xx=allow_5xx)
    if r is None:
        return check(name, False, "; ".join(problems)), None
    msg_ok = True
    missing = []
    if message_has:
        msg = status_message(r)
        missing = [m for m in message_has if m not in msg]
        msg_ok = not missing
    ok = r.status in want and not problems and msg_ok
    got = "%r" % r
    if problems:
        got += "\nproblems: " + "; ".join(problems)
    if missing:
        got += "\nthe message lacks %s" % missing
    return check(name + " -> %s" % "/".join(map(str, want)), ok, got), r


class Suite:
    def __init__(self, args):
        self.args = args
        self.t = Target(args.server, args.tls_ca, args.tls_cert, args.tls_key)
        self.api = Api(self.t)
        self.ns = "hostile-%d-%04d" % (os.getpid() % 100000, random.randint(0, 9999))
        self.nsp = "/api/v1/namespaces/" + self.ns
        self.cms = self.nsp + "/configmaps"
        self.deletions = []  # configmaps deleted in the foreground, waited for at the end
        self.has_volcano = False
        self.work = tempfile.mkdtemp(prefix="hostile-", dir=args.work)

    # ---- defects of issue 18 -----------------------------------------------------------------

    def refused_or_dropped(self, name, method, path, body, content_type, number, field, get_path,
                           stored="hostile"):
        """A number JSON cannot hold. muster's contract (issue 18): 400/422 naming the number and
        the field. kube-apiserver, for a built-in kind, drops an unknown field instead (201/200 and
        a warning): with --reference-kube that answer passes as long as nothing of it is stored."""
        r, problems = self.api.call(method, path, body, content_type, what=name)
        if r is None:
            return check(name, False, "; ".join(problems))
        leaf = field.split(".")[-1]
        if r.status in (400, 422):
            msg = status_message(r)
            ok = number in msg and (leaf in msg or self.args.reference_kube)
            return check(name + " -> 400/422 naming %s and %s" % (number, field), ok and not problems,
                         "%r %s" % (r, problems))
        if self.args.reference_kube and 200 <= r.status < 300 and not problems:
            g, gp = self.api.call("GET", get_path, what=name + " (read back)")
            ok = (g is not None and g.status == 200 and not gp and
                  not re.search(rb'"%s[A-Za-z]*"' % stored.encode(), g.body))
            return check(name + " -> accepted with the field dropped (kube, built-in kind)", ok,
                         "%r %s" % (g, gp))
        return check(name + " -> 400/422", False, "%r %s" % (r, problems))

    def phase_defects(self):
        api = self.api
        cms = self.cms
        # numbers beyond a double in a field no schema models, in every kind of JSON body
        cm = lambda n, extra: ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},'
                               '"data":{"k":"v"},%s}' % (n, extra)).encode()
        self.refused_or_dropped("POST configmap with hostileNumber: 1e400", "POST", cms,
                                cm("num-post", '"hostileNumber":1e400'), "application/json",
                                "1e400", "hostileNumber", cms + "/num-post")
        self.refused_or_dropped("POST configmap with hostileExtra.deepNumber: -1e999", "POST", cms,
                                cm("num-deep", '"hostileExtra":{"deepNumber":-1e999}'),
                                "application/json", "-1e999", "hostileExtra.deepNumber",
                                cms + "/num-deep")
        self.refused_or_dropped("PUT configmap keep with hostileNumber: 1e400", "PUT", cms + "/keep",
                                cm("keep", '"hostileNumber":1e400'), "application/json", "1e400",
                                "hostileNumber", cms + "/keep")
        self.refused_or_dropped("merge patch hostileNumber: 1e400", "PATCH", cms + "/keep",
                                b'{"hostileNumber":1e400}', "application/merge-patch+json", "1e400",
                                "hostileNumber", cms + "/keep")
        self.refused_or_dropped("merge patch hostileExtra.deepNumber: -1e999", "PATCH", cms + "/keep",
                                b'{"metadata":{"annotations":{"a":"b"}},"hostileExtra":{"deepNumber":-1e999}}',
                                "application/merge-patch+json", "-1e999", "deepNumber", cms + "/keep")
        self.refused_or_dropped("JSON patch add /hostileNumber 1e400", "PATCH", cms + "/keep",
                                b'[{"op":"add","path":"/hostileNumber","value":1e400}]',
                                "application/json-patch+json", "1e400", "value", cms + "/keep")
        if self.has_volcano:
            pg = ('{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup","metadata":'
                  '{"name":"num-pg"},"spec":{"minMember":1,"hostileNumber":1e400}}').encode()
            r, problems = api.call("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups"
                                   % self.ns, pg, what="PodGroup with spec.hostileNumber: 1e400")
            msg = status_message(r) if r is not None else ""
            ok = (r is not None and r.status in (400, 422) and not problems and "1e400" in msg
                  and ("hostileNumber" in msg or self.args.reference_kube))
            check("POST a Volcano PodGroup with spec.hostileNumber: 1e400 -> 400/422 naming it", ok,
                  "%r %s" % (r, problems))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "prio"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        body = json.dumps(pod).replace('"spec": {', '"spec": {"priority": 99999999999999999999999, ')
        expect_status(api, "POST pod with spec.priority: 99999999999999999999999", "POST",
                      self.nsp + "/pods", (400, 422), body.encode(), message_has=("priority",))
        expect_status(api, "GET pod prio (the refused one) is not there", "GET", self.nsp + "/pods/prio",
                      (404,))
        # afterwards the namespace's objects still list, watch, read and delete
        for n in ("num-post", "num-deep"):
            r, problems = api.call("GET", cms + "/" + n)
            check("GET configmap %s: not stored, or stored without the number" % n,
                  r is not None and not problems and
                  (r.status == 404 or (r.status == 200 and b"hostileNumber" not in r.body
                                        and b"deepNumber" not in r.body)), "%r %s" % (r, problems))
        r, problems = api.call("GET", cms)
        ok = r is not None and r.status == 200 and not problems
        items = r.json().get("items", []) if ok else []
        check("list configmaps after the refused numbers parses, keep in it", ok and any(
            i["metadata"]["name"] == "keep" for i in items), "%r %s" % (r, problems))
        r, problems = api.call("GET", cms + "?watch=1&timeoutSeconds=1", stream=True,
                               what="watch configmaps")
        ok = r is not None and r.status == 200 and not problems
        events = []
        if ok:
            try:
                events = [strict_json(l) for l in r.body.split(b"\n") if l.strip()]
            except Exception as e:  # noqa: BLE001
                ok = False
                problems = [str(e)]
        check("watch configmaps (timeoutSeconds=1) ends, every event parses, keep ADDED", ok and any(
            e.get("type") == "ADDED" and e["object"]["metadata"]["name"] == "keep" for e in events),
            "%r %s" % (r, problems))
        api.obj("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim"}})
        expect_status(api, "DELETE configmap victim after the refused numbers", "DELETE",
                      cms + "/victim", (200, 202))
        expect_status(api, "GET configmap keep still reads", "GET", cms + "/keep", (200,))

    def phase_headers_size(self):
        api = self.api
        # a label selector of ~200 KiB in the URL: kube takes up to 1 MiB of request headers
        values = ",".join("v%d" % i for i in range(30000))
        sel = urllib.parse.quote("hostile notin (%s)" % values)
        r, problems = api.call("GET", self.cms + "?labelSelector=" + sel, what="200 KiB selector")
        ok = r is not None and r.status == 200 and not problems and b'"keep"' in r.body
        check("list with a %d KiB labelSelector -> 200, keep matched" % (len(sel) // 1024), ok,
              "%r %s" % (r, problems))
        pad = "p" * (900 << 10)
        expect_status(api, "GET with a 900 KiB header", "GET", self.cms + "/keep", (200,),
                      headers={"X-Hostile-Pad": pad})
        for size in ((1 << 20) + (64 << 10), 4 << 20):
            payload = build_request(self.t, "GET", self.cms + "/keep",
                                    headers={"X-Hostile-Pad": "p" * size})
            rs, closed, err = exchange(self.t, payload, background_send=True)
            self.one_refusal("GET with a %d KiB header" % (size >> 10), rs, closed, err, (431,))
        payload = build_request(self.t, "GET", self.cms + "?labelSelector=" + "a" * ((1 << 20) + 65536))
        rs, closed, err = exchange(self.t, payload, background_send=True)
        self.one_refusal("GET with a 1.06 MiB URL", rs, closed, err, (431, 414))

    def phase_list_params(self):
        api = self.api
        cms = self.cms
        for n in ("page-a", "page-b", "page-c"):
            api.obj("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": n, "labels": {"page": "yes"}}})
        api.obj("POST", cms, {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "empty-a", "labels": {"a": ""}}})
        expect_status(api, "list resourceVersion=abc", "GET", cms + "?resourceVersion=abc", (400,))
        # kube-apiserver answers a watch from resourceVersion=abc with 500 (the cacher's error is no
        # API status); 400 is what its list gives
        expect_status(api, "watch resourceVersion=abc", "GET", cms + "?watch=1&resourceVersion=abc",
                      (400, 500), allow_5xx=True)
        expect_status(api, "list resourceVersion=-1", "GET", cms + "?resourceVersion=-1", (400,))
        page = api.obj("GET", cms + "?labelSelector=page%3Dyes&limit=1")
        token = page.get("metadata", {}).get("continue", "")
        rv = page.get("metadata", {}).get("resourceVersion", "")
        check("a page of 1 of 3 has a continue token", bool(token), json.dumps(page)[:400])
        if token:
            q = urllib.parse.quote(token)
            expect_status(api, "continue with resourceVersion", "GET",
                          cms + "?labelSelector=page%%3Dyes&limit=1&continue=%s&resourceVersion=%s" % (q, rv),
                          (400,))
            # kube's store refuses any resourceVersion with a continue token but "0" (any version)
            expect_status(api, "continue with resourceVersion=0 (kube allows \"0\")", "GET",
                          cms + "?labelSelector=page%%3Dyes&limit=1&continue=%s&resourceVersion=0" % q,
                          (200,))
            r, problems = api.call("GET", cms + "?labelSelector=page%%3Dyes&limit=1&continue=%s" % q)
            check("continue with the real token -> 200, the next page", r is not None and
                  r.status == 200 and not problems, "%r %s" % (r, problems))
            try:
                raw = base64.b64decode(token + "=" * (-len(token) % 4))
                decoded = json.loads(raw)
            except Exception:  # noqa: BLE001
                decoded = None
            forged = []
            if isinstance(decoded, dict):
                for change in ({"rv": 1 << 62}, {"rv": -5}, {"rv": "x"}, {"start": "../../../etc"},
                               {"v": "meta.k8s.io/v0"}, {"start": "\udcff"}):
                    d = dict(decoded)
                    d.update(change)
                    forged.append(("forged %s" % json.dumps(change, ensure_ascii=True)[:40],
                                   base64.b64encode(json.dumps(d).encode("utf-8", "surrogateescape")).decode()))
            forged += [("garbled (flipped)", token[::-1]), ("garbled (not base64)", "!!!***"),
                       ("garbled (base64 of junk)", base64.b64encode(b"\xff\xfe junk").decode()),
                       ("garbled (base64 of a JSON array)", base64.b64encode(b"[1,2]").decode()),
                       ("garbled (truncated)", token[:len(token) // 2])]
            for label, tok in forged:
                expect_status(api, "continue token %s" % label, "GET",
                              cms + "?labelSelector=page%%3Dyes&limit=1&continue=%s"
                              % urllib.parse.quote(tok), (400, 410))
        # kube's selector parser reads "()" as the set of the empty value: `a in ()` is a in ("")
        r, problems = api.call("GET", cms + "?labelSelector=" + urllib.parse.quote("a in ()"))
        names = sorted(i["metadata"]["name"] for i in r.json().get("items", [])) if (
            r is not None and r.status == 200 and not problems) else None
        check("labelSelector=a in () -> 200 with exactly the objects labelled a=\"\" (kube's "
              "parser reads () as the empty value)", names == ["empty-a"], "%r %s" % (r, problems))
        for sel in ("a in (", "a in (b", "a in b", "a in (b,", "a=b=c", "!", "a,,b", "a notin",
                    "a in ((b))", "=b", "a in (b) c", "a=(b)", "a!", "a>b"):
            expect_status(api, "labelSelector=%s" % sel, "GET",
                          cms + "?labelSelector=" + urllib.parse.quote(sel), (400,))
            expect_status(api, "watch labelSelector=%s" % sel, "GET",
                          cms + "?watch=1&timeoutSeconds=1&labelSelector=" + urllib.parse.quote(sel),
                          (400,))
        expect_status(api, "fieldSelector=metadata.name", "GET", cms + "?fieldSelector=metadata.name",
                      (400,))
        expect_status(api, "limit=abc", "GET", cms + "?limit=abc", (400,))

    def phase_url_bytes(self):
        api = self.api
        cases = [
            ("namespace %ff%fe", self.nsp.rsplit("/", 1)[0] + "/%ff%fe"),
            ("configmap %c3%28", self.cms + "/%c3%28"),
            ("configmap %ed%a0%80 (a surrogate)", self.cms + "/%ed%a0%80"),
            ("configmap %c0%af (overlong)", self.cms + "/%c0%af"),
            ("configmap %00", self.cms + "/a%00b"),
            ("configmap raw 0xff bytes", self.cms + "/\xff\xfe"),
            ("configmap raw 0x80", self.cms + "/\x80"),
            ("labelSelector %ff", self.cms + "?labelSelector=%ff"),
            ("labelSelector a=%ff%fe", self.cms + "?labelSelector=a%3D%ff%fe"),
            ("labelSelector a in (%c3%28)", self.cms + "?labelSelector=a+in+(%c3%28)"),
            ("fieldSelector metadata.name=%ff", self.cms + "?fieldSelector=metadata.name%3D%ff"),
            ("fieldSelector %ff=x", self.cms + "?fieldSelector=%ff%3Dx"),
            ("resourceVersion %ff", self.cms + "?resourceVersion=%ff"),
            ("continue %ff", self.cms + "?limit=1&continue=%ff"),
            ("watch resourceVersion %ff", self.cms + "?watch=1&resourceVersion=%ff"),
            ("bad escape %zz", self.cms + "/%zz"),
            ("bad escape trailing %", self.cms + "/a%"),
            ("bad escape in query %g1", self.cms + "?labelSelector=%g1"),
            ("group %ff", "/apis/%ff/v1/namespaces/" + self.ns + "/things"),
            ("resource %ff", self.nsp + "/%ff"),
            ("dry run %ff", self.cms + "/keep?dryRun=%ff"),
        ]
        for label, path in cases:
            # kube answers a watch from an unparsable resourceVersion with 500 (see list-params)
            kube_500 = "watch=1&resourceVersion" in path
            r, problems = self.api.call("GET", path, what="URL " + label, allow_5xx=kube_500)
            if kube_500 and r is not None and r.status == 500:
                r.status_ok = True
            ok = r is not None and not problems and (200 <= r.status < 300 or 400 <= r.status < 500
                                                     or getattr(r, "status_ok", False))
            check("URL with %s -> 2xx/4xx, never 5xx; a JSON body valid UTF-8 (a Status if an error)"
                  % label, ok, "%r %s" % (r, problems))
        # a POST whose name comes from an invalid-UTF-8 URL never stores
        for label, path in (("POST to namespace %ff", "/api/v1/namespaces/%ff/configmaps"),):
            r, problems = api.call("POST", path, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}',
                                   what=label)
            check("%s -> 4xx with a well-formed body" % label, r is not None and not problems
                  and 400 <= r.status < 500, "%r %s" % (r, problems))

    def phase_foreground(self):
        """Objects that own themselves, or each other, deleted in the foreground; waited for at the
        end of the run. That a self-owner goes is muster's contract (issue 18): kube's garbage
        collector breaks a cycle of two but leaves an object that blocks its own deletion."""
        api = self.api
        fg = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1",
                         "propagationPolicy": "Foreground"}).encode()

        def own(name, owners):
            api.obj("PATCH", self.cms + "/" + name, json.dumps({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
                 "uid": o["metadata"]["uid"], "blockOwnerDeletion": True, "controller": True}
                for o in owners]}}).encode(), "application/merge-patch+json", want=(200,))

        self_owner = api.obj("POST", self.cms, {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "self-owner"}})
        own("self-owner", [self_owner])
        a = api.obj("POST", self.cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cycle-a"}})
        b = api.obj("POST", self.cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cycle-b"}})
        own("cycle-a", [b])
        own("cycle-b", [a])
        for name in ("self-owner", "cycle-a"):
            ok, r = expect_status(api, "foreground DELETE of %s" % name, "DELETE",
                                  self.cms + "/" + name, (200, 202), fg)
            self.deletions.append(name)
        self.deletions.append("cycle-b")
        self.deletion_started = time.monotonic()

    def wait_deletions(self, seconds=30):
        deadline = self.deletion_started + seconds
        for name in self.deletions:
            last = None
            while True:
                r, problems = self.api.call("GET", self.cms + "/" + name)
                last = "%r %s" % (r, problems)
                if r is not None and r.status == 404:
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            gone = r is not None and r.status == 404
            if name == "self-owner" and self.args.reference_kube and not gone:
                # muster's contract (issue 18); kube's garbage collector leaves an object that
                # blocks its own deletion with its foregroundDeletion finalizer
                note("self-owner not gone after %d s: kube-apiserver's garbage collector keeps it" % seconds)
                continue
            check("foreground deletion of %s completes (finalizer removed, object gone) within %d s"
                  % (name, seconds), gone, last)

    # ---- the wire ------------------------------------------------------------------------------

    def one_refusal(self, name, rs, closed, err, want, close_required=True, allow_5xx=False):
        """A request the server must refuse: one well-formed response with a status in WANT, then
        the connection closed."""
        problems = []
        if err is not None:
            problems.append(str(err))
        for r in rs:
            problems += validate(r, name, allow_5xx=allow_5xx)
        if not rs:
            if err is None:
                problems.append("no answer: the connection was %s without a response"
                                % ("closed" if closed else "left silent for 10 s"))
        elif rs[0].status not in want:
            problems.append("status %d" % rs[0].status)
        if len(rs) > 1:
            problems.append("%d responses for one request" % len(rs))
        if close_required and not closed:
            problems.append("the connection stayed open after the refusal")
        got = "; ".join(problems) + ("\nresponse: %r" % rs[0] if rs else "")
        return check("%s -> %s%s" % (name, "/".join(map(str, want)), ", closed" if close_required else ""),
                     not problems, got)

    def phase_request_lines(self):
        hp = self.t.hostport
        cases = [
            ("garbage request line", b"GARBAGE\r\n\r\n", (400,)),
            ("binary garbage", bytes(range(1, 32)) + b"\xff\xfe\r\n\r\n", (400,)),
            ("GET alone", b"GET\r\n\r\n", (400,)),
            ("GET / without a version", b"GET /\r\nHost: x\r\n\r\n", (400,)),
            ("GET with two spaces", b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", (400,)),
            ("version HTTP/1.x", b"GET / HTTP/1.x\r\nHost: x\r\n\r\n", (400,)),
            ("version HTTPS/1.1", b"GET / HTTPS/1.1\r\nHost: x\r\n\r\n", (400,)),
            ("version HTTP/9.9", b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", (505, 400)),
            ("version HTTP/2.0 (not the preface)", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", (505, 400)),
            ("a target that is not a path", b"GET api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n", (400,)),
            ("a header line without a colon", ("GET /api HTTP/1.1\r\nHost: %s\r\nNoColonHere\r\n\r\n" % hp).encode(), (400,)),
            ("a space before a header's colon", ("GET /api HTTP/1.1\r\nHost: %s\r\nX-Bad : v\r\n\r\n" % hp).encode(), (400,)),
            ("a header name with a control byte", ("GET /api HTTP/1.1\r\nHost: %s\r\nX-\x01Bad: v\r\n\r\n" % hp).encode(), (400,)),
            ("a NUL in a header value", ("GET /api HTTP/1.1\r\nHost: %s\r\nX-Bad: a\x00b\r\n\r\n" % hp).encode(), (400,)),
            ("a method with a non-token byte", b"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", (400,)),
            ("a 2 MiB method", b"A" * (2 << 20) + b" / HTTP/1.1\r\nHost: x\r\n\r\n", (431, 400)),
            ("a 2 MiB request target", b"GET /" + b"a" * (2 << 20) + b" HTTP/1.1\r\nHost: x\r\n\r\n", (431, 414, 400)),
            # RFC 9112 3.2: an HTTP/1.1 request without Host, or with two, gets 400 (Go's too)
            ("HTTP/1.1 without Host", ("GET %s HTTP/1.1\r\n\r\n" % self.nsp).encode(), (400,)),
            ("two Host headers", ("GET %s HTTP/1.1\r\nHost: %s\r\nHost: other\r\n\r\n" % (self.nsp, hp)).encode(), (400,)),
        ]
        for name, payload, want in cases:
            rs, closed, err = exchange(self.t, payload, background_send=len(payload) > 65536, seconds=5)
            self.one_refusal(name, rs, closed, err, want, allow_5xx=505 in want)
        # a 64 KiB method is a token: kube answers it (it is no verb it knows) and keeps going
        huge = b"X" * 65536
        rs, closed, err = exchange(self.t, huge + (" /api/v1/namespaces/%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (self.ns, hp)).encode(),
                                   responses=1)
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "64 KiB method")
        check("a 64 KiB method (a token) -> one well-formed 4xx", len(rs) == 1 and not problems and
              400 <= rs[0].status < 500, "%s %r" % (problems, rs))
        # HTTP/1.0 without keep-alive: one answer, then closed
        rs, closed, err = exchange(self.t, ("GET %s HTTP/1.0\r\n\r\n" % self.nsp).encode())
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "HTTP/1.0")
        check("HTTP/1.0 GET -> 200 and closed", len(rs) == 1 and rs[0].status == 200 and closed and
              not problems, "%s %r closed=%s" % (problems, rs, closed))

    def phase_header_flood(self):
        hp = self.t.hostport
        many = "".join("X-Flood-%d: v%d\r\n" % (i, i) for i in range(5000))
        payload = ("GET %s/keep HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (self.cms, hp, many)).encode()
        rs, closed, err = exchange(self.t, payload, background_send=True, seconds=15, responses=1)
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "5,000 headers")
        check("5,000 headers (%d KiB) -> 200" % (len(payload) >> 10), len(rs) == 1 and rs[0].status == 200
              and not problems, "%s %r" % (problems, rs))
        same = "".join("X-Same: %d\r\n" % i for i in range(20000))
        payload = ("GET %s/keep HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (self.cms, hp, same)).encode()
        rs, closed, err = exchange(self.t, payload, background_send=True, seconds=15, responses=1)
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "20,000 repeats of a header")
        check("20,000 repeats of one header -> 200", len(rs) == 1 and rs[0].status == 200 and not problems,
              "%s %r" % (problems, rs))
        flood = "".join("X-Flood-%d: %s\r\n" % (i, "v" * 10) for i in range(100000))
        payload = ("GET %s/keep HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (self.cms, hp, flood)).encode()
        rs, closed, err = exchange(self.t, payload, background_send=True, seconds=15)
        self.one_refusal("100,000 headers (%.1f MiB)" % (len(payload) / (1 << 20)), rs, closed, err, (431,))
        # headers that never end, 2 MiB of them
        payload = ("GET %s/keep HTTP/1.1\r\nHost: %s\r\n" % (self.cms, hp)).encode() + b"X-Endless: a\r\n" * 150000
        rs, closed, err = exchange(self.t, payload, background_send=True, seconds=15)
        self.one_refusal("2 MiB of headers with no end", rs, closed, err, (431,))

    def phase_pipelining(self):
        t = self.t
        cms = self.cms
        reqs = []
        want = []
        for i in range(4):
            body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "pipe-%d" % i}, "data": {"i": str(i)}}).encode()
            reqs.append(build_request(t, "POST", cms, body))
            want.append((201, "pipe-%d" % i))
        for i in range(4):
            reqs.append(build_request(t, "GET", cms + "/pipe-%d" % i))
            want.append((200, "pipe-%d" % i))
        reqs.append(build_request(t, "GET", cms + "/pipe-missing"))
        want.append((404, None))
        reqs.append(build_request(t, "GET", cms + "?resourceVersion=abc"))
        want.append((400, None))
        reqs.append(build_request(t, "PATCH", cms + "/pipe-1", b'{"data":{"patched":"yes"}}',
                                  "application/merge-patch+json"))
        want.append((200, "pipe-1"))
        reqs.append(build_request(t, "DELETE", cms + "/pipe-3"))
        want.append((200, "pipe-3"))
        reqs.append(build_request(t, "GET", cms + "/pipe-3"))
        want.append((404, None))
        reqs.append(build_request(t, "GET", cms + "/pipe-0", close=True))
        want.append((200, "pipe-0"))
        self._pipeline("pipelined CRUD, %d requests in one write" % len(reqs), b"".join(reqs), want)
        # 200 GETs in one write, the last one closing
        reqs = [build_request(t, "GET", cms + "/pipe-%d" % (i % 3), close=(i == 199)) for i in range(200)]
        self._pipeline("200 pipelined GETs in one write", b"".join(reqs),
                       [(200, "pipe-%d" % (i % 3)) for i in range(200)])
        # pipelined byte by byte in 7-byte pieces
        reqs = b"".join(build_request(t, "GET", cms + "/pipe-%d" % i, close=(i == 2)) for i in range(3))
        self._pipeline("3 pipelined GETs sent 7 bytes at a time", reqs,
                       [(200, "pipe-%d" % i) for i in range(3)], piece=7)
        # a malformed request behind a good one: the good one is answered, then 400 and closed
        payload = build_request(t, "GET", cms + "/pipe-0") + b"GARBAGE\r\n\r\n" + build_request(t, "GET", cms + "/pipe-1")
        rs, closed, err = exchange(t, payload)
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "pipelined good then garbage")
        ok = (len(rs) == 2 and rs[0].status == 200 and rs[1].status == 400 and closed and not problems)
        check("pipelined: a GET, then garbage -> 200, then 400 and closed (the third not answered)", ok,
              "%s statuses %s, then %s" % (problems, [r.status for r in rs],
                                            "closed" if closed else "left open"))

    def _pipeline(self, name, payload, want, piece=None):
        c = Conn(self.t)
        problems = []
        got = []
        try:
            if piece:
                for i in range(0, len(payload), piece):
                    c.send(payload[i:i + piece])
                    time.sleep(0.0005)
            else:
                c.send_in_background(payload)
            deadline = time.monotonic() + 30
            for i, (status, name_) in enumerate(want):
                try:
                    r = c.read_response(deadline)
                except (Malformed, Timeout) as e:
                    problems.append("response %d: %s" % (i, type(e).__name__ + " " + str(e)))
                    break
                if r is None:
                    problems.append("closed after %d of %d responses" % (i, len(want)))
                    break
                problems += validate(r, name)
                got.append(r.status)
                if r.status != status:
                    problems.append("response %d: status %d, wanted %d: %r" % (i, r.status, status, r))
                elif name_:
                    try:  # an object, or (kube's DELETE) a Status naming it
                        doc = r.json()
                        n = doc["details"]["name"] if doc.get("kind") == "Status" else doc["metadata"]["name"]
                    except Exception:  # noqa: BLE001
                        n = None
                    if n != name_:
                        problems.append("response %d is for %s, wanted %s (out of order)" % (i, n, name_))
            if not problems:
                try:
                    if not c.wait_eof(5):
                        problems.append("not closed after Connection: close")
                except Malformed as e:
                    problems.append(str(e))
        finally:
            c.close()
        check(name + " -> every response in order", not problems,
              "\n".join(problems[:5]) + "\nstatuses: %s" % got)

    def phase_chunked(self):
        t = self.t
        hp = t.hostport
        cms = self.cms

        def post(name, chunks_bytes):
            return (("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n" % (cms, hp)).encode() + chunks_bytes)

        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "chunked-ok"}}).encode()
        good = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 10]), body[i:i + 10]) for i in range(0, len(body), 10))
        rs, closed, err = exchange(t, post("ok", good + b"0\r\n\r\n"), responses=1)
        check("a well-formed chunked POST -> 201", len(rs) == 1 and rs[0].status == 201 and err is None and
              not validate(rs[0], "chunked ok"), "%r %s" % (rs, err))

        def lie(n):
            return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}}).encode()

        # kube-apiserver answers a broken chunked body with 500 ("invalid byte in chunk length",
        # "malformed chunked encoding") and closes; muster may answer 400 or close. Either way
        # nothing is created and no success comes back.
        lies = [
            ("chunk size not hex", "lie-nothex", lambda b: b"zz\r\n" + b + b"\r\n0\r\n\r\n"),
            ("negative chunk size", "lie-negative", lambda b: b"-5\r\n" + b + b"\r\n0\r\n\r\n"),
            ("chunk size smaller than its data", "lie-smaller", lambda b: b"%x\r\n%s\r\n0\r\n\r\n" % (len(b) - 10, b)),
            ("chunk size 20 hex digits", "lie-overflow", lambda b: b"f" * 20 + b"\r\n" + b + b"\r\n0\r\n\r\n"),
            ("chunk size 2^64 - 1", "lie-max", lambda b: b"ffffffffffffffff\r\n" + b + b"\r\n0\r\n\r\n"),
            ("chunk without its CRLF", "lie-nocrlf", lambda b: b"%x\r\n%sXX0\r\n\r\n" % (len(b), b)),
            ("chunk size with a space inside", "lie-space", lambda b: b"1 0\r\n" + b + b"\r\n0\r\n\r\n"),
            ("chunked body cut by a half-close, size bigger than the data", "lie-bigger",
             lambda b: b"%x\r\n%s" % (len(b) + 100, b)),
            ("chunked body cut by a half-close before the last chunk", "lie-nolast",
             lambda b: b"%x\r\n%s\r\n" % (len(b), b)),
        ]
        for label, n, make in lies:
            rs, closed, err = exchange(t, post(n, make(lie(n))), half_close=True, seconds=10)
            problems = [str(err)] if err else []
            for r in rs:
                problems += validate(r, label, allow_5xx=True)
            if rs and not (400 <= rs[0].status < 600 and rs[0].status not in (501, 502, 503, 504)):
                problems.append("status %d" % rs[0].status)
            if len(rs) > 1:
                problems.append("%d responses" % len(rs))
            if not closed and not self.t.tls:  # (no half-close over TLS: nothing tells the end)
                problems.append("the connection stayed open")
            check("%s -> refused (4xx, or kube's 500) or cut, never a success" % label, not problems,
                  "; ".join(problems) + ("\n%r" % rs[0] if rs else ""))
            self.lie_names = getattr(self, "lie_names", []) + [n]

    def phase_content_length(self):
        t = self.t
        hp = t.hostport
        cms = self.cms

        def post(n, headers, body):
            return (("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\n" % (cms, hp, headers)).encode()
                    + body)

        def body(n):
            return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}}).encode()

        b = body("cl-bigger")
        rs, closed, err = exchange(t, post("cl-bigger", "Content-Length: %d\r\n" % (len(b) + 50), b),
                                   half_close=True, seconds=10)
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "CL bigger")
        if rs and not 400 <= rs[0].status < 500:
            problems.append("status %d" % rs[0].status)
        if not closed and not t.tls:
            problems.append("the connection stayed open after the half-close")
        check("Content-Length bigger than the body, then a half-close -> cut or 4xx, nothing created",
              not problems, "; ".join(problems) + ("\n%r" % rs[0] if rs else ""))
        self.lie_names = getattr(self, "lie_names", []) + ["cl-bigger"]

        # shorter than the body: the rest is the next request, here garbage
        b = body("cl-smaller")
        rs, closed, err = exchange(t, post("cl-smaller", "Content-Length: %d\r\n" % len(b), b + b"GARBAGE\r\n\r\n"))
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "CL smaller")
        ok = len(rs) == 2 and rs[0].status == 201 and rs[1].status == 400 and closed and not problems
        check("Content-Length shorter than what follows: the rest is garbage -> 201, then 400 and closed",
              ok, "%s statuses %s, then %s" % (problems, [r.status for r in rs],
                                                "closed" if closed else "left open"))
        self.extra_names = ["cl-smaller"]

        # a body over the 3 MiB limit, sent in full: 413 (muster before reading it, kube after)
        rs, closed, err = exchange(t, post("cl-x", "Content-Length: %d\r\n" % (4 << 20), b"x" * (4 << 20)),
                                   background_send=True, seconds=15)
        self.one_refusal("Content-Length of 4 MiB (over the 3 MiB body limit)", rs, closed, err, (413,))
        for label, headers, want in (
                ("Content-Length not a number", "Content-Length: abc\r\n", (400,)),
                ("Content-Length negative", "Content-Length: -1\r\n", (400,)),
                ("Content-Length with a sign", "Content-Length: +5\r\n", (400,)),
                ("two Content-Lengths that disagree", "Content-Length: 2\r\nContent-Length: 3\r\n", (400,)),
                ("Content-Length beyond 2^64", "Content-Length: 99999999999999999999999\r\n", (400, 413))):
            rs, closed, err = exchange(t, post("cl-x", headers, b'{"a":1}'), half_close=True, seconds=10)
            self.one_refusal(label, rs, closed, err, want)
        # a transfer coding the server cannot undo, chunked framing around it: kube (Go) answers
        # 501 and closes; a 4xx for the undecodable body is as good. One answer either way.
        b = body("te-gzip")
        payload = post("te-gzip", "Transfer-Encoding: gzip, chunked\r\n", b"%x\r\n%s\r\n0\r\n\r\n" % (len(b), b))
        rs, closed, err = exchange(t, payload, seconds=10, responses=1)
        self.one_refusal("Transfer-Encoding: gzip, chunked", rs, closed, err, (400, 415, 501),
                         close_required=False, allow_5xx=True)
        self.lie_names.append("te-gzip")
        # a Transfer-Encoding without chunked last: the body's length cannot be known (RFC 9112
        # 6.3: 400 and close; kube 501 and close). Here the body is a request of its own, which
        # must not be answered (it would be smuggled past a proxy that reads the body).
        smuggled = build_request(t, "GET", self.nsp + "?smuggled=1")
        payload = (("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: bogus\r\n\r\n" % (cms, hp)).encode() + smuggled)
        rs, closed, err = exchange(t, payload, seconds=10)
        self.one_refusal("Transfer-Encoding: bogus, the body a request of its own", rs, closed, err,
                         (400, 501), allow_5xx=True)
        # both Content-Length and chunked: kube (Go) reads it as chunked; a server may refuse it
        # with 400 instead; never may it read the length and take the rest as a request.
        b = body("cl-te")
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(b), b)
        payload = post("cl-te", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", chunked)
        rs, closed, err = exchange(t, payload, half_close=True, seconds=10)
        problems = [str(err)] if err else []
        for r in rs:
            problems += validate(r, "CL and TE")
        ok = len(rs) == 1 and rs[0].status in (201, 400) and not problems
        check("Content-Length and Transfer-Encoding: chunked together -> read as chunked (201) or 400, "
              "one response", ok, "%s %s" % (problems, rs or "no answer: the connection was %s without a "
                                             "response" % ("closed" if closed else "left silent")))
        self.extra_names.append("cl-te")
        # Expect: 100-continue: 100, then the answer
        b = body("expect-100")
        c = Conn(t)
        try:
            c.send(post("e", "Content-Length: %d\r\nExpect: 100-continue\r\n" % len(b), b""))
            first = None
            try:  # the body is sent only after the 100 (a client may also send it after a while)
                first = c.read_response(time.monotonic() + 5, interim_too=True)
            except Timeout:
                pass
            r = first
            if first is not None and first.status == 100:
                c.send(b)
                r = c.read_response(time.monotonic() + 10)
            check("Expect: 100-continue -> 100 then 201", first is not None and first.status == 100
                  and r is not None and r.status == 201 and not validate(r, "expect"),
                  "first: %r; then: %r" % (first, r))
        except (Malformed, Timeout, OSError) as e:
            check("Expect: 100-continue -> 100 then 201", False, e)
        finally:
            c.close()
        self.extra_names.append("expect-100")

    def check_lies_left_nothing(self):
        for n in getattr(self, "lie_names", []):
            r, problems = self.api.call("GET", self.cms + "/" + n)
            check("configmap %s from a lying request was not created" % n,
                  r is not None and r.status == 404 and not problems, "%r %s" % (r, problems))

    # ---- the end ------------------------------------------------------------------------------

    def consistency(self):
        api = self.api
        r, problems = api.call("GET", "/api/v1/namespaces")
        if not check("final: list namespaces -> 200", r is not None and r.status == 200 and not problems,
                     "%r %s" % (r, problems)):
            return
        bad = []
        count = 0
        for ns in (i["metadata"]["name"] for i in r.json()["items"]):
            for kind in ("configmaps", "pods"):
                base = "/api/v1/namespaces/%s/%s" % (urllib.parse.quote(ns), kind)
                lr, lp = api.call("GET", base)
                if lr is None or lr.status != 200 or lp:
                    bad.append("list %s: %r %s" % (base, lr, lp))
                    continue
                for item in lr.json().get("items", []):
                    name = item["metadata"]["name"]
                    gr, gp = api.call("GET", base + "/" + urllib.parse.quote(name))
                    count += 1
                    if gr is None or gp or gr.status != 200 or gr.json()["metadata"]["name"] != name:
                        bad.append("get %s/%s: %r %s" % (base, name, gr, gp))
        check("final: every namespace's configmaps and pods list and each of %d reads back" % count,
              not bad, "\n".join(bad[:10]))

    def delete_namespace(self):
        r, problems = self.api.call("DELETE", self.nsp)
        check("DELETE the test namespace -> 200/202", r is not None and r.status in (200, 202) and not problems,
              "%r %s" % (r, problems))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r, problems = self.api.call("GET", self.nsp)
            if r is not None and r.status == 404:
                break
            time.sleep(0.3)
        check("the test namespace is gone within 30 s", r is not None and r.status == 404, "%r %s" % (r, problems))

    # ---- the run --------------------------------------------------------------------------------

    def run(self):
        a = self.args
        t0 = time.monotonic()
        print("hostile suite against %s (namespace %s)" % (a.server, self.ns), flush=True)
        api = self.api
        try:
            api.obj("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": self.ns}})
            api.obj("POST", self.cms, {"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "keep", "labels": {"keep": "yes"}},
                                       "data": {"k": "v"}})
            # (kube-apiserver refuses pods until the namespace's default service account exists)
            deadline = time.monotonic() + 20
            while True:
                try:
                    api.obj("POST", self.nsp + "/pods", {
                        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
                    break
                except SetupError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            r, _ = api.call("GET", "/apis/scheduling.volcano.sh/v1beta1")
            self.has_volcano = r is not None and r.status == 200
        except (SetupError, Malformed, Timeout, OSError) as e:
            check("setup: the namespace, a configmap and a pod", False, e)
            return self.summary(t0, None, None, None)

        only = set(a.only.split(",")) if a.only else None
        on = lambda name: only is None or name in only  # noqa: E731
        kubectl = slow = idle = None
        if on("kubectl"):
            kubectl = KubectlLoop(a.kubectl, a.kubeconfig, self.work, a.kubectl_limit)
            ok, out = kubectl.warm_up()
            if not check("kubectl get pods -A answers (warm-up, not timed)", ok, short(out)):
                return self.summary(t0, None, None, None)
            kubectl.start()
        if on("slowloris"):
            slow = Slowloris(self.t, a.slowloris, a.header_timeout)
            slow.start()
        if on("idle"):
            idle = IdlePool(self.t, a.idle)
            idle_thread = threading.Thread(target=idle.open_all, daemon=True)
            idle_thread.start()

        phases = [("defects", self.phase_defects), ("header-size", self.phase_headers_size),
                  ("list-params", self.phase_list_params),
                  ("url-bytes", self.phase_url_bytes), ("foreground", self.phase_foreground),
                  ("request-lines", self.phase_request_lines), ("header-floods", self.phase_header_flood),
                  ("pipelining", self.phase_pipelining), ("chunked", self.phase_chunked),
                  ("content-length", self.phase_content_length)]
        for name, fn in phases:
            if not on(name):
                continue
            p0 = time.monotonic()
            print("--- %s" % name, flush=True)
            try:
                fn()
            except (SetupError, Malformed, Timeout, OSError, KeyError, ValueError) as e:
                check("phase %s ran to its end" % name, False, "%s: %s" % (type(e).__name__, e))
            print("    (%s: %.1f s)" % (name, time.monotonic() - p0), flush=True)

        if idle:
            print("--- idle keep-alive connections", flush=True)
            idle_thread.join(max(1.0, 60 - (time.monotonic() - t0)))
            check("%d keep-alive connections opened, each answered once" % a.idle,
                  not idle_thread.is_alive() and not idle.open_errors and len(idle.conns) == a.idle,
                  "%d opened, errors: %s" % (len(idle.conns), idle.open_errors[:5]))
        if slow:
            print("--- slowloris (waiting for the header timeout, %d s)" % a.header_timeout, flush=True)
            slow.done.wait(a.header_timeout + 40)
            self.check_slowloris(slow)
        if idle and idle.opened_at is not None and idle.conns:
            held = time.monotonic() - idle.opened_at
            errors = idle.reuse_all()
            check("the %d keep-alive connections, held %.0f s while the rest ran, each answer again"
                  % (len(idle.conns), held), not errors, "%d errors: %s" % (len(errors), errors[:5]))
            idle.close_all()

        print("--- the end", flush=True)
        self.check_lies_left_nothing()
        if self.deletions:
            self.wait_deletions()
        self.consistency()
        self.delete_namespace()
        if kubectl:
            kubectl.stop.set()
            kubectl.join(15)
        return self.summary(t0, kubectl, slow, idle)

    def check_slowloris(self, slow):
        n = len(slow.results)
        lo, hi = self.args.header_timeout - 2, self.args.header_timeout + 10
        cut = [c for c, _, _ in slow.results if c is not None]
        on_time = [c for c in cut if lo <= c <= hi]
        problems = []
        if slow.connect_errors:
            problems.append("%d connections refused: %s" % (len(slow.connect_errors), slow.connect_errors[:3]))
        if n - len(cut):
            problems.append("%d never cut (still open after %d s)" % (n - len(cut), self.args.header_timeout + 15))
        if len(cut) - len(on_time):
            problems.append("%d cut outside [%d, %d] s: %s" % (len(cut) - len(on_time), lo, hi,
                                                               sorted(c for c in cut if not lo <= c <= hi)[:10]))
        sent_bytes = []
        for _, data, sent in slow.results:
            sent_bytes.append(sent)
            if data:  # kube sends nothing; a well-formed response would do
                c = Conn.__new__(Conn)
                c.buf = bytearray(data)
                c.eof = True
                c.sock = None
                try:
                    r = c.read_response(time.monotonic() + 1)
                    if r is not None:
                        validate(r, "slowloris")
                except (Malformed, Timeout) as e:
                    problems.append("a slowloris connection got bytes that are no response: %s" % e)
        check("slowloris: %d connections at one byte a second, each cut by the header timeout "
              "(%d s; cut after %s s) with no answer" % (
                  self.args.slowloris, self.args.header_timeout,
                  "%.1f-%.1f" % (min(cut), max(cut)) if cut else "-"),
              n == self.args.slowloris and not problems,
              "; ".join(problems) + "\ncut after (s): min %s max %s; bytes sent: max %s" % (
                  min(cut) if cut else None, max(cut) if cut else None, max(sent_bytes) if sent_bytes else None))

    def summary(self, t0, kubectl, slow, idle):
        if kubectl is not None:
            lat = kubectl.latencies
            check("kubectl loop: %d runs while all this went on, every one answered correctly" % len(lat),
                  len(lat) >= 5 and not kubectl.failures, "%d runs; failures: %s" % (len(lat), kubectl.failures[:5]))
            mx = max(lat) if lat else None
            check("kubectl loop: every run within %.1f s (max %.3f s, median %.3f s)" % (
                kubectl.limit, mx or 0, sorted(lat)[len(lat) // 2] if lat else 0),
                  not kubectl.slow and lat, "\n".join(kubectl.slow[:10]))
        if self.args.server_pid:
            try:
                os.kill(self.args.server_pid, 0)
                alive = True
            except OSError:
                alive = False
            check("the server process (pid %d) is still alive" % self.args.server_pid, alive)
        r, problems = self.api.call("GET", "/healthz")
        check("the server still answers /healthz -> 200", r is not None and r.status == 200 and not problems,
              "%r %s" % (r, problems))
        with _lock:
            malformed = list(_malformed)
            responses = _responses
        check("every one of %d responses was well-formed HTTP (JSON bodies strict JSON, errors "
              "kube Statuses)" % responses, not malformed, "\n".join(malformed[:20]))
        print("%d passed, %d failed (%.1f s)" % (_passed, len(_failed), time.monotonic() - t0), flush=True)
        if _failed:
            print("failed:", flush=True)
            for f in _failed:
                print("  " + f, flush=True)
        return 1 if _failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", required=True, help="http://127.0.0.1:PORT (or https://)")
    p.add_argument("--kubeconfig", required=True, help="for the kubectl loop")
    p.add_argument("--kubectl", default="/usr/bin/kubectl")
    p.add_argument("--kubectl-limit", type=float, default=1.0, help="seconds each kubectl run may take")
    p.add_argument("--server-pid", type=int, default=0, help="checked alive at the end")
    p.add_argument("--header-timeout", type=int, default=32, help="the server's header timeout, s")
    p.add_argument("--slowloris", type=int, default=200, help="slowloris connections")
    p.add_argument("--idle", type=int, default=2000, help="idle keep-alive connections")
    p.add_argument("--tls-ca")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--reference-kube", action="store_true",
                   help="against a real kube-apiserver: accept its answers where muster's contract "
                        "(issue 18) is stricter")
    p.add_argument("--only", help="comma-separated phases to run (for working on the suite): "
                   "kubectl, slowloris, idle, defects, header-size, list-params, url-bytes, "
                   "foreground, request-lines, header-floods, pipelining, chunked, content-length")
    p.add_argument("--work", help="a folder for kubectl's cache (default: $TMPDIR); cleaned up")
    args = p.parse_args()
    suite = Suite(args)
    try:
        rc = suite.run()
    finally:
        shutil.rmtree(suite.work, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
