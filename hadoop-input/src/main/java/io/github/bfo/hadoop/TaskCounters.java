/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

/** {@link CounterSink}s over the two APIs' task contexts. */
final class TaskCounters {
    private TaskCounters() {
    }

    static CounterSink of(TaskAttemptContext context) {
        return new CounterSink() {
            @Override
            public void add(Enum<?> counter, long n) {
                Counter c = context.getCounter(counter);
                if (c != null && n != 0) {
                    c.increment(n);
                }
            }

            @Override
            public void add(String group, String name, long n) {
                Counter c = context.getCounter(group, name);
                if (c != null && n != 0) {
                    c.increment(n);
                }
            }
        };
    }

    static CounterSink of(Reporter reporter) {
        if (reporter == null) {
            return CounterSink.NONE;
        }
        return new CounterSink() {
            @Override
            public void add(Enum<?> counter, long n) {
                if (n != 0) {
                    reporter.incrCounter(counter, n);
                }
            }

            @Override
            public void add(String group, String name, long n) {
                if (n != 0) {
                    reporter.incrCounter(group, name, n);
                }
            }
        };
    }
}
