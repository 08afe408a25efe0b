/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.DataInputBuffer;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.hadoop.util.ReflectionUtils;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * BatchTextInputFormat cuts large files as TextInputFormat does (the same
 * FileSplits, at split.maxsize 64 KiB here) and reads them with its records:
 * lines, CRLF and a custom delimiter across split boundaries, empty lines,
 * lengths of N splits and around the 1.1 slop, bzip2 cut, gzip whole, many
 * small files packed beside them; both APIs; local .crc files.
 */
class LargeFileSplitTest {
    static final int S = 64 * 1024;

    @TempDir
    static java.nio.file.Path work;
    static java.nio.file.Path mix;
    static java.nio.file.Path bz2;
    static java.nio.file.Path delim;
    static java.nio.file.Path jobs;

    @BeforeAll
    static void data() throws Exception {
        mix = work.resolve("mix");
        TestData.largeFiles(mix, S, 1);
        TestData.manyFiles(mix.resolve("small"), 30, 9);
        bz2 = work.resolve("bz2");
        Random rnd = new Random(2);
        TestJobs.write(bz2.resolve("big.bz2"), TestData.bzip2(TestData.ascii(rnd, 24 * S, "\n")));
        TestJobs.write(bz2.resolve("small.bz2"), TestData.bzip2(TestData.ascii(rnd, S / 2, "\r\n")));
        TestJobs.write(bz2.resolve("plain.txt"), TestData.ascii(rnd, 3 * S, "\n"));
        delim = work.resolve("delim");
        TestData.largeDelimited(delim, S, 3);
        TestData.delimited(delim.resolve("small"));
        jobs = work.resolve("jobs");
        Files.createDirectories(jobs);
        Files.copy(mix.resolve("crlf-straddle.txt"), jobs.resolve("crlf-straddle.txt"));
        Files.copy(mix.resolve("nl-at.txt"), jobs.resolve("nl-at.txt"));
        Files.copy(mix.resolve("big.gz"), jobs.resolve("big.gz"));
        TestData.manyFiles(jobs.resolve("small"), 5, 10);
    }

    private static Configuration conf() {
        Configuration conf = TestJobs.localConf(work);
        conf.setLong(BfoInputConfig.SPLIT_MAXSIZE, S);
        return conf;
    }

    private static Job job(Configuration conf, java.nio.file.Path in) throws Exception {
        Job job = Job.getInstance(new Configuration(conf));
        FileInputFormat.addInputPath(job, new Path(in.toUri()));
        return job;
    }

    private static String describe(FileSplit s) throws Exception {
        return s.getPath() + "@" + s.getStart() + "+" + s.getLength() + " " + String.join(",", s.getLocations());
    }

    private static String describe(org.apache.hadoop.mapred.FileSplit s) throws Exception {
        return s.getPath() + "@" + s.getStart() + "+" + s.getLength() + " " + String.join(",", s.getLocations());
    }

    private static List<String> describe(List<? extends Object> splits) throws Exception {
        List<String> r = new ArrayList<>();
        for (Object s : splits) {
            if (s instanceof FileSplit) {
                r.add(describe((FileSplit) s));
            } else if (s instanceof org.apache.hadoop.mapred.FileSplit) {
                r.add(describe((org.apache.hadoop.mapred.FileSplit) s));
            } else {
                r.add(s.toString() + " " + String.join(",", List.of(((BatchFileSplit) s).getPaths()).stream()
                        .map(Object::toString).toList()));
            }
        }
        return r;
    }

    /** TextInputFormat's splits of the input, by file. */
    private static Map<String, List<FileSplit>> textSplits(Job job) throws Exception {
        Map<String, List<FileSplit>> byFile = new TreeMap<>();
        for (InputSplit s : new TextInputFormat().getSplits(job)) {
            FileSplit f = (FileSplit) s;
            byFile.computeIfAbsent(f.getPath().toString(), k -> new ArrayList<>()).add(f);
        }
        return byFile;
    }

    /**
     * The planning alone (no job): the large files' FileSplits are exactly TextInputFormat's, every
     * other file is in one batch split; the same in the old API; deterministic; Writable.
     */
    @Test
    void splitsAreTextInputFormatsForLargeFilesOnly() throws Exception {
        Job job = job(conf(), mix);
        List<InputSplit> ours = new BatchTextInputFormat().getSplits(job);
        Map<String, List<FileSplit>> text = textSplits(job);

        Set<String> expectedCut = new HashSet<>();
        List<String> expectedPieces = new ArrayList<>();
        for (Map.Entry<String, List<FileSplit>> e : text.entrySet()) {
            if (e.getValue().size() > 1) {
                expectedCut.add(e.getKey());
                for (FileSplit f : e.getValue()) {
                    expectedPieces.add(describe(f));
                }
            }
        }
        List<String> pieces = new ArrayList<>();
        Map<String, Integer> wholeIn = new TreeMap<>();
        for (InputSplit s : ours) {
            if (s instanceof FileSplit) {
                pieces.add(describe((FileSplit) s));
            } else {
                BatchFileSplit b = (BatchFileSplit) s;
                for (int i = 0; i < b.getNumPaths(); i++) {
                    wholeIn.merge(b.getPathString(i), 1, Integer::sum);
                }
            }
        }
        pieces.sort(null);
        expectedPieces.sort(null);
        assertEquals(expectedPieces, pieces, "the large files' splits are TextInputFormat's");
        for (String f : text.keySet()) {
            assertEquals(expectedCut.contains(f) ? null : (Integer) 1, wholeIn.get(f), f + ": in one batch or cut");
        }
        assertEquals(text.size() - expectedCut.size(), wholeIn.size());

        // the cases of the data set: a test that cannot fail is no test
        assertTrue(expectedCut.size() >= 15, expectedCut.size() + " files cut");
        assertEquals(4, text.get(file(mix, "nl-before.txt")).size(), "the last split holds 1.002 split sizes");
        assertEquals(3, text.get(file(mix, "exact-3s.txt")).size(), "3 splits for exactly 3 split sizes");
        assertEquals(1, text.get(file(mix, "slop-1.05.txt")).size());
        assertEquals(2, text.get(file(mix, "slop-1.15.txt")).size());
        assertEquals(1, text.get(file(mix, "slop-below.txt")).size());
        assertEquals(2, text.get(file(mix, "slop-above.txt")).size());
        assertTrue(Files.size(mix.resolve("big.gz")) > 2 * S, "gzip file large enough to be cut, were it splittable");
        assertEquals(1, wholeIn.get(file(mix, "big.gz")), "gzip stays whole");
        assertTrue(wholeIn.containsKey(file(mix, "slop-1.05.txt")));

        // deterministic; the old API's splits are the same, as mapred FileSplits
        assertEquals(describe(ours), describe(new BatchTextInputFormat().getSplits(job)));
        org.apache.hadoop.mapred.InputSplit[] old = new io.github.bfo.hadoop.mapred.BatchTextInputFormat()
                .getSplits(new JobConf(job.getConfiguration()), 1);
        assertEquals(describe(ours), describe(List.of(old)));

        // Writable, as the job's split file holds them
        for (InputSplit s : ours) {
            DataOutputBuffer out = new DataOutputBuffer();
            ((Writable) s).write(out);
            Writable back = ReflectionUtils.newInstance(((Writable) s).getClass().asSubclass(Writable.class), null);
            DataInputBuffer in = new DataInputBuffer();
            in.reset(out.getData(), out.getLength());
            back.readFields(in);
            if (s instanceof FileSplit) {
                assertEquals(s.toString(), back.toString(), "path, start, length (hosts go in the split meta info)");
            } else {
                assertEquals(describe(List.of(s)), describe(List.of(back)));
            }
        }

        // BatchFileInputFormat (one record per file) never cuts, in either API
        for (InputSplit s : new BatchFileInputFormat().getSplits(job)) {
            assertTrue(s instanceof BatchFileSplit);
        }
        for (org.apache.hadoop.mapred.InputSplit s : new io.github.bfo.hadoop.mapred.BatchFileInputFormat()
                .getSplits(new JobConf(job.getConfiguration()), 1)) {
            assertTrue(s instanceof BatchFileSplit);
        }
    }

    private static String file(java.nio.file.Path dir, String name) {
        return new Path(dir.resolve(name).toUri()).toString();
    }

    private static int pieces(Job job) throws Exception {
        int n = 0;
        for (InputSplit s : new BatchTextInputFormat().getSplits(job)) {
            n += s instanceof FileSplit ? 1 : 0;
        }
        return n;
    }

    /**
     * The records of every split of format (new API), read in this JVM as a task would read them
     * (no job: the local runner costs a tenth of a second a task): "file TAB offset TAB line", sorted.
     */
    static List<String> read(org.apache.hadoop.mapreduce.InputFormat<LongWritable, Text> format, Configuration conf,
                             java.nio.file.Path in) throws Exception {
        Job job = job(conf, in);
        List<String> out = new ArrayList<>();
        for (InputSplit s : format.getSplits(job)) {
            JobConf c = new JobConf(job.getConfiguration());   // a JobConf: the context keeps it, not a copy
            TaskAttemptContext ctx = new TaskAttemptContextImpl(c, new TaskAttemptID());
            try (RecordReader<LongWritable, Text> r = format.createRecordReader(s, ctx)) {
                r.initialize(s, ctx);
                while (r.nextKeyValue()) {
                    String file = c.get("mapreduce.map.input.file");
                    if (s instanceof FileSplit) {
                        String split = ((FileSplit) s).getPath().toString();
                        assertTrue(file == null || file.equals(split), file);
                        file = split;
                    }
                    out.add(file + "\t" + r.getCurrentKey().get() + "\t" + TestJobs.escape(r.getCurrentValue()));
                }
            }
        }
        out.sort(null);
        return out;
    }

    /** The same with an old-API format: the file from the FileSplit, or map.input.file. */
    static List<String> readOld(org.apache.hadoop.mapred.InputFormat<LongWritable, Text> format, Configuration conf,
                                java.nio.file.Path in) throws Exception {
        JobConf jc = new JobConf(job(conf, in).getConfiguration());
        if (format instanceof org.apache.hadoop.mapred.JobConfigurable) {
            ((org.apache.hadoop.mapred.JobConfigurable) format).configure(jc);
        }
        List<String> out = new ArrayList<>();
        for (org.apache.hadoop.mapred.InputSplit s : format.getSplits(jc, 1)) {
            JobConf c = new JobConf(jc);
            org.apache.hadoop.mapred.RecordReader<LongWritable, Text> r = format.getRecordReader(s, c, Reporter.NULL);
            try {
                LongWritable k = r.createKey();
                Text v = r.createValue();
                while (r.next(k, v)) {
                    String file = s instanceof org.apache.hadoop.mapred.FileSplit
                            ? ((org.apache.hadoop.mapred.FileSplit) s).getPath().toString() : c.get("map.input.file");
                    out.add(file + "\t" + k.get() + "\t" + TestJobs.escape(v));
                }
            } finally {
                r.close();
            }
        }
        out.sort(null);
        return out;
    }

    /**
     * BatchTextInputFormat's records are TextInputFormat's; with oldApi, the old API BatchTextInputFormat's
     * too; with otherLayouts, CombineTextInputFormat's and the old TextInputFormat's (which cut files
     * elsewhere, or not at all: records that do not depend on where files are cut).
     */
    private static void assertSameRecords(Configuration conf, java.nio.file.Path in, boolean oldApi,
                                          boolean otherLayouts) throws Exception {
        List<String> text = read(new TextInputFormat(), conf, in);
        assertTrue(text.size() > 100, text.size() + " records");
        TestJobs.assertSameLines(text, read(new BatchTextInputFormat(), conf, in),
                "BatchTextInputFormat vs TextInputFormat");
        if (oldApi) {
            TestJobs.assertSameLines(text, readOld(new io.github.bfo.hadoop.mapred.BatchTextInputFormat(), conf, in),
                    "old API BatchTextInputFormat vs TextInputFormat");
        }
        if (otherLayouts) {
            TestJobs.assertSameLines(text, read(new CombineTextInputFormat(), conf, in),
                    "CombineTextInputFormat vs TextInputFormat");
            TestJobs.assertSameLines(text, readOld(new org.apache.hadoop.mapred.TextInputFormat(), conf, in),
                    "old API TextInputFormat (its own split sizes) vs TextInputFormat");
        }
        int pieces = pieces(job(conf, in));
        assertTrue(pieces >= 2, pieces + " large-file splits");
    }

    @Test
    void recordsSameAsTextAndCombineTextInputFormat() throws Exception {
        Configuration conf = conf();
        assertSameRecords(conf, mix, true, true);
        // line.maxlength with lines longer than a split: Hadoop's LineRecordReader gives records that depend
        // on where the file is cut, and its old-API twin others again; BatchTextInputFormat gives the new
        // TextInputFormat's (the old one's twin reads its large files with the old reader, as it does)
        conf.setInt(BfoInputConfig.MAX_LINE_LENGTH, 300);
        assertSameRecords(conf, mix, false, false);
    }

    @Test
    void customDelimiterAcrossSplitBoundaries() throws Exception {
        Configuration conf = conf();
        // "||" among runs of "|": where a split starts inside such a run, Hadoop's LineRecordReader may
        // give another record than a read of the whole file (the old TextInputFormat here); CombineText and
        // BatchText cut where TextInputFormat does, and agree with it
        conf.set(BfoInputConfig.RECORD_DELIMITER, "||");
        assertSameRecords(conf, delim, true, false);
        TestJobs.assertSameLines(read(new TextInputFormat(), conf, delim), read(new CombineTextInputFormat(), conf,
                delim), "CombineTextInputFormat vs TextInputFormat");
        conf.set(BfoInputConfig.RECORD_DELIMITER, "\r\n");
        assertSameRecords(conf, mix, true, true);
    }

    /** bzip2 is a SplittableCompressionCodec: cut, and read by LineRecordReader, as TextInputFormat does. */
    @Test
    void bzip2IsCutAsTextInputFormatCutsIt() throws Exception {
        Configuration conf = conf();
        conf.setLong(BfoInputConfig.SPLIT_MAXSIZE, 2 * S);
        assertSameRecords(conf, bz2, true, false);
        long bzPieces = 0;
        for (InputSplit s : new BatchTextInputFormat().getSplits(job(conf, bz2))) {
            bzPieces += s instanceof FileSplit && ((FileSplit) s).getPath().getName().equals("big.bz2") ? 1 : 0;
        }
        assertTrue(bzPieces >= 2, bzPieces + " splits of big.bz2");
    }

    /**
     * End to end on the local runner (splits serialised in the job's split file, MapTask's BYTES_READ and
     * map.input.file): record dumps in both APIs and WordCount against TextInputFormat and
     * CombineTextInputFormat, on a few large and small files.
     */
    @Test
    void jobsBothApisAndWordCount() throws Exception {
        Configuration conf = conf();
        List<String> expected = read(new TextInputFormat(), conf, jobs);
        int pieces = pieces(job(conf, jobs));
        assertTrue(pieces >= 6, pieces + " large-file splits");

        TestJobs.Result bfo = TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), jobs);
        assertTrue(bfo.ok());
        TestJobs.assertSameLines(expected, bfo.lines(), "job: BatchTextInputFormat vs TextInputFormat");
        assertEquals(0, bfo.counter("test", "BAD_INPUT_FILE"), "map.input.file set for every split");
        assertEquals(pieces, bfo.counter(BfoCounter.LARGE_FILE_SPLITS));
        assertEquals(expected.size(), bfo.counter(TaskCounter.MAP_INPUT_RECORDS));
        assertTrue(bfo.counter(FileInputFormatCounter.BYTES_READ) >= totalBytes(jobs), "BYTES_READ covers the input");

        TestJobs.OldResult old = TestJobs.oldDump(conf, io.github.bfo.hadoop.mapred.BatchTextInputFormat.class,
                work.resolve("out"), jobs);
        TestJobs.assertSameLines(expected, old.lines(), "old API job: BatchTextInputFormat vs TextInputFormat");
        assertEquals(pieces, old.counter(BfoCounter.LARGE_FILE_SPLITS));
        assertTrue(old.counter(FileInputFormatCounter.BYTES_READ) >= totalBytes(jobs));

        Path in = new Path(jobs.toUri());
        Path out = new Path(work.resolve("out").toUri());
        TestJobs.Result wcBfo = TestJobs.wordCount(conf, BatchTextInputFormat.class, out, in);
        TestJobs.Result wcCombine = TestJobs.wordCount(conf, CombineTextInputFormat.class, out, in);
        TestJobs.Result wcText = TestJobs.wordCount(conf, TextInputFormat.class, out, in);
        assertTrue(wcBfo.ok() && wcCombine.ok() && wcText.ok());
        assertTrue(wcBfo.lines().size() > 30);
        TestJobs.assertSameLines(wcText.lines(), wcCombine.lines(), "WordCount: CombineText vs Text");
        TestJobs.assertSameLines(wcText.lines(), wcBfo.lines(), "WordCount: BatchText vs Text");
    }

    private static long totalBytes(java.nio.file.Path root) throws Exception {
        try (var s = Files.walk(root)) {
            return s.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    /**
     * A large file written through LocalFileSystem (with its .crc): its splits are verified by
     * LocalFileSystem itself, a corrupted byte in a middle split fails its reading as with
     * TextInputFormat, and bfo.input.verify.checksum=false reads it raw.
     */
    @Test
    void checksumsOfLargeFileSplits() throws Exception {
        Configuration conf = conf();
        java.nio.file.Path dir = work.resolve("crc");
        FileSystem local = FileSystem.getLocal(conf);
        Random rnd = new Random(4);
        for (int i = 0; i < 3; i++) {
            try (FSDataOutputStream o = local.create(new Path(dir.resolve("f" + i + ".txt").toUri()))) {
                o.write(TestData.ascii(rnd, i == 0 ? 3 * S : 300, "\n"));
            }
        }
        assertTrue(Files.exists(dir.resolve(".f0.txt.crc")));
        TestJobs.Result ok = TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), dir);
        assertTrue(ok.ok());
        TestJobs.assertSameLines(read(new TextInputFormat(), conf, dir), ok.lines(), "crc-verified job vs TextInputFormat");
        assertEquals(3, ok.counter(BfoCounter.LARGE_FILE_SPLITS));
        assertEquals(2, ok.counter(BfoCounter.CHECKSUM_FILES), "the small files' .crc, in the batch");

        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("f0.txt").toFile(), "rw")) {
            f.seek(S + 100);
            int b = f.read();
            f.seek(S + 100);
            f.write(b ^ 0x01);
        }
        assertThrows(ChecksumException.class, () -> read(new BatchTextInputFormat(), conf, dir));
        assertThrows(ChecksumException.class, () -> read(new TextInputFormat(), conf, dir), "as TextInputFormat");
        assertThrows(ChecksumException.class, () -> readOld(new io.github.bfo.hadoop.mapred.BatchTextInputFormat(),
                conf, dir), "old API");
        Configuration raw = new Configuration(conf);
        raw.setBoolean(BfoInputConfig.VERIFY_CHECKSUM, false);
        assertEquals(ok.lines().size(), read(new BatchTextInputFormat(), raw, dir).size(), "raw bytes");
        assertEquals(ok.lines().size(), readOld(new io.github.bfo.hadoop.mapred.BatchTextInputFormat(), raw, dir)
                .size(), "raw bytes, old API");
    }

    /** Hosts come from the block where a split starts (a file on three "datanodes"). */
    @Test
    void splitHostsAreThoseOfTheBlockWhereTheyStart() throws Exception {
        FileTable t = new FileTable();
        int d = t.dir("hdfs://nn:8020/data");
        long block = 3L * S;
        long len = 3 * block;
        org.apache.hadoop.fs.BlockLocation[] blocks = new org.apache.hadoop.fs.BlockLocation[3];
        for (int b = 0; b < 3; b++) {
            blocks[b] = new org.apache.hadoop.fs.BlockLocation(new String[] {"h" + b + ":9866"},
                    new String[] {"h" + b}, b * block, block);
        }
        org.apache.hadoop.fs.LocatedFileStatus st = new org.apache.hadoop.fs.LocatedFileStatus(
                new org.apache.hadoop.fs.FileStatus(len, false, 1, block, 0, new Path("hdfs://nn:8020/data/big.txt")),
                blocks);
        LargeFileCutter cutter = new LargeFileCutter(conf());
        t.add(d, "small.txt", 100, t.locations(null), false);
        t.noteIfLarge(cutter, new org.apache.hadoop.fs.FileStatus(100, false, 1, block, 0,
                new Path("hdfs://nn:8020/data/small.txt")));
        t.add(d, "big.txt", len, t.locations(blocks), false);
        t.noteIfLarge(cutter, st);
        assertEquals(Set.of(1), t.large.keySet());
        List<FileSplit> pieces = new ArrayList<>();
        int[] rest = SplitPlanner.cutLargeFiles(t, new int[] {0, 1}, cutter, pieces);
        assertEquals(1, rest.length);
        assertEquals(0, rest[0]);
        assertEquals(9, pieces.size());
        for (int i = 0; i < 9; i++) {
            assertEquals((long) i * S, pieces.get(i).getStart());
            assertEquals(S, pieces.get(i).getLength());
            assertEquals("h" + (i / 3), pieces.get(i).getLocations()[0]);
        }
        // a non-splittable codec: the same file stays whole
        t.add(d, "big.gz", len, t.locations(blocks), false);
        t.noteIfLarge(cutter, new org.apache.hadoop.fs.LocatedFileStatus(new org.apache.hadoop.fs.FileStatus(len,
                false, 1, block, 0, new Path("hdfs://nn:8020/data/big.gz")), blocks));
        assertNotNull(t.large.get(2));
        assertEquals(2, SplitPlanner.cutLargeFiles(t, new int[] {2, 0}, cutter, new ArrayList<>()).length);
    }
}
