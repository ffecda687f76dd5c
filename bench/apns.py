#!/usr/bin/env python3
"""APNs throughput on one HTTP/2 connection: ThreadDesk's `APNsClient` (release, through
`apns-bench`) beside aioapns, against the same APNs emulator (release) in one run; then the
emulator alone (h2load, one connection, the same number of streams in flight), to tell whether
the emulator is the limit.

    swift build -c release --scratch-path .build-release --product apns-bench
    swift build -c release --scratch-path .build-release --product apns-emulator
    python3 bench/apns.py --count 20000 --concurrency 100

It prints a Markdown table; copy it into bench/RESULTS.md with the machine and commit.
"""
import argparse
import asyncio
import json
import pathlib
import re
import shutil
import ssl
import subprocess
import sys
import time
import uuid

import aioapns
import aioapns.connection
import jwt
from aioapns import APNs, NotificationRequest, PushType

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEVICE = "ab" * 32
PAYLOAD = {"aps": {"alert": {"title": "New reply", "body": "Support answered your question."}, "badge": 1}, "messageId": "1"}


def release_bin() -> pathlib.Path:
    out = subprocess.run(["swift", "build", "-c", "release", "--scratch-path", ".build-release", "--show-bin-path"],
                         cwd=ROOT, check=True, capture_output=True, text=True)
    return pathlib.Path(out.stdout.strip())


async def aioapns_run(emulator: dict, count: int, concurrency: int) -> dict:
    host, port = emulator["url"].removeprefix("https://").split(":")

    class EmulatorProtocol(aioapns.connection.APNsDevelopmentClientProtocol):
        APNS_SERVER = host
        APNS_PORT = int(port)

    client = APNs(key=pathlib.Path(emulator["privateKeyPath"]).read_text(), key_id=emulator["keyID"],
                  team_id=emulator["teamID"], topic=emulator["topic"], use_sandbox=True, max_connections=1)
    context = ssl.create_default_context(cafile=emulator["caCertificatePath"])
    context.set_alpn_protocols(["h2"])
    client.pool.ssl_context = context
    client.pool.protocol_class = EmulatorProtocol

    def request():
        return NotificationRequest(device_token=DEVICE, message=PAYLOAD, notification_id=str(uuid.uuid4()),
                                   push_type=PushType.ALERT, priority=10)

    first = await client.send_notification(request())
    assert first.is_successful, first.description
    failed = 0

    async def worker(share: int):
        nonlocal failed
        for _ in range(share):
            result = await client.send_notification(request())
            failed += 0 if result.is_successful else 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(count // concurrency + (1 if i < count % concurrency else 0)) for i in range(concurrency)))
    seconds = time.perf_counter() - start
    return {"sent": count - failed, "failed": failed, "seconds": seconds, "perSecond": (count - failed) / seconds}


def h2load_run(emulator: dict, count: int, concurrency: int, workdir: pathlib.Path) -> dict | None:
    if not shutil.which("h2load"):
        return None
    token = jwt.encode({"iss": emulator["teamID"], "iat": int(time.time())},
                       pathlib.Path(emulator["privateKeyPath"]).read_text(), algorithm="ES256",
                       headers={"kid": emulator["keyID"]})
    body = workdir / "payload.json"
    body.write_text(json.dumps(PAYLOAD))
    out = subprocess.run(
        ["h2load", "-n", str(count), "-c", "1", "-m", str(concurrency), "-d", str(body),
         "-H", f"authorization: bearer {token}", "-H", f"apns-topic: {emulator['topic']}", "-H", "apns-push-type: alert",
         f"{emulator['url']}/3/device/{DEVICE}"],
        capture_output=True, text=True, timeout=600)
    rate = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", out.stdout)
    codes = re.search(r"status codes: (\d+) 2xx", out.stdout)
    if not rate:
        print(out.stdout, out.stderr, file=sys.stderr)
        return None
    return {"sent": int(codes.group(1)) if codes else 0, "seconds": float(rate.group(1)), "perSecond": float(rate.group(2))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    bin_dir = release_bin()
    import tempfile
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryFile(mode="w+") as log:
        emulator_process = subprocess.Popen([str(bin_dir / "apns-emulator"), "--port", "0"],
                                            stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            emulator = json.loads(emulator_process.stdout.readline())
            ours = json.loads(subprocess.run(
                [str(bin_dir / "apns-bench"), "--emulator", json.dumps(emulator), "--count", str(args.count),
                 "--concurrency", str(args.concurrency)], check=True, capture_output=True, text=True, timeout=900).stdout)
            theirs = asyncio.run(aioapns_run(emulator, args.count, args.concurrency))
            alone = h2load_run(emulator, args.count, args.concurrency, pathlib.Path(work))
        finally:
            emulator_process.terminate()
            emulator_process.wait(timeout=10)
    print(f"{args.count} pushes, {args.concurrency} in flight, one HTTP/2 connection each, same emulator\n")
    print("| client | pushes/s | failed | seconds |")
    print("|---|---|---|---|")
    print(f"| ThreadDesk APNsClient (release) | {ours['perSecond']:,.0f} | {ours['failed']} | {ours['seconds']:.2f} |")
    print(f"| aioapns {aioapns.__version__ if hasattr(aioapns, '__version__') else ''} | {theirs['perSecond']:,.0f} | {theirs['failed']} | {theirs['seconds']:.2f} |")
    if alone:
        print(f"| h2load (the emulator alone) | {alone['perSecond']:,.0f} | {args.count - alone['sent']} | {alone['seconds']:.2f} |")
    print(f"\nratio ThreadDesk / aioapns: {ours['perSecond'] / theirs['perSecond']:.2f}x")


if __name__ == "__main__":
    main()
