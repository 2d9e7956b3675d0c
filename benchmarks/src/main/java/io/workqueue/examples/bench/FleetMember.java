package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.r2dbc.pool.ConnectionPool;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;

/**
 * One member of the fleet {@link Fleet} starts: a JVM of its own with its own pool and queue
 * instance, driven over stdin and stdout so the parent can start every member at the same moment
 * and read the server's CPU while the members' sessions are still open.
 *
 * <p>The conversation, one line each way: the member sets up (and warms its JIT up on a table of its
 * own, until the JIT settles) and prints {@code ready}; on {@code go} it starts working, printing
 * {@code progress N} (items done so far) at most every 20 ms; on {@code stop}, or when its work is
 * over, it finishes what it has in hand and prints {@code done {json}}; on {@code exit} (or end of
 * input) it closes its sessions and exits. Graphile Worker's member
 * ({@code peers/graphile-worker/fleet.mjs}) speaks the same lines.
 *
 * <p>Roles: {@code drain ID WORKERS BATCH PREFIX QUEUE WARMUP} runs WORKERS {@code process()}
 * workers of concurrency and claim batch BATCH, with no-op handlers, until {@code stop};
 * {@code housekeep ID PREFIX QUEUE INTERVAL_MS INTERVALS RETENTION_S PHASE_MS} runs {@link #housekeepOnce}
 * on a fixed schedule of INTERVALS ticks, the first PHASE_MS after {@code go}, and then reports on its own.
 */
public final class FleetMember {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    /**
     * The system property choosing how each member keeps house: {@code elected} (the default, the
     * library's {@code housekeep(lease)}) or {@code every-instance} (what the starter did before
     * the election: every instance reaps, reads stats and horizon), the baseline.
     */
    static final String HOUSEKEEPING_MODE = "fleet.housekeeping";
    private static final boolean EVERY_INSTANCE =
            "every-instance".equals(System.getProperty(HOUSEKEEPING_MODE, "elected"));

    /** What one housekeeping round does in this run; recorded with the results. */
    static final String HOUSEKEEPING = EVERY_INSTANCE
            ? "every-instance: reapAll() (reap until short, at most 100), stats(), horizon(), on every instance"
            : "elected: housekeep(1.25 x interval): one keeper per queue reaps, reads, publishes; the others read its reading";

    /**
     * One interval's housekeeping of {@code queue} on this instance: the library's elected round, or
     * with {@code -Dfleet.housekeeping=every-instance} the round every instance ran before it.
     */
    static Mono<Void> housekeepOnce(ReactiveWorkQueue<String> queue, Duration interval) {
        if (EVERY_INSTANCE) {
            return queue.reapAll().then(queue.stats()).then(queue.horizon()).then();
        }
        return queue.housekeep(interval.plus(interval.dividedBy(4))).then();
    }

    public static void main(String[] args) throws Exception {
        int status = 1;
        try {
            Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            switch (args[0]) {
                case "drain" -> drain(db, in, args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), args[4],
                        args[5], Integer.parseInt(args[6]));
                case "housekeep" -> housekeep(db, in, args[1], args[2], args[3], Duration.ofMillis(Long.parseLong(args[4])),
                        Integer.parseInt(args[5]), Duration.ofSeconds(Long.parseLong(args[6])),
                        Duration.ofMillis(Long.parseLong(args[7])));
                default -> throw new IllegalArgumentException("unknown role " + args[0]);
            }
            status = 0;
        } finally {
            // The pool's and the driver's threads are not daemons.
            System.exit(status);
        }
    }

    // ------------------------------------------------------------------ drain

    private static void drain(Db db, BufferedReader in, String id, int workers, int batch, String prefix, String queueName,
            int warmup) throws Exception {
        String app = "fleet-drain-" + id;
        ConnectionPool pool = db.pool(app, workers + 1);
        WorkerOptions options = WorkerOptions.builder().concurrency(batch).claimBatch(batch).lease(Drain.LEASE)
                .poll(Drain.POLL).build();
        int warmupRounds = warmup > 0 ? warmUp(pool, workers, batch, options, warmup, id) : 0;
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(queueName).tablePrefix(prefix).maxClaimBatch(Math.max(500, batch)).build())
                .build();
        OUT.println("ready");
        expect(in, "go");
        AtomicLong done = new AtomicLong();
        AtomicLong lastMicros = new AtomicLong();
        Sinks.Empty<Void> stop = Sinks.empty();
        CountDownLatch stopped = new CountDownLatch(workers);
        long began = epochMicros();
        long jitAtGo = jitMillis();
        for (int w = 0; w < workers; w++) {
            queue.process(item -> Mono.empty(), options, stop.asMono())
                    .doOnNext(item -> {
                        done.incrementAndGet();
                        lastMicros.accumulateAndGet(epochMicros(), Math::max);
                    })
                    .doFinally(signal -> stopped.countDown())
                    .subscribe(item -> { }, e -> System.err.println("member " + id + ": worker failed: " + e));
        }
        Thread reporter = progress(done);
        expect(in, "stop");
        stop.tryEmitEmpty();
        boolean clean = stopped.await(60, TimeUnit.SECONDS);
        long jitDuringRun = jitMillis() - jitAtGo;
        reporter.interrupt();
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("member", id);
        report.put("completed", done.get());
        report.put("warmup_rounds", warmupRounds);
        report.put("jit_ms_during_run", jitDuringRun);
        report.put("began_epoch_us", began);
        report.put("last_completion_epoch_us", lastMicros.get());
        report.put("stopped_cleanly", clean);
        OUT.println("done " + JSON.writeValueAsString(report));
        awaitExit(in);
        queue.close().block(Duration.ofSeconds(30));
        pool.disposeLater().block(Duration.ofSeconds(30));
    }

    /**
     * Warm-up rounds stop once the JIT spent at most this share of a round's wall time compiling.
     * With four members on two cores, one round of the default 20,000 items left the JIT compiling
     * through the measured drain: {@code perf} sampled the compiler threads at 26-34 % of the
     * machine during P = 4's timed drain (4-15 % at P = 1), CPU the server then did not get, so
     * P = 4's server cost per item measured the members' warm-up as much as the queue.
     */
    static final double JIT_SETTLED_SHARE = 0.05;
    /** At most this many warm-up rounds, whatever the JIT does. */
    static final int MAX_WARMUP_ROUNDS = 30;
    /** And at most this long warming up, so a member always reports ready within the parent's wait. */
    static final Duration MAX_WARMUP = Duration.ofSeconds(100);

    /**
     * Drains backlogs of {@code n} keys of its own, on a table of its own, with the measured
     * options and the measured statements (completed rows are kept, as in the measured drain; the
     * parent empties the table before each run), round after round until the JIT has settled (it
     * compiled for at most {@link #JIT_SETTLED_SHARE} of the last round), so the library's paths are
     * compiled before the parent starts the clock and the compiler threads do not compete with the
     * server during it. Returns how many rounds it drained.
     */
    private static int warmUp(ConnectionPool pool, int workers, int batch, WorkerOptions options, int n, String id) {
        long deadline = System.nanoTime() + MAX_WARMUP.toNanos();
        int rounds = 0;
        boolean settled = false;
        while (!settled && rounds < MAX_WARMUP_ROUNDS && System.nanoTime() < deadline) {
            long roundStart = System.nanoTime();
            long jitAtStart = jitMillis();
            warmUpRound(pool, workers, batch, options, n, id);
            rounds++;
            double roundMillis = (System.nanoTime() - roundStart) / 1e6;
            settled = jitMillis() - jitAtStart <= JIT_SETTLED_SHARE * roundMillis;
        }
        return rounds;
    }

    private static void warmUpRound(ConnectionPool pool, int workers, int batch, WorkerOptions options, int n, String id) {
        ReactiveWorkQueue<String> warm = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder("warm-" + id + "-" + System.nanoTime()).tablePrefix(Fleet.WARM_PREFIX)
                        .maxClaimBatch(Math.max(500, batch)).build())
                .build();
        List<String> keys = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            keys.add("w" + i);
        }
        Flux.fromIterable(keys).buffer(1000).concatMap(warm::enqueueKeys).blockLast(Duration.ofMinutes(2));
        Flux.range(0, workers)
                .flatMap(w -> warm.process(item -> Mono.empty(), options), workers)
                .take(n)
                .blockLast(Duration.ofMinutes(2));
        warm.close().block(Duration.ofSeconds(30));
    }

    /** The JIT's compile time so far in this JVM, in milliseconds (every compiler thread's summed). */
    static long jitMillis() {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : 0;
    }

    // ------------------------------------------------------------------ housekeeping

    private static void housekeep(Db db, BufferedReader in, String id, String prefix, String queueName, Duration interval,
            int intervals, Duration retention, Duration phase) throws Exception {
        String app = "fleet-housekeep-" + id;
        ConnectionPool pool = db.pool(app, 2);
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(queueName).tablePrefix(prefix).retention(retention).build())
                .build();
        // Untimed rounds first, two at a time, so both of the pool's sessions have run the round's
        // statements before the measurement, as a service's long-lived sessions have: a session's
        // first statements fill its catalog caches and plan what it prepares, work a 60 s
        // measurement would otherwise charge once per session (16 sessions at P = 8 against 2).
        // The first member to run one keeps house from then on.
        Flux.range(0, 4).flatMap(i -> housekeepOnce(queue, interval), 2).blockLast(Duration.ofMinutes(1));
        OUT.println("ready");
        expect(in, "go");
        AtomicLong rounds = new AtomicLong();
        AtomicLong skipped = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        List<Double> roundMillis = new ArrayList<>();
        long began = System.nanoTime();
        // The starter's schedule: a tick that comes while a round still runs is dropped, never queued.
        // Its first tick at this member's phase: a fleet's instances started at different times.
        Flux.interval(phase, interval, Schedulers.parallel())
                .take(intervals)
                .onBackpressureDrop(tick -> skipped.incrementAndGet())
                .concatMap(tick -> {
                    long start = System.nanoTime();
                    return housekeepOnce(queue, interval)
                            .doOnSuccess(v -> {
                                rounds.incrementAndGet();
                                synchronized (roundMillis) {
                                    roundMillis.add((System.nanoTime() - start) / 1e6);
                                }
                            })
                            .onErrorResume(e -> {
                                failed.incrementAndGet();
                                System.err.println("member " + id + ": housekeeping failed: " + e);
                                return Mono.empty();
                            });
                }, 1)
                .blockLast(interval.multipliedBy(intervals + 10L));
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("member", id);
        report.put("rounds", rounds.get());
        report.put("skipped", skipped.get());
        report.put("failed", failed.get());
        report.put("seconds", (System.nanoTime() - began) / 1e9);
        synchronized (roundMillis) {
            report.put("round_ms_p50", Percentiles.of(roundMillis, 50));
            report.put("round_ms_max", Percentiles.of(roundMillis, 100));
        }
        OUT.println("done " + JSON.writeValueAsString(report));
        awaitExit(in);
        queue.close().block(Duration.ofSeconds(30));
        pool.disposeLater().block(Duration.ofSeconds(30));
    }

    // ------------------------------------------------------------------ the conversation

    private static Thread progress(AtomicLong done) {
        Thread reporter = new Thread(() -> {
            long reported = -1;
            while (!Thread.currentThread().isInterrupted()) {
                long now = done.get();
                if (now != reported) {
                    OUT.println("progress " + now);
                    reported = now;
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "fleet-member-progress");
        reporter.setDaemon(true);
        reporter.start();
        return reporter;
    }

    private static void expect(BufferedReader in, String word) throws IOException {
        String line = in.readLine();
        if (line == null || !line.trim().equals(word)) {
            throw new IllegalStateException("expected '" + word + "' from the parent but got " + line);
        }
    }

    /** Waits for {@code exit}; the parent reads the sessions' CPU meanwhile. */
    private static void awaitExit(BufferedReader in) throws IOException {
        String line;
        do {
            line = in.readLine();
        } while (line != null && !line.trim().equals("exit"));
    }

    static long epochMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }
}
