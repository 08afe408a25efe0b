/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.testsupport;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.StandardSocketFactory;

import java.io.IOException;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Hadoop's standard socket factory, counting the sockets it makes: set as
 * {@code hadoop.rpc.socket.factory.class.default} ({@link #register}), it
 * makes an HDFS client's NameNode connections and DataNode connections
 * alike, so a test sees how many connections its reads opened. One count
 * per JVM (Hadoop makes the factory by reflection).
 */
public class CountingSocketFactory extends StandardSocketFactory {
    private static final AtomicInteger MADE = new AtomicInteger();
    public static final String KEY = "hadoop.rpc.socket.factory.class.default";

    /** Sockets made so far by the JVM's clients that use this factory. */
    public static int made() {
        return MADE.get();
    }

    /** conf's clients made from now on use this factory. */
    public static void register(Configuration conf) {
        conf.setClass(KEY, CountingSocketFactory.class, javax.net.SocketFactory.class);
    }

    @Override
    public Socket createSocket() throws IOException {
        MADE.incrementAndGet();
        return super.createSocket();
    }
}
