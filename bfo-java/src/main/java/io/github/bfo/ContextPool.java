/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Native read contexts kept for reuse across readers of one JVM. Making a
 * context (threads, io_uring instance, arena) and destroying it cost more
 * than reading a small batch, and Spark makes one reader per task: an
 * executor reading 32-file partitions would otherwise pay that per task.
 *
 * <p>A reader {@link #take}s an idle context made with the same options
 * (byte for byte) or makes one, and {@link #give}s it back on close after
 * {@code bfo_ctx_reset} (batch cancelled and drained, held entries
 * released, stats and stop state cleared): nothing of one reader's batch
 * is seen by the next. A context is used by one reader at a time, so
 * concurrent readers each have their own; only idle ones are pooled, at
 * most {@code -Dbfo.contextPool.maxIdle} ({@link BfoNative#POOL_MAX_IDLE_PROPERTY}) of them (least recently used destroyed
 * first), each destroyed after {@code -Dbfo.contextPool.idleTimeoutMs} ms idle and
 * at JVM shutdown (a shutdown hook). Contexts in use at shutdown are
 * destroyed by their readers' close.
 */
final class ContextPool {
    private static final ContextPool SHARED = makeShared();

    private final int maxIdle;
    private final long idleTimeoutNs;
    /** Most recently given first. */
    private final ArrayDeque<NativeContext> idle = new ArrayDeque<>();
    private boolean closed;
    private Thread reaper;

    ContextPool(int maxIdle, long idleTimeoutMs) {
        if (maxIdle < 0 || idleTimeoutMs <= 0) {
            throw new IllegalArgumentException("maxIdle " + maxIdle + ", idleTimeoutMs " + idleTimeoutMs);
        }
        this.maxIdle = maxIdle;
        this.idleTimeoutNs = TimeUnit.MILLISECONDS.toNanos(idleTimeoutMs);
    }

    private static ContextPool makeShared() {
        int max = Integer.getInteger(BfoNative.POOL_MAX_IDLE_PROPERTY, Math.max(4, 2 * Runtime.getRuntime().availableProcessors()));
        long timeout = Long.getLong(BfoNative.POOL_IDLE_TIMEOUT_PROPERTY, 60_000L);
        ContextPool p = new ContextPool(Math.max(0, max), Math.max(1, timeout));
        Runtime.getRuntime().addShutdownHook(new Thread(p::shutdown, "bfo-context-pool-shutdown"));
        return p;
    }

    /** The JVM's pool, closed at shutdown. */
    static ContextPool shared() {
        return SHARED;
    }

    /** An idle context made with key's options, now the caller's; null when there is none. */
    synchronized NativeContext take(NativeContext.Key key) {
        for (Iterator<NativeContext> it = idle.iterator(); it.hasNext();) {
            NativeContext c = it.next();
            if (c.key.equals(key)) {
                it.remove();
                return c;
            }
        }
        return null;
    }

    /**
     * Takes c back from a reader that no longer uses it (no native call on
     * it in progress): reset and kept, or destroyed when the pool is
     * closed or full or the reset failed.
     */
    void give(NativeContext c) {
        if (maxIdle == 0 || isClosed() || !c.reset()) {
            c.destroy();
            return;
        }
        NativeContext evicted = null;
        synchronized (this) {
            if (!closed) {
                c.idleSince = System.nanoTime();
                idle.addFirst(c);
                if (idle.size() > maxIdle) {
                    evicted = idle.removeLast();
                }
                startReaperLocked();
                c = null;
            }
        }
        if (c != null) {
            c.destroy();
        }
        if (evicted != null) {
            evicted.destroy();
        }
    }

    synchronized int idleCount() {
        return idle.size();
    }

    synchronized boolean isClosed() {
        return closed;
    }

    /** Destroys the idle contexts; contexts given back later are destroyed. Idempotent. */
    void shutdown() {
        List<NativeContext> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(idle);
            idle.clear();
            notifyAll();
        }
        all.forEach(NativeContext::destroy);
    }

    /** One daemon thread while contexts are idle: it destroys those idle too long, then ends. */
    private void startReaperLocked() {
        if (reaper != null) {
            return;
        }
        reaper = new Thread(this::reap, "bfo-context-pool-reaper");
        reaper.setDaemon(true);
        reaper.start();
    }

    private void reap() {
        for (;;) {
            List<NativeContext> expired = new ArrayList<>();
            synchronized (this) {
                long now = System.nanoTime();
                while (!idle.isEmpty() && now - idle.peekLast().idleSince >= idleTimeoutNs) {
                    expired.add(idle.removeLast());
                }
                if (idle.isEmpty() || closed) {
                    if (expired.isEmpty()) {
                        reaper = null;
                        return;
                    }
                } else if (expired.isEmpty()) {
                    long waitNs = idleTimeoutNs - (now - idle.peekLast().idleSince);
                    try {
                        TimeUnit.NANOSECONDS.timedWait(this, Math.max(1, waitNs));
                    } catch (InterruptedException e) {
                        reaper = null;
                        return;
                    }
                }
            }
            expired.forEach(NativeContext::destroy);
        }
    }
}
