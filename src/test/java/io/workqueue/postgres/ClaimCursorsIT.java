package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Claims read each priority band from a cursor, so their cost does not grow with the history a held
 * horizon keeps at the head of the due index; and what becomes claimable behind a cursor is still
 * handed out, by the next sweep.
 */
class ClaimCursorsIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static final Pattern BUFFERS = Pattern.compile("Buffers: shared hit=(\\d+)(?: read=(\\d+))?");
    private static final Pattern TOP_ROWS = Pattern.compile("actual time=[0-9.]+\\.\\.[0-9.]+ rows=(\\d+)");
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** What one claim would cost and hand out, run under EXPLAIN ANALYZE and rolled back. */
    private record Cost(long buffers, long leased, String plan) {}

    private static Cost explainClaim(ReactiveWorkQueue<String> queue, boolean sweep, int limit) {
        Sql sql = new Sql(prefix, false, false);
        Map<Integer, Long> cursors = ((PostgresWorkQueue<String>) queue).cursors().snapshot();
        // Highest priority first, as the queue's own plans list them.
        List<Integer> bands = new ArrayList<>(cursors.keySet());
        bands.sort((a, b) -> Integer.compare(b, a));
        String plan = Mono.usingWhen(TestDatabase.pool().create(), c -> Mono.from(c.beginTransaction())
                        .thenMany(Flux.defer(() -> {
                            var statement = c.createStatement(
                                            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + (sweep ? sql.claimDue : sql.claimFromCursors))
                                    .bind(0, queue.name())
                                    .bind(1, 0)
                                    .bind(2, limit)
                                    .bind(3, 60_000_000L);
                            if (!sweep) {
                                statement.bind(4, bands.toArray(Integer[]::new))
                                        .bind(5, bands.stream().map(cursors::get).toArray(Long[]::new));
                            }
                            return Flux.from(statement.execute()).concatMap(r -> r.map((row, meta) -> row.get(0, String.class)));
                        }))
                        .collectList()
                        .map(lines -> String.join("\n", lines))
                        .flatMap(text -> Mono.from(c.rollbackTransaction()).thenReturn(text)),
                Connection::close).block(WAIT);
        // What the scan for due items touched: the first buffer count under the CTE "due" (the
        // leasing update after it costs the same for both claims).
        Matcher buffers = BUFFERS.matcher(plan);
        assertTrue(buffers.find(plan.indexOf("CTE due")), plan);
        long touched = Long.parseLong(buffers.group(1)) + (buffers.group(2) == null ? 0 : Long.parseLong(buffers.group(2)));
        // The leased CTE's row count: the line of the Update that leases.
        Matcher leasedRows = Pattern.compile("CTE leased\\n\\s*->\\s*Update on \\S+ q \\(" + TOP_ROWS.pattern().substring(0))
                .matcher(plan);
        long leased = leasedRows.find() ? Long.parseLong(leasedRows.group(1)) : -1;
        return new Cost(touched, leased, plan);
    }

    /** Another session that pins the horizon: an idle transaction holding an xid. */
    private static Connection pinHorizon() {
        Connection pin = Mono.from(TestDatabase.plain().create()).block(WAIT);
        Flux.from(pin.createStatement("BEGIN").execute()).concatMap(r -> r.getRowsUpdated()).blockLast(WAIT);
        Flux.from(pin.createStatement("SELECT txid_current()").execute()).concatMap(r -> r.map((row, m) -> 1)).blockLast(WAIT);
        return pin;
    }

    private static long databaseMicros() {
        return TestDatabase.queryLong("SELECT (EXTRACT(EPOCH FROM now()) * 1000000)::bigint");
    }

    /** Until the database clock is past {@code micros}: waits on the only clock the queue trusts. */
    private static void untilDatabaseClockPasses(long micros) {
        Poll.until(WAIT, "the database clock passes " + micros, () -> databaseMicros() > micros);
    }

    /** Claims (handing nothing out) until this instance's cursor on {@code band} is past {@code micros}. */
    private static void untilCursorPasses(ReactiveWorkQueue<String> queue, int band, long micros) {
        Poll.until(WAIT, "the cursor of band " + band + " passes " + micros, () -> {
            assertEquals(List.of(), queue.claim(10, LEASE).block(WAIT));
            Long cursor = ((PostgresWorkQueue<String>) queue).cursors().snapshot().get(band);
            return cursor != null && cursor > micros;
        });
    }

    @Test
    void underAHeldHorizonACursorClaimSkipsTheHistoryASweepWalks() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor-history");
        Connection pin = pinHorizon();
        try {
            int history = 3000;
            List<String> old = IntStream.range(0, history).mapToObj(i -> String.format("old-%05d", i)).toList();
            queue.enqueueKeys(old).block(WAIT);
            int done = 0;
            while (done < history) {
                List<Item<String>> items = queue.claim(500, LEASE).block(WAIT);
                done += queue.complete(items.stream().map(Item::key).toList()).block(WAIT);
            }
            // The completed rows' index entries now lie behind the cursor, out of the slack window.
            long completedBy = databaseMicros();
            untilDatabaseClockPasses(completedBy + ClaimCursors.SLACK_MICROS);
            untilCursorPasses(queue, 0, completedBy);
            queue.enqueueKeys(IntStream.range(0, 50).mapToObj(i -> "new-" + i).toList()).block(WAIT);

            Cost sweep = explainClaim(queue, true, 50);
            Cost cursor = explainClaim(queue, false, 50);

            assertEquals(50, sweep.leased(), sweep.plan());
            assertEquals(50, cursor.leased(), cursor.plan());
            // The sweep visits every completed row's version the horizon keeps; the cursor none.
            assertTrue(sweep.buffers() > history, () -> "the sweep walks the history:\n" + sweep.plan());
            assertTrue(cursor.buffers() < 200, () -> "the cursor claim reads only what is new:\n" + cursor.plan());
        } finally {
            Mono.from(pin.close()).block(WAIT);
        }
    }

    @Test
    void aTransactionalEnqueueCommittedBehindTheCursorIsHandedOutByTheNextSweep() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor-late");
        Connection tx = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Mono.from(tx.beginTransaction()).block(WAIT);
            long began = Mono.from(tx.createStatement("SELECT (EXTRACT(EPOCH FROM now()) * 1000000)::bigint").execute())
                    .flatMap(r -> Mono.from(r.map((row, m) -> row.get(0, Long.class)))).block(WAIT);
            queue.enqueue(tx, List.of(Entry.of("late"))).block(WAIT);
            untilCursorPasses(queue, 0, began);
            Mono.from(tx.commitTransaction()).block(WAIT);

            assertEquals(0, explainClaim(queue, false, 10).leased(), "a cursor claim alone would miss it");
            List<Item<String>> found = Poll.until(WAIT, "a sweep hands out the late key",
                    () -> queue.claim(10, LEASE).block(WAIT), items -> !items.isEmpty());
            assertEquals(List.of("late"), found.stream().map(Item::key).toList());
        } finally {
            Mono.from(tx.close()).block(WAIT);
        }
    }

    @Test
    void aBandAnotherInstanceWritesIsFoundByASweepAndServedFirst() {
        String name = TestDatabase.uniqueName("cursor-band");
        ReactiveWorkQueue<String> consumer = Queues.over(TestDatabase.pool(), prefix, name, c -> c);
        ReactiveWorkQueue<String> producer = Queues.over(TestDatabase.pool(), prefix, name, c -> c);
        producer.enqueueKeys(IntStream.range(0, 1000).mapToObj(i -> "low-" + i).toList()).block(WAIT);
        assertEquals(5, consumer.claim(5, LEASE).block(WAIT).size()); // a sweep: band 0 is known now

        producer.enqueue(Entry.of("urgent").withPriority(9)).block(WAIT);

        assertFalse(((PostgresWorkQueue<String>) consumer).cursors().snapshot().containsKey(9),
                "the consumer's cursor claims do not read band 9");
        Poll.until(WAIT, "the urgent key is handed out before the rest of band 0", () -> {
            List<Item<String>> items = consumer.claim(1, LEASE).block(WAIT);
            assertEquals(1, items.size());
            return items.get(0).key().equals("urgent");
        });
    }

    @Test
    void aLapsedLeaseBehindTheCursorIsReclaimedByTheNextSweep() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor-lapse");
        queue.enqueueKeys("k").block(WAIT);
        long enqueued = databaseMicros();
        assertEquals(1, queue.claim(1, Duration.ofSeconds(2)).block(WAIT).size());
        untilCursorPasses(queue, 0, enqueued);
        untilDatabaseClockPasses(enqueued + 2_000_000);

        assertEquals(0, explainClaim(queue, false, 1).leased(), "a cursor claim alone would miss it");
        Item<String> reclaimed = Poll.until(WAIT, "the lapsed lease is reclaimed",
                () -> queue.claim(1, LEASE).block(WAIT), items -> !items.isEmpty()).get(0);

        assertEquals("k", reclaimed.key());
        assertTrue(reclaimed.reclaimed());
    }

    /**
     * A sweep that had to wait for a connection is charged for its statement, not for the wait: the
     * next sweep, and with it a lease that lapsed behind the cursor, still comes about 200 ms later.
     * (Charged for a 2 s wait, the next sweep would come 100 s later; a worker's first claim in a
     * cold process, which opens the pool's first connection, stalled the reclaiming of lapsed
     * leases for a minute that way.)
     */
    @Test
    void aSweepThatWaitedForAConnectionDoesNotPostponeTheNextOne() {
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(TestDatabase.plain())
                .initialSize(0).maxSize(1).build());
        try {
            ReactiveWorkQueue<String> queue = Queues.over(pool, prefix, TestDatabase.uniqueName("cursor-wait"), c -> c);
            queue.enqueueKeys("k").block(WAIT);
            long enqueued = databaseMicros();
            Connection held = pool.create().block(WAIT);
            Mono<List<Item<String>>> firstClaim = queue.claim(1, Duration.ofSeconds(2)).cache();
            firstClaim.subscribe(); // a sweep: an instance's first claim is one; it waits for the connection
            long waitingSince = System.nanoTime();
            Poll.until(WAIT, "the first claim has waited 2 s for the pool's only connection",
                    () -> System.nanoTime() - waitingSince >= Duration.ofSeconds(2).toNanos());
            Mono.from(held.close()).block(WAIT);
            assertEquals("k", firstClaim.block(WAIT).get(0).key());
            untilCursorPasses(queue, 0, enqueued);
            untilDatabaseClockPasses(enqueued + 2_000_000);

            Item<String> reclaimed = Poll.until(Duration.ofSeconds(5), "the lapsed lease is reclaimed by the next sweep",
                    () -> queue.claim(1, LEASE).block(WAIT), items -> !items.isEmpty()).get(0);
            assertEquals("k", reclaimed.key());
            assertTrue(reclaimed.reclaimed());
        } finally {
            pool.disposeLater().block(WAIT);
        }
    }
}
