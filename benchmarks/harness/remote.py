"""M2's second machine: a network namespace on this host, joined to it by a
rate-limited veth pair, with its own sshd.

    host (sender)                          namespace bfo-m2-PID (receiver)
    bm2hPID 10.213.0.1/30  <--- veth --->  bm2nPID 10.213.0.2/30, lo
    tbf 1gbit burst 256kb latency 50ms     tbf 1gbit burst 256kb latency 50ms
                                           sshd -D -e -f <dir>/sshd_config

The namespace is a network namespace only: the receiver shares this host's
kernel (one drop_caches empties both sides' caches) and its mount namespace,
so a destination file system mounted on the host after sshd started is the
one the far side writes to. That is why sshd is started with
`nsenter --net=/run/netns/NS` and not `ip netns exec NS`: ip netns exec also
gives the command a mount namespace of its own, a copy taken when it starts,
and on a host whose / is a private mount (as here) no later mount reaches
it: the far side would write under the mount point, beside the file system
being measured. open() checks both (the far side's network namespace is the
namespace's, its mount namespace ours) before anything is timed.

Keys (host key, client key, authorized_keys) and the sshd config and log
live in <workdir>/m2-ssh-PID/, made anew per run and removed at the end.
Every ssh the methods run talks to the namespace's address only.

close() (also on errors, Ctrl-C, SIGTERM: use it as a context manager)
stops sshd and anything still running in the namespace, by PID, then
deletes the veth pair (its qdiscs go with it) and the namespace. A run
killed with SIGKILL leaves them behind: the next open() removes namespaces
named bfo-m2-PID whose PID is gone, with what ran in them.
"""

import ipaddress
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import util

NS_PREFIX = "bfo-m2-"
HOST_IP = "10.213.0.1"
FAR_IP = "10.213.0.2"
PREFIX = 30
RATE = "1gbit"                    # per direction, each veth end
RATE_BITS = 1e9                   # the same in bits per second (the link row of the table)
TBF = ["tbf", "rate", RATE, "burst", "256kb", "latency", "50ms"]
SSHD = "/usr/sbin/sshd"
USER = "root"


def pid_alive(pid):
    """A process with this PID exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _ns_pids(ns):
    if not util.which("ip"):
        return []
    r = util.run(["ip", "netns", "pids", ns])
    return [int(x) for x in (r.stdout or "").split() if x.isdigit()] if r.ok else []


def _kill_pids(pids, what):
    """SIGTERM, then SIGKILL what is still there after 3 s. By PID only."""
    pids = [p for p in pids if p != os.getpid()]
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    for p in pids:
        if pid_alive(p):
            util.warn(f"{what}: PID {p} still running after SIGTERM; SIGKILL")
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def clean_stale(workdir):
    """Remove namespaces (and key directories) of earlier M2 runs whose process is gone (killed with SIGKILL)."""
    for d in Path(workdir).glob("m2-ssh-*"):
        m = re.fullmatch(r"m2-ssh-(\d+)", d.name)
        if m and not pid_alive(int(m.group(1))):
            shutil.rmtree(d, ignore_errors=True)
    if not util.which("ip"):
        return
    r = util.run(["ip", "netns", "list"])
    for line in (r.stdout or "").splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(re.escape(NS_PREFIX) + r"(\d+)", name)
        if not m or pid_alive(int(m.group(1))):
            continue
        util.warn(f"removing network namespace {name} left by an earlier M2 run")
        _kill_pids(_ns_pids(name), f"namespace {name}")
        util.run(["ip", "link", "del", f"bm2h{m.group(1)}"])
        util.run(["ip", "netns", "del", name])


def missing_tools():
    """What M2 needs and this host lacks (names of Debian packages or commands), or []."""
    out = []
    for cmd, pkg in (("ip", "iproute2"), ("tc", "iproute2"), ("nsenter", "util-linux"), ("ssh", "openssh-client"),
                     ("ssh-keygen", "openssh-client"), ("scp", "openssh-client")):
        if not util.which(cmd):
            out.append(f"{cmd} ({pkg})")
    if not os.access(SSHD, os.X_OK):
        out.append(f"{SSHD} (openssh-server)")
    return out


class RemoteMachine:
    """The receiver machine (see the module's doc). ssh_argv() and rsh() give the client command every method
    uses: the same options for all, none tuning ciphers or compression."""

    def __init__(self, workdir):
        pid = os.getpid()
        self.ns = f"{NS_PREFIX}{pid}"
        self.veth_host = f"bm2h{pid}"      # at most 11 characters (IFNAMSIZ 16)
        self.veth_far = f"bm2n{pid}"
        self.ip = FAR_IP
        self.host_ip = HOST_IP
        self.dir = Path(workdir).resolve() / f"m2-ssh-{pid}"
        self.key = self.dir / "id_ed25519"
        self.sshd = None                     # subprocess.Popen of sshd (not tracked by util: see open())
        self.sshd_log = None
        self.made_ns = False
        self.made_veth = False
        self.info = {}

    # -- the client side ----------------------------------------------------
    def ssh_opts(self):
        return ["-i", str(self.key), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR"]

    def ssh_argv(self):
        """ssh with the options, without the host (as rsync -e / bfo --rsh take it)."""
        return ["ssh"] + self.ssh_opts()

    def rsh(self):
        """The same as one command string for --rsh / rsync -e (words, '...' quoting)."""
        return " ".join(shlex.quote(a) for a in self.ssh_argv())

    @property
    def login(self):
        return f"{USER}@{self.ip}"

    def run(self, remote_cmd, timeout=60, **kw):
        """Untimed: run a shell command on the machine."""
        return util.run(self.ssh_argv() + [self.login, remote_cmd], timeout=timeout, **kw)

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

    def _check_addresses(self):
        net = ipaddress.ip_network(f"{HOST_IP}/{PREFIX}", strict=False)
        r = util.run(["ip", "-4", "-o", "addr", "show"], check=True)
        for line in r.stdout.splitlines():
            m = re.search(r"\binet (\S+)", line)
            if m and ipaddress.ip_interface(m.group(1)).network.overlaps(net):
                raise RuntimeError(f"M2 wants {net} for its link, but this host already has {m.group(1)} "
                                   f"({line.split()[1]}); another M2 running?")
        r = util.run(["ip", "-4", "route", "show"], check=True)
        for line in r.stdout.splitlines():
            dst = line.split()[0] if line.split() else ""
            if dst == "default":
                continue
            try:
                if ipaddress.ip_network(dst, strict=False).overlaps(net):
                    raise RuntimeError(f"M2 wants {net} for its link, but this host routes it: {line}")
            except ValueError:
                continue

    def _keys(self):
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=False)
        for name in ("ssh_host_ed25519_key", "id_ed25519"):
            util.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"bfo-bench-m2-{name}",
                      "-f", self.dir / name], check=True)
        (self.dir / "authorized_keys").write_text((self.dir / "id_ed25519.pub").read_text())
        os.chmod(self.dir / "authorized_keys", 0o600)
        sftp = "/usr/lib/openssh/sftp-server"
        cfg = self.dir / "sshd_config"
        cfg.write_text("\n".join([
            "# bench M2: the receiver machine's sshd (made by benchmarks/harness/remote.py)",
            f"ListenAddress {self.ip}",
            "Port 22",
            f"HostKey {self.dir / 'ssh_host_ed25519_key'}",
            f"PidFile {self.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            # the keys are in a 0700 directory under the work dir, whose parents (/var/tmp: 1777) StrictModes
            # would refuse for authorized_keys
            "StrictModes no",
            "PrintMotd no",
            "UseDNS no",
            "MaxStartups 64",
            f"Subsystem sftp {sftp if os.access(sftp, os.X_OK) else 'internal-sftp'}",
            "LogLevel INFO",
            ""]))
        return cfg

    def _link(self):
        ip = ["ip"]
        util.run(ip + ["netns", "add", self.ns], check=True)
        self.made_ns = True
        util.run(ip + ["link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_far,
                       "netns", self.ns], check=True)
        self.made_veth = True
        util.run(ip + ["addr", "add", f"{self.host_ip}/{PREFIX}", "dev", self.veth_host], check=True)
        util.run(ip + ["-n", self.ns, "addr", "add", f"{self.ip}/{PREFIX}", "dev", self.veth_far], check=True)
        util.run(ip + ["-n", self.ns, "link", "set", "lo", "up"], check=True)
        util.run(ip + ["link", "set", self.veth_host, "up"], check=True)
        util.run(ip + ["-n", self.ns, "link", "set", self.veth_far, "up"], check=True)
        util.run(["tc", "qdisc", "add", "dev", self.veth_host, "root"] + TBF, check=True)
        util.run(["tc", "-n", self.ns, "qdisc", "add", "dev", self.veth_far, "root"] + TBF, check=True)
        route = util.run(["ip", "-4", "route", "get", self.ip], check=True).stdout.strip()
        if f"dev {self.veth_host}" not in route:
            raise RuntimeError(f"{self.ip} is not routed through {self.veth_host}: {route}")
        self.info.update(
            namespace=self.ns, veth=[self.veth_host, self.veth_far], host_ip=self.host_ip, ip=self.ip,
            prefix=PREFIX, route=route,
            qdisc_host=util.run(["tc", "qdisc", "show", "dev", self.veth_host]).stdout.strip(),
            qdisc_far=util.run(["tc", "-n", self.ns, "qdisc", "show", "dev", self.veth_far]).stdout.strip())

    def _start_sshd(self, cfg):
        os.makedirs("/run/sshd", exist_ok=True)       # sshd's privilege separation directory
        nsfile = f"/run/netns/{self.ns}"
        r = util.run(["nsenter", f"--net={nsfile}", "--", SSHD, "-t", "-f", cfg])
        if not r.ok:
            raise RuntimeError(f"sshd -t -f {cfg}: {(r.stderr or '').strip()[:500]}")
        self.sshd_log = open(self.dir / "sshd.log", "ab")
        # not util.popen: util.kill_children() runs whenever a workspace closes (after every run), and sshd
        # must outlive those; close() stops it by PID. Its own session: a Ctrl-C reaches only bench.
        self.sshd = subprocess.Popen(["nsenter", f"--net={nsfile}", "--", SSHD, "-D", "-e", "-f", str(cfg)],
                                     stdin=subprocess.DEVNULL, stdout=self.sshd_log, stderr=self.sshd_log,
                                     start_new_session=True)
        deadline = time.monotonic() + 20
        last = None
        while time.monotonic() < deadline:
            if self.sshd.poll() is not None:
                raise RuntimeError(f"sshd exited ({self.sshd.returncode}): {self._log_tail()}")
            last = self.run("true", timeout=10)
            if last.ok:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"cannot log in to {self.login}: {(last.stderr or '').strip()[:300] if last else ''}; "
                               f"sshd log: {self._log_tail()}")
        self.info.update(sshd_pid=self.sshd.pid, sshd_config=str(cfg), ssh=self.rsh(),
                         ssh_version=(util.run(["ssh", "-V"]).stderr or "").strip())

    def _log_tail(self):
        try:
            return (self.dir / "sshd.log").read_text(errors="replace").strip()[-500:]
        except OSError:
            return ""

    def _check_far_side(self):
        """The far side runs in our namespace's network namespace and in this process's mount namespace."""
        r = self.run("readlink /proc/self/ns/net /proc/self/ns/mnt", timeout=30)
        if not r.ok:
            raise RuntimeError(f"ssh {self.login}: {(r.stderr or '').strip()[:300]}")
        far_net, far_mnt = (r.stdout.split() + ["", ""])[:2]
        ns_ino = os.stat(f"/run/netns/{self.ns}").st_ino
        if far_net != f"net:[{ns_ino}]":
            raise RuntimeError(f"the far side's network namespace is {far_net}, not {self.ns}'s net:[{ns_ino}]")
        if far_mnt != os.readlink("/proc/self/ns/mnt"):
            raise RuntimeError(f"the far side's mount namespace {far_mnt} is not ours "
                               f"({os.readlink('/proc/self/ns/mnt')}): it would not see the destination mounts")
        self.info.update(far_net_ns=far_net, far_mnt_ns=far_mnt)

    def open(self):
        miss = missing_tools()
        if miss:
            raise RuntimeError("M2 needs: " + ", ".join(miss)
                               + " (apt-get install openssh-server openssh-client iproute2)")
        clean_stale(self.dir.parent)     # also done when the work dir's lock is taken (workspace.clean_stale)
        self._check_addresses()
        cfg = self._keys()
        self._link()
        self._start_sshd(cfg)
        self._check_far_side()
        util.log(f"M2 machine: namespace {self.ns}, {self.veth_host} {self.host_ip} <-> {self.veth_far} {self.ip} "
                 f"(tbf {RATE} each way), sshd PID {self.sshd.pid}")

    # -- tear down ------------------------------------------------------------
    def close(self):
        if self.sshd is not None:
            if self.sshd.poll() is None:
                self.sshd.terminate()               # by PID: the process we started (sshd, nsenter exec'd it)
                try:
                    self.sshd.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    util.warn(f"sshd PID {self.sshd.pid} still running after SIGTERM; SIGKILL")
                    self.sshd.kill()
                    self.sshd.wait()
            self.sshd = None
        if self.made_ns:
            # sessions of that sshd still running (a timed-out or interrupted run): in the namespace, ours
            _kill_pids(_ns_pids(self.ns), f"namespace {self.ns}")
        if self.made_veth:
            r = util.run(["ip", "link", "del", self.veth_host])     # the pair and both qdiscs with it
            if not r.ok and "Cannot find device" not in (r.stderr or ""):
                util.warn(f"ip link del {self.veth_host}: {(r.stderr or '').strip()}")
            self.made_veth = False
        if self.made_ns:
            r = util.run(["ip", "netns", "del", self.ns])
            if not r.ok:
                util.warn(f"ip netns del {self.ns}: {(r.stderr or '').strip()}")
            self.made_ns = False
        if self.sshd_log:
            self.sshd_log.close()
            self.sshd_log = None
        if self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
