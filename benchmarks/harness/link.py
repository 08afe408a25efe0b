"""A link with latency: a network namespace ("the far side") joined to this host by two TAP devices and
harness/delaybridge.c, which holds every frame for a set one-way delay. The machines here have no netem
qdisc, so tc cannot delay; tc's tbf can still limit the rate (--rate).

    host (clients)                                   namespace bfo-lat-PID (servers)
    blh<PID> 10.215.N.1/30  <-- delaybridge -->      bln<PID> 10.215.N.2/30, lo
                            (delay each way)

Servers are started in the namespace with far_popen() (nsenter --net: the far side shares this host's
mount namespace and kernel, so one drop_caches empties both sides' page caches). Clients run on the host
and talk to Link.ip (10.215.N.2: the first N whose /30 this host does not use yet).

check_rtt() measures the round trip as ping(8) does (ICMP echo, answered by the far side's kernel, the reply
timed by the kernel's receive stamp) and fails when the median is off by more than 20% + 0.1 ms from 2 x the
one-way delay; it also records a UDP echo between two processes (what applications see, scheduling
included); throughput()
times a TCP stream through the link. set_delay() changes the delay of the running bridge (the servers and
their connections stay).

close() (also on errors, Ctrl-C, SIGTERM: use it as a context manager) stops the far side's processes and
the bridge by PID, deletes the namespace; the TAP devices go with the bridge (they are not persistent).
A run killed with SIGKILL leaves the namespace behind (the bridge ends with its parent): the next open()
removes namespaces named bfo-lat-PID whose PID is gone, with what runs in them.
"""

import ipaddress
import json
import os
import re
import select
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import util
from .remote import _kill_pids, _ns_pids, pid_alive

NS_PREFIX = "bfo-lat-"
PREFIX = 30
RTT_TOLERANCE = (0.20, 0.1e-3)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)   # Linux's value (also its SCM_ type); Python lacks it      # relative, absolute (seconds): the check's bound around 2 x delay

ECHO_SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)     # SO_RCVBUFFORCE (root): a burst waits, not dropped
except OSError:
    pass
s.bind((sys.argv[1], 0))
print(s.getsockname()[1], flush=True)
while True:
    data, peer = s.recvfrom(2048)
    if data == b"quit":
        break
    s.sendto(data, peer)
"""

SINK_SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
n = 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    n += len(b)
c.sendall(str(n).encode())
c.close()
"""


def clean_stale():
    """Namespaces of earlier runs whose process is gone (killed with SIGKILL): what runs in them, then them."""
    if not util.which("ip"):
        return
    r = util.run(["ip", "netns", "list"])
    for line in (r.stdout or "").splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(re.escape(NS_PREFIX) + r"(\d+)", name)
        if not m or pid_alive(int(m.group(1))):
            continue
        util.warn(f"removing network namespace {name} left by an earlier run")
        _kill_pids(_ns_pids(name), f"namespace {name}")
        util.run(["ip", "netns", "del", name])


def missing_tools():
    out = [f"{c} ({p})" for c, p in (("ip", "iproute2"), ("tc", "iproute2"), ("nsenter", "util-linux"))
           if not util.which(c)]
    if not os.path.exists("/dev/net/tun"):
        out.append("/dev/net/tun (the tun module)")
    return out


def _icmp_checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def bound(delay_s):
    """The RTT check's accepted interval around 2 x delay (seconds)."""
    want = 2 * delay_s
    slack = RTT_TOLERANCE[0] * want + RTT_TOLERANCE[1]
    return want - slack, want + slack


class Link:
    """See the module's doc. delay_s: one-way delay in seconds; rate: a tc rate ("1gbit") or None."""

    def __init__(self, bridge_bin, delay_s, rate=None, offload=True, rt_priority=10):
        pid = os.getpid()
        self.bin = str(bridge_bin)
        self.ns = f"{NS_PREFIX}{pid}"
        self.tap_host = f"blh{pid}"        # at most 10 characters (IFNAMSIZ 16)
        self.tap_far = f"bln{pid}"
        self.host_ip = self.ip = None      # chosen by open()
        self.delay_s = delay_s
        self.rate = rate
        self.offload = offload
        self.rt_priority = rt_priority
        self.bridge = None
        self.made_ns = False
        self.far = []                      # processes started in the namespace (Popen)
        self.info = {}
        self._lock = threading.Lock()

    # -- set up ---------------------------------------------------------------
    def __enter__(self):
        try:
            self.open()
        except BaseException:
            with util.cleaning():
                self.close()
            raise
        return self

    def __exit__(self, *exc):
        with util.cleaning():
            self.close()
        return False

    def _pick_addresses(self):
        """The first 10.215.N.0/30 (N = 0..255) that no address or route of this host overlaps: two links (a
        benchmark and a test) can run at once."""
        used = []
        for cmd in (["ip", "-4", "-o", "addr", "show"], ["ip", "-4", "route", "show"]):
            for line in util.run(cmd, check=True).stdout.splitlines():
                m = re.search(r"\binet (\S+)", line) if "addr" in cmd else re.match(r"(\d+\.\d+\.\d+\.\d+(/\d+)?)\s",
                                                                                   line)
                if m:
                    try:
                        used.append(ipaddress.ip_interface(m.group(1)).network)
                    except ValueError:
                        pass
        for n in range(256):
            net = ipaddress.ip_network(f"10.215.{n}.0/{PREFIX}")
            if not any(net.overlaps(u) for u in used):
                self.host_ip, self.ip = str(net.network_address + 1), str(net.network_address + 2)
                return
        raise RuntimeError("no free 10.215.N.0/30 for the link: 256 links running?")

    def open(self):
        miss = missing_tools()
        if miss:
            raise RuntimeError("the latency link needs: " + ", ".join(miss))
        clean_stale()
        self._pick_addresses()
        util.run(["ip", "netns", "add", self.ns], check=True)
        self.made_ns = True
        cmd = [self.bin, "--tap0", self.tap_host, "--tap1", self.tap_far, "--netns1", f"/run/netns/{self.ns}",
               "--delay-us", str(round(self.delay_s * 1e6))] + ([] if self.offload else ["--no-offload"]) \
            + (["--rt-priority", str(self.rt_priority)] if self.rt_priority else [])
        # not util.popen: kill_children() runs after every timed run, the bridge must outlive those; close()
        # stops it by PID. Its stdin is ours: at our end (even SIGKILL) it reads EOF and exits.
        self.bridge = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True, bufsize=1, start_new_session=True)
        line = self._bridge_line(timeout=10)
        if line != "ready":
            err = self.bridge.stderr.read() if self.bridge.poll() is not None else ""
            raise RuntimeError(f"delaybridge did not start: {line!r} {err.strip()[:300]}")
        ip = ["ip"]
        nsip = ["ip", "-n", self.ns]
        util.run(ip + ["addr", "add", f"{self.host_ip}/{PREFIX}", "dev", self.tap_host], check=True)
        util.run(nsip + ["addr", "add", f"{self.ip}/{PREFIX}", "dev", self.tap_far], check=True)
        util.run(nsip + ["link", "set", "lo", "up"], check=True)
        util.run(ip + ["link", "set", self.tap_host, "up"], check=True)
        util.run(nsip + ["link", "set", self.tap_far, "up"], check=True)
        if self.rate:
            tbf = ["tbf", "rate", self.rate, "burst", "256kb", "latency", "50ms"]
            util.run(["tc", "qdisc", "add", "dev", self.tap_host, "root"] + tbf, check=True)
            util.run(["tc", "-n", self.ns, "qdisc", "add", "dev", self.tap_far, "root"] + tbf, check=True)
        route = util.run(["ip", "-4", "route", "get", self.ip], check=True).stdout.strip()
        if f"dev {self.tap_host}" not in route:
            raise RuntimeError(f"{self.ip} is not routed through {self.tap_host}: {route}")
        self.info.update(namespace=self.ns, taps=[self.tap_host, self.tap_far], host_ip=self.host_ip, ip=self.ip,
                         bridge_pid=self.bridge.pid, offload=self.offload, rate=self.rate, route=route)
        util.log(f"link: namespace {self.ns}, {self.tap_host} {self.host_ip} <-delaybridge-> {self.tap_far} "
                 f"{self.ip}, one-way {self.delay_s * 1e3:g} ms" + (f", tbf {self.rate}" if self.rate else ""))

    def _bridge_line(self, timeout):
        """The bridge's next stdout line ('' at its end or after timeout seconds)."""
        out = self.bridge.stdout
        ready, _, _ = select.select([out], [], [], timeout)
        return out.readline().strip() if ready else ""

    def _command(self, cmd):
        with self._lock:
            if self.bridge is None or self.bridge.poll() is not None:
                raise RuntimeError("delaybridge is not running")
            self.bridge.stdin.write(cmd + "\n")
            self.bridge.stdin.flush()
            line = self._bridge_line(timeout=10)
        try:
            return json.loads(line)
        except ValueError:
            raise RuntimeError(f"delaybridge answered {line!r} to {cmd!r}")

    def set_delay(self, delay_s):
        """One-way delay of the running link; the servers and their connections stay."""
        self._command(f"delay {round(delay_s * 1e6)}")
        self.delay_s = delay_s

    def stats(self):
        return self._command("stats")

    # -- the far side ---------------------------------------------------------
    def far_argv(self, argv):
        """argv run in the namespace (its network only: same mount namespace, same files)."""
        return ["nsenter", f"--net=/run/netns/{self.ns}", "--"] + [str(a) for a in argv]

    def far_popen(self, argv, **kw):
        """Starts a server in the namespace (its own session); close() stops it by PID."""
        p = subprocess.Popen(self.far_argv(argv), start_new_session=True, **kw)
        self.far.append(p)
        return p

    def far_run(self, argv, **kw):
        return util.run(self.far_argv(argv), **kw)

    def stop_far(self, p, timeout=20):
        """Stops one far-side process (its process group: SIGTERM, then SIGKILL)."""
        if p.poll() is None:
            util._kill_group(p, 15)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                util.warn(f"far-side PID {p.pid} still running after SIGTERM; SIGKILL")
                util._kill_group(p)
                p.wait()
        if p in self.far:
            self.far.remove(p)

    # -- checks ---------------------------------------------------------------
    def _far_server(self, script):
        p = self.far_popen([sys.executable, "-c", script, self.ip], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([p.stdout], [], [], 10)
        port = p.stdout.readline().strip() if ready else ""
        if not port.isdigit():
            self.stop_far(p)
            raise RuntimeError(f"a test server in {self.ns} did not start: {p.stderr.read()[:300] if ready else ''}")
        return p, int(port)

    def measure_rtt(self, count=200, size=64):
        """Round trips of a UDP echo through the link (seconds): (median, p10, p90, lost)."""
        p, port = self._far_server(ECHO_SERVER)
        rtts, lost = [], 0
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(max(1.0, 20 * self.delay_s))
                payload = b"x" * size
                for i in range(count + 10):
                    t0 = time.perf_counter()
                    s.sendto(payload + str(i).encode(), (self.ip, port))
                    try:
                        while True:
                            data, _ = s.recvfrom(2048)
                            if data == payload + str(i).encode():
                                break
                    except socket.timeout:
                        lost += 1
                        continue
                    if i >= 10:                    # the first ones pay ARP and cold code
                        rtts.append(time.perf_counter() - t0)
                s.sendto(b"quit", (self.ip, port))
        finally:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self.stop_far(p)
        if len(rtts) < count // 2:
            raise RuntimeError(f"the link lost {lost} of {count + 10} echo packets")
        q = statistics.quantiles(rtts, n=10)
        return statistics.median(rtts), q[0], q[-1], lost

    def ping(self, count=200, size=56):
        """Round trips of ICMP echoes through the link, as ping(8) measures them (seconds): (median, p10, p90,
        lost). The far side's kernel answers (no process there to wait for a core), and the reply's time is the
        kernel's receive stamp (SO_TIMESTAMPNS, as ping uses), so a busy machine delaying this process's
        wake-up does not count: what is left is the link, the bridge and the two stacks."""
        rtts, lost = self.ping_samples(count, size)
        if len(rtts) < count // 2:
            raise RuntimeError(f"the link lost {lost} of {count + 5} ICMP echoes")
        q = statistics.quantiles(rtts, n=10)
        return statistics.median(rtts), q[0], q[-1], lost

    def ping_samples(self, count=200, size=56):
        """ping()'s round trips, each (seconds), and the number lost. The sending thread runs under SCHED_FIFO
        meanwhile (root; restored after): on a loaded machine a normal thread can lose the CPU between taking its
        send time and sending, which is this process's wait, not the link's."""
        try:
            prev = os.sched_getscheduler(0), os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
        except (OSError, AttributeError):
            prev = None
        try:
            return self._ping_samples(count, size)
        finally:
            if prev:
                os.sched_setscheduler(0, prev[0], prev[1])

    def _ping_samples(self, count, size):
        ident = os.getpid() & 0xFFFF
        rtts, lost = [], 0
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as s:
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            s.settimeout(max(1.0, 20 * self.delay_s))
            for seq in range(count + 5):
                body = seq.to_bytes(8, "big") + bytes(size - 8)
                hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
                pkt = struct.pack("!BBHHH", 8, 0, _icmp_checksum(hdr + body), ident, seq) + body
                t0 = time.time_ns()
                s.sendto(pkt, (self.ip, 0))
                try:
                    while True:
                        data, anc, _, _ = s.recvmsg(2048, 1024)
                        ihl = (data[0] & 0x0F) * 4
                        typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
                        if typ == 0 and rid == ident and rseq == seq:
                            break
                except socket.timeout:
                    lost += 1
                    continue
                t1 = next((struct.unpack("qq", d[:16]) for lv, ty, d in anc
                           if lv == socket.SOL_SOCKET and ty == SO_TIMESTAMPNS), None)
                t1 = t1[0] * 1_000_000_000 + t1[1] if t1 else time.time_ns()
                if seq >= 5:                       # the first ones pay ARP and cold code
                    rtts.append((t1 - t0) / 1e9)
        return rtts, lost

    def check_rtt(self, count=200, strict=True):
        """Measures the round trip (ping()); raises RuntimeError when its median is outside bound(delay). The
        UDP echo's round trip between two processes (measure_rtt()) is recorded beside it: what an application
        sees, scheduling on a busy machine included. Returns a dict (strict=False: its "ok" says, no raise)."""
        med, p10, p90, lost = self.ping(count)
        app = self.measure_rtt(min(count, 100))
        lo, hi = bound(self.delay_s)
        res = {"delay_ms": self.delay_s * 1e3, "rtt_set_ms": 2 * self.delay_s * 1e3, "rtt_median_ms": med * 1e3,
               "rtt_p10_ms": p10 * 1e3, "rtt_p90_ms": p90 * 1e3, "lost": lost, "bound_ms": [lo * 1e3, hi * 1e3],
               "udp_echo_median_ms": app[0] * 1e3, "udp_echo_p90_ms": app[2] * 1e3, "ok": lo <= med <= hi}
        util.log(f"link RTT: set {2 * self.delay_s * 1e3:.3f} ms, measured median {med * 1e3:.3f} ms "
                 f"(p10 {p10 * 1e3:.3f}, p90 {p90 * 1e3:.3f}; accepted {lo * 1e3:.3f}-{hi * 1e3:.3f}); "
                 f"UDP echo between processes: median {app[0] * 1e3:.3f} ms, p90 {app[2] * 1e3:.3f} ms")
        if not res["ok"] and strict:
            raise RuntimeError(f"the link's round trip is {med * 1e3:.3f} ms, not 2 x {self.delay_s * 1e3:g} ms "
                               f"within 20% + 0.1 ms ({lo * 1e3:.3f}-{hi * 1e3:.3f} ms)")
        return res

    def throughput(self, nbytes=256 << 20):
        """MB/s of one TCP stream from the host to the far side (decimal MB)."""
        p, port = self._far_server(SINK_SERVER)
        try:
            buf = b"\0" * (1 << 20)
            t0 = time.perf_counter()
            with socket.create_connection((self.ip, port), timeout=60) as s:
                left = nbytes
                while left > 0:
                    s.sendall(buf[:min(left, len(buf))])
                    left -= min(left, len(buf))
                s.shutdown(socket.SHUT_WR)
                got = int(s.recv(64).decode() or 0)
            secs = time.perf_counter() - t0
        finally:
            self.stop_far(p)
        if got != nbytes:
            raise RuntimeError(f"the far side received {got} bytes of {nbytes}")
        return nbytes / secs / 1e6

    # -- tear down ------------------------------------------------------------
    def close(self):
        for p in list(self.far):
            self.stop_far(p, timeout=10)
        if self.made_ns:
            # anything else still running in the namespace (started by a far-side process): ours
            _kill_pids(_ns_pids(self.ns), f"namespace {self.ns}")
        if self.bridge is not None:
            if self.bridge.poll() is None:
                try:
                    self.bridge.stdin.close()      # EOF: it prints its counters and exits
                    self.bridge.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    self.bridge.kill()
                    self.bridge.wait()
            try:
                tail = self.bridge.stdout.read().strip().splitlines()
                if tail:
                    self.info["bridge_final"] = json.loads(tail[-1])
            except (OSError, ValueError):
                pass
            self.bridge = None
        for dev in (self.tap_host,):               # gone with the bridge; a leftover would be ours by name
            if Path(f"/sys/class/net/{dev}").exists():
                util.run(["ip", "link", "del", dev])
        if self.made_ns:
            r = util.run(["ip", "netns", "del", self.ns])
            if not r.ok:
                util.warn(f"ip netns del {self.ns}: {(r.stderr or '').strip()}")
            self.made_ns = False
