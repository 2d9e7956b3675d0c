package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.workqueue.testing.TestDatabase;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The client's lock order (the sort {@link EncodedEntry#merge} hands the upsert) and the server's
 * (ORDER BY on the key column) must agree, or two overlapping batches can deadlock.
 */
class LockOrderCollationIT {
    private static String table;
    private static List<String> keys;

    @BeforeAll
    static void setUp() {
        table = TestDatabase.createTable() + "_work_queue_items";
        Random random = new Random(0x5EED);
        Set<String> distinct = new LinkedHashSet<>(List.of("\uFFFD", "\uD83D\uDE00", "\uE000", "z", "Z", "a", "ab", "é"));
        while (distinct.size() < 600) {
            distinct.add(EncodedEntryTest.randomKey(random));
        }
        keys = new ArrayList<>(distinct);
    }

    private static List<String> clientOrder() {
        List<EncodedEntry> entries = keys.stream().map(k -> new EncodedEntry(k, 0, 0)).toList();
        return EncodedEntry.merge(List.of(entries)).stream().map(EncodedEntry::key).toList();
    }

    @Test
    void theServersBytewiseOrderIsTheClientsCodePointOrder() {
        List<String> server = TestDatabase.queryStrings(
                "SELECT k FROM unnest($1::text[]) AS k ORDER BY k COLLATE \"C\"", (Object) keys.toArray(String[]::new));
        assertEquals(clientOrder(), server);
    }

    @Test
    void theKeyColumnOrdersRowsAsTheClientDoesWithoutAnExplicitCollation() {
        // complete, release and remove lock through "ORDER BY item_key": the column's own collation.
        String queue = TestDatabase.uniqueName("collation");
        TestDatabase.queryStrings("INSERT INTO " + table + " (queue_name, item_key) SELECT $1, k FROM unnest($2::text[]) AS k",
                queue, keys.toArray(String[]::new));
        List<String> server = TestDatabase.queryStrings(
                "SELECT item_key FROM " + table + " WHERE queue_name = $1 ORDER BY item_key", queue);
        assertEquals(clientOrder(), server);
    }

    @Test
    void theKeysReallyExerciseTheOrderWhereStringCompareToIsWrong() {
        List<String> utf16Order = new ArrayList<>(keys);
        utf16Order.sort(String::compareTo);
        assertNotEquals(clientOrder(), utf16Order);
    }

    @Test
    void everyKeyRoundTripsThroughTheServerUnchanged() {
        List<String> server = TestDatabase.queryStrings(
                "SELECT k FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i", (Object) keys.toArray(String[]::new));
        assertEquals(keys, server);
    }
}
