/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

/**
 * Test hooks of the local writer, so that tests can make the overlaps of a
 * job's end with a task still writing happen one step at a time (no timing).
 * Both do nothing unless a test sets them; a test that sets one resets it.
 */
public final class WriteTestHooks {
    /** Runs in a local task after the staging directory was checked, before the attempt's directory is made. */
    public static volatile Runnable beforeWriterOpen = () -> { };
    /** Runs in a local job's end between the move of the staging directory and its removal. */
    public static volatile Runnable afterStagingMoved = () -> { };

    private WriteTestHooks() {
    }
}
