/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.bench;

import io.github.bfo.BatchFileReader;
import io.github.bfo.FileBatch;
import io.github.bfo.FileData;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Warm-cache JMH benchmarks: reading a tree of small files that sits in the
 * page cache, with BatchFileReader (a list of paths, and readTree) against
 * a Files.readAllBytes loop and a parallel stream of it. Cold-cache numbers
 * come from the harness (benchmarks/bench with the bfo-java methods).
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar ReadBench                 # defaults below
 * java -jar benchmarks/target/benchmarks.jar ReadBench -p files=100000 -p size=4096
 * java -jar benchmarks/target/benchmarks.jar ReadBench -p dir=/some/tree  # an existing tree instead
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class ReadBench {
    /** Files generated (when dir is empty). */
    @Param("20000")
    public int files;
    /** Bytes per generated file. */
    @Param("4096")
    public int size;
    /** An existing tree to read instead of a generated one. */
    @Param("")
    public String dir;

    private Path root;
    private boolean generated;
    private List<Path> paths;
    private BatchFileReader reader;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        if (dir.isEmpty()) {
            root = Files.createTempDirectory("bfo-jmh");
            generated = true;
            Random r = new Random(1);
            byte[] b = new byte[size];
            for (int i = 0; i < files; i++) {
                Path p = root.resolve("d" + (i % 100)).resolve("f" + i);
                Files.createDirectories(p.getParent());
                r.nextBytes(b);
                Files.write(p, b);
            }
        } else {
            root = Path.of(dir);
        }
        try (Stream<Path> s = Files.walk(root)) {
            paths = new ArrayList<>(s.filter(Files::isRegularFile).toList());
        }
        reader = BatchFileReader.builder().build();
        // one pass so every benchmark starts with the tree in the page cache
        for (Path p : paths) {
            Files.readAllBytes(p);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        reader.close();
        if (generated) {
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                    Files.delete(p);
                }
            }
        }
    }

    private static long consume(ByteBuffer b) {
        long s = 0;
        while (b.remaining() >= 8) {
            s += b.getLong();
        }
        while (b.hasRemaining()) {
            s += b.get();
        }
        return s;
    }

    /** BatchFileReader over the (already listed) paths. */
    @Benchmark
    public long bfoJava() {
        long s = 0;
        try (FileBatch b = reader.read(paths)) {
            for (FileData f : b) {
                s += consume(f.data());
            }
        }
        return s;
    }

    /** BatchFileReader.readTree: listing included. */
    @Benchmark
    public long bfoJavaTree() {
        long s = 0;
        try (FileBatch b = reader.readTree(root)) {
            for (FileData f : b) {
                s += consume(f.data());
            }
        }
        return s;
    }

    /** Files.readAllBytes per path, one thread. */
    @Benchmark
    public void readAllBytesLoop(Blackhole bh) {
        for (Path p : paths) {
            try {
                bh.consume(consume(ByteBuffer.wrap(Files.readAllBytes(p))));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** paths.parallelStream().map(Files::readAllBytes) on the common pool. */
    @Benchmark
    public long readAllBytesParallel() {
        return paths.parallelStream().mapToLong(p -> {
            try {
                return consume(ByteBuffer.wrap(Files.readAllBytes(p)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }).sum();
    }
}
