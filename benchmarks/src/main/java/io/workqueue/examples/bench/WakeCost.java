package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.r2dbc.pool.ConnectionPool;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.notify.PgNotificationListener;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * What one wakeup costs the process that is woken: an idle {@code claimStream} on an empty queue
 * whose instance listens on a channel, while pgbench sends {@code NOTIFY} on it at a steady rate,
 * against the same with an instance that does not listen (its listener still receives every
 * notification, and a side subscriber counts them). The difference in the JVM's CPU per notification
 * is what a wake-driven claim costs the client, everything included: the wake gate, the claim's
 * statement (built, parsed by the driver, sent, its empty answer decoded), the timers it arms and the
 * threads it wakes. The two variants alternate in one JVM, the first swapped each round; the JVM's
 * compile time in each round is reported beside it, since compiling is CPU of this process too.
 *
 * <p>Results go to {@code docs/benchmarks/wake-cost/} (README.md, results.json) unless {@code --out}
 * says otherwise. Run it through {@code benchmarks/wake-cost.sh}.
 */
public final class WakeCost {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final String PREFIX = "wakecost";
    private static final String CHANNEL = "wakecost";

    private WakeCost() {}

    /** One measured round of one variant. */
    record Round(boolean listening, int round, long notifications, long claimsHandedOut, double cpuSeconds,
            long jitMillis, double seconds) {
        double microsPerNotification() {
            return cpuSeconds * 1e6 / Math.max(1, notifications);
        }
    }

    public static void main(String[] args) {
        Bench.exitAfter(args, WakeCost::run);
    }

    private static void run(String[] args) throws Exception {
        int rate = 200;
        int seconds = 20;
        int rounds = 5;
        int warmupSeconds = 120;
        Path repo = Path.of(System.getProperty("bench.repo", ".")).toAbsolutePath().normalize();
        Path out = repo.resolve("docs/benchmarks/wake-cost");
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--rate" -> rate = Integer.parseInt(args[i + 1]);
                case "--seconds" -> seconds = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                case "--warmup-seconds" -> warmupSeconds = Integer.parseInt(args[i + 1]);
                case "--out" -> out = Path.of(args[i + 1]).toAbsolutePath();
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; options: --rate N (NOTIFY/s), --seconds S (per round), --rounds R, --warmup-seconds S, --out DIR");
            }
        }
        Db db = Db.fromEnvironment(System.getProperty("bench.database", "bench"));
        Map<String, Object> machine = Machine.describe(db, repo);
        db.migrate(PREFIX);
        Path script = Files.createTempFile("wake-cost", ".sql");
        Files.writeString(script, "NOTIFY " + CHANNEL + ";\n");
        ConnectionPool pool = db.pool("wake-cost", 4);
        PgNotificationListener listener = PgNotificationListener.builder(db.factory("wake-cost-listener"))
                .channel(CHANNEL).build();
        AtomicLong notifications = new AtomicLong();
        Disposable counting = listener.wakeups().subscribe(signal -> notifications.incrementAndGet());
        int total = warmupSeconds + rounds * 2 * (seconds + 2) + 30;
        Process pgbench = new ProcessBuilder("pgbench", "-h", db.host, "-p", Integer.toString(db.port), "-U", db.user,
                "-n", "-c", "1", "-R", Integer.toString(rate), "-T", Integer.toString(total), "-f", script.toString(),
                db.database).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        List<Round> measured = new ArrayList<>();
        try {
            System.out.printf(Locale.ROOT, "warm-up: %d s of each variant at %d NOTIFY/s%n", warmupSeconds / 2, rate);
            round(db, pool, listener, notifications, true, 0, warmupSeconds / 2);
            round(db, pool, listener, notifications, false, 0, warmupSeconds / 2);
            for (int r = 1; r <= rounds; r++) {
                boolean first = r % 2 == 1;
                measured.add(round(db, pool, listener, notifications, first, r, seconds));
                measured.add(round(db, pool, listener, notifications, !first, r, seconds));
            }
        } finally {
            pgbench.destroy();
            counting.dispose();
            listener.close().block(Duration.ofSeconds(30));
            db.dispose(pool, "wake-cost");
            Files.deleteIfExists(script);
        }
        report(out, machine, rate, seconds, measured);
    }

    /** One round: a fresh queue instance, listening or not, idle on an empty queue for {@code seconds}. */
    private static Round round(Db db, ConnectionPool pool, PgNotificationListener listener, AtomicLong notifications,
            boolean listening, int round, int seconds) throws InterruptedException {
        WorkQueueConfig config = WorkQueueConfig.builder("idle-" + round + "-" + listening).tablePrefix(PREFIX)
                .minWakeInterval(Duration.ofMillis(1)).build();
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class).config(config)
                .wakeups(listening ? listener.wakeups() : Flux.never()).build();
        AtomicLong handedOut = new AtomicLong();
        Disposable claiming = queue.claimStream(Duration.ofMinutes(1), Duration.ofSeconds(1))
                .subscribe(item -> handedOut.incrementAndGet(), e -> System.err.println("claimStream failed: " + e));
        TimeUnit.MILLISECONDS.sleep(500); // its first claim and wait
        long self = ProcessHandle.current().pid();
        long notifiedBefore = notifications.get();
        double cpuBefore = CpuMeter.processSeconds(self);
        long jitBefore = jitMillis();
        long start = System.nanoTime();
        TimeUnit.SECONDS.sleep(seconds);
        double elapsed = (System.nanoTime() - start) / 1e9;
        Round r = new Round(listening, round, notifications.get() - notifiedBefore, handedOut.get(),
                CpuMeter.processSeconds(self) - cpuBefore, jitMillis() - jitBefore, elapsed);
        claiming.dispose();
        queue.close().block(Duration.ofSeconds(30));
        System.out.printf(Locale.ROOT, "  %sround %d %-13s %6d notifications in %5.2f s, client CPU %6.3f s = %7.1f µs per"
                        + " notification; JIT %d ms%n", round == 0 ? "(warm-up) " : "", round,
                listening ? "listening" : "not listening", r.notifications(), elapsed, r.cpuSeconds(),
                r.microsPerNotification(), r.jitMillis());
        return r;
    }

    private static long jitMillis() {
        return ManagementFactory.getCompilationMXBean().getTotalCompilationTime();
    }

    private static void report(Path out, Map<String, Object> machine, int rate, int seconds, List<Round> rounds)
            throws IOException {
        Files.createDirectories(out);
        machine.put("load_average_end", Machine.loadAverage());
        double listening = Percentiles.median(rounds.stream().filter(Round::listening)
                .map(Round::microsPerNotification).toList());
        double notListening = Percentiles.median(rounds.stream().filter(r -> !r.listening())
                .map(Round::microsPerNotification).toList());
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("machine", machine);
        results.put("notify_per_second", rate);
        results.put("round_seconds", seconds);
        results.put("rounds", rounds);
        results.put("median_us_per_notification_listening", Bench.round(listening, 1));
        results.put("median_us_per_notification_not_listening", Bench.round(notListening, 1));
        results.put("wake_driven_claim_us", Bench.round(listening - notListening, 1));
        Files.writeString(out.resolve("results.json"), JSON.writeValueAsString(results));
        StringBuilder md = new StringBuilder();
        md.append("# What a wakeup costs the process it wakes\n\n")
                .append(String.format(Locale.ROOT, "Generated by `benchmarks/wake-cost.sh` on %s (git %s%s). An idle"
                        + " `claimStream` on an empty queue (poll 1 s, `minWakeInterval` 1 ms) while pgbench sends"
                        + " `NOTIFY` on its channel %d times a second; its instance either listens (every notification"
                        + " wakes it, and it claims) or does not (`wakeups(Flux.never())`). The process's listener"
                        + " receives every notification either way, and a side subscriber counts them. Client CPU is"
                        + " the JVM's own (/proc), per notification, over %d s rounds, the variants alternating and the"
                        + " first swapped each round; JIT is this JVM's compile time during the round.%n%n",
                        machine.get("date_utc"), machine.get("git_commit"),
                        Boolean.TRUE.equals(machine.get("git_dirty")) ? ", uncommitted changes" : "", rate, seconds))
                .append("| round | variant | notifications | client CPU s | µs per notification | JIT ms |\n")
                .append("|---|---|---|---|---|---|\n");
        for (Round r : rounds) {
            md.append(String.format(Locale.ROOT, "| %d | %s | %d | %.3f | %.1f | %d |%n", r.round(),
                    r.listening() ? "listening" : "not listening", r.notifications(), r.cpuSeconds(),
                    r.microsPerNotification(), r.jitMillis()));
        }
        md.append(String.format(Locale.ROOT, "%nMedians: listening %.1f µs per notification, not listening %.1f µs;"
                + " **a wake-driven claim that finds nothing costs the client about %.0f µs of CPU** on this machine."
                + "%n%n## Machine%n%n| | |%n|---|---|%n", listening, notListening, listening - notListening));
        machine.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(v).append(" |\n"));
        Files.writeString(out.resolve("README.md"), md.toString());
        System.out.printf(Locale.ROOT, "%nlistening %.1f µs, not listening %.1f µs per notification: a wake-driven claim"
                + " costs %.0f µs of client CPU. Results in %s%n", listening, notListening, listening - notListening, out);
    }
}
