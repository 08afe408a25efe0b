"""The scenarios of benchmarks/bench, one entry each: bench parses the arguments and calls the entry's run.

Each run takes bench's parsed arguments and returns the exit status (0, 1 when a method failed or results
differ, 2 on an error, 128+N when interrupted). Modules are imported when their scenario runs, so a read
benchmark does not need Spark's or Hadoop's harness to import."""

import importlib
from typing import NamedTuple


class Scenario(NamedTuple):
    name: str
    help: str
    module: str          # harness module holding the entry point
    entry: str           # its function of (args) -> exit status
    methods: bool        # its methods are in methods.REGISTRY (listed by bench --help)

    def run(self, args):
        return getattr(importlib.import_module(f"harness.{self.module}"), self.entry)(args)


REGISTRY = {s.name: s for s in (
    Scenario("read", "read the sets (default)", "imagebench", "run", True),
    Scenario("w1", "write 100,000 x 4 KiB files durably on fresh file systems (--fs, default ext4,xfs)",
             "imagebench", "run", True),
    Scenario("m1", "copy sets (--sets, default 4k,mixed) from their image to a fresh file system "
                   "(--dest-fs, default ext4)", "imagebench", "run", True),
    Scenario("m2", "copy sets (--sets, default 4k,mixed) to another machine over ssh: a network namespace with its "
                   "own sshd behind a 1 Gbit/s veth, onto a fresh file system there (--dest-fs, default ext4)",
             "imagebench", "run", True),
    Scenario("m3", "re-sync: copy 100,000 x 4 KiB once, change 1% (rewritten), add 0.5%, delete 0.5%; the rerun "
                   "and a rerun with nothing changed, bfo cp -a --delete against rsync -a --delete, over ssh (the "
                   "m2 machine) and locally, as root and as --m3-user", "resync", "run_m3", False),
    Scenario("t1", "tar -c plain / --sort=inode / --use-bfo on the 4k and mixed sets", "tar", "main", False),
    Scenario("t2", "tar -x + sync plain / --use-bfo, a fresh ext4 per run", "tar", "main", False),
    Scenario("h1", "MapReduce on 100,000 small text files: BatchText vs CombineText", "hadoop", "run_h1", False),
    Scenario("h2", "MapReduce on 20,000 small text files in HDFS: BatchText vs CombineText", "hdfs", "run_h2", False),
    Scenario("h3", "split planning for millions of files (10,000,000 synthetic, 1,000,000 local empty files): "
                   "BatchText vs CombineText getSplits, time and heap in a -Xmx1g JVM", "plan", "run_h3", False),
    Scenario("h4", "one MapReduce job writes one file per record (100,000 x 4 KiB and the tree set): "
                   "BatchFileOutputFormat vs FileSystem.create per record and MultipleOutputs, on the local disk "
                   "(durable), on HDFS at 0.5 and 2 ms and S3 at 10 ms behind a link", "hadoopwrite", "run_h4", False),
    Scenario("s1", "Spark on 100,000 small files: bfo vs binaryFile and text", "spark", "main", False),
    Scenario("l1", "Hadoop (local runner, YARN) and Spark on 20,000 small text files on HDFS (0.5, 2 ms round trips) "
                   "and S3 (2, 10 ms) behind a link with latency, and on the local disk: bfo vs the incumbents",
             "latency", "run_l1", False),
)}
