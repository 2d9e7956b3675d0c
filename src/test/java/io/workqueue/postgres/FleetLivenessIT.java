package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.testing.Queues;
import io.workqueue.testing.RowLock;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The liveness of claims across a fleet, as a randomized property against the server. Several queue
 * instances (each with claim cursors of its own) share one queue; a random sequence interleaves
 * group-committed enqueues, transactional enqueues that commit seconds late (or roll back), claims
 * of random limits and priorities, completions, releases with delays, crashes of an instance (its
 * leases lapse; a new instance takes its place), a transaction holding the horizon switched on and
 * off, and row locks held by another session.
 *
 * <p><b>The invariant</b> is the README's liveness bound in its logical form: once an item is due,
 * and a look behind an instance's cursors has started after that moment and ended, every claim that
 * instance starts afterwards either hands the item out, or comes back full (everything it handed out
 * was ahead of the item in claim order), or the item has been handed out by then. A claim that
 * comes back short while such an item waits is a violation. It needs no wall-clock allowance, so it
 * holds on a loaded machine as on a quiet one; the waits it saw are printed.
 *
 * <p>The test knows when an item becomes due from its own actions, conservatively (at or after the
 * database makes it due): when the enqueue or commit returned, a lease's end counted from when the
 * claim returned, a release's delay from when it returned, a row lock's end. Items the test does not
 * know to be due (a live instance's lease that lapsed on a slow machine) are never checked, only
 * handed out. Run with {@code -Dfleet.seed=N} to replay a sequence; {@code -Dfleet.seconds} sets the
 * length (default 40).
 */
class FleetLivenessIT {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int INSTANCES = 3;
    private static final int[] BANDS = {0, 0, 0, 0, 5, -3, Integer.MAX_VALUE, Integer.MIN_VALUE};
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    /** One queue instance of the fleet, its looks, and the leases it holds. */
    private static final class Member {
        final int id;
        final ReactiveWorkQueue<String> queue;
        final ConcurrentLinkedQueue<CursorLook.Ended> looks = new ConcurrentLinkedQueue<>();
        /** Held key to the nanoTime its lease surely ended by. */
        final Map<String, Long> held = new HashMap<>();

        Member(int id, String name) {
            this.id = id;
            this.queue = Queues.over(TestDatabase.pool(), prefix, name, c -> c);
            ((PostgresWorkQueue<String>) queue).look().observeForTests(looks::add);
        }

        /** Whether a look of this member started after {@code sinceNanos} and ended before {@code beforeNanos}. */
        boolean lookedBetween(long sinceNanos, long beforeNanos) {
            for (CursorLook.Ended look : looks) {
                if (look.succeeded() && look.startNanos() - sinceNanos > 0 && beforeNanos - look.endNanos() > 0) {
                    return true;
                }
            }
            return false;
        }
    }

    /** A transactional enqueue, open until it commits or rolls back. */
    private record OpenTransaction(Connection connection, List<String> keys, long commitAfterNanos) {}

    @Test
    void everyDueItemIsHandedOutOnceALookAfterItBecameDueHasEnded() {
        long seed = Long.getLong("fleet.seed", new Random().nextLong());
        long seconds = Long.getLong("fleet.seconds", 40);
        Random random = new Random(seed);
        String name = TestDatabase.uniqueName("fleet");
        Deque<String> trace = new ArrayDeque<>();
        Run run = new Run(name, random, trace);
        try {
            run.play(Duration.ofSeconds(seconds).toNanos());
            run.drain();
        } catch (AssertionError | RuntimeException e) {
            throw new AssertionError("fleet seed " + seed + " (replay with -Dfleet.seed=" + seed + "); last steps:\n  "
                    + String.join("\n  ", trace), e);
        } finally {
            run.close();
        }
        System.out.printf("fleet seed %d: %d steps, %d items, %d crashes, %d due waits checked, max wait %d ms,"
                        + " %d short claims checked%n", seed, run.steps, run.enqueued.size(), run.crashes,
                run.waits.size(), run.waits.stream().mapToLong(Long::longValue).max().orElse(0) / 1_000_000,
                run.shortClaimsChecked);
    }

    private static final class Run {
        final String name;
        final Random random;
        final Deque<String> trace;
        final List<Member> members = new ArrayList<>();
        int nextMember;
        /** Key to the nanoTime from which it is surely due; only keys the test knows to be due. */
        final Map<String, Long> due = new LinkedHashMap<>();
        /** Leases of crashed members, not yet lapsed: key to when it surely has. */
        final Map<String, Long> crashedLeases = new HashMap<>();
        /** Keys a row lock holds, and that lock. */
        RowLock rowLock;
        List<String> locked = List.of();
        long unlockAfterNanos;
        Connection pin;
        long unpinAfterNanos;
        final List<OpenTransaction> transactions = new ArrayList<>();
        final Set<String> enqueued = new HashSet<>();
        final List<Long> waits = new ArrayList<>();
        int keySeq;
        int steps;
        int crashes;
        int shortClaimsChecked;

        Run(String name, Random random, Deque<String> trace) {
            this.name = name;
            this.random = random;
            this.trace = trace;
            for (int i = 0; i < INSTANCES; i++) {
                members.add(new Member(nextMember++, name));
            }
        }

        void note(String step) {
            trace.addLast(step);
            if (trace.size() > 40) {
                trace.removeFirst();
            }
        }

        void play(long forNanos) {
            long end = System.nanoTime() + forNanos;
            while (System.nanoTime() - end < 0) {
                steps++;
                endWhatIsDue();
                int roll = random.nextInt(100);
                // Claims have room to spare: on average they could take several times what arrives,
                // so they often come back short, which is when the invariant speaks.
                if (roll < 16) {
                    enqueue();
                } else if (roll < 18) {
                    beginTransactionalEnqueue();
                } else if (roll < 70) {
                    claim(members.get(random.nextInt(members.size())));
                } else if (roll < 82) {
                    finishSome(members.get(random.nextInt(members.size())));
                } else if (roll < 83) {
                    crash();
                } else if (roll < 85) {
                    togglePin();
                } else if (roll < 88) {
                    lockSomeDueRows();
                } else {
                    pause(5 + random.nextInt(60));
                }
            }
        }

        /** Commits the transactions, ends the row lock and the pin whose time has come. */
        void endWhatIsDue() {
            long now = System.nanoTime();
            for (Iterator<OpenTransaction> it = transactions.iterator(); it.hasNext(); ) {
                OpenTransaction tx = it.next();
                if (now - tx.commitAfterNanos() > 0) {
                    it.remove();
                    if (random.nextInt(10) == 0) {
                        Mono.from(tx.connection().rollbackTransaction()).then(Mono.from(tx.connection().close())).block(WAIT);
                        tx.keys().forEach(enqueued::remove);
                        note("rolled back " + tx.keys().size() + " transactional keys");
                    } else {
                        Mono.from(tx.connection().commitTransaction()).then(Mono.from(tx.connection().close())).block(WAIT);
                        long committed = System.nanoTime();
                        tx.keys().forEach(key -> due.put(key, committed));
                        note("committed " + tx.keys().size() + " transactional keys");
                    }
                }
            }
            if (rowLock != null && now - unlockAfterNanos > 0) {
                rowLock.release();
                long released = System.nanoTime();
                for (String key : locked) {
                    due.computeIfPresent(key, (k, at) -> Math.max(at, released));
                }
                note("released the row lock on " + locked.size() + " keys");
                rowLock = null;
                locked = List.of();
            }
            if (pin != null && now - unpinAfterNanos > 0) {
                Mono.from(pin.close()).block(WAIT);
                pin = null;
                note("unpinned the horizon");
            }
            promoteLapsedLeases();
        }

        String newKey() {
            String key = String.format("k%06d", keySeq++);
            enqueued.add(key);
            return key;
        }

        Entry<String> newEntry() {
            return Entry.of(newKey()).withPriority(BANDS[random.nextInt(BANDS.length)]);
        }

        void enqueue() {
            int n = 1 + random.nextInt(random.nextInt(20) == 0 ? 150 : 8);
            List<Entry<String>> entries = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                entries.add(newEntry());
            }
            members.get(random.nextInt(members.size())).queue.enqueue(entries).block(WAIT);
            long at = System.nanoTime();
            entries.forEach(entry -> due.put(entry.key(), at));
            note("enqueued " + n);
        }

        void beginTransactionalEnqueue() {
            if (transactions.size() >= 2) {
                return;
            }
            int n = 1 + random.nextInt(60);
            List<Entry<String>> entries = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                entries.add(newEntry());
            }
            Connection connection = Mono.from(TestDatabase.plain().create()).block(WAIT);
            Mono.from(connection.beginTransaction()).block(WAIT);
            members.get(random.nextInt(members.size())).queue.enqueue(connection, entries).block(WAIT);
            long commitAfter = System.nanoTime() + Duration.ofMillis(300 + random.nextInt(2700)).toNanos();
            transactions.add(new OpenTransaction(connection, entries.stream().map(Entry::key).toList(), commitAfter));
            note("began a transaction enqueuing " + n);
        }

        void claim(Member member) {
            int limit = 1 + random.nextInt(random.nextInt(4) == 0 ? 100 : 16);
            Duration lease = Duration.ofMillis(1500 + random.nextInt(2500));
            long started = System.nanoTime();
            List<Item<String>> items = member.queue.claim(limit, lease).block(WAIT);
            long returned = System.nanoTime();
            for (Item<String> item : items) {
                Long dueAt = due.remove(item.key());
                if (dueAt != null) {
                    waits.add(Math.max(0, returned - dueAt));
                }
                for (Member other : members) {
                    other.held.remove(item.key()); // a lease that lapsed, taken over
                }
                crashedLeases.remove(item.key());
                member.held.put(item.key(), returned + lease.toNanos());
            }
            note("member " + member.id + " claimed " + items.size() + " of " + limit);
            if (items.size() < limit) {
                shortClaimsChecked++;
                Set<String> lockedNow = new HashSet<>(locked);
                List<String> leftBehind = new ArrayList<>();
                due.forEach((key, dueAt) -> {
                    if (!lockedNow.contains(key) && member.lookedBetween(dueAt, started)) {
                        leftBehind.add(key);
                    }
                });
                if (!leftBehind.isEmpty()) {
                    fail("member " + member.id + "'s claim of " + limit + " came back with " + items.size()
                            + " while " + leftBehind.size() + " items were due, each since before a look of that"
                            + " member that ended before the claim began: " + leftBehind.subList(0, Math.min(10, leftBehind.size())));
                }
            }
        }

        void finishSome(Member member) {
            List<String> keys = new ArrayList<>(member.held.keySet());
            if (keys.isEmpty()) {
                return;
            }
            List<String> some = keys.subList(0, 1 + random.nextInt(keys.size()));
            List<String> chosen = List.copyOf(some);
            if (random.nextInt(4) == 0) {
                Duration delay = Duration.ofMillis(random.nextInt(1000));
                member.queue.release(delay, null, chosen).block(WAIT);
                long dueAt = System.nanoTime() + delay.toNanos();
                chosen.forEach(key -> due.put(key, dueAt));
                note("member " + member.id + " released " + chosen.size() + " after " + delay.toMillis() + " ms");
            } else {
                member.queue.complete(chosen).block(WAIT);
                note("member " + member.id + " completed " + chosen.size());
            }
            chosen.forEach(member.held::remove);
        }

        void crash() {
            Member crashed = members.remove(random.nextInt(members.size()));
            crashed.held.forEach((key, leaseEnd) -> crashedLeases.put(key, leaseEnd));
            crashes++;
            members.add(new Member(nextMember++, name));
            note("member " + crashed.id + " crashed holding " + crashed.held.size() + "; member " + (nextMember - 1)
                    + " started");
        }

        void togglePin() {
            if (pin != null) {
                return;
            }
            pin = Mono.from(TestDatabase.plain().create()).block(WAIT);
            Flux.from(pin.createStatement("BEGIN ISOLATION LEVEL REPEATABLE READ").execute())
                    .concatMap(r -> r.getRowsUpdated()).blockLast(WAIT);
            Flux.from(pin.createStatement("SELECT txid_current()").execute())
                    .concatMap(r -> r.map((row, m) -> 1)).blockLast(WAIT);
            unpinAfterNanos = System.nanoTime() + Duration.ofMillis(1000 + random.nextInt(4000)).toNanos();
            note("pinned the horizon");
        }

        void lockSomeDueRows() {
            if (rowLock != null || due.isEmpty()) {
                return;
            }
            List<String> candidates = new ArrayList<>(due.keySet());
            List<String> chosen = List.copyOf(candidates.subList(0, Math.min(candidates.size(), 1 + random.nextInt(5))));
            rowLock = RowLock.hold(Queues.table(prefix), name, chosen.toArray(String[]::new));
            locked = chosen;
            unlockAfterNanos = System.nanoTime() + Duration.ofMillis(200 + random.nextInt(1500)).toNanos();
            note("locked " + chosen.size() + " due rows in another session");
        }

        void pause(int millis) {
            Mono.delay(Duration.ofMillis(millis)).block(WAIT);
        }

        /** A crashed member's leases that have surely lapsed are due from their end. */
        void promoteLapsedLeases() {
            long now = System.nanoTime();
            for (Iterator<Map.Entry<String, Long>> it = crashedLeases.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, Long> lease = it.next();
                if (now - lease.getValue() > 0) {
                    due.put(lease.getKey(), lease.getValue());
                    it.remove();
                }
            }
        }

        /** Stops everything else, then claims until every key committed was handed out and completed. */
        void drain() {
            note("draining");
            for (OpenTransaction tx : transactions) {
                Mono.from(tx.connection().commitTransaction()).then(Mono.from(tx.connection().close())).block(WAIT);
                long committed = System.nanoTime();
                tx.keys().forEach(key -> due.put(key, committed));
            }
            transactions.clear();
            unlockAfterNanos = System.nanoTime();
            unpinAfterNanos = System.nanoTime();
            endWhatIsDue();
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (true) {
                promoteLapsedLeases();
                for (Member member : members) {
                    claim(member);
                    member.queue.complete(List.copyOf(member.held.keySet())).block(WAIT);
                    member.held.clear();
                }
                long pending = TestDatabase.queryLong("SELECT count(*) FROM " + Queues.table(prefix)
                        + " WHERE queue_name = $1 AND completed_at IS NULL", name);
                if (pending == 0) {
                    break;
                }
                assertTrue(System.nanoTime() - deadline < 0, pending + " items still pending after the drain");
                pause(20);
            }
            long completed = TestDatabase.queryLong("SELECT count(*) FROM " + Queues.table(prefix)
                    + " WHERE queue_name = $1 AND completed_at IS NOT NULL", name);
            assertEquals(enqueued.size(), completed, "every key committed was completed");
        }

        void close() {
            for (OpenTransaction tx : transactions) {
                Mono.from(tx.connection().close()).onErrorResume(e -> Mono.empty()).block(WAIT);
            }
            if (rowLock != null) {
                rowLock.release();
            }
            if (pin != null) {
                Mono.from(pin.close()).onErrorResume(e -> Mono.empty()).block(WAIT);
            }
        }
    }
}
