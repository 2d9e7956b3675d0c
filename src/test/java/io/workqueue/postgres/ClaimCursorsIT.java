package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WriteTimeoutException;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Claims read each priority band from a cursor, so their cost does not grow with the history a held
 * horizon keeps at the head of the due index; and whatever becomes due behind a cursor is found by
 * the next look and handed out by the claims after it, first in claim order, however much of it
 * there is, and across a fleet of instances with cursors of their own.
 *
 * <p>Each scenario below has a claimer take small batches from a steady supply of newer items, so
 * that a design which hands out what lies behind its cursor a claim's worth at a time (as claims
 * from the head, spaced apart, did) shows: newer items go out among the old, and the old take
 * seconds. The timing bound is loose on purpose ({@link #BOUND}, against about a second measured on
 * a quiet machine), since CI machines are shared; the order is what each test pins exactly.
 */
@ExtendWith(ExpectedLogs.class)
class ClaimCursorsIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(5);
    /** A short lease, for a fleet member that crashes holding it. */
    private static final Duration SHORT_LEASE = Duration.ofSeconds(3);
    /**
     * How long after it became due the last of a crowd of items may be handed out: the stated
     * bound (the look interval, at least 200 ms, plus a look, a few milliseconds on these tables,
     * plus handing out everything ahead) with ample room for a loaded machine.
     */
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final Pattern BUFFERS = Pattern.compile("Buffers: shared hit=(\\d+)(?: read=(\\d+))?");
    private static final Pattern TOP_ROWS = Pattern.compile("actual time=[0-9.]+\\.\\.[0-9.]+ rows=(\\d+)");
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    // ---------------------------------------------------------------- helpers

    private static ReactiveWorkQueue<String> instance(String name) {
        return Queues.over(TestDatabase.pool(), prefix, name, c -> c);
    }

    private static PostgresWorkQueue<String> impl(ReactiveWorkQueue<String> queue) {
        return (PostgresWorkQueue<String>) queue;
    }

    /**
     * What one claim would cost and hand out, run under EXPLAIN ANALYZE and rolled back: the buffers
     * and the rows its filter dropped in the scan for due items, and the rows it leased.
     */
    private record Cost(long buffers, long passed, long leased, String plan) {}

    private static final Pattern FILTERED = Pattern.compile("Rows Removed by Filter: (\\d+)");

    private static Cost explainClaim(String tablePrefix, ReactiveWorkQueue<String> queue, boolean fromHead, int limit) {
        Sql sql = new Sql(tablePrefix, false);
        Map<Integer, ClaimCursors.Position> cursors = impl(queue).cursors().positions(); // highest priority first
        List<Integer> bands = new ArrayList<>(cursors.keySet());
        String plan = Mono.usingWhen(TestDatabase.pool().create(), c -> Mono.from(c.beginTransaction())
                        .thenMany(Flux.defer(() -> {
                            var statement = c.createStatement(
                                            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + (fromHead ? sql.claimDue : sql.claimFromCursors))
                                    .bind(0, queue.name())
                                    .bind(1, 0)
                                    .bind(2, limit)
                                    .bind(3, 60_000_000L);
                            if (!fromHead) {
                                statement.bind(4, bands.toArray(Integer[]::new))
                                        .bind(5, bands.stream().map(b -> cursors.get(b).micros()).toArray(Long[]::new))
                                        .bind(6, bands.stream().map(b -> cursors.get(b).key()).toArray(String[]::new));
                            }
                            statement.bind(fromHead ? 4 : 7, true);
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
        Matcher leasedRows = Pattern.compile("CTE leased\\n\\s*->\\s*Update on \\S+ q \\(" + TOP_ROWS.pattern()).matcher(plan);
        long leased = leasedRows.find() ? Long.parseLong(leasedRows.group(1)) : -1;
        Matcher filtered = FILTERED.matcher(plan.substring(plan.indexOf("CTE due"), plan.indexOf("CTE leased")));
        long passed = 0;
        while (filtered.find()) {
            passed += Long.parseLong(filtered.group(1));
        }
        return new Cost(touched, passed, leased, plan);
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
            Long cursor = impl(queue).cursors().snapshot().get(band);
            return cursor != null && cursor > micros;
        });
    }

    /**
     * A claimer with room to spare: each round it enqueues a few newer items (what arrives
     * meanwhile), claims {@code limit}, and completes what it got, until every key of
     * {@code awaited} has been handed out. Returns every key handed out, in order, and when the
     * last awaited one came.
     */
    private record Drained(List<String> keys, long lastAwaitedNanos) {}

    private static Drained drainWithNewerSupply(ReactiveWorkQueue<String> claimer, ReactiveWorkQueue<String> producer,
            int limit, Set<String> awaited, String newerPrefix) {
        List<String> handedOut = new ArrayList<>();
        Set<String> missing = new HashSet<>(awaited);
        AtomicInteger newer = new AtomicInteger();
        long deadline = System.nanoTime() + WAIT.toNanos();
        long lastAwaited = 0;
        while (!missing.isEmpty()) {
            assertTrue(System.nanoTime() - deadline < 0, () -> "still not handed out after " + WAIT + ": "
                    + missing.size() + " of " + awaited.size());
            producer.enqueueKeys(IntStream.range(0, limit / 2 + 1)
                    .mapToObj(i -> newerPrefix + newer.getAndIncrement()).toList()).block(WAIT);
            List<Item<String>> items = claimer.claim(limit, LEASE).block(WAIT);
            for (Item<String> item : items) {
                handedOut.add(item.key());
                if (missing.remove(item.key())) {
                    lastAwaited = System.nanoTime();
                }
            }
            claimer.complete(items.stream().map(Item::key).toList()).block(WAIT);
        }
        // Leave no newer item pending for what the test does next.
        producer.remove(IntStream.range(0, newer.get()).mapToObj(i -> newerPrefix + i).toList()).block(WAIT);
        return new Drained(handedOut, lastAwaited);
    }

    /** Asserts that, from the first key of {@code awaited} handed out to the last, nothing else was. */
    private static void assertNoneHandedOutAmong(List<String> handedOut, Set<String> awaited) {
        int first = -1;
        int last = -1;
        for (int i = 0; i < handedOut.size(); i++) {
            if (awaited.contains(handedOut.get(i))) {
                first = first < 0 ? i : first;
                last = i;
            }
        }
        List<String> among = new ArrayList<>();
        for (int i = first; i <= last; i++) {
            if (!awaited.contains(handedOut.get(i))) {
                among.add(handedOut.get(i));
            }
        }
        assertTrue(among.isEmpty(), () -> among.size() + " other items were handed out among the " + awaited.size()
                + ", the first of them " + among.subList(0, Math.min(20, among.size())));
    }

    private static Set<String> keys(String keyPrefix, int n) {
        Set<String> keys = new HashSet<>();
        IntStream.range(0, n).forEach(i -> keys.add(String.format("%s%04d", keyPrefix, i)));
        return keys;
    }

    /**
     * Prints how long {@code what} took after {@code since} (both {@code System.nanoTime()}), so CI
     * logs carry the numbers, and asserts it within {@link #BOUND}.
     */
    private static void assertWithinBound(String what, String since, long fromNanos, long toNanos) {
        long waited = Duration.ofNanos(toNanos - fromNanos).toMillis();
        String said = what + " " + waited + " ms " + since;
        System.out.println("ClaimCursorsIT: " + said);
        assertTrue(waited < BOUND.toMillis(), said);
    }

    // ---------------------------------------------------------------- cost

    @Test
    void underAHeldHorizonACursorClaimSkipsTheHistoryAClaimFromTheHeadWalks() {
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

            Cost fromHead = explainClaim(prefix, queue, true, 50);
            Cost cursor = explainClaim(prefix, queue, false, 50);

            assertEquals(50, fromHead.leased(), fromHead.plan());
            assertEquals(50, cursor.leased(), cursor.plan());
            // From the head, every completed row's version the horizon keeps; from the cursor none.
            assertTrue(fromHead.buffers() > history, () -> "from the head, the claim walks the history:\n" + fromHead.plan());
            assertTrue(cursor.buffers() < 200, () -> "the cursor claim reads only what is new:\n" + cursor.plan());
        } finally {
            Mono.from(pin.close()).block(WAIT);
        }
    }

    /** Until a look has ended on this instance: its claims read from cursors from then on. */
    private static void untilClaimsReadFromCursors(ReactiveWorkQueue<String> queue) {
        Poll.until(WAIT, "a look places the claim cursors of " + queue.name(),
                () -> !impl(queue).cursors().plan(System.nanoTime()).fromHead());
    }

    /** The one {@code available_at} every pending item of the queue has, in microseconds; fails if they differ. */
    private static long sharedMicrosecond(ReactiveWorkQueue<String> queue) {
        String table = Queues.table(prefix);
        assertEquals(1, TestDatabase.queryLong("SELECT count(DISTINCT available_at) FROM " + table
                + " WHERE queue_name = $1", queue.name()), "one enqueue statement gives its keys one now()");
        return TestDatabase.queryLong("SELECT (EXTRACT(EPOCH FROM min(available_at)) * 1000000)::bigint FROM "
                + table + " WHERE queue_name = $1", queue.name());
    }

    /**
     * One enqueue statement gives all its keys one {@code now()}, so a backlog enqueued at once lies
     * in one microsecond. A cursor that stopped at a microsecond stayed at the head of it, and every
     * claim passed again every one of its keys already leased (here 2,000 rows, dropped by the
     * claim's filter, on every claim of the drain). A cursor that stops at a key passes at most the
     * one it stopped at.
     */
    @Test
    void aCursorClaimPassesNoneOfTheItemsItsMicrosecondAlreadyLeased() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor-microsecond");
        queue.enqueueKeys(IntStream.range(0, 2500).mapToObj(i -> String.format("one-%05d", i)).toList()).block(WAIT);
        // Claims may not move a cursor past their now() less the slack: wait till that is past the backlog.
        untilDatabaseClockPasses(sharedMicrosecond(queue) + ClaimCursors.SLACK_MICROS);
        int leased = queue.claim(100, LEASE).block(WAIT).size();
        untilClaimsReadFromCursors(queue);
        while (leased < 2000) {
            leased += queue.claim(100, LEASE).block(WAIT).size();
        }

        Cost cursor = explainClaim(prefix, queue, false, 100);

        assertEquals(100, cursor.leased(), cursor.plan());
        assertTrue(cursor.passed() <= 1, () -> "the claim passed " + cursor.passed() + " leased rows:\n" + cursor.plan());
    }

    // ---------------------------------------------------------------- what becomes due behind a cursor

    /**
     * A fleet member crashes holding many leases; a survivor, claiming ten at a time, takes newer
     * items until they lapse, then every one of the crashed member's items before anything newer.
     */
    @Test
    void aCrashedMembersLapsedLeasesAreHandedOutFirstAndAllOfThemAtOnce() {
        String name = TestDatabase.uniqueName("cursor-crash");
        ReactiveWorkQueue<String> crashed = instance(name);
        ReactiveWorkQueue<String> survivor = instance(name);
        Set<String> held = keys("held-", 300);
        survivor.enqueueKeys(List.copyOf(held)).block(WAIT);
        assertEquals(300, crashed.claim(300, SHORT_LEASE).block(WAIT).size());
        long lapse = System.nanoTime() + SHORT_LEASE.toNanos();

        // Until the leases lapse the survivor hands out newer items only, and its cursor passes the
        // crashed member's: their leases lapse behind it.
        Drained drained = drainWithNewerSupply(survivor, survivor, 10, held, "newer-");

        assertNoneHandedOutAmong(drained.keys(), held);
        assertWithinBound("the last lapsed lease came back", "after the lapse", lapse, drained.lastAwaitedNanos());
    }

    /**
     * The same within one microsecond: a crashed member's leases lapse on items that share their
     * enqueue's {@code now()} with the survivor's cursor, but lie before its key. The look must see
     * them as behind the cursor (comparing the key, not only the time), or the survivor never hands
     * them out.
     */
    @Test
    void leasesLapsingBehindACursorWithinItsMicrosecondAreHandedOut() {
        String name = TestDatabase.uniqueName("cursor-crash-microsecond");
        ReactiveWorkQueue<String> crashed = instance(name);
        ReactiveWorkQueue<String> survivor = instance(name);
        // Many more keys in the microsecond than the survivor claims between two looks.
        List<String> backlog = IntStream.range(0, 6000).mapToObj(i -> String.format("same-%05d", i)).toList();
        survivor.enqueueKeys(backlog).block(WAIT);
        untilDatabaseClockPasses(sharedMicrosecond(survivor) + ClaimCursors.SLACK_MICROS);
        // A lease long enough that the survivor's set-up below ends before it lapses, on a slow machine too.
        Duration crashedLease = Duration.ofSeconds(10);
        List<String> held = crashed.claim(100, crashedLease).block(WAIT).stream().map(Item::key).toList();
        assertEquals(backlog.subList(0, 100), held, "the crashed member leased the first hundred");
        survivor.claim(100, LEASE).block(WAIT);
        untilClaimsReadFromCursors(survivor);
        assertEquals(100, survivor.claim(100, LEASE).block(WAIT).size());
        ClaimCursors.Position cursor = impl(survivor).cursors().positions().get(0);
        assertTrue(cursor.micros() == sharedMicrosecond(survivor) && cursor.key().compareTo(held.get(99)) > 0,
                () -> "the survivor's cursor is inside the microsecond, after the held keys: " + cursor);
        long leaseUntil = TestDatabase.queryLong("SELECT (EXTRACT(EPOCH FROM max(lease_until)) * 1000000)::bigint FROM "
                + Queues.table(prefix) + " WHERE queue_name = $1 AND item_key = ANY($2)", name, held.toArray(String[]::new));
        untilDatabaseClockPasses(leaseUntil);
        long lapse = System.nanoTime();

        Drained drained = drainWithNewerSupply(survivor, survivor, 10, Set.copyOf(held), "newer-");

        assertNoneHandedOutAmong(drained.keys(), Set.copyOf(held));
        assertEquals(held, drained.keys().stream().filter(Set.copyOf(held)::contains).toList(), "in claim order");
        // Handed out once a look found them, not once the survivor had claimed its way out of the
        // microsecond and a look comparing times alone would see them behind.
        assertFalse(drained.keys().contains(backlog.get(backlog.size() - 1)),
                "the lapsed leases came back before the rest of their microsecond");
        assertWithinBound("the last lapsed lease in the cursor's microsecond came back", "after the lapse", lapse,
                drained.lastAwaitedNanos());
    }

    /**
     * A bulk transactional enqueue whose transaction commits after the claimer's cursor has passed
     * its {@code now()}: its items are handed out before the newer ones that arrived meanwhile.
     */
    @Test
    void aLateCommittingBulkEnqueueIsHandedOutFirstAndAllOfItAtOnce() {
        String name = TestDatabase.uniqueName("cursor-late");
        ReactiveWorkQueue<String> claimer = instance(name);
        Set<String> late = keys("late-", 200);
        Connection tx = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Mono.from(tx.beginTransaction()).block(WAIT);
            long began = Mono.from(tx.createStatement("SELECT (EXTRACT(EPOCH FROM now()) * 1000000)::bigint").execute())
                    .flatMap(r -> Mono.from(r.map((row, m) -> row.get(0, Long.class)))).block(WAIT);
            claimer.enqueue(tx, late.stream().map(Entry::of).toList()).block(WAIT);
            untilCursorPasses(claimer, 0, began);
            Mono.from(tx.commitTransaction()).block(WAIT);
            long committed = System.nanoTime();
            assertEquals(0, explainClaim(prefix, claimer, false, 10).leased(), "a cursor claim alone would miss them");

            Drained drained = drainWithNewerSupply(claimer, claimer, 10, late, "newer-");

            assertNoneHandedOutAmong(drained.keys(), late);
            assertWithinBound("the last late item came out", "after the commit", committed, drained.lastAwaitedNanos());
        } finally {
            Mono.from(tx.close()).block(WAIT);
        }
    }

    @Test
    void aBandOnlyAnotherInstanceWritesIsFoundByALookAndServedFirst() {
        String name = TestDatabase.uniqueName("cursor-band");
        ReactiveWorkQueue<String> consumer = instance(name);
        ReactiveWorkQueue<String> producer = instance(name);
        producer.enqueueKeys(IntStream.range(0, 2000).mapToObj(i -> String.format("low-%05d", i)).toList()).block(WAIT);
        ConcurrentLinkedQueue<CursorLook.Ended> looks = new ConcurrentLinkedQueue<>();
        impl(consumer).look().observeForTests(looks::add);
        assertEquals(5, consumer.claim(5, LEASE).block(WAIT).size()); // starts the consumer's first look
        Poll.until(WAIT, "the consumer's first look", () -> !looks.isEmpty());
        Set<String> urgent = keys("urgent-", 20);

        producer.enqueue(urgent.stream().map(key -> Entry.of(key).withPriority(9)).toList()).block(WAIT);
        long enqueued = System.nanoTime();
        assertFalse(impl(consumer).cursors().snapshot().containsKey(9), "the consumer's claims do not read band 9 yet");

        List<String> handedOut = new ArrayList<>();
        Set<String> missing = new HashSet<>(urgent);
        long last = 0;
        while (!missing.isEmpty()) {
            assertTrue(System.nanoTime() - enqueued < WAIT.toNanos(), () -> missing.size() + " urgent items still waiting");
            for (Item<String> item : consumer.claim(3, LEASE).block(WAIT)) {
                handedOut.add(item.key());
                if (missing.remove(item.key())) {
                    last = System.nanoTime();
                }
            }
        }
        assertNoneHandedOutAmong(handedOut, urgent);
        assertWithinBound("the last urgent item came out", "after the enqueue", enqueued, last);
    }

    /**
     * A completion that waits seconds for a row lock another transaction holds (a transactional
     * enqueue touching a leased key, say) rides the instance's first leasing statement. Lapsed
     * leases of a crashed member still come back while it waits, through the instance's other
     * claims, and again after it ended: the wait is never counted against the looks.
     */
    @Test
    void aCompletionWaitingOnARowLockHoldsBackNoLapsedLease() {
        String name = TestDatabase.uniqueName("cursor-rowlock");
        ReactiveWorkQueue<String> crashed = instance(name);
        ReactiveWorkQueue<String> survivor = Queues.over(TestDatabase.pool(), prefix, name,
                c -> c.writeTimeout(Duration.ofMinutes(2)));
        crashed.enqueueKeys("locked").block(WAIT);
        assertEquals(1, crashed.claim(1, LEASE).block(WAIT).size());
        try (RowLock lock = RowLock.hold(Queues.table(prefix), name, "locked")) {
            // The survivor's very first leasing statement: it completes "locked", and waits.
            Mono<List<Item<String>>> completion = survivor.completeAndClaim(List.of("locked"), 1, LEASE).cache();
            completion.subscribe();
            lock.awaitWaiters(1);

            Set<String> firstCrash = keys("first-", 100);
            crashed.enqueueKeys(List.copyOf(firstCrash)).block(WAIT);
            assertEquals(100, crashed.claim(100, SHORT_LEASE).block(WAIT).size());
            long lapse = System.nanoTime() + SHORT_LEASE.toNanos();
            Drained whileWaiting = drainWithNewerSupply(survivor, crashed, 10, firstCrash, "newer-a-");
            assertEquals(1, lock.waiters(), "the completion still waits for the row lock");
            assertWithinBound("lapsed leases came back", "after the lapse", lapse, whileWaiting.lastAwaitedNanos());
            lock.release();
            completion.block(WAIT);
        }

        Set<String> secondCrash = keys("second-", 100);
        crashed.enqueueKeys(List.copyOf(secondCrash)).block(WAIT);
        assertEquals(100, crashed.claim(100, SHORT_LEASE).block(WAIT).size());
        long lapse = System.nanoTime() + SHORT_LEASE.toNanos();
        Drained after = drainWithNewerSupply(survivor, crashed, 10, secondCrash, "newer-b-");
        assertNoneHandedOutAmong(after.keys(), secondCrash);
        assertWithinBound("after the lock went, lapsed leases came back", "after the lapse", lapse, after.lastAwaitedNanos());
    }

    /**
     * Under a held horizon, a walk from the head of the band takes longer than the instance's write
     * timeout: every claim from the head would be cancelled before reaching what lapsed. Looks are
     * not claims, no write timeout bounds them, and the lapsed lease comes back.
     */
    @Test
    void underAHeldHorizonALookLongerThanTheWriteTimeoutStillFindsALapsedLease() {
        String ownPrefix = TestDatabase.createTable();
        String table = Queues.table(ownPrefix);
        String name = TestDatabase.uniqueName("cursor-pinned");
        Connection pin = pinHorizon();
        try {
            // History at the head of band 0: rows pending once, completed since, kept by the pin.
            TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, available_at)"
                    + " SELECT $1, 'done-' || i, now() - INTERVAL '1 hour' + i * INTERVAL '1 microsecond'"
                    + " FROM generate_series(1, 300000) AS i", name);
            TestDatabase.queryStrings("UPDATE " + table + " SET completed_at = now() WHERE queue_name = $1", name);
            // How long a walk of that head takes here: an instance's first look, started by a claim
            // that finds nothing.
            ReactiveWorkQueue<String> probe = Queues.over(TestDatabase.pool(), ownPrefix, name, c -> c);
            ConcurrentLinkedQueue<CursorLook.Ended> looks = new ConcurrentLinkedQueue<>();
            impl(probe).look().observeForTests(looks::add);
            assertEquals(List.of(), probe.claim(1, LEASE).block(WAIT));
            Poll.until(WAIT, "the first look", () -> !looks.isEmpty());
            CursorLook.Ended walk = looks.peek();
            assertTrue(walk.succeeded());
            assertTrue(walk.tookNanos() > Duration.ofMillis(20).toNanos(), () -> "the walk of the head is too quick"
                    + " here to outlast a write timeout that claims from cursors meet: "
                    + Duration.ofNanos(walk.tookNanos()).toMillis() + " ms");
            // Claims of this instance get half of that; from the head, they would all be cut short.
            Duration timeout = Duration.ofNanos(walk.tookNanos() / 2);
            ReactiveWorkQueue<String> claimer = Queues.over(TestDatabase.pool(), ownPrefix, name, c -> c.writeTimeout(timeout));
            claimer.enqueueKeys("k").block(WAIT);

            Item<String> first = Poll.until(WAIT, "a first claim hands out k", () -> claimer.claim(1, SHORT_LEASE)
                    .onErrorResume(WriteTimeoutException.class, e -> Mono.just(List.of())).block(WAIT), items -> !items.isEmpty())
                    .get(0);
            assertEquals("k", first.key());
            long lapse = System.nanoTime() + SHORT_LEASE.toNanos();
            Item<String> reclaimed = Poll.until(WAIT, "the lapsed lease is reclaimed", () -> claimer.claim(1, LEASE)
                    .onErrorResume(WriteTimeoutException.class, e -> Mono.just(List.of())).block(WAIT), items -> !items.isEmpty())
                    .get(0);

            assertEquals("k", reclaimed.key());
            assertTrue(reclaimed.reclaimed());
            assertWithinBound("reclaimed", "after the lapse", lapse, System.nanoTime());
        } finally {
            Mono.from(pin.close()).block(WAIT);
        }
    }

    /**
     * A claim stream waiting for work (its poll far longer than the test) beside another claimer of
     * the same instance, which claims one item now and then: the look that claimer starts finds the
     * lapsed leases and wakes the stream, which takes them rather than leaving them to the trickle.
     */
    @Test
    void aClaimStreamWaitingForWorkIsWokenByALookThatFindsLapsedLeases() {
        String name = TestDatabase.uniqueName("cursor-wake");
        ReactiveWorkQueue<String> crashed = instance(name);
        ReactiveWorkQueue<String> survivor = instance(name);
        Set<String> held = keys("held-", 50);
        crashed.enqueueKeys(List.copyOf(held)).block(WAIT);
        assertEquals(50, crashed.claim(50, SHORT_LEASE).block(WAIT).size());
        long lapse = System.nanoTime() + SHORT_LEASE.toNanos();
        ConcurrentLinkedQueue<String> streamed = new ConcurrentLinkedQueue<>();
        Set<String> trickled = new HashSet<>();
        var subscription = survivor.claimStream(LEASE, Duration.ofMinutes(5)).subscribe(item -> streamed.add(item.key()));
        try {
            Poll.until(WAIT, "every lapsed lease is handed out", () -> {
                survivor.claim(1, LEASE).block(WAIT).forEach(item -> trickled.add(item.key()));
                return streamed.size() + trickled.size() >= held.size();
            });
            long handedOut = System.nanoTime();
            Set<String> all = new HashSet<>(streamed);
            all.addAll(trickled);
            assertEquals(held, all);
            assertTrue(streamed.size() >= held.size() - 10, () -> "the stream took " + streamed.size()
                    + ", the trickle " + trickled.size());
            assertWithinBound("the waiting stream took " + streamed.size() + " lapsed leases,", "after the lapse", lapse,
                    handedOut);
        } finally {
            subscription.dispose();
        }
    }

    /**
     * The database clock stepping back (a failover to a node whose clock is behind, an NTP step)
     * leaves every cursor ahead of {@code now()}, so new items land behind them. Simulated by moving
     * the cursors an hour ahead: the next look brings them back.
     */
    @Test
    void cursorsLeftAheadOfTheDatabaseClockAreBroughtBackByTheNextLook() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor-clock");
        queue.enqueueKeys("before").block(WAIT);
        assertEquals(1, queue.claim(10, LEASE).block(WAIT).size());
        untilCursorPasses(queue, 0, databaseMicros() - ClaimCursors.SLACK_MICROS);
        impl(queue).cursors().shiftForTests(Duration.ofHours(1).toNanos() / 1_000);
        Set<String> after = keys("after-", 50);
        queue.enqueueKeys(List.copyOf(after)).block(WAIT);
        long enqueued = System.nanoTime();
        assertEquals(0, explainClaim(prefix, queue, false, 50).leased(), "a cursor claim alone would miss them");

        Set<String> claimed = new HashSet<>();
        Poll.until(WAIT, "every item enqueued behind the cursors is handed out", () -> {
            queue.claim(10, LEASE).block(WAIT).forEach(item -> claimed.add(item.key()));
            return claimed.size() == after.size();
        });
        assertEquals(after, claimed);
        assertWithinBound("handed out", "after the enqueue", enqueued, System.nanoTime());
    }

    // ---------------------------------------------------------------- priorities

    @Test
    void everyIntPriorityIsHandedOutInClaimOrderTheExtremesIncluded() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor-extremes");
        IntFunction<Entry<String>> entry = p -> Entry.of("p" + p).withPriority(p);
        queue.enqueue(List.of(entry.apply(Integer.MIN_VALUE), entry.apply(0), entry.apply(Integer.MAX_VALUE),
                entry.apply(-1), entry.apply(1), entry.apply(Integer.MIN_VALUE + 1), entry.apply(Integer.MAX_VALUE - 1)))
                .block(WAIT);
        List<String> expected = List.of("p" + Integer.MAX_VALUE, "p" + (Integer.MAX_VALUE - 1), "p1", "p0", "p-1",
                "p" + (Integer.MIN_VALUE + 1), "p" + Integer.MIN_VALUE);

        Supplier<List<String>> claimPairs = () -> {
            List<String> order = new ArrayList<>();
            List<Item<String>> pair;
            while (!(pair = queue.claim(2, LEASE).block(WAIT)).isEmpty()) {
                pair.forEach(item -> order.add(item.key()));
            }
            return order;
        };
        assertEquals(expected, claimPairs.get(), "claims of two, one after the other");

        queue.release(Duration.ZERO, null, expected).block(WAIT);
        assertEquals(expected, queue.claim(7, LEASE).block(WAIT).stream().map(Item::key).toList(), "one claim");
    }
}
