package io.workqueue.faults;

import io.r2dbc.spi.ConnectionFactories;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import java.io.PrintStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * The worker process {@link WorkerCrashFaultIT} kills: it leases {@code count} items from the queue,
 * reports each on standard output ({@code CLAIMED <attempts> <reclaimed> <key>}), says
 * {@code HOLDING}, and then holds the leases without ever completing them until it is killed.
 *
 * <p>Arguments: R2DBC URL, table prefix, queue name, count, lease (ISO-8601 duration).
 */
public final class CrashingWorker {
    private CrashingWorker() {}

    public static void main(String[] args) throws InterruptedException {
        String url = args[0];
        String prefix = args[1];
        String name = args[2];
        int count = Integer.parseInt(args[3]);
        Duration lease = Duration.parse(args[4]);
        PrintStream out = System.out;

        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(ConnectionFactories.get(url), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .build();
        // take(count) limits the request, so the stream leases exactly what this worker reports.
        for (Item<String> item : queue.claimStream(lease, Duration.ofMillis(100)).take(count).collectList()
                .block(Duration.ofSeconds(60))) {
            out.println("CLAIMED " + item.attempts() + " " + item.reclaimed() + " " + item.key());
        }
        out.println("HOLDING");
        out.flush();
        new CountDownLatch(1).await(); // until SIGKILL
    }
}
