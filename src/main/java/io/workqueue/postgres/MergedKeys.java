package io.workqueue.postgres;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The arithmetic of a merged complete: many callers' keys go to the database as one array, and
 * what the one statement completed is shared out again, so each caller still learns how many items
 * its own call completed.
 */
final class MergedKeys {
    private MergedKeys() {}

    /** Every key named by any caller, once each (a row can be completed once per statement). */
    static String[] union(List<String[]> callers) {
        Set<String> union = new LinkedHashSet<>();
        for (String[] keys : callers) {
            Collections.addAll(union, keys);
        }
        return union.toArray(String[]::new);
    }

    /**
     * How many of {@code completed} each caller gets, in the callers' order. A key named by two
     * callers is credited to the first only, so the counts add up to what the statement completed,
     * exactly as if the calls had run one after the other. Consumes {@code completed}.
     *
     * @param callers   each caller's distinct keys
     * @param completed the keys the statement completed
     */
    static List<Long> credit(List<String[]> callers, Set<String> completed) {
        List<Long> counts = new ArrayList<>(callers.size());
        for (String[] keys : callers) {
            long credited = 0;
            for (String key : keys) {
                if (completed.remove(key)) {
                    credited++;
                }
            }
            counts.add(credited);
        }
        return counts;
    }
}
