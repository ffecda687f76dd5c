#!/usr/bin/env python3
"""A throwaway OTLP/HTTP traces collector for the benchmarks: accepts `POST /v1/traces`
(http/protobuf or http/json), answers 200 with an empty export response, keeps nothing, and
counts requests, bytes and spans (by name). `GET /counts` returns the counts as JSON.

    python3 bench/otlp_sink.py --port 4318        # prints {"url": ...} on its first line

bench/idle.py --tracing and bench/load.py --tracing start one each (`running_sink()`)."""
import argparse
import contextlib
import http.server
import json
import pathlib
import socket
import subprocess
import sys
import threading
import time
import urllib.request

# ExportTraceServiceRequest: 1 resource_spans; ResourceSpans: 2 scope_spans; ScopeSpans: 2 spans;
# Span: 5 name.
PATH_TO_SPANS = (1, 2, 2)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes):
    """(field number, bytes) of every length-delimited field of one message; others skipped."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            length, at = _varint(data, at)
            yield number, data[at:at + length]
            at += length
        else:
            raise ValueError(f"wire type {wire}")


def span_names_protobuf(body: bytes) -> list[str]:
    names = []
    for number, resource in _fields(body):
        if number != 1:
            continue
        for number, scope in _fields(resource):
            if number != 2:
                continue
            for number, span in _fields(scope):
                if number != 2:
                    continue
                names.append(next((value.decode() for field, value in _fields(span) if field == 5), "?"))
    return names


def span_names_json(body: bytes) -> list[str]:
    document = json.loads(body)
    return [span.get("name", "?")
            for resource in document.get("resourceSpans", [])
            for scope in resource.get("scopeSpans", [])
            for span in scope.get("spans", [])]


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.spans = 0
        self.names: dict[str, int] = {}
        self.errors = 0

    def add(self, size: int, names: list[str] | None):
        with self.lock:
            self.requests += 1
            self.bytes += size
            if names is None:
                self.errors += 1
                return
            self.spans += len(names)
            for name in names:
                self.names[name] = self.names.get(name, 0) + 1

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": self.requests, "bytes": self.bytes, "spans": self.spans, "unparsed": self.errors,
                    "names": dict(sorted(self.names.items(), key=lambda item: -item[1]))}


def serve(port: int) -> None:
    counts = Counts()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            is_json = "json" in (self.headers.get("Content-Type") or "")
            try:
                names = span_names_json(body) if is_json else span_names_protobuf(body)
            except Exception:  # noqa: BLE001 - counted, never fatal
                names = None
            counts.add(len(body), names)
            reply = b"{}" if is_json else b""
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if is_json else "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def do_GET(self):
            reply = json.dumps(counts.snapshot()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_address[1]}/v1/traces"}), flush=True)
    server.serve_forever()


class Sink:
    def __init__(self, process: subprocess.Popen, url: str):
        self.process, self.url = process, url

    def counts(self) -> dict:
        with urllib.request.urlopen(self.url.replace("/v1/traces", "/counts"), timeout=5) as reply:
            return json.loads(reply.read())


@contextlib.contextmanager
def running_sink():
    """The sink in its own process (not under the benchmark's GIL) on a free port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), "--port", str(port)],
                               stdout=subprocess.PIPE, text=True)
    try:
        url = json.loads(process.stdout.readline())["url"]
        deadline = time.monotonic() + 10
        sink = Sink(process, url)
        while True:
            try:
                sink.counts()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield sink
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=4318)
    serve(parser.parse_args().port)
