package io.workqueue.postgres;

import io.workqueue.internal.base.CodePointOrder;
import io.workqueue.internal.base.Durations;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An entry whose key has been encoded and vetted, ready to bind.
 *
 * @param key         the vetted encoding
 * @param priority    higher runs first
 * @param delayMicros delay before the item is available, in microseconds, from 0 to
 *                    {@link Durations#MAX_MICROS}
 */
record EncodedEntry(String key, int priority, long delayMicros) {

    /**
     * Bounds the delay to what {@code now() + delay} can always take: a negative delay is 0, and
     * one past the cap is the cap. A value near a {@code long}'s limit would take the timestamp
     * out of PostgreSQL's range and fail the upsert of every caller sharing the write.
     */
    EncodedEntry {
        delayMicros = Math.max(0, Math.min(delayMicros, Durations.MAX_MICROS));
    }

    /**
     * Collapses entries naming the same key with the rule the upsert's {@code ON CONFLICT} clause
     * applies to an outstanding row: the highest priority and the shortest delay. The two must
     * agree, or an item's fate would depend on whether two callers shared a flush; and the upsert
     * cannot take one key twice anyway (SQLSTATE 21000). The result is sorted by code point, the
     * order of the key column's {@code "C"} collation, i.e. the table's lock order.
     */
    static List<EncodedEntry> merge(Collection<? extends Collection<EncodedEntry>> batches) {
        Map<String, EncodedEntry> byKey = new HashMap<>();
        for (Collection<EncodedEntry> batch : batches) {
            for (EncodedEntry entry : batch) {
                byKey.merge(entry.key(), entry, EncodedEntry::mergedWith);
            }
        }
        List<EncodedEntry> merged = new ArrayList<>(byKey.values());
        merged.sort((a, b) -> CodePointOrder.compare(a.key(), b.key()));
        return merged;
    }

    private EncodedEntry mergedWith(EncodedEntry other) {
        return new EncodedEntry(key, Math.max(priority, other.priority), Math.min(delayMicros, other.delayMicros));
    }
}
