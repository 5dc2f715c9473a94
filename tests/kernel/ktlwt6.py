"""Running lwt6 (`pcap` and `decode` subcommands) and checking its pcaps with tshark.

Everything that depends on the exact shape of lwt6's JSON lives here, in small functions.
"""
import json
import os
import subprocess
import tempfile
from pathlib import Path

from ktpcap import write_pcap, read_pcapng

REPO = Path(__file__).resolve().parents[2]


def lwt6_bin():
    return Path(os.environ.get("LWT6_BIN") or REPO / "target" / "release" / "lwt6")


class Lwt6Error(AssertionError):
    pass


class Lwt6Result:
    """Output of one `lwt6 pcap` run: frames per egress device (in order), all frames, stats."""

    def __init__(self, frames, stats, out_path, conf):
        self.all = frames                 # [(dev, bytes)]
        self.stats = stats or {}
        self.out_path = out_path
        self.conf = conf

    def on(self, dev):
        return [f for d, f in self.all if d == dev]

    def devs(self):
        return sorted({d for d, _ in self.all})

    def drops(self):
        return self.stats.get("dropped", 0)


class Lwt6:
    """Wraps the lwt6 binary; every output pcap is queued for the tshark check."""

    def __init__(self, binary, workdir, tshark_queue):
        self.bin = str(binary)
        self.dir = Path(workdir)
        self.n = 0
        self.tshark_queue = tshark_queue

    def _tmp(self, label, suffix):
        self.n += 1
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:80]
        return self.dir / f"{self.n:04d}-{safe}{suffix}"

    def pcap(self, conf_text, frames, in_dev="r0", label="run", extra=(), status=0):
        """Run `lwt6 pcap -c CONF --in-dev DEV IN OUT --stats -j [EXTRA...]` on frames; return Lwt6Result.
        `status` is the exit status expected (3: every IOAM trace to export was lost, docs/ioam.md)."""
        conf = self._tmp(label, ".conf")
        conf.write_text(conf_text)
        inp, out = self._tmp(label, ".in.pcap"), self._tmp(label, ".out.pcapng")
        write_pcap(inp, frames)
        argv = [self.bin, "pcap", "-c", str(conf), "--in-dev", in_dev, str(inp), str(out), "--stats", "-j", *extra]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if r.returncode != status:
            raise Lwt6Error(f"lwt6 failed (rc={r.returncode}, expected {status}): {' '.join(argv)}\nstderr:\n{r.stderr}\n"
                            f"config:\n{conf_text}")
        try:
            stats = json.loads(r.stdout) if r.stdout.strip() else {}
        except json.JSONDecodeError as e:
            raise Lwt6Error(f"lwt6 --stats -j printed invalid JSON ({e}): {r.stdout!r}")
        if not out.exists():
            raise Lwt6Error(f"lwt6 did not write {out}")
        try:
            frames_out = read_pcapng(out)
        except ValueError as e:
            raise Lwt6Error(f"lwt6 wrote an invalid pcapng: {e}")
        if frames_out:
            self.tshark_queue.add(out, label)
        return Lwt6Result(frames_out, stats, out, conf_text)

    def decode(self, path):
        """`lwt6 decode PATH -j` -> parsed JSON (one object per frame)."""
        r = subprocess.run([self.bin, "decode", str(path), "-j"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise Lwt6Error(f"lwt6 decode failed (rc={r.returncode}): {r.stderr}")
        try:
            return json.loads(r.stdout)
        except json.JSONDecodeError as e:
            raise Lwt6Error(f"lwt6 decode -j printed invalid JSON ({e}): {r.stdout[:500]!r}")


def ioam_traces_from_decode(frame_obj):
    """Extract IOAM traces from one frame object of `lwt6 decode -j`, whatever the nesting.

    A trace is any dict holding both "namespace" and "nodes". Node dicts are returned as they
    are; tests only read hop_limit, node_id, ingress_id and egress_id from them.
    """
    found = []

    def walk(x):
        if isinstance(x, dict):
            if "namespace" in x and "nodes" in x:
                found.append(x)
                return
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(frame_obj)
    return found


# --------------------------------------------------------------------------------------------
# tshark

SEVERITY_ERROR = 0x00800000


def tshark_problems(path):
    """Run tshark over one capture; return [(frame_no, message)] for Error-severity experts / malformed."""
    argv = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
            "-e", "frame.number", "-e", "_ws.expert.message", "-e", "_ws.expert.severity", "-e", "_ws.malformed"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return [(0, f"tshark failed (rc={r.returncode}): {r.stderr.strip()}")]
    bad = []
    for line in r.stdout.splitlines():
        cols = (line.split("\t") + ["", "", "", ""])[:4]
        num, msgs, sevs, malformed = cols
        msgs, sevs = msgs.split("|") if msgs else [], sevs.split("|") if sevs else []
        errs = [m for m, s in zip(msgs, sevs) if s.isdigit() and int(s) >= SEVERITY_ERROR]
        if errs or malformed:
            bad.append((int(num or 0), "; ".join(errs) or f"malformed: {malformed}"))
    return bad


class TsharkQueue:
    """Collects lwt6 output pcaps; check() merges them with mergecap and runs tshark once."""

    def __init__(self, workdir):
        self.dir = Path(workdir)
        self.items = []   # (path, label)
        self.n = 0

    def add(self, path, label):
        self.items.append((Path(path), label))

    def check(self):
        """Return a failure report (str) or None; empties the queue."""
        items, self.items = self.items, []
        if not items:
            return None
        self.n += 1
        merged = self.dir / f"tshark-batch-{self.n}.pcapng"
        # -a: concatenate in argument order, so frame numbers map back to files
        r = subprocess.run(["mergecap", "-a", "-w", str(merged)] + [str(p) for p, _ in items],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"mergecap could not read lwt6's pcapng output: {r.stderr.strip()}"
        counts = [len(read_pcapng(p)) for p, _ in items]
        bad = tshark_problems(merged)
        if not bad:
            return None
        lines = []
        for num, msg in bad[:30]:
            acc, where = 0, "?"
            for (p, label), c in zip(items, counts):
                if num <= acc + c:
                    where = f"{label} ({p.name}) frame {num - acc}"
                    break
                acc += c
            lines.append(f"{where}: {msg}")
        return f"tshark reports errors in {len(bad)} lwt6 output frame(s):\n" + "\n".join(lines)
