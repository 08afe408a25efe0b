# SPDX-License-Identifier: Apache-2.0
"""The PySpark example of spark-source/README.md, run against the bundle jar.

Makes a few hundred small files (binary, text with \\n and \\r\\n lines,
UTF-8, empty, hidden, in key=value directories), reads them with
format("bfo") and with Spark's own binaryFile / text sources, and compares
the rows (as multisets, exceptAll both ways); writes them back through
format("bfo") and compares what binaryFile reads there. Checks that libbfo
loaded where the tasks ran. Prints one line per comparison and exits 0 when
all agree, 1 otherwise.

usage: pyspark_check.py DATA_DIR [--spark-jars JAR] [--master MASTER]
  --spark-jars JAR  set spark.jars=JAR on the session builder (the PySpark
                    route); without it the jar must come from spark-submit
                    --jars / PYSPARK_SUBMIT_ARGS.
"""
import argparse
import os
import random
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def make_files(root, count, seed=17):
    """count files of 0-6 KB under root/k=0..2/dNN/, plus files both sources skip."""
    rnd = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "ζήτα", "日本", ""]
    for i in range(count):
        d = os.path.join(root, "k=%d" % (i % 3), "d%02d" % (i % 11))
        os.makedirs(d, exist_ok=True)
        kind = i % 4
        if kind == 0:        # binary, any byte (NUL, \r, \n, invalid UTF-8)
            data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 6000)))
        else:                # lines: \n, \r\n, with or without a last newline
            sep = "\r\n" if kind == 2 else "\n"
            lines = [" ".join(rnd.choice(words) for _ in range(rnd.randint(0, 12)))
                     for _ in range(rnd.randint(1, 80))]
            text = sep.join(lines) + (sep if kind != 3 else "")
            data = text.encode("utf-8")
        with open(os.path.join(d, "f%04d.%s" % (i, "bin" if kind == 0 else "txt")), "wb") as f:
            f.write(data)
    for name in ("empty.txt", ".hidden", "_SUCCESS"):
        with open(os.path.join(root, "k=0", "d00", name), "wb") as f:
            f.write(b"" if name == "empty.txt" else b"skipped by both\n")


def same_rows(name, ours, theirs):
    """True when the two DataFrames hold the same multiset of rows; prints the verdict."""
    n_ours, n_theirs = ours.count(), theirs.count()
    extra = ours.exceptAll(theirs)
    missing = theirs.exceptAll(ours)
    n_extra, n_missing = extra.count(), missing.count()
    ok = n_ours == n_theirs and n_extra == 0 and n_missing == 0 and n_ours > 0
    print("%s %s: bfo %d rows, reference %d rows, only in bfo %d, only in reference %d"
          % ("PASS" if ok else "FAIL", name, n_ours, n_theirs, n_extra, n_missing), flush=True)
    if not ok:
        for row in extra.limit(3).collect():
            print("  only in bfo:", str(row)[:200])
        for row in missing.limit(3).collect():
            print("  only in reference:", str(row)[:200])
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--spark-jars")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--files", type=int, default=400)
    args = ap.parse_args()

    src = os.path.join(args.data, "in")
    make_files(src, args.files)

    # Quiet and small shuffles for the comparisons; nothing here concerns the bfo scans.
    builder = SparkSession.builder.master(args.master).appName("bfo-pyspark-check") \
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false") \
        .config("spark.log.level", "WARN").config("spark.sql.shuffle.partitions", "4")
    if args.spark_jars:
        builder = builder.config("spark.jars", args.spark_jars)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    ok = True
    try:
        # --- the README's PySpark example
        files = spark.read.format("bfo").load(src)
        binary = spark.read.format("binaryFile").load(src)
        ok &= same_rows("binaryFile rows (path, modificationTime, length, content, k)", files, binary)
        # the comparison can fail: a reference without one file must differ
        fewer = binary.where(binary.path != binary.select(F.min("path")).first()[0])
        seen = files.exceptAll(fewer).count() == 1
        print("%s the comparison sees a file missing from the reference" % ("PASS" if seen else "FAIL"), flush=True)
        ok &= seen
        ok &= same_rows("metadata only (path, length)", files.select("path", "length"),
                        binary.select("path", "length"))
        lines = spark.read.format("bfo").option("format", "text").load(src)
        ok &= same_rows("text rows (value, k)", lines, spark.read.text(src))
        whole = spark.read.format("bfo").option("format", "text").option("wholetext", "true").load(src)
        ok &= same_rows("wholetext rows", whole, spark.read.text(src, wholetext=True))

        # --- a write through the jar, read back by binaryFile
        out = os.path.join(args.data, "out")
        rel = F.regexp_extract("path", r"/in/(.*)$", 1)
        files.select(rel.alias("path"), "content").write.format("bfo").save(out)
        written = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(out) \
            .select(F.regexp_extract("path", r"/out/(.*)$", 1).alias("p"), "content")
        ok &= same_rows("bfo write, read back by binaryFile (relative path, content)",
                        files.select(rel.alias("p"), "content"), written)

        # --- libbfo loaded where the tasks ran (not the Java fallback engine)
        engine = spark.range(0, 4, 1, 2).selectExpr(
            "reflect('io.github.bfo.Bfo', 'isNativeAvailable') AS native",
            "reflect('io.github.bfo.Bfo', 'nativeLocation') AS location",
            "reflect('io.github.bfo.Bfo', 'nativeUnavailableReason') AS reason").distinct().collect()
        native = all(r.native == "true" for r in engine)
        for r in engine:
            if r.native == "true":
                what = "loaded from %s" % java_optional(r.location)
            else:
                what = "not loaded: %s" % (java_optional(r.reason) or "no reason given")
            print("%s libbfo in the tasks' JVM: %s" % ("PASS" if native else "FAIL", what), flush=True)
        ok &= native
    finally:
        spark.stop()
    print("pyspark-check: %s (pyspark %s, master %s, %d files)"
          % ("all rows agree" if ok else "FAILED", spark.version, args.master, args.files), flush=True)
    return 0 if ok else 1


def java_optional(text):
    """The value of a java.util.Optional as reflect() prints it: "Optional[v]" -> v, "Optional.empty" -> None."""
    if text is None or text == "Optional.empty":
        return None
    if text.startswith("Optional[") and text.endswith("]"):
        return text[len("Optional["):-1]
    return text


if __name__ == "__main__":
    sys.exit(main())
