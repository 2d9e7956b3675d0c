package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Entry;
import io.workqueue.InvalidConfigException;
import io.workqueue.Item;
import io.workqueue.ItemPage;
import io.workqueue.ItemState;
import io.workqueue.KeyCodec;
import io.workqueue.QueueItem;
import io.workqueue.QueueSummary;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.internal.base.CodePointOrder;
import io.workqueue.testing.CountingConnectionFactory;
import io.workqueue.testing.Poll;
import io.workqueue.testing.Queues;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * {@link WorkQueueAdmin} against the real server: every state lists what the queue's own
 * predicates say, pages follow the claim's order and neither repeat nor skip while workers claim,
 * keys come back exactly as stored (hostile ones too) or decoded, and every action changes what it
 * says it changed, once.
 */
class WorkQueueAdminIT {
    static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static String prefix;

    /** Keys built to break whatever renders, quotes or sorts them; every one is a valid key. */
    static final List<String> HOSTILE_KEYS = List.of(
            "<img src=x onerror=alert(1)>",
            "\"><script>alert(document.domain)</script>",
            "'); DROP TABLE work_queue_items; --",
            "</textarea><svg/onload=alert(1)>",
            "javascript:alert(1)",
            "&lt;b&gt;already escaped&lt;/b&gt;",
            "${7*7} {{7*7}} #{7*7}",
            "\u202Egnp.exe",
            "emoji \uD83E\uDDE8 and \uD835\uDD4F",
            "\uE000 private use sorts before \uD800\uDC00 in code points",
            "tab\there",
            "back\\slash \"double\" 'single' `tick`",
            "%00%0d%0a%3Cscript%3E",
            " leading and trailing spaces ",
            "k".repeat(512));

    /** A record key the JSON codec reads. */
    record Tile(String layer, int x) {}

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    static WorkQueueAdmin adminOf(ReactiveWorkQueue<?>... queues) {
        WorkQueueAdmin.Builder builder = WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix);
        for (ReactiveWorkQueue<?> queue : queues) {
            builder.queue(queue);
        }
        return builder.build();
    }

    /** Every item of {@code state}, page after page of {@code limit}. */
    static List<QueueItem> all(WorkQueueAdmin admin, String queue, ItemState state, int limit) {
        List<QueueItem> items = new ArrayList<>();
        String after = null;
        do {
            ItemPage page = admin.items(queue, state, after, limit).block(WAIT);
            assertTrue(page.items().size() <= limit);
            items.addAll(page.items());
            after = page.next();
        } while (after != null);
        return items;
    }

    static List<String> keys(List<QueueItem> items) {
        return items.stream().map(QueueItem::storedKey).toList();
    }

    /** The queue's items, one per state, made with the API where it can and by hand where it cannot. */
    private static ReactiveWorkQueue<String> queueInEveryState() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "states", c -> c.maxAttempts(3));
        queue.enqueue(List.of(Entry.of("ready-1"), Entry.of("ready-2"), Entry.of("ready-high").withPriority(5),
                Entry.of("delayed").withDelay(Duration.ofHours(1)), Entry.of("leased"), Entry.of("stalled"),
                Entry.of("last-attempt"), Entry.of("lapsed"), Entry.of("done"))).block(WAIT);
        queue.complete("done").block(WAIT);
        Queues.update(prefix, queue, "leased", "lease_until = now() + INTERVAL '1 hour', attempts = 1");
        Queues.update(prefix, queue, "stalled", "attempts = 3, last_error = 'renderer ran out of memory'");
        Queues.update(prefix, queue, "last-attempt", "attempts = 3, lease_until = now() + INTERVAL '1 hour'");
        Queues.update(prefix, queue, "lapsed", "attempts = 1, lease_until = now() - INTERVAL '1 minute'");
        return queue;
    }

    @Test
    void everyStateListsWhatTheQueuesOwnPredicatesSayAndStatsCount() {
        ReactiveWorkQueue<String> queue = queueInEveryState();
        WorkQueueAdmin admin = adminOf(queue);

        Map<ItemState, List<String>> listed = new HashMap<>();
        for (ItemState state : ItemState.values()) {
            listed.put(state, keys(all(admin, queue.name(), state, 2)));
        }

        assertEquals(List.of("ready-high", "lapsed", "ready-1", "ready-2"), listed.get(ItemState.READY));
        assertEquals(List.of("delayed"), listed.get(ItemState.DELAYED));
        assertEquals(Set.of("leased", "last-attempt"), Set.copyOf(listed.get(ItemState.LEASED)));
        assertEquals(Set.of("stalled", "last-attempt"), Set.copyOf(listed.get(ItemState.STALLED)));
        assertEquals(List.of("done"), listed.get(ItemState.COMPLETED));
        Stats stats = queue.stats().block(WAIT);
        assertEquals(stats.ready(), listed.get(ItemState.READY).size());
        assertEquals(stats.leased(), listed.get(ItemState.LEASED).size());
        assertEquals(stats.stalled(), listed.get(ItemState.STALLED).size());
        assertEquals(stats.completed(), listed.get(ItemState.COMPLETED).size());
        assertSameCounts(stats, admin.stats(queue.name()).block(WAIT));

        QueueItem stalled = admin.item(queue.name(), "stalled").block(WAIT);
        assertEquals(Set.of(ItemState.STALLED), stalled.states());
        assertEquals("renderer ran out of memory", stalled.lastError());
        assertEquals(3, stalled.attempts());
        QueueItem lastAttempt = admin.item(queue.name(), "last-attempt").block(WAIT);
        assertEquals(Set.of(ItemState.LEASED, ItemState.STALLED), lastAttempt.states());
        assertTrue(lastAttempt.leaseRemaining().compareTo(Duration.ofMinutes(59)) > 0);
        assertTrue(admin.item(queue.name(), "lapsed").block(WAIT).leaseLapsed());
        QueueItem delayed = admin.item(queue.name(), "delayed").block(WAIT);
        assertTrue(delayed.availableIn().compareTo(Duration.ofMinutes(59)) > 0, delayed.toString());
        assertNull(delayed.completedAgo());
        QueueItem done = admin.item(queue.name(), "done").block(WAIT);
        assertEquals(Set.of(ItemState.COMPLETED), done.states());
        assertNotNull(done.completedAgo());
        assertNull(admin.item(queue.name(), "nobody").block(WAIT));
    }

    /** Two reads of the same stats: the same counts (the oldest ready age grows with the clock). */
    static void assertSameCounts(Stats expected, Stats actual) {
        assertEquals(List.of(expected.pending(), expected.ready(), expected.leased(), expected.stalled(), expected.completed()),
                List.of(actual.pending(), actual.ready(), actual.leased(), actual.stalled(), actual.completed()));
        assertTrue(actual.oldestReadyAge().compareTo(expected.oldestReadyAge()) >= 0
                || expected.oldestReadyAge().minus(actual.oldestReadyAge()).toSeconds() < 5);
    }

    @Test
    void theReadyItemsAreListedInTheOrderAClaimHandsThemOut() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "order");
        List<Entry<String>> entries = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            entries.add(Entry.of("k" + (i * 7919 % 60)).withPriority(i % 4));
        }
        queue.enqueue(entries).block(WAIT);
        queue.enqueue(Entry.of("early").withPriority(1)).block(WAIT);
        Queues.update(prefix, queue, "early", "available_at = available_at - INTERVAL '1 minute'");
        WorkQueueAdmin admin = adminOf(queue);

        List<String> listed = keys(all(admin, queue.name(), ItemState.READY, 7));
        List<String> claimed = queue.claim(100, LEASE).block(WAIT).stream().map(Item::key).toList();

        assertEquals(61, listed.size());
        assertEquals(claimed, listed);
    }

    @Test
    void pagesNeverRepeatOrSkipAnItemThatStayedReadyWhileWorkersClaim() throws Exception {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "concurrent");
        int items = 3000;
        queue.enqueue(IntStream.range(0, items)
                .mapToObj(i -> Entry.of(String.format("c%05d", i * 37 % items)).withPriority(i % 3))
                .toList()).block(WAIT);
        WorkQueueAdmin admin = adminOf(queue);
        ReactiveWorkQueue<String> worker = Queues.over(TestDatabase.pool(), prefix, queue.name(), c -> c);

        // Workers claim from the head and complete; some of what they claim goes back delayed or
        // due at once, and new keys arrive, so items leave and enter "ready" all through the listing.
        Disposable workers = Flux.range(0, Integer.MAX_VALUE)
                .concatMap(round -> worker.claim(9, LEASE).flatMap(claimed -> {
                    List<String> keys = claimed.stream().map(Item::key).toList();
                    if (keys.isEmpty()) {
                        return Mono.empty();
                    }
                    Mono<?> settle = switch (round % 3) {
                        case 0 -> worker.complete(keys);
                        case 1 -> worker.release(Duration.ofHours(1), null, keys);
                        default -> worker.release(Duration.ZERO, null, keys);
                    };
                    return settle.then(worker.enqueueKeys("new-" + round + "-a", "new-" + round + "-b"));
                }))
                .subscribe();
        List<String> listed;
        try {
            Poll.until(WAIT, "workers under way", () -> queue.stats().block(WAIT).leased() + queue.stats().block(WAIT).completed() > 0);
            listed = keys(all(admin, queue.name(), ItemState.READY, 7));
        } finally {
            workers.dispose();
        }

        Set<String> untouched = new HashSet<>(TestDatabase.queryStrings("SELECT item_key FROM " + Queues.table(prefix)
                + " WHERE queue_name = $1 AND attempts = 0 AND completed_at IS NULL AND item_key LIKE 'c%'", queue.name()));
        assertTrue(untouched.size() < items && untouched.size() > 100, "the workers claimed some but not all: " + untouched.size());
        // An item released at once moves behind the cursor and may be listed again: it changed.
        // One that stayed ready is listed exactly once.
        Map<String, Long> counts = listed.stream().collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));
        List<String> skipped = untouched.stream().filter(key -> !counts.containsKey(key)).sorted().toList();
        List<String> repeated = untouched.stream().filter(key -> counts.getOrDefault(key, 0L) > 1).sorted().toList();
        assertEquals(List.of(), skipped, "every item that stayed ready is listed");
        assertEquals(List.of(), repeated, "no item that stayed ready is listed twice");
        assertTrue(listed.size() > new HashSet<>(listed).size() || counts.size() > untouched.size(),
                "items changed state under the listing, which is what this test is about");
    }

    /**
     * A few stalled items among many ready ones: pages read a bounded stretch of the index each, so
     * some come back short, yet following the cursors finds every stalled item once, in claim order.
     */
    @Test
    void aSparseStateIsListedWholeInBoundedPages() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "sparse", c -> c.maxAttempts(3));
        String table = Queues.table(prefix);
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key, priority, attempts, available_at)"
                        + " SELECT $1, 's' || lpad(i::text, 6, '0'), i % 2,"
                        + "        CASE WHEN i % 2999 = 0 THEN 3 ELSE 0 END,"
                        + "        now() - INTERVAL '1 hour' + i * INTERVAL '1 millisecond'"
                        + " FROM generate_series(1, 30000) AS i",
                queue.name());
        WorkQueueAdmin admin = adminOf(queue);

        List<String> stalled = new ArrayList<>();
        int shortPagesWithMore = 0;
        String after = null;
        do {
            ItemPage page = admin.items(queue.name(), ItemState.STALLED, after, 10).block(WAIT);
            if (page.items().size() < 10 && page.next() != null) {
                shortPagesWithMore++;
            }
            stalled.addAll(keys(page.items()));
            after = page.next();
        } while (after != null);

        List<String> expected = TestDatabase.queryStrings("SELECT item_key FROM " + table
                + " WHERE queue_name = $1 AND attempts >= 3 ORDER BY priority DESC, available_at, item_key", queue.name());
        assertEquals(10, expected.size());
        assertEquals(expected, stalled);
        assertTrue(shortPagesWithMore > 0, "the scan budget bounded some pages");
        assertEquals(List.of(), all(admin, queue.name(), ItemState.DELAYED, 50));
    }

    @Test
    void completedItemsAreListedNewestFirstAcrossSharedCompletionInstants() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "completed");
        List<String> older = IntStream.range(0, 12).mapToObj(i -> "old-" + i).toList();
        List<String> newer = IntStream.range(0, 9).mapToObj(i -> "new-" + i).toList();
        queue.enqueueKeys(older).block(WAIT);
        queue.enqueueKeys(newer).block(WAIT);
        queue.complete(older).block(WAIT);
        queue.complete(newer).block(WAIT);
        WorkQueueAdmin admin = adminOf(queue);

        List<String> listed = keys(all(admin, queue.name(), ItemState.COMPLETED, 4));

        List<String> expected = new ArrayList<>(newer.stream().sorted((a, b) -> CodePointOrder.compare(b, a)).toList());
        expected.addAll(older.stream().sorted((a, b) -> CodePointOrder.compare(b, a)).toList());
        assertEquals(expected, listed);
    }

    @Test
    void hostileKeysRoundTripExactlyThroughListingsCursorsDetailsAndActions() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "hostile <b>'\"", c -> c.maxAttempts(2));
        queue.enqueueKeys(HOSTILE_KEYS).block(WAIT);
        WorkQueueAdmin admin = adminOf(queue);
        List<String> inKeyOrder = HOSTILE_KEYS.stream().sorted(CodePointOrder::compare).toList();

        // Pages of 2: a cursor ends on each hostile key in turn.
        assertEquals(inKeyOrder, keys(all(admin, queue.name(), ItemState.READY, 2)));
        for (String key : HOSTILE_KEYS) {
            QueueItem item = admin.item(queue.name(), key).block(WAIT);
            assertEquals(key, item.storedKey());
            assertEquals(key, item.key());
        }
        queue.release(Duration.ofHours(1), new IllegalStateException("<script>alert('error')</script>"), HOSTILE_KEYS)
                .block(WAIT);
        assertEquals(inKeyOrder, keys(all(admin, queue.name(), ItemState.DELAYED, 3)));
        assertEquals("<script>alert('error')</script>", admin.item(queue.name(), HOSTILE_KEYS.get(0)).block(WAIT).lastError());

        assertEquals(inKeyOrder, admin.retry(queue.name(), HOSTILE_KEYS).block(WAIT));
        assertEquals(inKeyOrder, keys(all(admin, queue.name(), ItemState.READY, 4)));
        assertEquals(inKeyOrder, admin.remove(queue.name(), HOSTILE_KEYS).block(WAIT));
        assertEquals(0, Queues.rows(prefix, queue));
        assertTrue(admin.queues().collectList().block(WAIT).stream().anyMatch(q -> q.name().equals(queue.name())));
    }

    @Test
    void keysAreDecodedByTheQueuesCodecAndAKeyThatNoLongerDecodesIsShownNotHidden() {
        String name = TestDatabase.uniqueName("decode");
        ReactiveWorkQueue<Tile> tiles = ReactiveWorkQueue.builder(TestDatabase.pool(), Tile.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .build();
        ReactiveWorkQueue<String> raw = Queues.over(TestDatabase.pool(), prefix, name, c -> c);
        tiles.enqueueKeys(new Tile("roads", 1)).block(WAIT);
        raw.enqueueKeys("{\"layer\":\"roads\",\"x\":\"not a number\"}", "not json at all").block(WAIT);
        WorkQueueAdmin admin = adminOf(tiles);
        WorkQueueAdmin withoutCodec = WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix)
                .queue(WorkQueueConfig.builder(name).tablePrefix(prefix).build()).build();

        Map<String, QueueItem> byStoredKey = all(admin, name, ItemState.READY, 10).stream()
                .collect(Collectors.toMap(QueueItem::storedKey, Function.identity()));

        assertEquals(3, byStoredKey.size());
        QueueItem decoded = byStoredKey.get(KeyCodec.defaultFor(Tile.class).encode(new Tile("roads", 1)));
        assertEquals(new Tile("roads", 1), decoded.key());
        assertNull(decoded.keyDecodingError());
        QueueItem broken = byStoredKey.get("not json at all");
        assertEquals("not json at all", broken.key());
        assertNotNull(broken.keyDecodingError());
        assertNotNull(byStoredKey.get("{\"layer\":\"roads\",\"x\":\"not a number\"}").keyDecodingError());
        // An item that does not decode can still be acted on, by its stored key.
        assertEquals(List.of("not json at all"), admin.remove(name, List.of("not json at all")).block(WAIT));
        for (QueueItem item : all(withoutCodec, name, ItemState.READY, 10)) {
            assertEquals(item.storedKey(), item.key());
            assertNull(item.keyDecodingError());
        }
    }

    @Test
    void retryMakesStalledAndDelayedItemsDueWithFreshAttemptsKeepsTheErrorAndIsSafeToRepeat() {
        ReactiveWorkQueue<String> queue = queueInEveryState();
        WorkQueueAdmin admin = adminOf(queue);
        List<String> everything = List.of("ready-1", "ready-high", "delayed", "leased", "stalled", "last-attempt",
                "lapsed", "done", "unknown");

        assertEquals(List.of("delayed", "stalled"), admin.retry(queue.name(), everything).block(WAIT));
        assertEquals(List.of(), admin.retry(queue.name(), everything).block(WAIT), "a repeat changes nothing");

        QueueItem stalled = admin.item(queue.name(), "stalled").block(WAIT);
        assertEquals(Set.of(ItemState.READY), stalled.states());
        assertEquals(0, stalled.attempts());
        assertEquals("renderer ran out of memory", stalled.lastError(), "the last error is kept");
        assertEquals(Set.of(ItemState.READY), admin.item(queue.name(), "delayed").block(WAIT).states());
        assertEquals(Set.of(ItemState.LEASED, ItemState.STALLED), admin.item(queue.name(), "last-attempt").block(WAIT).states(),
                "a retry never revokes a lease");
        assertEquals(Set.of(ItemState.COMPLETED), admin.item(queue.name(), "done").block(WAIT).states());
    }

    @Test
    void aRetriedItemIsClaimedAndCompletedByARunningWorker() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "retried", c -> c.maxAttempts(1));
        WorkQueueAdmin admin = adminOf(queue);
        Set<String> failing = ConcurrentHashMap.newKeySet();
        failing.add("poison");
        Disposable worker = queue.process(item -> failing.contains(item.key())
                                ? Mono.error(new IllegalStateException("cannot render " + item.key()))
                                : Mono.empty(),
                        WorkerOptions.builder().concurrency(2).poll(Duration.ofMillis(50)).backoff(attempts -> Duration.ZERO).build())
                .subscribe();
        try {
            queue.enqueueKeys("poison", "fine").block(WAIT);
            Poll.until(WAIT, "poison stalled and fine completed", () -> {
                Stats stats = queue.stats().block(WAIT);
                return stats.stalled() == 1 && stats.leased() == 0 && stats.completed() == 1;
            });
            assertEquals("cannot render poison", admin.item(queue.name(), "poison").block(WAIT).lastError());

            failing.clear();
            assertEquals(List.of("poison"), admin.retry(queue.name(), List.of("poison")).block(WAIT));

            Poll.until(WAIT, "the retried item completed by the worker", () -> admin.item(queue.name(), "poison")
                    .block(WAIT).states().equals(Set.of(ItemState.COMPLETED)));
            assertNull(admin.item(queue.name(), "poison").block(WAIT).lastError(), "a completion clears the error");
        } finally {
            worker.dispose();
        }
    }

    @Test
    void removeDeletesWhateverTheStateAndSaysWhich() {
        ReactiveWorkQueue<String> queue = queueInEveryState();
        WorkQueueAdmin admin = adminOf(queue);

        assertEquals(List.of("done", "leased", "stalled"), admin.remove(queue.name(), List.of("stalled", "leased", "done", "unknown"))
                .block(WAIT));
        assertEquals(List.of(), admin.remove(queue.name(), List.of("stalled", "leased", "done")).block(WAIT));
        assertFalse(Queues.exists(prefix, queue, "leased"));
        assertEquals(0L, queue.complete("leased").block(WAIT), "the worker holding it finds nothing to complete");
    }

    @Test
    void purgeDeletesTheOldestCompletedFirstAndNeverAPendingItem() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "purge");
        List<String> first = IntStream.range(0, 5).mapToObj(i -> "first-" + i).toList();
        List<String> second = IntStream.range(0, 5).mapToObj(i -> "second-" + i).toList();
        queue.enqueueKeys(first).block(WAIT);
        queue.enqueueKeys(second).block(WAIT);
        queue.enqueueKeys("pending").block(WAIT);
        queue.complete(first).block(WAIT);
        queue.complete(second).block(WAIT);
        queue.enqueueKeys("second-0").block(WAIT); // restarted: pending again
        WorkQueueAdmin admin = adminOf(queue);

        assertEquals(5L, admin.purgeCompleted(queue.name(), 5).block(WAIT));
        assertEquals(Set.of("second-1", "second-2", "second-3", "second-4"),
                Set.copyOf(keys(all(admin, queue.name(), ItemState.COMPLETED, 10))));
        assertEquals(4L, admin.purgeCompleted(queue.name(), 10).block(WAIT));
        assertEquals(0L, admin.purgeCompleted(queue.name(), 10).block(WAIT));
        assertEquals(2, Queues.rows(prefix, queue), "pending and the restarted second-0 stay");
    }

    @Test
    void queuesListsTheTablesQueuesAndTheRegisteredOnesWithTheirStats() {
        String ownPrefix = TestDatabase.createTable();
        ReactiveWorkQueue<String> a = Queues.fresh(ownPrefix, "a", c -> c.maxAttempts(4));
        ReactiveWorkQueue<String> b = Queues.fresh(ownPrefix, "b");
        ReactiveWorkQueue<String> empty = Queues.fresh(ownPrefix, "c-empty");
        a.enqueueKeys("x", "y").block(WAIT);
        b.enqueueKeys("z").block(WAIT);
        WorkQueueAdmin admin = WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(ownPrefix)
                .queue(a).queue(WorkQueueConfig.builder(empty.name()).tablePrefix(ownPrefix).build())
                .build();

        List<QueueSummary> queues = admin.queues().collectList().block(WAIT);

        assertEquals(List.of(a.name(), b.name(), empty.name()), queues.stream().map(QueueSummary::name).toList());
        assertSameCounts(a.stats().block(WAIT), queues.get(0).stats());
        assertEquals(4, queues.get(0).maxAttempts());
        assertTrue(queues.get(0).registered());
        assertFalse(queues.get(1).registered(), "found in the table only");
        assertEquals(0, queues.get(1).maxAttempts());
        assertEquals(1, queues.get(1).stats().ready());
        assertEquals(Stats.of(0, 0, 0, 0, 0, Duration.ZERO), queues.get(2).stats());
    }

    @Test
    void everythingIsColdAndBadArgumentsAreSignalledAtSubscription() {
        CountingConnectionFactory counting = new CountingConnectionFactory(TestDatabase.pool());
        WorkQueueAdmin admin = WorkQueueAdmin.builder(counting).tablePrefix(prefix).build();

        Mono<ItemPage> zero = admin.items("q", ItemState.READY, null, 0);
        Mono<ItemPage> tooMany = admin.items("q", ItemState.READY, null, WorkQueueAdmin.MAX_PAGE_SIZE + 1);
        Mono<ItemPage> forged = admin.items("q", ItemState.READY, "not a cursor!", 10);
        Mono<List<String>> tooManyKeys = admin.retry("q",
                IntStream.range(0, WorkQueueAdmin.MAX_KEYS_PER_ACTION + 1).mapToObj(i -> "k" + i).toList());
        Mono<List<String>> nul = admin.remove("q", List.of("a\0b"));
        Mono<Long> purge = admin.purgeCompleted("q", 0);
        admin.queues();
        admin.stats("q");
        admin.item("q", "k");
        assertEquals(0, counting.creates(), "nothing touches the database before subscription");

        String pendingCursor = pendingCursor();
        for (Mono<?> bad : List.<Mono<?>>of(zero, tooMany, forged, tooManyKeys, nul, purge,
                admin.items("q", ItemState.COMPLETED, pendingCursor, 10))) {
            StepVerifier.create(bad).expectError(IllegalArgumentException.class).verify(WAIT);
        }
        assertEquals(List.of(), admin.retry("q", List.of()).block(WAIT));
        assertEquals(List.of(), admin.remove("q", List.of()).block(WAIT));
        assertEquals(0, counting.creates(), "a bad argument, or no key, opens no connection");
        assertEquals(List.of(), admin.items("q", ItemState.READY, null, 10).block(WAIT).items());
        assertEquals(1, counting.creates());
    }

    private static String pendingCursor() {
        ReactiveWorkQueue<String> queue = Queues.fresh(prefix, "cursor");
        queue.enqueueKeys("a", "b").block(WAIT);
        return adminOf(queue).items(queue.name(), ItemState.READY, null, 1).block(WAIT).next();
    }

    @Test
    void theBuilderRefusesQueuesOfAnotherTableAndTwiceTheSameName() {
        ReactiveWorkQueue<String> elsewhere = Queues.fresh(TestDatabase.createTable(), "elsewhere");
        ReactiveWorkQueue<String> here = Queues.fresh(prefix, "here");
        assertThrows(InvalidConfigException.class,
                () -> WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix).queue(elsewhere).build());
        assertThrows(InvalidConfigException.class,
                () -> WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix(prefix).queue(here)
                        .queue(WorkQueueConfig.builder(here.name()).tablePrefix(prefix).build()).build());
        assertThrows(InvalidConfigException.class, () -> WorkQueueAdmin.builder(TestDatabase.pool()).tablePrefix("Bad-Prefix").build());
        assertThrows(InvalidConfigException.class, () -> WorkQueueAdmin.builder(TestDatabase.pool()).writeAttempts(0).build());
    }
}
