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

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The fixed cost of a batch, warm cache: what a Spark task of bfo does per
 * partition (make a reader, read its files, close the reader), for batches
 * of 1, 32 and 1,000 files of 4 KiB, against a Files.readAllBytes loop over
 * the same files. Time per batch; the fixed cost is what a batch costs
 * beyond its files: t(n) - n x (t(1000) - t(32)) / 968.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar BatchCostBench
 * java -jar benchmarks/target/benchmarks.jar BatchCostBench -p engine=java
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class BatchCostBench {
    /** Files per batch. */
    @Param({"1", "32", "1000"})
    public int files;
    /** BatchFileReader.Engine, lower case. */
    @Param({"auto", "java"})
    public String engine;

    private static final int SIZE = 4096;
    private Path root;
    private List<Path> paths;
    private BatchFileReader.Builder builder;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        root = Files.createTempDirectory("bfo-jmh-cost");
        Random r = new Random(1);
        byte[] b = new byte[SIZE];
        paths = new ArrayList<>();
        for (int i = 0; i < files; i++) {
            Path p = root.resolve("f" + i);
            r.nextBytes(b);
            Files.write(p, b);
            paths.add(p);
        }
        builder = BatchFileReader.builder().engine(BatchFileReader.Engine.valueOf(engine.toUpperCase()));
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                Files.delete(p);
            }
        }
    }

    /** A reader per batch, as a task makes one. */
    @Benchmark
    public long readerPerBatch() throws IOException {
        long s = 0;
        try (BatchFileReader reader = builder.build(); FileBatch batch = reader.read(paths)) {
            for (FileData f : batch) {
                if (!f.isOk()) {
                    throw new IOException(f.failure());
                }
                s += f.data().get(0) + f.length();
            }
        }
        return s;
    }

    /** The same files read with Files.readAllBytes, one after another (the engine parameter is ignored). */
    @Benchmark
    public long readAllBytesLoop() throws IOException {
        if (!engine.equals("auto")) {
            return 0;   // one baseline is enough
        }
        long s = 0;
        for (Path p : paths) {
            byte[] b = Files.readAllBytes(p);
            s += b[0] + b.length;
        }
        return s;
    }
}
