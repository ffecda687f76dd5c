"""An idle server rests: with everything on (pushes configured, the in-process gateway, the
daemon) and nothing to do, no process keeps a core busy. Measured as CPU time over a window, which
a loaded machine can only lower: a loop that spins shows as most of a core whatever else runs."""
import time

from executables import idle_cpu, running_idle_deployment

# Past the first seconds (the spin this guards against began about 5 s after start, once the push
# dispatcher's first timed wait had run out).
SETTLE_SECONDS = 8
WINDOW_SECONDS = 5
# Idle work is keep-alives, a push check every few seconds and the gateway's heartbeat: a few
# milliseconds a second. A spinning loop is 50-100 % of a core.
MOST_OF_A_CORE = 0.10


def test_an_idle_deployment_uses_almost_no_cpu(swift_bin, tmp_path):
    with running_idle_deployment(swift_bin, tmp_path) as (pids, log):
        time.sleep(SETTLE_SECONDS)
        shares = idle_cpu(pids, WINDOW_SECONDS)
        busy = {name: share for name, share in shares.items() if share >= MOST_OF_A_CORE}
        log.seek(0)
        assert not busy, f"idle processes using a core: {busy}; log: {log.read()[-3000:]}"
