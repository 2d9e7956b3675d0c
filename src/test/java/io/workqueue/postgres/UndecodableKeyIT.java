package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * A stored key the codec can no longer decode (a record component removed in a rolling deploy,
 * with unknown properties refused) never blocks the healthy items leased with it: they are
 * delivered, and it is set aside with its error recorded until it stalls.
 */
@ExtendWith(ExpectedLogs.class)
class UndecodableKeyIT {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static String prefix;

    /** The key as the new release reads it: the old one also had a {@code zoom}. */
    record Tile(int x, int y) {}

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** The new release's queue, and a text-keyed view of the same rows as the old release wrote them. */
    private static ReactiveWorkQueue<Tile> tiles(String name, int maxAttempts) {
        return ReactiveWorkQueue.builder(TestDatabase.pool(), Tile.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).maxAttempts(maxAttempts).build())
                .build();
    }

    private static ReactiveWorkQueue<String> writtenByTheOldRelease(String name) {
        ReactiveWorkQueue<String> old = Queues.over(TestDatabase.pool(), prefix, name, c -> c);
        old.enqueueKeys("{\"x\":1,\"y\":1}", "{\"x\":2,\"y\":2,\"zoom\":9}", "{\"x\":3,\"y\":3}").block(WAIT);
        return old;
    }

    @Test
    void aClaimDeliversTheHealthyItemsAndSetsTheUndecodableOneAsideWithItsError() {
        String name = TestDatabase.uniqueName("undecodable");
        ReactiveWorkQueue<String> old = writtenByTheOldRelease(name);
        ReactiveWorkQueue<Tile> queue = tiles(name, 1);

        List<Item<Tile>> claimed = queue.claim(10, Duration.ofMinutes(5)).block(WAIT);

        assertEquals(List.of(new Tile(1, 1), new Tile(3, 3)), claimed.stream().map(Item::key).toList());
        String bad = "{\"x\":2,\"y\":2,\"zoom\":9}";
        assertEquals("true", Queues.column(prefix, old, bad, "lease_until = 'epoch'"), "released, not left leased");
        assertTrue(Queues.column(prefix, old, bad, "last_error").contains("cannot be decoded"),
                () -> "last error: " + Queues.column(prefix, old, bad, "last_error"));
        assertEquals("1", Queues.column(prefix, old, bad, "attempts"));
        assertEquals(2L, queue.complete(claimed.stream().map(Item::key).toList()).block(WAIT));
        Stats stats = queue.stats().block(WAIT);
        assertEquals(1, stats.stalled(), "out of attempts, it shows as stalled: " + stats);
        assertEquals(1, stats.pending(), stats::toString);
    }

    @Test
    void theWorkerKeepsDrainingPastAnUndecodableKey() {
        String name = TestDatabase.uniqueName("undecodable-worker");
        writtenByTheOldRelease(name);
        ReactiveWorkQueue<Tile> queue = tiles(name, 3);
        List<Tile> done = new CopyOnWriteArrayList<>();

        Disposable worker = queue.process(item -> Mono.empty(),
                        WorkerOptions.builder().concurrency(4).poll(Duration.ofMillis(100)).build())
                .subscribe(item -> done.add(item.key()));
        try {
            Poll.until(WAIT, "both healthy tiles completed", () -> done.size() == 2);
            assertEquals(List.of(new Tile(1, 1), new Tile(3, 3)), done.stream().sorted((a, b) -> a.x() - b.x()).toList());
            Stats stats = queue.stats().block(WAIT);
            assertEquals(1, stats.pending(), "the undecodable row waits, neither lost nor leased: " + stats);
            assertEquals(0, stats.leased(), stats::toString);
        } finally {
            worker.dispose();
        }
    }

    @Test
    void theClaimStreamKeepsDeliveringPastAnUndecodableKey() {
        String name = TestDatabase.uniqueName("undecodable-stream");
        writtenByTheOldRelease(name);
        ReactiveWorkQueue<Tile> queue = tiles(name, 0);

        List<Item<Tile>> items = queue.claimStream(Duration.ofMinutes(5), Duration.ofMillis(100))
                .take(2)
                .collectList()
                .block(WAIT);

        assertEquals(List.of(new Tile(1, 1), new Tile(3, 3)), items.stream().map(Item::key).toList());
    }
}
