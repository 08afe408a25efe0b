/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import org.apache.hadoop.conf.Configuration;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The command line of an example program: {@code -D key=value} anywhere
 * (ToolRunner takes it only before the first other argument), options with
 * a value ({@code --name value} or {@code --name=value}), flags, and the
 * paths. A bad argument is an IllegalArgumentException with a one-line
 * message for the program to print.
 */
final class JobArgs {
    final Map<String, String> options = new HashMap<>();
    final Set<String> flags = new HashSet<>();
    final List<String> paths = new ArrayList<>();
    /** Set when the program must return at once with it: 0 after --help (usage printed), 2 after a bad argument. */
    Integer exit;

    private JobArgs() {
    }

    /**
     * args parsed, or {@link #exit} set: prog names the program in errors, usage prints its usage. -D settings
     * go into conf; valued and flag name the accepted options (with their "--").
     */
    static JobArgs parse(String prog, String[] args, Configuration conf, Set<String> valued, Set<String> flag,
                         Consumer<PrintStream> usage) {
        JobArgs a;
        try {
            a = parse(args, conf, valued, flag);
        } catch (IllegalArgumentException e) {
            System.err.println(prog + ": " + e.getMessage());
            usage.accept(System.err);
            a = new JobArgs();
            a.exit = 2;
            return a;
        }
        if (a.flags.contains("--help")) {
            usage.accept(System.out);
            a.exit = 0;
        }
        return a;
    }

    private static JobArgs parse(String[] args, Configuration conf, Set<String> valued, Set<String> flag) {
        JobArgs a = new JobArgs();
        for (int i = 0; i < args.length; i++) {
            String s = args[i];
            if ((s.equals("-D") && i + 1 < args.length) || (s.startsWith("-D") && s.length() > 2)) {
                String kv = s.equals("-D") ? args[++i] : s.substring(2);
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("-D needs key=value: " + kv);
                }
                conf.set(kv.substring(0, eq), kv.substring(eq + 1));
            } else if (s.startsWith("--") && s.contains("=") && valued.contains(s.substring(0, s.indexOf('=')))) {
                a.options.put(s.substring(0, s.indexOf('=')), s.substring(s.indexOf('=') + 1));
            } else if (valued.contains(s) && i + 1 < args.length) {
                a.options.put(s, args[++i]);
            } else if (flag.contains(s) || s.equals("-h") || s.equals("--help")) {
                a.flags.add(s.equals("-h") ? "--help" : s);
            } else if (s.startsWith("--")) {
                throw new IllegalArgumentException("unknown option " + s);
            } else {
                a.paths.add(s);
            }
        }
        return a;
    }
}
