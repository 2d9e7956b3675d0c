package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.workqueue.internal.base.CodePointOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * {@link ClaimCursors} against a model of one queue's due index, over random histories: batches of
 * keys that share their enqueue's microsecond, writes that commit behind the cursors (late, by up to
 * twice the slack), claims of random sizes from the cursors, leases that lapse, looks, and the
 * clock moving on.
 *
 * <p>The invariant, the one the cursors exist to keep: after a look, claims hand out everything
 * due, in claim order (priority highest first, then availability, then key by code point), with
 * nothing left behind a cursor. A look whose move-back compared only microseconds, or a claim that
 * put its cursor past its last item, would leave items behind.
 */
class ClaimCursorsPropertiesTest {
    private static final long START = 1_700_000_000_000_000L;
    private static final String[] KEY_PARTS = {"a", "b", "z", "\uFF5E", "\uD83D\uDE00", "\u00E9"};

    /** One step of a history. */
    private sealed interface Step permits Enqueue, Claim, Lapse, Look, Tick {}

    /** {@code count} keys in {@code priority}, at one microsecond: the clock's, or {@code lateBy} before it. */
    private record Enqueue(int priority, int count, long lateBy) implements Step {}

    private record Claim(int limit) implements Step {}

    /** The leases of every {@code every}-th leased item lapse. */
    private record Lapse(int every) implements Step {}

    private record Look() implements Step {}

    private record Tick(long micros) implements Step {}

    private static final class Row {
        final int priority;
        final long micros;
        final String key;
        boolean leased;

        Row(int priority, long micros, String key) {
            this.priority = priority;
            this.micros = micros;
            this.key = key;
        }

        ClaimCursors.Position position() {
            return new ClaimCursors.Position(micros, key);
        }
    }

    private static final Comparator<Row> CLAIM_ORDER = Comparator.<Row>comparingInt(r -> r.priority).reversed()
            .thenComparingLong(r -> r.micros)
            .thenComparing((a, b) -> CodePointOrder.compare(a.key, b.key));

    /** The due index of one queue, and this instance's cursors over it. */
    private static final class Model {
        final List<Row> rows = new ArrayList<>();
        final ClaimCursors cursors = new ClaimCursors(0);
        long now = START;
        int keysMade;

        List<Row> due() {
            return rows.stream().filter(r -> !r.leased).sorted(CLAIM_ORDER).toList();
        }

        void apply(Step step) {
            if (step instanceof Enqueue e) {
                long at = now - e.lateBy();
                for (int i = 0; i < e.count(); i++) {
                    rows.add(new Row(e.priority(), at, key(keysMade++)));
                }
            } else if (step instanceof Claim c) {
                claim(c.limit());
            } else if (step instanceof Lapse l) {
                int n = 0;
                for (Row row : rows) {
                    if (row.leased && n++ % l.every() == 0) {
                        row.leased = false;
                    }
                }
            } else if (step instanceof Look) {
                look();
            } else if (step instanceof Tick t) {
                now += t.micros();
            }
        }

        /** What claim.sql does: from the head, or each band of the plan from its cursor, up to the limit. */
        List<Row> claim(int limit) {
            ClaimCursors.Plan plan = cursors.plan(0);
            List<Row> leased = new ArrayList<>();
            if (plan.fromHead()) {
                leased.addAll(due().stream().limit(limit).toList());
            } else {
                for (int i = 0; i < plan.priorities().length && leased.size() < limit; i++) {
                    int band = plan.priorities()[i];
                    ClaimCursors.Position from = new ClaimCursors.Position(plan.fromMicros()[i], plan.fromKeys()[i]);
                    due().stream()
                            .filter(r -> r.priority == band && !r.position().before(from))
                            .limit(limit - leased.size())
                            .forEach(leased::add);
                }
            }
            leased.forEach(r -> r.leased = true);
            cursors.claimed(plan, limit, leased.stream().map(r -> r.priority).toArray(Integer[]::new),
                    leased.stream().map(r -> r.micros).toArray(Long[]::new),
                    leased.stream().map(r -> r.key).toArray(String[]::new), now, 0);
            return leased;
        }

        /** What lookBehindCursors returns: each band's first due item, highest band first. */
        void look() {
            Map<Integer, Row> first = new TreeMap<>(Comparator.reverseOrder());
            for (Row row : due()) {
                first.putIfAbsent(row.priority, row);
            }
            cursors.looked(first.keySet().toArray(Integer[]::new),
                    first.values().stream().map(r -> r.micros).toArray(Long[]::new),
                    first.values().stream().map(r -> r.key).toArray(String[]::new), now, 0);
        }
    }

    /** A key whose order within a microsecond is random, and distinct from every other. */
    private static String key(int n) {
        StringBuilder key = new StringBuilder();
        int bits = n * 7919;
        for (int i = 0; i < 3; i++) {
            key.append(KEY_PARTS[Math.floorMod(bits >> (3 * i), KEY_PARTS.length)]);
        }
        return key.append('#').append(n).toString();
    }

    @Property(tries = 1000)
    void afterALookClaimsHandOutEverythingDueInClaimOrder(@ForAll("histories") List<Step> history,
            @ForAll("limits") int limit) {
        Model model = new Model();
        for (Step step : history) {
            model.apply(step);
        }
        List<String> expected = model.due().stream().map(r -> r.key).toList();

        model.look();
        List<String> handedOut = new ArrayList<>();
        for (List<Row> batch = model.claim(limit); !batch.isEmpty(); batch = model.claim(limit)) {
            batch.forEach(r -> handedOut.add(r.key));
        }

        assertEquals(expected, handedOut);
    }

    @Provide
    Arbitrary<Integer> limits() {
        return Arbitraries.integers().between(1, 12);
    }

    @Provide
    Arbitrary<List<Step>> histories() {
        // Most writes commit at once; some behind the cursors, by up to twice the slack.
        Arbitrary<Long> lateBy = Arbitraries.frequencyOf(Tuple.of(7, Arbitraries.just(0L)),
                Tuple.of(3, Arbitraries.longs().between(1, 2 * ClaimCursors.SLACK_MICROS)));
        Arbitrary<Step> enqueue = Combinators.combine(Arbitraries.integers().between(0, 2),
                        Arbitraries.integers().between(1, 20), lateBy)
                .as(Enqueue::new);
        Arbitrary<Step> claim = Arbitraries.integers().between(1, 15).map(Claim::new);
        Arbitrary<Step> lapse = Arbitraries.integers().between(1, 4).map(Lapse::new);
        Arbitrary<Step> look = Arbitraries.just(new Look());
        Arbitrary<Step> tick = Arbitraries.longs().between(0, 3 * ClaimCursors.SLACK_MICROS).map(Tick::new);
        return Arbitraries.frequencyOf(
                        Tuple.of(4, enqueue),
                        Tuple.of(5, claim),
                        Tuple.of(2, lapse),
                        Tuple.of(1, look),
                        Tuple.of(3, tick))
                .list().ofMaxSize(40);
    }
}
