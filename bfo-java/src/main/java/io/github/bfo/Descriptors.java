/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.Closeable;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.nio.file.FileSystemException;

/**
 * The descriptor budget of the Java engines, as libbfo's (bfo-native/README.md, "Descriptor budget"). What an
 * engine holds open at once (the read engine's threads, a file each; the writer's cache of open directories) is
 * sized from the soft {@code RLIMIT_NOFILE} the JVM runs with: a quarter of what it leaves free, the rest staying
 * the application's. The files the engines open for a moment are counted, and an open refused with EMFILE or
 * ENFILE while another thread holds such a file waits for it to be closed and tries again, so no file fails for
 * descriptors the engines themselves took; when none is held, the refusal is the application's.
 *
 * <p>HotSpot on Linux raises its soft limit to the hard one at start ({@code -XX:+MaxFDLimit}, the default), so
 * this matters where the hard limit is low itself: {@code ulimit -n} in a script or a container, a service's
 * {@code LimitNOFILE}.
 */
final class Descriptors {
    private static final Object LOCK = new Object();
    private static final ThreadLocal<int[]> MINE = ThreadLocal.withInitial(() -> new int[1]);
    /** When every counted descriptor is held by a waiting thread: how long each waits for one to give up. */
    private static final long STALEMATE_MS = 200;
    /** At most this long in all for one open (a descriptor never given back). */
    private static final long WAIT_MAX_MS = 60_000;
    private static int held, heldWaiting;
    private static long closes;
    /** Tests only: run when a thread begins to wait for a counted descriptor another thread holds. */
    static volatile Runnable waitHook;

    private Descriptors() {
    }

    /** Descriptors the soft limit leaves free now; {@link Long#MAX_VALUE} where the JVM cannot tell. */
    static long free() {
        try {
            OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
            if (os instanceof com.sun.management.UnixOperatingSystemMXBean) {
                com.sun.management.UnixOperatingSystemMXBean u = (com.sun.management.UnixOperatingSystemMXBean) os;
                long max = u.getMaxFileDescriptorCount(), open = u.getOpenFileDescriptorCount();
                if (max > 0 && open >= 0) {
                    return Math.max(0, max - open);
                }
            }
        } catch (LinkageError | RuntimeException | InternalError e) {
            // no jdk.management, or /proc/self/fd could not be listed (no descriptor left): unknown
        }
        return Long.MAX_VALUE;
    }

    /** Of want descriptors held at once, how many a part may hold: at most a quarter of {@link #free()}, at least least. */
    static int share(int want, int least) {
        return share(want, least, free());
    }

    static int share(int want, int least, long free) {
        return (int) Math.max(Math.min(want, free / 4), Math.min(least, want));
    }

    /** Whether e is a refusal for want of descriptors (EMFILE, ENFILE). */
    static boolean exhausted(IOException e) {
        if (!(e instanceof FileSystemException)) {
            return false;
        }
        // "Too many open files" (EMFILE) and "Too many open files in system" (ENFILE) alike
        return Errno.fromException(e) == -Errno.EMFILE;
    }

    /** Opens something holding one descriptor. */
    interface Opener<T extends Closeable> {
        T open() throws IOException;
    }

    /** A counted open thing: {@link #close()} closes it and gives the count back. */
    static final class Held<T extends Closeable> implements Closeable {
        private final T t;
        private boolean closed;

        Held(T t) {
            this.t = t;
        }

        T get() {
            return t;
        }

        @Override
        public void close() throws IOException {
            if (closed) {
                return;
            }
            closed = true;
            try {
                t.close();
            } finally {
                release();
            }
        }
    }

    /** o's open, counted, and tried again when it met EMFILE/ENFILE and another thread closed a counted one. */
    static <T extends Closeable> Held<T> open(Opener<T> o) throws IOException {
        long seen = closes();
        for (;;) {
            try {
                T t = o.open();
                synchronized (LOCK) {
                    held++;
                }
                MINE.get()[0]++;
                return new Held<>(t);
            } catch (IOException e) {
                if (!exhausted(e)) {
                    throw e;
                }
                long now = waitForClose(seen);
                if (now == seen) {
                    throw e;
                }
                seen = now;
            }
        }
    }

    private static long closes() {
        synchronized (LOCK) {
            return closes;
        }
    }

    private static void release() {
        MINE.get()[0]--;
        synchronized (LOCK) {
            held--;
            closes++;
            LOCK.notifyAll();
        }
    }

    /** Waits until a counted descriptor is closed after seen; the count of closes then (seen: none will be). */
    private static long waitForClose(long seen) {
        int my = Math.max(0, MINE.get()[0]);
        long t0 = System.nanoTime();
        boolean stalemate = false;
        synchronized (LOCK) {
            heldWaiting += my;
            LOCK.notifyAll();   // others waiting with what they hold can no longer count on ours
            try {
                while (closes == seen) {
                    long waited = (System.nanoTime() - t0) / 1_000_000;
                    if (held > heldWaiting) {
                        stalemate = false;
                        if (waited > WAIT_MAX_MS) {
                            break;
                        }
                        Runnable h = waitHook;
                        if (h != null) {
                            waitHook = null;
                            LOCK.notifyAll();
                            h.run();
                        }
                        LOCK.wait(STALEMATE_MS);
                        continue;
                    }
                    // none held: the limit is the application's; only waiters hold some: a stalemate
                    if (held == 0 || stalemate) {
                        break;
                    }
                    stalemate = true;
                    LOCK.wait(STALEMATE_MS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                heldWaiting -= my;
            }
            return closes;
        }
    }
}
