/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.List;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Directories on a remote file system (HDFS, S3A, ...) listed a few at a
 * time: each listing is a round trip to the NameNode or the store, which a
 * listing of one directory after another waits out in turn. The caller's
 * lister lists one directory (and keeps what it found) and returns the
 * subdirectories to list next; the walk lists them as the threads allow
 * until none is left or one listing fails. Hadoop's input listing
 * ({@code list-status.num-threads}) and Spark's driver-side listing
 * ({@code BfoRemoteLeafFiles}) walk this way.
 */
public final class DirectoryWalk {
    /** One directory's listing; returns its subdirectories to list next. */
    public interface Lister<D> {
        List<D> list(D dir) throws IOException;
    }

    private DirectoryWalk() {
    }

    /**
     * Lists roots and every directory the lister returns, at most threads at once, from threads named
     * threadName; the first failure ends the walk (listings under way are interrupted) and is thrown.
     */
    public static <D> void walk(List<D> roots, int threads, String threadName, Lister<D> lister) throws IOException {
        int n = Math.max(1, threads);
        ThreadPoolExecutor pool = new ThreadPoolExecutor(n, n, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                r -> {
                    Thread t = new Thread(r, threadName);
                    t.setDaemon(true);
                    return t;
                });
        try {
            CompletionService<List<D>> done = new ExecutorCompletionService<>(pool);
            int pending = 0;
            for (D r : roots) {
                done.submit(() -> lister.list(r));
                pending++;
            }
            while (pending > 0) {
                List<D> kids = done.take().get();
                pending--;
                for (D k : kids) {
                    done.submit(() -> lister.list(k));
                    pending++;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while listing");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            throw c instanceof IOException ? (IOException) c : new IOException(c.toString(), c);
        } finally {
            pool.shutdownNow();
        }
    }
}
