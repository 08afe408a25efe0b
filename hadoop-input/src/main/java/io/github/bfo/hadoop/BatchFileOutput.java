/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.fs.write.OutputDir;
import io.github.bfo.hadoop.fs.write.OutputJob;
import io.github.bfo.hadoop.fs.write.OutputPaths;
import io.github.bfo.hadoop.fs.write.OutputTask;
import io.github.bfo.hadoop.fs.write.TaskFiles;
import io.github.bfo.hadoop.fs.write.TaskReports;
import io.github.bfo.hadoop.fs.write.TaskSetup;
import io.github.bfo.hadoop.fs.write.WriteOptions;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;

import java.io.IOException;
import java.util.List;

/**
 * One job's {@link BatchFileOutputFormat}, made again from the job's
 * configuration wherever a piece of it runs (the client, the job's
 * committer, each task attempt): the output directory, the write machinery
 * of bfo-hadoop-fs for its file system ({@link OutputJob}: libbfo batches
 * on the local disk, Hadoop streams and renames on HDFS and the others,
 * multipart uploads on S3A), the staging directory
 * {@code OUT/_temporary-bfo-JOBID} and the task reports kept in it
 * ({@link TaskReports}). Both MapReduce APIs' committers and record writers
 * are this class's calls.
 *
 * <p>The protocol is FileOutputCommitter's (algorithm 1) with the files
 * staged by bfo: a task attempt's files are staged under names of its own
 * and reported when its writer closes; the task commit makes its report the
 * task's (one attempt per task); the job commit checks every task's files
 * together, publishes them, removes the staging directory and writes
 * {@code _SUCCESS}; an aborted task or job removes what it staged, and an
 * aborted job removes OUT when it made it and it is empty.
 */
public final class BatchFileOutput {
    private final Configuration conf;
    private final Path out;
    private final OutputDir dir;
    private final WriteOptions options;
    private final String stagingName;
    private OutputJob job;   // made when first needed; kept from the job's setup to its commit or abort
    private boolean outputMade;   // the job made OUT (also noted in the staging directory, for a later attempt)

    private BatchFileOutput(Configuration conf, Path out, JobID jobId) {
        if (out == null) {
            throw new IllegalArgumentException("bfo: no output directory (FileOutputFormat.setOutputPath)");
        }
        this.conf = conf;
        this.out = out;
        this.dir = OutputDir.of(out.toString(), conf);
        this.options = BfoOutputConfig.writeOptions(conf);
        this.stagingName = OutputPaths.stagingName(jobId.toString());
    }

    /** The output of the job jobId, writing to out. */
    public static BatchFileOutput of(Configuration conf, Path out, JobID jobId) {
        return new BatchFileOutput(conf, out, jobId);
    }

    /** The staging directory, where the tasks' files wait for the job commit. */
    public Path stagingPath() {
        return new Path(dir.qualified(), stagingName);
    }

    private synchronized OutputJob job() {
        if (job == null) {
            job = dir.newJob(stagingName, options, false);
        }
        return job;
    }

    private TaskReports reports() throws IOException {
        return new TaskReports(dir, stagingName, conf, options.commitThreads());
    }

    /** The staged name of an attempt: {@code task-} and its id. */
    static String attemptName(TaskAttemptID id) {
        return "task-" + id;
    }

    // ---- job ----

    /**
     * Makes OUT (noting it was made here) and the staging directory: a directory per task number, for as
     * many as the job has map or reduce tasks. A later attempt of the job's application master finds its
     * predecessor's staging directory: nothing of it can be recovered, it is removed first.
     */
    public void setupJob() throws IOException {
        boolean made = !dir.exists();
        if (conf.getInt(MRJobConfig.APPLICATION_ATTEMPT_ID, 0) > 0) {
            job().abort(List.of());
            reports().remove();
            job = null;
        }
        int partitions = Math.max(1, Math.max(conf.getInt(MRJobConfig.NUM_MAPS, 1),
                conf.getInt(MRJobConfig.NUM_REDUCES, 1)));
        job().setup(partitions);
        TaskReports r = reports();
        r.create();
        if (made) {
            r.markOutputMade();
        }
        outputMade = made;
    }

    /** Publishes every committed task's files, removes the staging directory, writes {@code _SUCCESS}. */
    public void commitJob() throws IOException {
        TaskReports r = reports();
        outputMade |= r.outputMade();   // a failed commit removes the staging directory: the abort needs this
        List<TaskFiles> tasks = r.committed();
        job().commit(tasks);
        if (job().taskSetup().kind() == TaskSetup.Kind.UPLOADS) {
            r.remove();
        }
        if (conf.getBoolean(FileOutputCommitter.SUCCESSFUL_JOB_OUTPUT_DIR_MARKER, true)) {
            Path marker = new Path(out, FileOutputCommitter.SUCCEEDED_FILE_NAME);
            marker.getFileSystem(conf).create(marker, true).close();
        }
    }

    /** Removes what the job staged (uploads aborted), and OUT when the job made it and it is empty. */
    public void abortJob() throws IOException {
        TaskReports r = reports();
        List<TaskFiles> tasks;
        boolean made = outputMade;
        try {
            made |= r.outputMade();
            tasks = r.committed();
        } catch (IOException e) {
            tasks = List.of();
        }
        job().abort(tasks);
        if (job().taskSetup().kind() == TaskSetup.Kind.UPLOADS) {
            r.remove();
        }
        if (made) {
            FileSystem fs = out.getFileSystem(conf);
            FileStatus[] left = fs.exists(out) ? fs.listStatus(out) : null;
            if (left != null && left.length == 0) {
                fs.delete(out, false);
            }
        }
    }

    // ---- task ----

    /** The writer of one task attempt. */
    public OutputTask openTask(TaskAttemptID id) {
        return job().taskSetup().open(id.getTaskID().getId(), attemptName(id), conf);
    }

    /** Whether the local disk is written (by libbfo: FileSystem's statistics do not see the bytes). */
    public boolean isLocal() {
        return job().taskSetup().kind() == TaskSetup.Kind.LOCAL;
    }

    /** Saves an attempt's report when its writer has closed: what its task commit makes the task's. */
    public void saveTask(TaskAttemptID id, TaskFiles files) throws IOException {
        reports().save(attemptName(id), files);
    }

    public boolean needsTaskCommit(TaskAttemptID id) throws IOException {
        return reports().saved(attemptName(id));
    }

    public void commitTask(TaskAttemptID id) throws IOException {
        TaskReports r = reports();
        if (r.saved(attemptName(id))) {
            r.promote(attemptName(id), id.getTaskID().toString());
        }
    }

    /** Removes what the attempt staged (and its report), whether its writer is still there or not. */
    public void abortTask(TaskAttemptID id) throws IOException {
        TaskReports r = reports();
        String attempt = attemptName(id);
        TaskFiles report = null;
        try {
            report = r.attempt(attempt);
        } catch (IOException e) {
            // a report that cannot be read (cut short when the attempt died): its files are found by name
        }
        job().abortAttempt(id.getTaskID().getId(), attempt, report);
        r.discard(attempt);
    }
}
