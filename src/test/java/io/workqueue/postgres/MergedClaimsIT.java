package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.testing.CountingConnectionFactory;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TableLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Claims of one queue instance merge like its writes: at most two leasing statements in flight (the
 * second once the first has run {@link Leasing#LEASING_STATEMENT_SLOW_AFTER}), the next carrying every claim that arrived meanwhile, its items dealt out in claim order. Claims for
 * different leases never share a statement; a statement every caller left is cancelled on the
 * server; and the share of a caller that left a statement others still wait for is handed back
 * undone.
 */
class MergedClaimsIT {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static List<String> keys(List<Item<String>> items) {
        return items.stream().map(Item::key).toList();
    }

    private static List<String> enqueueNumbered(ReactiveWorkQueue<String> queue, int n) {
        List<String> keys = IntStream.range(0, n).mapToObj(i -> String.format("k%03d", i)).toList();
        queue.enqueueKeys(keys).block(WAIT);
        return keys;
    }

    @Test
    void claimsThatArriveWhileStatementsAreInFlightShareTheNextStatementAndEachGetsItsOwnItemsInClaimOrder() {
        CountingConnectionFactory factory = new CountingConnectionFactory(TestDatabase.pool());
        ReactiveWorkQueue<String> queue = Queues.over(factory, prefix, TestDatabase.uniqueName("merge"), c -> c);
        ((PostgresWorkQueue<String>) queue).look().disableForTests(); // its connections are not counted here
        enqueueNumbered(queue, 20);
        int before = factory.creates();

        List<List<Item<String>>> first = new ArrayList<>();
        List<List<Item<String>>> later = new ArrayList<>();
        try (TableLock lock = TableLock.hold(Queues.table(prefix))) {
            // Two statements may be in flight: both wait on the lock, and what comes next queues.
            List<Mono<List<Item<String>>>> blocked = IntStream.range(0, 2).mapToObj(i -> queue.claim(2, LEASE).cache())
                    .toList();
            blocked.forEach(Mono::subscribe);
            Poll.until(WAIT, "two claims wait on the table lock", () -> lock.waiters() == 2);
            List<Mono<List<Item<String>>>> queued = IntStream.range(0, 3)
                    .mapToObj(i -> queue.claim(3 + i, LEASE).cache())
                    .toList();
            queued.forEach(Mono::subscribe);
            lock.release();
            for (Mono<List<Item<String>>> claim : blocked) {
                first.add(claim.block(WAIT));
            }
            for (Mono<List<Item<String>>> claim : queued) {
                later.add(claim.block(WAIT));
            }
        }

        assertEquals(3, factory.creates() - before, "five claims, three statements");
        assertEquals(List.of(2, 2), first.stream().map(List::size).toList());
        // The three that queued, asking for 3, 4 and 5, rode one statement: each got its own, in
        // claim order (the first caller the first items).
        assertEquals(List.of(3, 4, 5), later.stream().map(List::size).toList());
        List<String> merged = later.stream().flatMap(items -> keys(items).stream()).toList();
        assertEquals(merged.stream().sorted().toList(), merged);
        List<String> all = new ArrayList<>(merged);
        first.forEach(items -> all.addAll(keys(items)));
        assertEquals(16, all.stream().distinct().count(), "nobody got an item twice: " + all);
        assertEquals(16, queue.stats().block(WAIT).leased());
    }

    @Test
    void claimsForDifferentLeasesNeverShareAStatementAndEachItemGetsItsCallersLease() {
        CountingConnectionFactory factory = new CountingConnectionFactory(TestDatabase.pool());
        ReactiveWorkQueue<String> queue = Queues.over(factory, prefix, TestDatabase.uniqueName("leases"), c -> c);
        ((PostgresWorkQueue<String>) queue).look().disableForTests(); // its connections are not counted here
        enqueueNumbered(queue, 6);
        int before = factory.creates();

        List<Item<String>> shortLeased;
        List<Item<String>> longLeased;
        try (TableLock lock = TableLock.hold(Queues.table(prefix))) {
            List<Mono<List<Item<String>>>> blocked = IntStream.range(0, 2).mapToObj(i -> queue.claim(1, LEASE).cache())
                    .toList();
            blocked.forEach(Mono::subscribe);
            Poll.until(WAIT, "two claims wait on the table lock", () -> lock.waiters() == 2);
            // Queued together behind them, yet never merged: they ask for different leases.
            Mono<List<Item<String>>> oneMinute = queue.claim(2, Duration.ofMinutes(1)).cache();
            Mono<List<Item<String>>> oneHour = queue.claim(2, Duration.ofHours(1)).cache();
            oneMinute.subscribe();
            oneHour.subscribe();
            lock.release();
            blocked.forEach(claim -> claim.block(WAIT));
            shortLeased = oneMinute.block(WAIT);
            longLeased = oneHour.block(WAIT);
        }
        assertEquals(4, factory.creates() - before, "the two leases took a statement each");

        assertEquals(2, shortLeased.size());
        assertEquals(2, longLeased.size());
        for (Item<String> item : shortLeased) {
            long seconds = Long.parseLong(Queues.column(prefix, queue, item.key(),
                    "round(extract(epoch FROM lease_until - now()))::bigint"));
            assertTrue(seconds > 30 && seconds <= 60, item.key() + " leased for " + seconds + " s, not a minute");
        }
        for (Item<String> item : longLeased) {
            long seconds = Long.parseLong(Queues.column(prefix, queue, item.key(),
                    "round(extract(epoch FROM lease_until - now()))::bigint"));
            assertTrue(seconds > 3000 && seconds <= 3600, item.key() + " leased for " + seconds + " s, not an hour");
        }
    }

    @Test
    void aClaimEveryCallerLeftIsCancelledOnTheServerAndLeasesNothing() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "abandoned");
        enqueueNumbered(queue, 5);

        try (TableLock lock = TableLock.hold(Queues.table(prefix))) {
            Disposable claim = queue.claim(5, LEASE).subscribe();
            Poll.until(WAIT, "the claim waits on the table lock", () -> lock.waiters() == 1);
            claim.dispose();
            // Cancelled on the server, not left waiting for the lock behind its caller's back.
            Poll.until(WAIT, "nothing of the queue waits on the lock any more", () -> lock.waiters() == 0);
        }
        Stats stats = queue.stats().block(WAIT);
        assertEquals(0, stats.leased(), "the cancelled claim leased nothing");
        assertEquals(5, stats.ready());
        assertEquals(5, queue.claim(10, LEASE).block(WAIT).size(), "and the next claim runs at once");
    }

    @Test
    void theShareOfACallerThatLeftAStatementOthersStillWaitForIsHandedBackUndone() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "handback");
        List<String> keys = enqueueNumbered(queue, 12);
        // Two rows to complete, each held by another transaction, so the statements that complete
        // them wait: the first to queue the others behind it, the second to hold the merged one
        // in flight while one of its callers leaves. Low priority: they are never claimed.
        queue.enqueueKeys(List.of("x", "y", "z")).block(WAIT);
        for (String blocker : List.of("x", "y", "z")) {
            Queues.update(prefix, queue, blocker, "priority = -1");
        }
        // k005 had a lease that lapsed and a failure recorded: an undone claim must keep both.
        String lapsed = keys.get(5);
        Queues.update(prefix, queue, lapsed, "lease_until = now() - interval '1 minute', attempts = 1,"
                + " last_error = 'earlier failure'");

        // Both statement slots busy (one waits for x, one for z), so the next two claims queue
        // and share a statement, which then waits for y while one of its callers leaves. z is held
        // until the end, so the second slot stays busy and nothing else claims meanwhile.
        try (RowLock holdsX = RowLock.hold(Queues.table(prefix), queue.name(), "x");
                RowLock holdsY = RowLock.hold(Queues.table(prefix), queue.name(), "y");
                RowLock holdsZ = RowLock.hold(Queues.table(prefix), queue.name(), "z")) {
            Mono<List<Item<String>>> first = queue.completeAndClaim(List.of("x"), 1, LEASE).cache();
            first.subscribe();
            Poll.until(WAIT, "the first statement waits for x", () -> holdsX.waiters() == 1);
            Mono<List<Item<String>>> second = queue.completeAndClaim(List.of("z"), 1, LEASE).cache();
            second.subscribe();
            Poll.until(WAIT, "the second statement waits for z", () -> holdsZ.waiters() == 1);
            Mono<List<Item<String>>> staying = queue.completeAndClaim(List.of("y"), 3, LEASE).cache();
            staying.subscribe();
            Disposable left = queue.claim(4, LEASE).subscribe();
            holdsX.release();
            assertEquals(List.of(keys.get(0)), keys(first.block(WAIT)));
            Poll.until(WAIT, "the merged statement waits for y", () -> holdsY.waiters() == 1);
            left.dispose();
            holdsY.release();
            List<Item<String>> kept = staying.block(WAIT);

            // The merged statement leased 7: the staying caller's 3, then the 4 of the one that left.
            assertEquals(keys.subList(1, 4), keys(kept));
            Poll.until(WAIT, "the leaving caller's share is handed back", () -> queue.stats().block(WAIT).leased() == 4);
            for (String key : keys.subList(4, 8)) {
                if (!key.equals(lapsed)) {
                    assertEquals("true", Queues.column(prefix, queue, key, "(lease_until = 'epoch')::text"),
                            key + " has no lease again");
                    assertEquals("0", Queues.column(prefix, queue, key, "attempts"), key + "'s attempt is not counted");
                }
            }
            assertEquals("1", Queues.column(prefix, queue, lapsed, "attempts"));
            assertEquals("earlier failure", Queues.column(prefix, queue, lapsed, "last_error"));

            // Handed back, the items are due at once, first in claim order, and the one whose lease
            // had lapsed is still a reclaim.
            List<Item<String>> next = queue.claim(4, LEASE).block(WAIT);
            assertEquals(keys.subList(4, 8), keys(next));
            for (Item<String> item : next) {
                boolean wasLapsed = item.key().equals(lapsed);
                assertEquals(Item.of(item.key(), 0, wasLapsed ? 2 : 1, wasLapsed), item);
            }
            holdsZ.release();
            assertEquals(List.of(keys.get(8)), keys(second.block(WAIT)), "z's statement, once z was free");
        }
    }
}
