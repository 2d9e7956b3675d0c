package io.workqueue.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.r2dbc.pool.ConnectionPool;
import io.workqueue.InvalidKeyException;
import io.workqueue.InvalidKeyException.Reason;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.migrations.WorkQueueMigrations;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import org.junit.jupiter.api.extension.ExtendWith;
import io.workqueue.testing.ExpectedLogs;

/**
 * Scenario 7: hostile input. Thousands of random keys — any Unicode including supplementary
 * characters, quotes, backslashes, {@code %} and {@code _}, SQL fragments, control characters, lone
 * surrogates, and lengths on both sides of the 512-byte limit — each either round-trips exactly
 * through enqueue and claim, or is refused with {@link InvalidKeyException} for a reason the key
 * really has; nothing else happens. Queue names full of quotes and SQL are bound, never
 * interpreted. Record keys with nested hostile strings round-trip through the JSON codec.
 *
 * <p>The seed is logged; set {@code -Dworkqueue.fault.seed=N} to replay a run.
 */
@ExtendWith(ExpectedLogs.class)
class HostileInputFaultIT {
    private static final Logger log = LoggerFactory.getLogger(HostileInputFaultIT.class);
    private static final int STRING_KEYS = 3_000;
    private static final int RECORD_KEYS = 1_000;
    private static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final int MAX = ReactiveWorkQueue.MAX_KEY_LENGTH;

    /** Awkward but valid pieces. */
    private static final String[] FRAGMENTS = {
        "'", "''", "\"", "\\", "\\\\", "%", "_", "%_%", ";", "--", "/*", "*/", "$1", "$$", "$tag$", "E'\\x41'",
        "'; DROP TABLE work_queue_items; --", "' OR '1'='1", "\") OR 1=1 --", "\\N", "NULL", "null", "ANY($2)",
        "COLLATE \"C\"", "::text", "\t", "\u0001", "\u001b[31m", "\u007f", "\u0085", "\u2028", "\u2029", "\u00a0",
        "\ufeff", "\ufffd", "\uffff", "e\u0301", "\ud83d\ude00", "\ud834\udd1e", "\udbff\udfff", "\u4e2d\u6587",
        "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", " ", "  ", "{\"a\":1}", "[1,2]", "<script>", "&amp;",
    };

    /** Pieces a key may not contain: NUL, line breaks, lone or reversed surrogates. */
    private static final String[] REFUSED_FRAGMENTS = {
        "\u0000", "\n", "\r", "\r\n", "\ud800", "\udc00", "\udc00\ud800", "x\ud83d", "\ude00x", "\udbff",
    };

    private ConnectionPool pool;

    @AfterEach
    void cleanUp() {
        if (pool != null) {
            pool.disposeLater().block(Duration.ofSeconds(30)); // bounded: a stuck close fails the test, not CI
        }
    }

    @Test
    void everyKeyRoundTripsExactlyOrIsRefusedAsInvalid() {
        long seed = Long.getLong("workqueue.fault.seed", System.nanoTime());
        log.info("[hostile input] keys drawn with seed {} (replay with -Dworkqueue.fault.seed={})", seed, seed);
        Random random = new Random(seed);
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        pool = server.pool(8);

        // A hostile queue name beside a harmless one on the same table: neither sees the other's keys.
        String hostileName = "q'; DROP TABLE " + WorkQueueMigrations.tableName(prefix) + "; -- \"%_\\ \ud83d\ude00";
        ReactiveWorkQueue<String> queue = stringQueue(prefix, hostileName);
        ReactiveWorkQueue<String> neighbour = stringQueue(prefix, "q");
        ReactiveWorkQueue<String> wildcard = stringQueue(prefix, "%");
        neighbour.enqueueKeys("neighbour's").block(TIMEOUT);

        Set<String> keys = new LinkedHashSet<>(boundaryKeys());
        while (keys.size() < STRING_KEYS) {
            keys.add(randomKey(random));
        }

        Map<String, Throwable> refused = new ConcurrentHashMap<>();
        Set<String> accepted = ConcurrentHashMap.newKeySet();
        Flux.fromIterable(keys)
                .flatMap(key -> queue.enqueueKeys(key)
                        .doOnSuccess(ignored -> accepted.add(key))
                        .onErrorResume(e -> {
                            refused.put(key, e);
                            return Mono.empty();
                        }), 256)
                .blockLast(TIMEOUT);

        List<String> problems = new ArrayList<>();
        Map<Reason, Integer> reasons = new HashMap<>();
        for (String key : keys) {
            Set<Reason> faults = faultsOf(key);
            Throwable error = refused.get(key);
            if (faults.isEmpty() && error != null) {
                problems.add("a valid key was refused: " + describe(key) + " -> " + error);
            } else if (!faults.isEmpty()) {
                if (error == null) {
                    problems.add("an invalid key (" + faults + ") was accepted: " + describe(key));
                } else if (!(error instanceof InvalidKeyException invalid)) {
                    problems.add("an invalid key failed with something else: " + describe(key) + " -> " + error);
                } else if (!faults.contains(invalid.reason())) {
                    problems.add("refused for " + invalid.reason() + " but its faults are " + faults + ": " + describe(key));
                } else {
                    reasons.merge(invalid.reason(), 1, Integer::sum);
                }
            }
        }
        assertTrue(problems.isEmpty(), () -> problems.size() + " problems (seed " + seed + "), first: "
                + problems.subList(0, Math.min(10, problems.size())));

        // Every accepted key comes back exactly, once; nothing else does.
        List<String> claimed = claimAll(queue);
        assertEquals(accepted.size(), claimed.size(), "each accepted key is claimed exactly once");
        assertEquals(accepted, new HashSet<>(claimed), "the claimed keys are the accepted keys, exactly (seed " + seed + ")");
        assertEquals(List.of("neighbour's"), claimAll(neighbour), "the hostile name did not touch its neighbour");
        assertEquals(List.of(), claimAll(wildcard), "a queue named % matches only itself");

        // The lock-ordered writers take the same keys: half completed, half removed, all counted.
        List<String> half = claimed.subList(0, claimed.size() / 2);
        List<String> rest = claimed.subList(claimed.size() / 2, claimed.size());
        assertEquals(half.size(), queue.complete(half).block(TIMEOUT));
        assertEquals(rest.size(), queue.release(Duration.ZERO, new IllegalStateException("'; -- \\"), rest).block(TIMEOUT));
        assertEquals(rest.size(), queue.remove(rest).block(TIMEOUT));
        // Invalid keys fail those calls too, as errors at subscription.
        String invalid = "\ud800";
        for (Mono<Long> call : List.of(queue.complete(invalid), queue.remove(invalid),
                queue.release(Duration.ZERO, null, invalid))) {
            assertInstanceOf(InvalidKeyException.class,
                    call.then(Mono.<Throwable>empty()).onErrorResume(Mono::just).block(TIMEOUT));
        }
        var stats = queue.stats().block(TIMEOUT);
        assertEquals(0, stats.pending());
        assertEquals(half.size(), stats.completed());
        assertEquals(1L, server.queryLong("SELECT count(*) FROM " + WorkQueueMigrations.tableName(prefix)
                + " WHERE queue_name = 'q'"), "the table survived its hostile queue name");
        log.info("[hostile input] {} distinct random keys: {} round-tripped exactly, {} refused as invalid {}; keys"
                        + " enqueued={} completed={} removed={} duplicated=0 lost=0",
                keys.size(), accepted.size(), refused.size(), reasons, accepted.size(), half.size(), rest.size());
    }

    @Test
    void recordKeysWithNestedHostileStringsRoundTrip() {
        long seed = Long.getLong("workqueue.fault.seed", System.nanoTime());
        log.info("[hostile input] record keys drawn with seed {}", seed);
        Random random = new Random(seed);
        FaultServer server = FaultServer.any();
        String prefix = server.createTable();
        pool = server.pool(8);
        ReactiveWorkQueue<Job> queue = ReactiveWorkQueue.builder(pool, Job.class)
                .config(WorkQueueConfig.builder("jobs \"'\\").tablePrefix(prefix).build())
                .build();

        Set<Job> jobs = new LinkedHashSet<>();
        while (jobs.size() < RECORD_KEYS) {
            // Line breaks and NUL are fine inside a record: JSON escapes them. Lone surrogates are not.
            jobs.add(new Job(nestedText(random, 12), List.of(nestedText(random, 6), nestedText(random, 6)),
                    Map.of(nestedText(random, 4) + "k", nestedText(random, 8) + "\n\u0000\r"),
                    new Job.Inner(nestedText(random, random.nextInt(10) == 0 ? 400 : 40), random.nextInt())));
        }
        Map<Job, Throwable> refused = new ConcurrentHashMap<>();
        Set<Job> accepted = ConcurrentHashMap.newKeySet();
        Flux.fromIterable(jobs)
                .flatMap(job -> queue.enqueueKeys(job)
                        .doOnSuccess(ignored -> accepted.add(job))
                        .onErrorResume(e -> {
                            refused.put(job, e);
                            return Mono.empty();
                        }), 256)
                .blockLast(TIMEOUT);
        refused.forEach((job, error) -> assertInstanceOf(InvalidKeyException.class, error,
                () -> "a record key failed with something other than InvalidKeyException: " + job + " -> " + error));

        Set<Job> claimed = new HashSet<>();
        for (List<Item<Job>> batch = queue.claim(500, Duration.ofMinutes(5)).block(TIMEOUT); !batch.isEmpty();
                batch = queue.claim(500, Duration.ofMinutes(5)).block(TIMEOUT)) {
            batch.forEach(item -> assertTrue(claimed.add(item.key()), () -> "claimed twice: " + item));
        }
        assertEquals(accepted, claimed, "every accepted record key comes back equal (seed " + seed + ")");
        assertTrue(accepted.size() > RECORD_KEYS / 2, "most record keys fit: " + accepted.size());
        log.info("[hostile input] {} record keys with nested hostile strings: {} round-tripped equal, {} refused as"
                        + " invalid ({})", jobs.size(), accepted.size(), refused.size(),
                refused.values().stream().map(e -> ((InvalidKeyException) e).reason()).distinct().toList());
    }

    /** A record key whose every string may be hostile. */
    record Job(String tenant, List<String> tags, Map<String, String> attributes, Inner inner) {
        record Inner(String note, int number) {}
    }

    private ReactiveWorkQueue<String> stringQueue(String prefix, String name) {
        return ReactiveWorkQueue.builder(pool, String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).build())
                .build();
    }

    private static List<String> claimAll(ReactiveWorkQueue<String> queue) {
        List<String> all = new ArrayList<>();
        for (List<Item<String>> batch = queue.claim(500, Duration.ofMinutes(5)).block(TIMEOUT); !batch.isEmpty();
                batch = queue.claim(500, Duration.ofMinutes(5)).block(TIMEOUT)) {
            batch.forEach(item -> all.add(item.key()));
        }
        return all;
    }

    /** Why a key must be refused, by the rules in API.md, worked out independently of the library. */
    private static Set<Reason> faultsOf(String key) {
        Set<Reason> faults = EnumSet.noneOf(Reason.class);
        if (key.isEmpty()) {
            faults.add(Reason.EMPTY);
        }
        if (key.indexOf('\0') >= 0 || key.indexOf('\n') >= 0 || key.indexOf('\r') >= 0) {
            faults.add(Reason.CONTROL_CHARACTER);
        }
        if (!StandardCharsets.UTF_8.newEncoder().canEncode(key)) {
            faults.add(Reason.INVALID_UNICODE); // only unpaired surrogates have no UTF-8 form
        } else if (key.getBytes(StandardCharsets.UTF_8).length > MAX) {
            faults.add(Reason.TOO_LONG);
        }
        return faults;
    }

    /** Keys on both sides of the byte limit, in 1-, 2-, 3- and 4-byte characters, and other edges. */
    private static List<String> boundaryKeys() {
        List<String> keys = new ArrayList<>();
        for (String unit : List.of("a", "\u00e9", "\u4e2d", "\ud83d\ude00")) {
            int bytes = unit.getBytes(StandardCharsets.UTF_8).length;
            int fit = MAX / bytes;
            String fitting = unit.repeat(fit);
            String padded = fitting + "a".repeat(MAX - fit * bytes); // exactly 512 bytes
            keys.add(padded);
            keys.add(padded + "a"); // 513 bytes
            keys.add(fitting + unit); // over by one character
        }
        keys.add("");
        keys.add(" ");
        keys.add("a".repeat(511) + "\u00e9"); // 513 bytes: a 2-byte character straddles the limit
        keys.add("a".repeat(509) + "\ud83d\ude00"); // 513 bytes: a 4-byte one does
        keys.add("a".repeat(508) + "\ud83d\ude00"); // exactly 512
        keys.addAll(List.of(FRAGMENTS));
        keys.addAll(List.of(REFUSED_FRAGMENTS));
        return keys;
    }

    private static String randomKey(Random random) {
        // Mostly short keys made of awkward pieces; some long ones to cross the byte limit; some
        // with a piece that must be refused, dropped anywhere (even between the halves of a pair).
        int targetChars = random.nextInt(10) == 0 ? 150 + random.nextInt(400) : 1 + random.nextInt(40);
        StringBuilder key = new StringBuilder(randomText(random, targetChars, targetChars));
        if (random.nextInt(5) == 0) {
            key.insert(random.nextInt(key.length() + 1), REFUSED_FRAGMENTS[random.nextInt(REFUSED_FRAGMENTS.length)]);
        }
        return key.toString();
    }

    /** Text of {@code min} to {@code max} UTF-16 units, awkward but valid. */
    private static String randomText(Random random, int min, int max) {
        StringBuilder text = new StringBuilder();
        int n = min + random.nextInt(max - min + 1);
        while (text.length() < n) {
            text.append(random.nextInt(3) == 0 ? FRAGMENTS[random.nextInt(FRAGMENTS.length)] : randomCodePoint(random));
        }
        return text.toString();
    }

    /** Like {@link #randomText}, but one time in thirty with a piece that has no UTF-8 form. */
    private static String nestedText(Random random, int max) {
        String text = randomText(random, 0, max);
        return random.nextInt(30) == 0 ? text + "\ud800" : text;
    }

    /** A random valid code point from ranges chosen to be awkward. */
    private static String randomCodePoint(Random random) {
        int cp = switch (random.nextInt(7)) {
            case 0 -> 0x20 + random.nextInt(0x5f); // printable ASCII, quotes and backslash included
            case 1 -> "\u0001\u0007\u0008\t\u000b\u000c\u001b\u001f\u007f".charAt(random.nextInt(9)); // allowed controls
            case 2 -> 0x80 + random.nextInt(0x780); // Latin-1 and beyond: 2-byte UTF-8
            case 3 -> 0x800 + random.nextInt(0xd800 - 0x800); // 3-byte UTF-8, below the surrogates
            case 4 -> 0xe000 + random.nextInt(0x10000 - 0xe000); // 3-byte UTF-8, above them
            case 5 -> 0x10000 + random.nextInt(0x110000 - 0x10000); // supplementary: a surrogate pair
            default -> "'\"\\%_;$".charAt(random.nextInt(7));
        };
        return new String(Character.toChars(cp));
    }

    private static String describe(String key) {
        StringBuilder out = new StringBuilder("\"");
        key.codePoints().limit(60).forEach(cp -> {
            if (cp < 0x20 || cp == 0x7f || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x7e) {
                out.append(String.format("\\u{%x}", cp));
            } else {
                out.appendCodePoint(cp);
            }
        });
        return out.append(key.length() > 60 ? "...\"" : "\"").append(" (").append(key.length()).append(" chars)").toString();
    }
}
