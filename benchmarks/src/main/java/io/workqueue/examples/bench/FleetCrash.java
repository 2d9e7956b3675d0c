package io.workqueue.examples.bench;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.Connection;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A fleet member that dies holding leases, and what the survivors then do with them. The member is
 * a queue instance of its own, on a pool of its own, over the same queue and table as the
 * survivors: it claims, one claim at a time, until it holds the number of items asked for or
 * {@link #CLAIMING} has passed, and then stops — it completes and releases nothing, its sessions
 * close — so its leases lapse. Its items are measured from where the member's leases ended on the
 * database clock, read back from the table before they can lapse, to the moment a survivor's
 * handler started on them again; the harness and the server share the machine's clock.
 *
 * <p>Why the numbers matter: a lapsed lease sits behind every survivor's claim cursor, so only a
 * look finds it, and looks are spaced twenty times their own cost. That cost is what a held horizon
 * inflates.
 *
 * <p>Thread-safe: {@link #handedOut} is called on the survivors' driver threads while the member
 * claims on a thread of its own; {@link #result} is called once, after the phase.
 */
final class FleetCrash {
    /**
     * Claiming stops starting new claims this long after it began: well inside the member's lease,
     * so that its lease ends are read back before the first of them lapses.
     */
    static final Duration CLAIMING = Duration.ofSeconds(3);

    /** What a crash came to; times in milliseconds after each item's own lease ended. */
    record Result(String phase, int held, double claimingSeconds, int back, int backFlaggedReclaimed, double p50Ms,
            double p99Ms, double maxMs, long newerAheadMost, int leaseEndsEstimated) {}

    /** One of the member's items: its place in enqueue order and when its lease ends (epoch microseconds). */
    private record Held(long sequence, long leaseEndMicros) {}

    /** One item a survivor handed out, while the crash was being watched. */
    private record HandOut(long atMicros, long sequence, String key, boolean reclaimed) {}

    private final Db db;
    private final WorkQueueConfig config;
    private final String table;
    private final int items;
    private final int claimLimit;
    private final Duration lease;
    private final Consumer<String> claimedByMember;
    private final String phase;
    private final Map<String, Held> held = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<HandOut> handOuts = new ConcurrentLinkedQueue<>();
    private final Thread member;
    private volatile boolean watching = true;
    private volatile double claimingSeconds = Double.NaN;
    private volatile int leaseEndsEstimated;
    private volatile long watchEndMicros;

    /**
     * @param claimedByMember told each key the member leases, at once (the harness stops timing its pickup)
     */
    FleetCrash(String phase, Db db, WorkQueueConfig config, String table, int items, int claimLimit, Duration lease,
            Consumer<String> claimedByMember) {
        this.phase = phase;
        this.db = db;
        this.config = config;
        this.table = table;
        this.items = items;
        this.claimLimit = claimLimit;
        this.lease = lease;
        this.claimedByMember = claimedByMember;
        this.member = new Thread(this::live, "pressure-fleet-member");
        this.member.setDaemon(true);
    }

    /** Starts the member; returns at once. */
    void start() {
        member.start();
    }

    private void live() {
        try {
            ConnectionPool pool = db.pool("pressure-member", 2);
            ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class).config(config).build();
            long began = System.nanoTime();
            Map<String, Long> claimedAt = new HashMap<>();
            while (held.size() < items && System.nanoTime() - began < CLAIMING.toNanos()) {
                List<Item<String>> claimed = queue.claim(Math.min(claimLimit, items - held.size()), lease)
                        .block(Duration.ofMinutes(1));
                long returned = epochMicros();
                for (Item<String> item : claimed) {
                    claimedByMember.accept(item.key());
                    held.put(item.key(), new Held(sequence(item.key()), returned + lease.toNanos() / 1000));
                    claimedAt.put(item.key(), returned);
                }
                if (claimed.isEmpty()) {
                    Db.sleep(10);
                }
            }
            claimingSeconds = (System.nanoTime() - began) / 1e9;
            readLeaseEnds(claimedAt);
            // Dies: no complete, no release, no close (a crash flushes nothing); its sessions go.
            pool.disposeLater().block(Duration.ofSeconds(30));
            System.err.printf(java.util.Locale.ROOT, "fleet member claimed %d items in %.1f s and died holding them%n",
                    held.size(), claimingSeconds);
        } catch (RuntimeException e) {
            System.err.println("fleet member failed: " + e);
        }
    }

    /**
     * Replaces each item's estimated lease end (when its claim returned, plus the lease: later than
     * the truth by the claim's run) with the table's {@code lease_until}, unless a survivor already
     * holds or completed the item (a claim that ran past the lease), which keeps the estimate.
     */
    private void readLeaseEnds(Map<String, Long> claimedAt) {
        String sql = "SELECT item_key, (EXTRACT(EPOCH FROM lease_until) * 1000000)::bigint AS lease_until_us,"
                + " completed_at IS NOT NULL AS completed FROM " + table
                + " WHERE queue_name = $1 AND item_key = ANY($2::text[])";
        String[] keys = held.keySet().toArray(String[]::new);
        List<Object[]> rows = Mono.usingWhen(Mono.from(db.factory("pressure-member-leases").create()),
                        (Connection c) -> Flux.from(c.createStatement(sql).bind("$1", config.name()).bind("$2", keys)
                                        .execute())
                                .concatMap(r -> r.map((row, meta) -> new Object[] {row.get(0, String.class),
                                        row.get(1, Long.class), row.get(2, Boolean.class)}))
                                .collectList(),
                        Connection::close)
                .block(Duration.ofMinutes(1));
        int estimated = keys.length - rows.size();
        long slackMicros = Duration.ofSeconds(1).toNanos() / 1000;
        for (Object[] row : rows) {
            String key = (String) row[0];
            long leaseUntil = (Long) row[1];
            boolean completed = (Boolean) row[2];
            if (completed || leaseUntil > claimedAt.get(key) + lease.toNanos() / 1000 + slackMicros) {
                estimated++;
            } else {
                held.put(key, new Held(sequence(key), leaseUntil));
            }
        }
        leaseEndsEstimated = estimated;
        if (estimated > 0) {
            System.err.println("fleet member: " + estimated + " lease ends estimated (a survivor had them already)");
        }
    }

    /** A survivor's handler started on {@code item}; called on a driver thread. */
    void handedOut(Item<String> item) {
        if (watching) {
            handOuts.add(new HandOut(epochMicros(), sequence(item.key()), item.key(), item.reclaimed()));
        }
    }

    /** Stops watching, waits for the member to have died, and sums up. */
    Result result() throws InterruptedException {
        watchEndMicros = epochMicros();
        watching = false;
        member.join(Duration.ofMinutes(2).toMillis());
        List<HandOut> all = new ArrayList<>(handOuts);
        all.sort(Comparator.comparingLong(HandOut::atMicros));
        // The first hand-out of each of the member's items after its lease ended.
        Map<String, HandOut> back = new HashMap<>();
        List<HandOut> fresh = new ArrayList<>();
        for (HandOut h : all) {
            if (held.containsKey(h.key())) {
                back.putIfAbsent(h.key(), h);
            } else {
                fresh.add(h);
            }
        }
        long[] freshAt = fresh.stream().mapToLong(HandOut::atMicros).toArray();
        List<Double> delays = new ArrayList<>();
        long newerAheadMost = 0;
        for (Map.Entry<String, Held> entry : held.entrySet()) {
            Held h = entry.getValue();
            HandOut again = back.get(entry.getKey());
            long until = again == null ? watchEndMicros : again.atMicros();
            if (again != null) {
                delays.add((again.atMicros() - h.leaseEndMicros()) / 1e3);
            }
            // Newer items handed out while this one was due again and not yet back: claim order skipped it.
            long ahead = 0;
            int from = lowerBound(freshAt, h.leaseEndMicros());
            for (int i = from; i < freshAt.length && freshAt[i] < until; i++) {
                if (fresh.get(i).sequence() > h.sequence()) {
                    ahead++;
                }
            }
            newerAheadMost = Math.max(newerAheadMost, ahead);
        }
        int flagged = (int) back.values().stream().filter(HandOut::reclaimed).count();
        return new Result(phase, held.size(), claimingSeconds, back.size(), flagged, Percentiles.of(delays, 50),
                Percentiles.of(delays, 99), delays.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN),
                newerAheadMost, leaseEndsEstimated);
    }

    private static int lowerBound(long[] sorted, long value) {
        int i = Arrays.binarySearch(sorted, value);
        if (i < 0) {
            return -i - 1;
        }
        while (i > 0 && sorted[i - 1] == value) {
            i--;
        }
        return i;
    }

    /** The producer's keys are {@code k1}, {@code k2}, ...: the number is the enqueue order. */
    private static long sequence(String key) {
        return Long.parseLong(key.substring(1));
    }

    private static long epochMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }
}
