"""RSS of `lwt6 run` under a flood of neighbour solicitations from 60,000 made-up sources (20 s, raw socket from
the receiver's namespace) while a slow control client (one byte every 0.8 s) is connected: docs/BENCHMARKS.md,
*Hostile control clients and a neighbour flood*. Run as root: `python3 tests/kernel/measure_ns_flood_rss.py`
(`LWT6_BIN` chooses the build)."""
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ktlive import LIVE_BASE, LiveRouter, LiveTopo
from test_control_plane import spoofed_ns

def rss(pid):
    # lwt6 runs under `ip netns exec` (exec'd: same pid)
    with open(f"/proc/{pid}/status") as f:
        for l in f:
            if l.startswith("VmRSS"):
                return int(l.split()[1]) // 1024

t = LiveTopo("cm")
try:
    t.lwt6_mode()
    wd = tempfile.mkdtemp(prefix="lwt6-rss-")
    rt = LiveRouter(t.rns, "\n".join(LIVE_BASE) + "\n", wd, label="rss")
    frames = [spoofed_ns(i) for i in range(60000)]
    time.sleep(0.5)
    before = rss(rt.proc.pid)
    stop = threading.Event()
    def slow():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(rt.sock)
        while not stop.is_set():
            try:
                s.send(b"s")
            except OSError:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(rt.sock)
            time.sleep(0.8)
    th = threading.Thread(target=slow, daemon=True); th.start()
    t0 = time.monotonic(); n = 0; peak = before
    while time.monotonic() - t0 < 20:
        for f in frames[:5000]:
            t.d0.send(f)
        frames = frames[5000:] + frames[:5000]
        n += 5000
        peak = max(peak, rss(rt.proc.pid))
    stop.set()
    after = rss(rt.proc.pid)
    print(f"{os.environ.get('LWT6_BIN','new')}: frames {n} in 20 s, RSS before {before} MB, peak {peak} MB, after {after} MB")
    st = rt.stats() if rt.ctl("show","stats").returncode == 0 else {}
    print({k: st.get(k) for k in ("rx", "neigh_refused", "neigh_events_dropped", "neigh_learned")})
    rt.kill()
finally:
    t.destroy()
