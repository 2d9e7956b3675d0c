package io.workqueue.faults;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.notify.PgNotificationListener;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import reactor.blockhound.BlockHound;
import reactor.core.publisher.Mono;

/**
 * One worker host's process for {@link WorkerHostCutOffFaultIT}, run in the host's network
 * namespace: a validating pool over the database's bridge address, a queue, and {@code process()}
 * running a handler that takes 40 to 120 ms. It reports on standard output, one line per event, for
 * the test's ledger: {@code READY}; {@code CLAIMED <attempts> <reclaimed> <key>} when a handler
 * starts; {@code RAN <key>} when it has finished; {@code COMPLETED <key>} when the worker emits an
 * acknowledged item;
 * {@code STOPPED <error>} if the worker's stream ever ends. Its log goes to standard error. It runs
 * until it is killed.
 *
 * <p>BlockHound guards it as it does the tests. Writing to a file descriptor is a blocking call, so
 * neither the reports nor the log (written by the library on driver threads) touch one: both are
 * queued and written out by a thread of their own.
 *
 * <p>A {@link PgNotificationListener} on the same link feeds the worker's wakeups; its log says when
 * it loses its connection and when it listens again.
 *
 * <p>Arguments: R2DBC URL, table prefix, queue name, concurrency, lease (ISO-8601 duration),
 * notification channel.
 */
public final class HostWorker {
    private HostWorker() {}

    public static void main(String[] args) throws InterruptedException {
        PrintStream out = Relay.start(FileDescriptor.out);
        System.setOut(out);
        System.setErr(Relay.start(FileDescriptor.err));
        BlockHound.install();
        String url = args[0];
        String prefix = args[1];
        String name = args[2];
        int concurrency = Integer.parseInt(args[3]);
        Duration lease = Duration.parse(args[4]);

        String channel = args[5];

        FaultServer database = FaultServer.at(url);
        ConnectionPool pool = database.pool(concurrency + 2);
        // The listener's connection is idle but for notifications: on a cut link only TCP keepalive
        // (or its health check, every 30 s by default) finds it dead.
        PgNotificationListener listener = PgNotificationListener.builder(database.plain())
                .channel(channel)
                .reconnectBackoff(Duration.ofMillis(100), Duration.ofSeconds(1))
                .build();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).writeTimeout(Duration.ofSeconds(5)).build())
                .wakeups(listener.wakeups())
                .build();
        WorkerOptions options = WorkerOptions.builder()
                .concurrency(concurrency)
                .claimBatch(concurrency)
                .lease(lease)
                .poll(Duration.ofMillis(200))
                .build();
        CountDownLatch stopped = new CountDownLatch(1);
        queue.process(item -> Mono.delay(Duration.ofMillis(40 + ThreadLocalRandom.current().nextInt(80)))
                                .doOnSubscribe(s -> out.println("CLAIMED " + item.attempts() + " " + item.reclaimed()
                                        + " " + item.key()))
                                .doOnSuccess(done -> out.println("RAN " + item.key())),
                        options)
                .map(Item::key)
                .subscribe(key -> out.println("COMPLETED " + key),
                        error -> {
                            out.println("STOPPED " + error);
                            stopped.countDown();
                        },
                        () -> {
                            out.println("STOPPED completed");
                            stopped.countDown();
                        });
        out.println("READY");
        stopped.await();
    }

    /**
     * A print stream whose bytes are queued in memory, never blocking the writer, and written to a
     * file descriptor by a daemon thread. {@link PrintStream} writes each {@code println} whole under
     * its own lock, so lines from several threads never interleave.
     */
    private static final class Relay extends OutputStream {
        private final Queue<byte[]> chunks = new ConcurrentLinkedQueue<>();

        static PrintStream start(FileDescriptor target) {
            Relay relay = new Relay();
            FileOutputStream sink = new FileOutputStream(target);
            Thread writer = new Thread(() -> {
                while (true) {
                    byte[] chunk = relay.chunks.poll();
                    if (chunk == null) {
                        LockSupport.parkNanos(1_000_000);
                        continue;
                    }
                    try {
                        sink.write(chunk);
                    } catch (IOException e) {
                        return; // the test has stopped reading: nobody is listening any more
                    }
                }
            }, "relay-" + target);
            writer.setDaemon(true);
            writer.start();
            return new PrintStream(relay, true, StandardCharsets.UTF_8);
        }

        @Override
        public void write(int b) {
            chunks.add(new byte[] {(byte) b});
        }

        @Override
        public void write(byte[] b, int off, int len) {
            chunks.add(Arrays.copyOfRange(b, off, off + len));
        }
    }
}
