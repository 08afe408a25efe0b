/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a read is cut into partitions: bfo's model at Spark's defaults, Spark's exact rule (compared with
 * binaryFile's partitions, file by file) as soon as the user sets a packing knob, in the session or as an
 * option; rows identical to binaryFile's either way.
 */
class BfoPackingTest extends SparkTestBase {
    @TempDir
    static Path tmp;
    static Path many;     // 300 small files, every length different (so "largest first" has no ties)
    static Path four;     // 4 tiny files

    @BeforeAll
    static void data() throws Exception {
        Random r = new Random(7);
        many = tmp.resolve("many");
        for (int i = 0; i < 300; i++) {
            write(many, "d" + (i % 5) + "/f" + i, random(r, 1 + i * 13));
        }
        four = tmp.resolve("four");
        for (int i = 0; i < 4; i++) {
            write(four, "t" + i, random(r, 10 + i));
        }
    }

    @AfterEach
    void unsetConf() {
        for (String k : new String[] {BfoPacking.MAX_PARTITION_BYTES_CONF, BfoPacking.OPEN_COST_CONF,
            BfoPacking.MAX_PARTITION_NUM_CONF, "spark.sql.files.minPartitionNum"}) {
            spark.conf().unset(k);
        }
    }

    static Dataset<Row> bfo(Path dir, String... options) {
        var reader = spark.read().format("bfo").option("recursiveFileLookup", "true");
        for (int i = 0; i < options.length; i += 2) {
            reader = reader.option(options[i], options[i + 1]);
        }
        return reader.load(dir.toString());
    }

    static Dataset<Row> binaryFile(Path dir) {
        return spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(dir.toString());
    }

    /** The files of each partition that holds any, as the tasks see them (spark_partition_id), in a canonical order. */
    static List<TreeSet<String>> fileSets(Dataset<Row> df) {
        Map<Integer, TreeSet<String>> byPartition = new TreeMap<>();
        for (Row row : df.select(functions.col("path"), functions.spark_partition_id()).collectAsList()) {
            byPartition.computeIfAbsent(row.getInt(1), k -> new TreeSet<>()).add(row.getString(0));
        }
        List<TreeSet<String>> out = new ArrayList<>(byPartition.values());
        out.sort((a, b) -> a.first().compareTo(b.first()));
        return out;
    }

    static void assertPackedLikeBinaryFile(Dataset<Row> bfo, Path dir, String what) {
        Dataset<Row> expected = binaryFile(dir);
        assertEquals(expected.rdd().getNumPartitions(), bfo.rdd().getNumPartitions(), "partitions, " + what);
        assertEquals(fileSets(expected), fileSets(bfo), "files of each partition, " + what);
        assertSameRows(expected, bfo);
    }

    @Test
    void defaultsUseBfosModelWithAtLeastDefaultParallelismPartitions() {
        Dataset<Row> b = bfo(many);
        int parts = b.rdd().getNumPartitions();
        int parallelism = spark.sparkContext().defaultParallelism();
        int binaryFileParts = binaryFile(many).rdd().getNumPartitions();
        // 300 files of ~2 KB cost 300 * (2 KB + 128 KiB) ~ 40 MB: spread over the 2 cores, not Spark's
        // 300 * 4 MiB (10 partitions of 32 files at 128 MiB each)
        assertTrue(parts >= parallelism, parts + " partitions, parallelism " + parallelism);
        assertTrue(parts <= parallelism + 1, parts + " partitions");
        assertEquals(10, binaryFileParts);
        assertEquals(300, fileSets(b).stream().mapToInt(TreeSet::size).sum());
        assertTrue(bfoScan(b).scan().description().contains("packing=bfo(maxPartitionBytes=134217728, "
                + "openCostInBytes=131072, maxFilesPerPartition=4096"), bfoScan(b).scan().description());
        assertSameRows(binaryFile(many), b);
    }

    @Test
    void fewerNaturalPartitionsThanParallelismAreSplitEvenly() {
        // next fit at a split of (4 * (len + 128 KiB)) / 3 puts two tiny files together twice: 2 < 3
        spark.conf().set("spark.sql.files.minPartitionNum", "3");
        Dataset<Row> b = bfo(four);
        assertEquals(3, b.rdd().getNumPartitions());
        List<Integer> sizes = fileSets(b).stream().map(TreeSet::size).sorted().toList();
        assertEquals(List.of(1, 1, 2), sizes);
        assertSameRows(binaryFile(four), b);
        // minPartitionNum alone is not a packing knob: binaryFile (Spark's rule) makes 2 here
        assertEquals(2, binaryFile(four).rdd().getNumPartitions());
    }

    @Test
    void explicitSessionSettingsGiveExactlyBinaryFilesPartitions() {
        String[][] settings = {
            {BfoPacking.OPEN_COST_CONF, "4MB"},          // Spark's default value, but set: Spark's rule
            {BfoPacking.OPEN_COST_CONF, "8192"},
            {BfoPacking.MAX_PARTITION_BYTES_CONF, "64KB"},
            {BfoPacking.MAX_PARTITION_NUM_CONF, "3"}};
        for (String[] s : settings) {
            spark.conf().set(s[0], s[1]);
            try {
                Dataset<Row> b = bfo(many);
                assertPackedLikeBinaryFile(b, many, s[0] + "=" + s[1]);
                assertTrue(bfoScan(b).scan().description().contains("packing=spark("),
                        bfoScan(b).scan().description());
            } finally {
                spark.conf().unset(s[0]);
            }
        }
    }

    @Test
    void explicitSourceOptionsAreHonouredExactly() {
        spark.conf().set(BfoPacking.OPEN_COST_CONF, "8192");
        spark.conf().set(BfoPacking.MAX_PARTITION_BYTES_CONF, "100KB");
        List<TreeSet<String>> expected = fileSets(binaryFile(many));
        int expectedParts = binaryFile(many).rdd().getNumPartitions();
        unsetConf();
        for (String[] options : new String[][] {{"openCostInBytes", "8192", "maxPartitionBytes", "100KB"},
            {BfoPacking.OPEN_COST_CONF, "8k", BfoPacking.MAX_PARTITION_BYTES_CONF, "102400"}}) {
            Dataset<Row> b = bfo(many, options);
            assertEquals(expectedParts, b.rdd().getNumPartitions(), String.join(" ", options));
            assertEquals(expected, fileSets(b), String.join(" ", options));
            assertSameRows(binaryFile(many), b);
        }
        // maxFilesPerPartition: Spark's partitions (at the session's settings) cut into runs of at most 7
        int runs = 0;
        for (TreeSet<String> p : fileSets(binaryFile(many))) {
            runs += (p.size() + 6) / 7;
        }
        Dataset<Row> capped = bfo(many, "maxFilesPerPartition", "7");
        assertEquals(runs, capped.rdd().getNumPartitions());
        assertTrue(fileSets(capped).stream().allMatch(p -> p.size() <= 7));
        assertSameRows(binaryFile(many), capped);
    }
}
