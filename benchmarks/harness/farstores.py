"""The servers behind the latency link (harness/link.py): an HDFS (a NameNode and DataNodes, each its own JVM)
and an S3 object store (MinIO), all in the link's network namespace; and the YARN minicluster on this side.

HDFS: the NameNode and DataNode main classes from the Hadoop jars the project builds against (hadoop-input's
test classpath, target/cluster-classpath.txt: Hadoop 3.4.1), each with a conf dir of its own, listening on the
namespace's address; the DataNodes register from it, so that is the address clients get for blocks. Their
storage (name dir, block files) is under the work dir on the local disk, so drop_caches empties the block files
from the page cache; the NameNode keeps its namespace in memory, as a running one does.

S3: MinIO (a real S3 server, one drive under the work dir), built from the Go module proxy with `go install`
when the binary is missing (minio_binary()). Root credentials made per run; the bucket made with one signed
PUT. Hadoop's S3A client (hadoop-aws and the AWS SDK bundle, benchmarks/s3a/pom.xml) talks to it path-style.

YARN: MiniMRYarnCluster (a ResourceManager, one NodeManager, the history server) in one JVM on this side, its
default file system the HDFS behind the link (jobs' staging goes over the link too, as on a cluster whose
NameNode is elsewhere).

Every process is started by PID and stopped by PID (Link.far_popen / stop_far for the far side, util.popen for
YARN); close() stops them, also on errors and signals.
"""

import datetime
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from . import native, util

HADOOP_MODULE = native.REPO / "hadoop-input"
S3A_POM = native.REPO / "benchmarks" / "s3a" / "pom.xml"
NN_PORT = 8020
NN_HTTP = 9870
DN_BASE_PORT = 9900                  # DataNode i: data 9900+10i, ipc +1, http +2 (the namespace is ours alone)
S3_PORT = 9000
BUCKET = "bfo-bench"
# MinIO's last published module version (the project went to source-only maintenance in 2025); pinned so that
# every run measures the same server. Override: BFO_MINIO_VERSION, or BFO_MINIO=/path/to/minio.
MINIO_MODULE = "github.com/minio/minio"
MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
SERVER_HEAP = {"namenode": "512m", "datanode": "384m", "yarn": "1g"}
# the small-file close retry: HDFS polls the NameNode from 400 ms for a file's last block unless told to start
# sooner; copying 20,000 files would take most of an hour. A load parameter (FsShell), off the clock.
LOAD_CONF = {"dfs.client.block.write.locateFollowingBlock.initial.delay.ms": "10"}


def java_opts():
    opens = []
    for p in ("java.lang", "java.util", "java.nio", "sun.nio.ch", "java.lang.reflect", "java.io", "java.net",
              "java.util.concurrent", "sun.security.util"):
        opens += ["--add-opens", f"java.base/{p}=ALL-UNNAMED"]
    return opens + ["-Djava.net.preferIPv4Stack=true"]


def write_site(path, props):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items())
    Path(path).write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')


def cluster_classpath():
    f = HADOOP_MODULE / "target" / "cluster-classpath.txt"
    if not f.is_file():
        raise RuntimeError(f"no {f}: mvn -B -pl hadoop-input -am package -DskipTests")
    return f.read_text().strip()


def _wait(pred, what, timeout, procs=()):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a server exited ({p.returncode}) before it was up")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not up after {timeout} s")
        time.sleep(0.3)


def _http_json(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.loads(r.read().decode())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------
# HDFS
# --------------------------------------------------------------------------
class FarHdfs:
    """A NameNode and `datanodes` DataNodes in link's namespace; uri is hdfs://FAR_IP:8020."""

    def __init__(self, link, work, datanodes=2, log_dir=None):
        self.link = link
        self.work = Path(work)
        self.datanodes = datanodes
        self.log_dir = Path(log_dir or work)
        self.uri = f"hdfs://{link.ip}:{NN_PORT}"
        self.procs = {}                  # role -> Popen
        self.logs = []
        self.client_conf = self.work / "conf-client"

    def _common(self):
        return {"fs.defaultFS": self.uri, "hadoop.tmp.dir": str(self.work / "tmp"),
                "dfs.replication": str(min(2, self.datanodes)), "dfs.namenode.rpc-address": f"{self.link.ip}:{NN_PORT}",
                "dfs.namenode.http-address": f"{self.link.ip}:{NN_HTTP}"}

    def _start(self, role, main, conf_dir, args=(), wait=False):
        cp = f"{conf_dir}:{cluster_classpath()}"
        log = open(self.log_dir / f"hdfs-{role}.log", "ab")
        self.logs.append(log)
        argv = ["java", f"-Xmx{SERVER_HEAP['namenode' if role == 'namenode' else 'datanode']}", "-XX:+UseSerialGC",
                *java_opts(), f"-Dhadoop.log.dir={self.log_dir}", "-cp", cp, main, *args]
        if wait:
            r = self.link.far_run(argv, capture=False, stdout=log, stderr=log, timeout=300)
            if not r.ok:
                raise RuntimeError(f"HDFS {role} {' '.join(args)} failed (exit {r.returncode}, see {log.name})")
            return None
        p = self.link.far_popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.procs[role] = p
        return p

    def start(self):
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        common = self._common()
        nn = self.work / "conf-nn"
        write_site(nn / "core-site.xml", common)
        write_site(nn / "hdfs-site.xml", {"dfs.namenode.name.dir": f"file://{self.work / 'name'}"})
        write_site(self.client_conf / "core-site.xml", common)
        write_site(self.client_conf / "hdfs-site.xml", {})
        self._start("namenode-format", "org.apache.hadoop.hdfs.server.namenode.NameNode", nn,
                    ["-format", "-force", "-nonInteractive"], wait=True)
        self._start("namenode", "org.apache.hadoop.hdfs.server.namenode.NameNode", nn)
        for i in range(self.datanodes):
            d = self.work / f"conf-dn{i}"
            port = DN_BASE_PORT + 10 * i
            write_site(d / "core-site.xml", common)
            write_site(d / "hdfs-site.xml", {
                "dfs.datanode.data.dir": f"file://{self.work / f'data{i}'}",
                "dfs.datanode.address": f"{self.link.ip}:{port}",
                "dfs.datanode.ipc.address": f"{self.link.ip}:{port + 1}",
                "dfs.datanode.http.address": f"{self.link.ip}:{port + 2}"})
            self._start(f"datanode{i}", "org.apache.hadoop.hdfs.server.datanode.DataNode", d)
        jmx = (f"http://{self.link.ip}:{NN_HTTP}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")

        def live():
            j = _http_json(jmx)
            beans = (j or {}).get("beans") or [{}]
            return beans[0].get("NumLiveDataNodes", 0) >= self.datanodes and beans[0].get("FSState") == "Operational"
        _wait(live, "HDFS", 180, list(self.procs.values()))
        safemode = _http_json(f"http://{self.link.ip}:{NN_HTTP}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")
        util.log(f"HDFS up at {self.uri}: NameNode PID {self.procs['namenode'].pid}, "
                 f"{self.datanodes} DataNodes (PIDs {', '.join(str(p.pid) for r, p in self.procs.items() if r != 'namenode')})"
                 + (f", safe mode: {((safemode or {}).get('beans') or [{}])[0].get('Safemode') or 'off'}"))
        return self

    def server_pids(self):
        return [p.pid for p in self.procs.values()]

    def close(self):
        for role in sorted(self.procs, reverse=True):     # DataNodes first
            self.link.stop_far(self.procs.pop(role))
        for f in self.logs:
            f.close()
        self.logs = []


# --------------------------------------------------------------------------
# S3: MinIO
# --------------------------------------------------------------------------
def minio_binary(workdir, no_build=False):
    """The MinIO server binary: BFO_MINIO, else <workdir>/bin/minio-VERSION/minio, built with `go install` from
    the Go module proxy when missing (a few minutes; the time and size are logged and returned)."""
    if os.environ.get("BFO_MINIO"):
        return Path(os.environ["BFO_MINIO"]), None
    version = os.environ.get("BFO_MINIO_VERSION", MINIO_VERSION)
    bindir = Path(workdir) / "bin" / f"minio-{version}"
    exe = bindir / "minio"
    if exe.is_file():
        return exe, None
    if no_build:
        raise RuntimeError(f"no {exe} (--no-build): GOBIN={bindir} go install {MINIO_MODULE}@{version}")
    go = util.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if not go:
        raise RuntimeError("the S3 rows need MinIO, built with Go (not found): set BFO_MINIO=/path/to/minio")
    log = Path(workdir) / "minio-build.log"
    util.log(f"building MinIO {version} with go install (a few minutes; log: {log})")
    bindir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOBIN=str(bindir), GOFLAGS="-buildvcs=false")
    t0 = time.monotonic()
    with open(log, "w") as lf:
        r = util.run([go, "install", f"{MINIO_MODULE}@{version}"], capture=False, stdout=lf, stderr=lf,
                     env=env, timeout=3600)
    secs = time.monotonic() - t0
    if not r.ok or not exe.is_file():
        raise RuntimeError(f"go install {MINIO_MODULE}@{version} failed (exit {r.returncode}, see {log})")
    size = exe.stat().st_size
    util.log(f"  built in {secs:.0f} s: {exe} ({size / 1e6:.0f} MB)")
    return exe, {"build_seconds": secs, "binary_bytes": size}


def s3a_classpath(workdir):
    """hadoop-aws and the AWS SDK bundle (benchmarks/s3a/pom.xml), as a classpath; the jars' total size."""
    out = Path(workdir) / "s3a-classpath.txt"
    log = Path(workdir) / "s3a-build.log"
    if not out.is_file() or out.stat().st_mtime < S3A_POM.stat().st_mtime:
        util.log(f"resolving hadoop-aws and the AWS SDK bundle with Maven (about 560 MB the first time; log: {log})")
        with open(log, "w") as lf:
            r = util.run(["mvn", "-B", "-q", "-f", S3A_POM, "dependency:build-classpath",
                          f"-Dmdep.outputFile={out}"], capture=False, stdout=lf, stderr=lf, timeout=3600)
        if not r.ok:
            raise RuntimeError(f"resolving hadoop-aws failed (exit {r.returncode}, see {log})")
    cp = out.read_text().strip()
    return cp, sum(os.path.getsize(j) for j in cp.split(":") if j)


def _sign(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _signed_headers(method, host, path, access, secret, region, body):
    """AWS Signature V4 headers of one path-style request without a query string."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz}
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, path, "", "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), signed, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = _sign(_sign(_sign(_sign(("AWS4" + secret).encode(), day), region), "s3"), "aws4_request")
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = f"AWS4-HMAC-SHA256 Credential={access}/{scope}, SignedHeaders={signed}, Signature={sig}"
    return headers


def s3_request(method, endpoint, path, access, secret, region="us-east-1", body=b""):
    """One AWS Signature V4 request (path-style); returns (status, body). Enough to make a bucket."""
    host = endpoint.split("://", 1)[1]
    headers = _signed_headers(method, host, path, access, secret, region, body)
    req = urllib.request.Request(endpoint + path, data=body if method in ("PUT", "POST") else None, method=method,
                                 headers={k: v for k, v in headers.items() if k != "host"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def s3_put_tree(endpoint, bucket, prefix, local, access, secret, threads=16):
    """Uploads every file under local to s3://bucket/prefix/RELATIVE (PUT per file, `threads` connections);
    returns the number of files. The bulk load of the set: S3A's FsShell -put wrote small files to MinIO at
    about 0.5 s a file per thread here (20,000 files: over 20 minutes), a plain PUT takes a few ms. Objects
    only, no directory markers: what most writers of S3 data leave, and what S3A lists as directories."""
    import http.client
    import queue
    import threading
    from urllib.parse import quote
    host = endpoint.split("://", 1)[1]
    files = sorted(p for p in Path(local).rglob("*") if p.is_file())
    q = queue.Queue()
    for p in files:
        q.put(p)
    errors = []

    def worker():
        conn = http.client.HTTPConnection(host, timeout=60)
        while not errors:
            try:
                p = q.get_nowait()
            except queue.Empty:
                break
            path = "/" + bucket + "/" + quote(f"{prefix}/{p.relative_to(local).as_posix()}")
            body = p.read_bytes()
            h = _signed_headers("PUT", host, path, access, secret, "us-east-1", body)
            try:
                conn.request("PUT", path, body=body, headers={k: v for k, v in h.items() if k != "host"})
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    errors.append(f"PUT {path}: HTTP {r.status}")
            except OSError as e:
                errors.append(f"PUT {path}: {e}")
        conn.close()
    ts = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise RuntimeError(f"uploading {local} to {bucket}/{prefix}: {errors[0]} ({len(errors)} errors)")
    return len(files)


class FarS3:
    """MinIO in link's namespace, one drive under work; endpoint http://FAR_IP:9000, bucket BUCKET."""

    def __init__(self, link, work, binary, log_dir=None):
        self.link = link
        self.work = Path(work)
        self.binary = Path(binary)
        self.log_dir = Path(log_dir or work)
        self.endpoint = f"http://{link.ip}:{S3_PORT}"
        self.access = "bfo" + secrets.token_hex(4)
        self.secret = secrets.token_hex(16)
        self.proc = None
        self.log = None
        self.version = None
        self.client_conf = self.work / "conf-client"     # FsShell insists on a core-site.xml

    def start(self):
        shutil.rmtree(self.work, ignore_errors=True)
        (self.work / "data").mkdir(parents=True)
        # the copy's S3A upload buffers under the work dir, not in a /tmp shared with others
        write_site(self.client_conf / "core-site.xml", dict(self.hadoop_conf(), **{"hadoop.tmp.dir": str(self.work / "tmp")}))
        self.version = (util.run([self.binary, "--version"]).stdout or "").strip().splitlines()[:1]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.work),
               "MINIO_ROOT_USER": self.access, "MINIO_ROOT_PASSWORD": self.secret,
               "MINIO_BROWSER": "off", "MINIO_UPDATE": "off", "MINIO_CALLHOME_ENABLE": "off"}
        self.log = open(self.log_dir / "minio.log", "ab")
        self.proc = self.link.far_popen([self.binary, "server", "--quiet", "--address", f"{self.link.ip}:{S3_PORT}",
                                         "--console-address", f"{self.link.ip}:{S3_PORT + 1}",
                                         str(self.work / "data")],
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env)

        def ready():
            try:
                with urllib.request.urlopen(self.endpoint + "/minio/health/ready", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False
        _wait(ready, "MinIO", 120, [self.proc])
        deadline = time.monotonic() + 60
        while True:     # "ready" can come before the server takes requests (503 XMinioServerNotInitialized)
            st, body = s3_request("PUT", self.endpoint, f"/{BUCKET}", self.access, self.secret)
            if st != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if st != 200:
            raise RuntimeError(f"MinIO: making bucket {BUCKET}: HTTP {st} {body[:300]!r}")
        util.log(f"MinIO up at {self.endpoint} (PID {self.proc.pid}), bucket {BUCKET}")
        return self

    @property
    def uri(self):
        return f"s3a://{BUCKET}"

    def put_tree(self, local, prefix):
        return s3_put_tree(self.endpoint, BUCKET, prefix, local, self.access, self.secret)

    def hadoop_conf(self):
        """S3A settings of a client of this server: endpoint, path-style access, the run's credentials. Every
        other S3A setting stays at Hadoop's default, for every method."""
        return {"fs.s3a.endpoint": self.endpoint, "fs.s3a.path.style.access": "true",
                "fs.s3a.access.key": self.access, "fs.s3a.secret.key": self.secret,
                "fs.s3a.endpoint.region": "us-east-1", "fs.s3a.connection.ssl.enabled": "false"}

    def server_pids(self):
        return [self.proc.pid] if self.proc else []

    def close(self):
        if self.proc:
            self.link.stop_far(self.proc)
            self.proc = None
        if self.log:
            self.log.close()
            self.log = None


# --------------------------------------------------------------------------
# YARN (this side)
# --------------------------------------------------------------------------
class Yarn:
    """MiniMRYarnCluster (RM, one NodeManager, history server) through Hadoop's MiniHadoopClusterManager -nodfs,
    on this side; default file system: default_fs. conf_file: the client configuration it writes."""

    MANAGER = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"

    def __init__(self, work, default_fs, log_dir):
        self.work = Path(work)
        self.default_fs = default_fs
        self.log_dir = Path(log_dir)
        self.proc = None
        self.log = None
        self.conf_file = self.work / "yarn-site-client.xml"

    def start(self):
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)

        def port():
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                return s.getsockname()[1]
        self.log = open(self.log_dir / "yarn.log", "ab")
        argv = ["java", f"-Xmx{SERVER_HEAP['yarn']}", *java_opts(), "-cp", cluster_classpath(), self.MANAGER,
                "-nodfs", "-nodemanagers", "1", "-rmport", str(port()), "-jhsport", str(port()),
                "-writeConfig", str(self.conf_file),
                "-D", f"fs.defaultFS={self.default_fs}",
                # a container's JVM reserves more virtual memory than YARN's 2.1 ratio allows; a nearly full disk
                # would take the NodeManager's only local dir out of service
                "-D", "yarn.nodemanager.vmem-check-enabled=false",
                "-D", "yarn.nodemanager.disk-health-checker.enable=false",
                "-D", f"yarn.nodemanager.local-dirs={self.work / 'nm-local'}",
                "-D", f"yarn.nodemanager.log-dirs={self.work / 'nm-logs'}",
                "-D", f"hadoop.tmp.dir={self.work / 'tmp'}"]
        self.proc = util.popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                               cwd=self.work)

        def up():
            return self.conf_file.is_file() and self.conf_file.read_text().rstrip().endswith("</configuration>")
        _wait(up, "YARN", 300, [self.proc])
        util.log(f"YARN minicluster up (PID {self.proc.pid}), default FS {self.default_fs}")
        return self

    def close(self):
        if self.proc:
            if self.proc.poll() is None:
                util._kill_group(self.proc, 15)
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    util._kill_group(self.proc)
                    self.proc.wait()
            util.forget(self.proc)
            self.proc = None
        if self.log:
            self.log.close()
            self.log = None
