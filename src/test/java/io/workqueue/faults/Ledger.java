package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.migrations.WorkQueueMigrations;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The test's own record of what happened to every key, independent of the queue: which keys were
 * enqueued (and which enqueues were retried after an error, whose first run may have committed),
 * every claim a worker saw with its attempts and reclaimed flag, and every completion a worker saw
 * acknowledged. {@link #assertExact} checks it against the rules of a fault scenario and against
 * the table. Thread-safe.
 */
final class Ledger {
    private static final Logger log = LoggerFactory.getLogger(Ledger.class);

    /** One claim as a worker saw it. */
    record Claim(int attempts, boolean reclaimed, String worker, long atNanos) {}

    private final String scenario;
    private final Set<String> enqueued = ConcurrentHashMap.newKeySet();
    /** Keys whose enqueue failed at least once and was run again: the failed run may have committed. */
    private final Set<String> enqueueRetried = ConcurrentHashMap.newKeySet();
    private final Map<String, List<Claim>> claims = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> completions = new ConcurrentHashMap<>();
    private final AtomicLong completedKeys = new AtomicLong();
    /** Keys whose work always fails: released on every attempt, they must end stalled. */
    private final Map<String, Integer> expectedStalled = new ConcurrentHashMap<>();

    Ledger(String scenario) {
        this.scenario = scenario;
    }

    void enqueued(Collection<String> keys) {
        enqueued.addAll(keys);
    }

    /** {@code key} always fails and is released: it must end stalled after {@code maxAttempts} claims. */
    void expectStalled(String key, int maxAttempts) {
        expectedStalled.put(key, maxAttempts);
    }

    void enqueueRetried(Collection<String> keys) {
        enqueueRetried.addAll(keys);
    }

    void claimed(Item<String> item, String worker) {
        List<Claim> list = claims.computeIfAbsent(item.key(), k -> new ArrayList<>());
        synchronized (list) {
            list.add(new Claim(item.attempts(), item.reclaimed(), worker, System.nanoTime()));
        }
    }

    void completed(Collection<String> keys) {
        for (String key : keys) {
            if (completions.computeIfAbsent(key, k -> new AtomicLong()).getAndIncrement() == 0) {
                completedKeys.incrementAndGet();
            }
        }
    }

    /** The keys whose enqueue has been acknowledged so far. */
    Set<String> enqueuedSoFar() {
        return Set.copyOf(enqueued);
    }

    /** The keys a worker has seen acknowledged as completed so far. */
    Set<String> completedSoFar() {
        return Set.copyOf(completions.keySet());
    }

    /**
     * How many acknowledged enqueues and completions from before a fault are missing from the table
     * after it: {@code [enqueues lost, completions lost]}. For faults that may lose writes, where
     * {@link #assertSurvived} would be the wrong rule.
     */
    static long[] countLost(Set<String> enqueuedBefore, Set<String> completedBefore, Map<String, TableRow> table) {
        long enqueues = enqueuedBefore.stream().filter(key -> !table.containsKey(key)).count();
        long completions = completedBefore.stream()
                .filter(key -> table.get(key) == null || !table.get(key).completed()).count();
        return new long[] {enqueues, completions};
    }

    /**
     * Checks that everything acknowledged before a fault is still in the table after it: every
     * acknowledged enqueue is a row, every acknowledged completion a completed row. Nothing in the
     * scenarios re-enqueues a key, so a completed row stays completed.
     */
    static void assertSurvived(String fault, Set<String> enqueuedBefore, Set<String> completedBefore,
            Map<String, TableRow> table) {
        List<String> problems = new ArrayList<>();
        for (String key : enqueuedBefore) {
            if (!table.containsKey(key)) {
                problems.add("enqueue of " + key + " was acknowledged before the " + fault + " but the row is gone");
            }
        }
        for (String key : completedBefore) {
            TableRow row = table.get(key);
            if (row == null || !row.completed()) {
                problems.add("completion of " + key + " was acknowledged before the " + fault + " but the row is "
                        + (row == null ? "gone" : "pending again"));
            }
        }
        log.info("[{}] {} acknowledged enqueues and {} acknowledged completions from before it are all in the table: {}",
                fault, enqueuedBefore.size(), completedBefore.size(), problems.isEmpty());
        if (!problems.isEmpty()) {
            throw new AssertionError(problems.size() + " acknowledged writes lost in the " + fault + ":\n"
                    + String.join("\n", problems.subList(0, Math.min(20, problems.size()))));
        }
    }

    /** How many distinct keys a worker has seen acknowledged as completed. */
    long completedKeys() {
        return completedKeys.get();
    }

    int enqueuedKeys() {
        return enqueued.size();
    }

    List<Claim> claimsOf(String key) {
        List<Claim> list = claims.getOrDefault(key, List.of());
        synchronized (list) {
            return List.copyOf(list);
        }
    }

    /** What {@link #assertExact} found, for the scenario's report line. */
    record Summary(long enqueued, long completed, long claims, long duplicates, long reclaimedClaims,
            long unseenClaims, long restartedByRetry, long lost, long leftLeased) {}

    /**
     * The exact accounting every fault scenario ends with:
     * <ul>
     *   <li>every enqueued key is in the table and completed, and a worker saw it completed;
     *   <li>nothing is left leased or pending, and the table holds no key that was not enqueued;
     *   <li>every claim after a key's first shows a lapsed lease taken over ({@code reclaimed},
     *       attempts above 1) — the only duplicates allowed — unless the key's enqueue was retried
     *       after an error, whose first run may have committed: then a second run restarts a
     *       completed key (attempts 1, not reclaimed), which the API specifies and which is counted
     *       separately;
     *   <li>a claim with attempts above 1 is flagged reclaimed (nothing in these scenarios releases).
     * </ul>
     *
     * @param table    the keys and attempts in the table, as read after the run
     * @param stats    the queue's stats after the run
     */
    Summary assertExact(Map<String, TableRow> table, Stats stats, Duration recovery) {
        long duplicates = 0;
        long reclaimedClaims = 0;
        long unseen = 0;
        long restarted = 0;
        List<String> problems = new ArrayList<>();
        for (String key : enqueued) {
            TableRow row = table.get(key);
            if (row == null) {
                problems.add("lost: " + key + " is not in the table");
                continue;
            }
            Integer maxAttempts = expectedStalled.get(key);
            if (maxAttempts != null) {
                checkStalled(key, row, maxAttempts, problems);
                continue;
            }
            if (!row.completed()) {
                problems.add("not completed: " + key + " " + row);
            }
            if (!completions.containsKey(key)) {
                problems.add("no worker saw " + key + " completed");
            }
            List<Claim> seen = claimsOf(key);
            if (seen.isEmpty()) {
                problems.add("never claimed by a worker: " + key);
                continue;
            }
            duplicates += seen.size() - 1;
            int lives = 0;
            for (Claim claim : seen) {
                if (claim.attempts() == 1) {
                    if (claim.reclaimed()) {
                        problems.add(key + ": a first attempt flagged reclaimed " + seen);
                    }
                    lives++;
                } else {
                    if (!claim.reclaimed()) {
                        problems.add(key + ": attempt " + claim.attempts() + " not flagged reclaimed " + seen);
                    }
                    reclaimedClaims++;
                }
            }
            if (lives > 1) {
                if (enqueueRetried.contains(key)) {
                    restarted += lives - 1;
                } else {
                    problems.add(key + ": claimed afresh twice without a retried enqueue " + seen);
                }
            }
            // Attempts the table counted that no worker saw: a claim whose answer was lost in transit.
            int maxSeen = seen.stream().mapToInt(Claim::attempts).max().orElse(0);
            unseen += Math.max(0, row.attempts() - maxSeen);
        }
        for (String key : table.keySet()) {
            if (!enqueued.contains(key)) {
                problems.add("the table holds a key never enqueued: " + key);
            }
        }
        long stalled = expectedStalled.size();
        long lost = enqueued.stream().filter(k -> !table.containsKey(k)).count();
        long claimCount = claims.values().stream().mapToLong(l -> {
            synchronized (l) {
                return l.size();
            }
        }).sum();
        Summary summary = new Summary(enqueued.size(), completedKeys.get(), claimCount, duplicates, reclaimedClaims,
                unseen, restarted, lost, stats.leased());
        log.info("[{}] keys enqueued={} completed={} claims={} duplicated={} (reclaimed after a lapse={}, restarted by"
                        + " a retried enqueue={}) claims-lost-in-transit={} stalled={} lost={} left-leased={} recovery={} ms",
                scenario, summary.enqueued(), summary.completed(), summary.claims(), summary.duplicates(),
                summary.reclaimedClaims(), summary.restartedByRetry(), summary.unseenClaims(), stalled, summary.lost(),
                summary.leftLeased(), recovery.toMillis());
        assertTrue(problems.isEmpty(), () -> problems.size() + " accounting problems, first: "
                + problems.subList(0, Math.min(20, problems.size())));
        // The table was read key by key above; stats() counts completed items up to its limit.
        long completed = enqueued.size() - stalled;
        assertEquals(Stats.of(stalled, 0, 0, stalled, Math.min(completed, Stats.COMPLETED_COUNT_LIMIT),
                completed > Stats.COMPLETED_COUNT_LIMIT, Duration.ZERO), stats,
                "nothing ready or leased; every key completed but those that always fail, which are stalled");
        assertEquals(enqueued.size(), table.size());
        return summary;
    }

    /**
     * A key whose work always fails: claimed exactly {@code maxAttempts} times (attempts 1, 2, ...,
     * each a fresh claim after a release, never a reclaim), never completed, now out of attempts.
     */
    private void checkStalled(String key, TableRow row, int maxAttempts, List<String> problems) {
        List<Claim> seen = claimsOf(key);
        List<Integer> attempts = seen.stream().map(Claim::attempts).toList();
        List<Integer> expected = java.util.stream.IntStream.rangeClosed(1, maxAttempts).boxed().toList();
        if (!attempts.equals(expected) || seen.stream().anyMatch(Claim::reclaimed)) {
            problems.add(key + " should have been claimed with attempts " + expected + ", none reclaimed: " + seen);
        }
        if (row.completed() || row.leased() || row.attempts() != maxAttempts) {
            problems.add(key + " should be stalled (pending, not leased, attempts " + maxAttempts + "): " + row);
        }
        if (completions.containsKey(key)) {
            problems.add(key + " always fails but a worker completed it");
        }
    }

    /** One row of the table, as the accounting reads it. */
    record TableRow(int attempts, boolean completed, boolean leased) {}

    /** Reads every row of {@code queue} on its table through {@code server}. */
    static Map<String, TableRow> readTable(FaultServer server, String prefix, ReactiveWorkQueue<String> queue) {
        Map<String, TableRow> rows = new ConcurrentHashMap<>();
        for (String line : server.query("""
                SELECT attempts || ',' || (completed_at IS NOT NULL) || ',' || (lease_until > now()) || ',' || item_key
                FROM %s WHERE queue_name = $1""".formatted(WorkQueueMigrations.tableName(prefix)), queue.name())) {
            String[] parts = line.split(",", 4);
            rows.put(parts[3], new TableRow(Integer.parseInt(parts[0]), parts[1].equals("true"), parts[2].equals("true")));
        }
        return rows;
    }
}
