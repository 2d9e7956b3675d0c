package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.internal.base.CodePointOrder;
import io.workqueue.internal.base.Durations;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class EncodedEntryTest {
    private static final String REPLACEMENT = "\uFFFD";      // U+FFFD, one UTF-16 unit
    private static final String GRIN = "\uD83D\uDE00";       // U+1F600, a surrogate pair starting 0xD83D

    private static List<String> keys(List<EncodedEntry> entries) {
        return entries.stream().map(EncodedEntry::key).toList();
    }

    @Test
    void entriesNamingTheSameKeyMergeToTheHighestPriorityAndShortestDelay() {
        List<EncodedEntry> merged = EncodedEntry.merge(List.of(
                List.of(new EncodedEntry("k", 1, 5_000), new EncodedEntry("other", 0, 0)),
                List.of(new EncodedEntry("k", 7, 9_000)),
                List.of(new EncodedEntry("k", -3, 2_000))));
        assertEquals(List.of(new EncodedEntry("k", 7, 2_000), new EncodedEntry("other", 0, 0)), merged);
    }

    @Test
    void duplicatesInsideOneCallersBatchMergeToo() {
        List<EncodedEntry> merged = EncodedEntry.merge(List.of(List.of(
                new EncodedEntry("k", 3, 100), new EncodedEntry("k", 2, 50), new EncodedEntry("k", 3, 70))));
        assertEquals(List.of(new EncodedEntry("k", 3, 50)), merged);
    }

    @Test
    void theMergeRuleIsTheSameWhicheverOrderTheCallersArrivedIn() {
        List<EncodedEntry> a = List.of(new EncodedEntry("x", 5, 10), new EncodedEntry("y", Integer.MIN_VALUE, Long.MAX_VALUE));
        List<EncodedEntry> b = List.of(new EncodedEntry("x", Integer.MAX_VALUE, 20), new EncodedEntry("y", 0, 0));
        assertEquals(EncodedEntry.merge(List.of(a, b)), EncodedEntry.merge(List.of(b, a)));
        assertEquals(List.of(new EncodedEntry("x", Integer.MAX_VALUE, 10), new EncodedEntry("y", 0, 0)),
                EncodedEntry.merge(List.of(a, b)));
    }

    @Test
    void aDelayIsBoundedToWhatATimestampCanTake() {
        assertEquals(0, new EncodedEntry("k", 0, -5).delayMicros());
        assertEquals(Durations.MAX_MICROS, new EncodedEntry("k", 0, Long.MAX_VALUE).delayMicros());
        assertEquals(Durations.MAX_MICROS, new EncodedEntry("k", 0, Durations.MAX_MICROS).delayMicros());
        assertEquals(123, new EncodedEntry("k", 0, 123).delayMicros());
    }

    @Test
    void nothingToMergeGivesAnEmptyList() {
        assertEquals(List.of(), EncodedEntry.merge(List.of()));
        assertEquals(List.of(), EncodedEntry.merge(List.of(List.of(), List.of())));
    }

    @Test
    void mergedEntriesAreSortedByKey() {
        List<EncodedEntry> merged = EncodedEntry.merge(List.of(
                List.of(new EncodedEntry("b", 0, 0), new EncodedEntry("B", 0, 0)),
                List.of(new EncodedEntry("a", 0, 0), new EncodedEntry("ab", 0, 0), new EncodedEntry("A", 0, 0))));
        assertEquals(List.of("A", "B", "a", "ab", "b"), keys(merged));
    }

    @Test
    void aSupplementaryCharacterSortsAfterTheHighestBmpCharacters() {
        // String.compareTo compares UTF-16 units: 0xD83D < 0xFFFD, so it puts the emoji first,
        // which is not the order PostgreSQL's "C" collation (UTF-8 bytes) locks rows in.
        assertTrue(GRIN.compareTo(REPLACEMENT) < 0, "the failure this guards against");

        List<EncodedEntry> merged = EncodedEntry.merge(List.of(
                List.of(new EncodedEntry(GRIN, 0, 0)),
                List.of(new EncodedEntry(REPLACEMENT, 0, 0)),
                List.of(new EncodedEntry("\uE000", 0, 0), new EncodedEntry("z", 0, 0))));

        assertEquals(List.of("z", "\uE000", REPLACEMENT, GRIN), keys(merged));
    }

    @Test
    void codePointOrderIsUtf8ByteOrder() {
        Random random = new Random(20240607);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            keys.add(randomKey(random));
        }
        // Include the prefix cases: a key sorts after every key it is a proper prefix of.
        keys.addAll(List.of("a", "a" + GRIN, "a" + REPLACEMENT, "a\uE000", "ab"));

        List<String> byCodePoint = new ArrayList<>(keys);
        byCodePoint.sort(CodePointOrder::compare);
        List<String> byBytes = new ArrayList<>(keys);
        byBytes.sort((x, y) -> Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8), y.getBytes(StandardCharsets.UTF_8)));
        assertEquals(byBytes, byCodePoint);
    }

    @Test
    void codePointOrderIsAConsistentOrder() {
        assertEquals(0, CodePointOrder.compare(GRIN + "a", GRIN + "a"));
        assertTrue(CodePointOrder.compare("a", "ab") < 0);
        assertTrue(CodePointOrder.compare("ab", "a") > 0);
        assertTrue(CodePointOrder.compare(GRIN, REPLACEMENT) > 0);
        assertTrue(CodePointOrder.compare(REPLACEMENT, GRIN) < 0);
        assertTrue(CodePointOrder.compare("\uD83D\uDE00", "\uD83D\uDE01") < 0);
    }

    @Test
    void mergeSortsEvenWhenHandedKeysInReverseOrder() {
        Random random = new Random(7);
        List<EncodedEntry> entries = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            entries.add(new EncodedEntry(randomKey(random), i, i));
        }
        List<String> expected = new ArrayList<>(entries.stream().map(EncodedEntry::key).distinct().toList());
        expected.sort((x, y) -> Arrays.compareUnsigned(x.getBytes(StandardCharsets.UTF_8), y.getBytes(StandardCharsets.UTF_8)));
        Collections.reverse(entries);
        assertEquals(expected, keys(EncodedEntry.merge(List.of(entries))));
    }

    /**
     * A valid, vettable key of 1 to 8 code points drawn from ASCII, the rest of the BMP above the
     * surrogates (where String.compareTo goes wrong) and the supplementary planes.
     */
    static String randomKey(Random random) {
        StringBuilder key = new StringBuilder();
        int length = 1 + random.nextInt(8);
        for (int i = 0; i < length; i++) {
            key.appendCodePoint(randomCodePoint(random));
        }
        return key.toString();
    }

    private static int randomCodePoint(Random random) {
        switch (random.nextInt(6)) {
            case 0:
                return 0x20 + random.nextInt(0x5F);                  // printable ASCII
            case 1:
                return 0x80 + random.nextInt(0x800 - 0x80);          // two UTF-8 bytes
            case 2:
                return 0x800 + random.nextInt(0xD800 - 0x800);       // three bytes, below the surrogates
            case 3:
                return 0xE000 + random.nextInt(0xFFFE - 0xE000);     // three bytes, above the surrogates
            case 4:
                return 0x10000 + random.nextInt(0x20000);            // four bytes, common planes
            default:
                return 0x10000 + random.nextInt(0x10FFFF - 0x10000); // four bytes, anywhere
        }
    }
}
