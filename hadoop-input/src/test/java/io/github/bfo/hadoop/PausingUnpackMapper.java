/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.examples.Unpack;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;

import java.io.IOException;

/**
 * Unpack's mapper for {@link YarnClusterIT}'s kill: the first attempt of the
 * first task writes {@value #RECORDS_BEFORE_PAUSE} records, then leaves a
 * mark ({@code MARKS/ATTEMPT}, on the job's file system) and waits until it
 * is killed; every other attempt writes its records as Unpack does. Shipped
 * to the containers in a jar of its own (the job's {@code tmpjars}).
 */
public class PausingUnpackMapper extends Unpack.UnpackMapper {
    /** Where the marks go (a directory of the job's default file system). */
    public static final String MARKS = "bfo.test.pause.marks";
    static final int RECORDS_BEFORE_PAUSE = 40;
    private int records;

    @Override
    protected void map(Text key, BytesWritable value, Context context) throws IOException, InterruptedException {
        super.map(key, value, context);
        records++;
        if (records == RECORDS_BEFORE_PAUSE && context.getTaskAttemptID().getTaskID().getId() == 0
                && context.getTaskAttemptID().getId() == 0) {
            Path mark = new Path(context.getConfiguration().get(MARKS), context.getTaskAttemptID().toString());
            FileSystem.get(context.getConfiguration()).create(mark, false).close();
            while (true) {
                Thread.sleep(100);   // until the test kills this attempt
                context.progress();
            }
        }
    }
}
