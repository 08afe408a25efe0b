/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

import java.io.PrintStream;
import java.util.Arrays;

/**
 * The jars' main class, named like Hadoop's own examples jar so that
 * {@code hadoop jar bfo-hadoop-input-VERSION-job.jar wordcount IN OUT} works
 * as {@code hadoop jar hadoop-mapreduce-examples.jar wordcount IN OUT} does.
 * Not Hadoop's {@code ProgramDriver}: that calls the program's {@code main},
 * which exits the JVM, where a caller (a test, an embedding client) needs the
 * status back.
 */
public final class ExampleDriver {
    /** The program names, as Hadoop's examples jar spells them. */
    public static final String WORDCOUNT = "wordcount";
    public static final String PACK = "pack";
    public static final String UNPACK = "unpack";

    private ExampleDriver() {
    }

    /**
     * Runs the program named by {@code args[0]} with the remaining arguments
     * (generic options such as {@code -libjars} and {@code -D} included).
     *
     * @return the program's exit status; 2 for a missing or unknown name
     */
    public static int run(Configuration conf, String[] args) throws Exception {
        Tool program = args.length == 0 ? null : switch (args[0]) {
            case WORDCOUNT -> new WordCount();
            case PACK -> new Pack();
            case UNPACK -> new Unpack();
            default -> null;
        };
        if (program == null) {
            PrintStream err = System.err;
            if (args.length > 0) {
                err.println("Unknown program '" + args[0] + "' chosen.");
            }
            err.println("Valid program names are:");
            err.println("  " + WORDCOUNT + ": WordCount over many small files (BatchTextInputFormat, or --input-format "
                    + "combine|text to compare)");
            err.println("  " + PACK + ": small files into SequenceFiles of (path, bytes)");
            err.println("  " + UNPACK + ": SequenceFiles of (name, bytes) into one file per record "
                    + "(BatchFileOutputFormat, or --output-format plain|multiple to compare)");
            return 2;
        }
        return ToolRunner.run(conf, program, Arrays.copyOfRange(args, 1, args.length));
    }

    public static void main(String[] args) throws Exception {
        System.exit(run(new Configuration(), args));
    }
}
