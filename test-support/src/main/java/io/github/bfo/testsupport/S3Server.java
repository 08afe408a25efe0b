/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.testsupport;

import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A real S3 server for tests: s3proxy (its jar-with-dependencies, which the
 * pom of each module whose tests use it copies to its target/s3proxy and
 * names in the system property bfo.s3proxy.jar) with its in-memory "transient" store, run as a
 * process of its own on 127.0.0.1 and a free port, with one bucket. Hadoop's
 * S3A client talks to it over HTTP as to any S3 endpoint ({@link #conf}).
 *
 * <p>The server runs under a small shell that kills it when this JVM's end
 * of the shell's standard input closes, so that a test JVM that dies (a
 * surefire timeout) leaves no server behind. {@link #kill} kills the server
 * itself, mid-request if need be, as a crashed server.
 */
public final class S3Server implements AutoCloseable {
    private static final java.util.concurrent.atomic.AtomicInteger SERVERS = new java.util.concurrent.atomic.AtomicInteger();
    public final String bucket;
    public static final String KEY = "bfo-test-key";
    public static final String SECRET = "bfo-test-secret";

    private final Path dir;
    private final Process shell;
    private final OutputStream lifeline;
    private final int port;

    public S3Server() throws IOException, InterruptedException {
        this("bfo-test");
    }

    /**
     * A server holding one bucket named prefix-PID-N: a name of its own, since Hadoop caches a file system per
     * bucket for the JVM, with the settings (the endpoint) of the first use.
     */
    public S3Server(String prefix) throws IOException, InterruptedException {
        this.bucket = prefix + "-" + ProcessHandle.current().pid() + "-" + SERVERS.incrementAndGet();
        String jar = System.getProperty("bfo.s3proxy.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("no s3proxy jar (system property bfo.s3proxy.jar, set by the pom): " + jar);
        }
        dir = Files.createTempDirectory("bfo-s3proxy");
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int p = freePort();
            Path props = dir.resolve("s3proxy.conf");
            Files.writeString(props, String.join("\n",
                    "s3proxy.endpoint=http://127.0.0.1:" + p,
                    "s3proxy.authorization=aws-v2-or-v4",
                    "s3proxy.identity=" + KEY,
                    "s3proxy.credential=" + SECRET,
                    "jclouds.provider=transient",
                    "jclouds.identity=bfo",
                    "jclouds.credential=bfo", ""));
            String java = ProcessHandle.current().info().command().orElse("java");
            // the server dies with the shell's stdin: read returns at EOF, whoever closed it (fd 3: a background
            // job's own stdin is /dev/null)
            Process sh = new ProcessBuilder("bash", "-c",
                    "exec 3<&0; \"$0\" -Xmx256m -jar \"$1\" --properties \"$2\" & pid=$!; "
                            + "(read -r _ <&3; kill -9 $pid 2>/dev/null) & wait $pid",
                    java, jar, props.toString())
                    .redirectErrorStream(true).redirectOutput(dir.resolve("s3proxy.log").toFile()).start();
            if (waitUp(sh, p)) {
                this.shell = sh;
                this.lifeline = sh.getOutputStream();
                this.port = p;
                createBucket();
                return;
            }
            sh.getOutputStream().close();
            sh.destroyForcibly();
            last = new IOException("s3proxy did not start on port " + p + ": " + Files.readString(dir.resolve(
                    "s3proxy.log")));
        }
        throw last;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** True once the server answers HTTP on port; false if its process ended first or after 60 s. */
    private static boolean waitUp(Process sh, int port) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (!sh.isAlive()) {
                return false;
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/").toURL()
                        .openConnection();
                c.setConnectTimeout(1000);
                c.setReadTimeout(5000);
                c.getResponseCode();   // any answer (403 without credentials) means it serves
                c.disconnect();
                return true;
            } catch (IOException e) {
                Thread.sleep(100);
            }
        }
        return false;
    }

    private S3Client client() {
        return S3Client.builder().endpointOverride(URI.create(endpoint())).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(KEY, SECRET)))
                .forcePathStyle(true).build();
    }

    private void createBucket() {
        try (S3Client s3 = client()) {
            s3.createBucket(b -> b.bucket(bucket));
        }
    }

    /** The keys of the multipart uploads pending under prefix (a key prefix in the bucket, no leading '/'). */
    public List<String> pendingUploads(String prefix) {
        try (S3Client s3 = client()) {
            return s3.listMultipartUploads(b -> b.bucket(bucket).prefix(prefix)).uploads().stream()
                    .map(u -> u.key()).sorted().toList();
        }
    }

    public String endpoint() {
        return "http://127.0.0.1:" + port;
    }

    /** s3a://BUCKET/path */
    public String uri(String path) {
        return "s3a://" + bucket + (path.startsWith("/") ? "" : "/") + path;
    }

    private org.apache.hadoop.conf.Configuration s3aConf() {
        org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration();
        conf().forEach(c::set);
        return c;
    }

    /** conf() for this server's bucket only (fs.s3a.bucket.BUCKET.*), beside another server's settings. */
    public Map<String, String> bucketConf() {
        Map<String, String> m = new LinkedHashMap<>();
        conf().forEach((k, v) -> m.put("fs.s3a.bucket." + bucket + "." + k.substring("fs.s3a.".length()), v));
        return m;
    }

    /**
     * S3A's settings for this server: endpoint, credentials, path-style requests over plain HTTP; and few,
     * short retries, so that a killed server fails a test in seconds, not after S3A's minutes of retries (a
     * few all the same: a pooled connection the server closed while idle fails its next request once).
     */
    public Map<String, String> conf() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("fs.s3a.endpoint", endpoint());
        m.put("fs.s3a.endpoint.region", "us-east-1");
        m.put("fs.s3a.access.key", KEY);
        m.put("fs.s3a.secret.key", SECRET);
        m.put("fs.s3a.path.style.access", "true");
        m.put("fs.s3a.connection.ssl.enabled", "false");
        m.put("fs.s3a.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
        m.put("fs.s3a.attempts.maximum", "3");
        m.put("fs.s3a.retry.limit", "3");
        m.put("fs.s3a.retry.interval", "10ms");
        m.put("fs.s3a.retry.throttle.limit", "1");
        m.put("fs.s3a.retry.throttle.interval", "10ms");
        m.put("fs.s3a.connection.establish.timeout", "2s");
        return m;
    }

    /** The pids of the server JVM (the shell's children but the watcher). */
    private List<ProcessHandle> server() {
        return shell.children().filter(p -> p.info().command().map(c -> c.endsWith("java")).orElse(false))
                .toList();
    }

    /** Kills the server at once (SIGKILL), as a crash: requests in flight see their connections reset. */
    public void kill() throws InterruptedException {
        for (ProcessHandle p : server()) {
            p.destroyForcibly();
            p.onExit().join();
        }
        shell.waitFor(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            // the cached S3A instance of this bucket (its connection pool and threads) goes with the server
            org.apache.hadoop.fs.FileSystem.get(URI.create("s3a://" + bucket + "/"), s3aConf()).close();
        } catch (IOException | RuntimeException e) {
            // none was made
        }
        try {
            lifeline.close();   // the watcher kills the server
        } catch (IOException e) {
            // already gone
        }
        if (!shell.waitFor(30, TimeUnit.SECONDS)) {
            kill();
            shell.destroyForcibly();
        }
        for (String f : new String[] {"s3proxy.conf", "s3proxy.log"}) {
            Files.deleteIfExists(dir.resolve(f));
        }
        Files.deleteIfExists(dir);
    }
}
