package io.workqueue.postgres;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

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
     * How many items each caller completed, in the callers' order. A key named by two callers is
     * credited to the first only, so the counts add up to what the statement completed, exactly as
     * if the calls had run one after the other.
     *
     * <p>A missing list is believed to mean "every key" only when {@code completed} says so too;
     * otherwise it names no key and nobody is credited. A count may then fall short of what the
     * statement did, but it never credits a caller with an item nobody completed.
     *
     * @param callers   each caller's distinct keys
     * @param completed how many items the statement completed
     * @param which     the keys it completed, or {@code null} when it completed every key named
     */
    static List<Long> credit(List<String[]> callers, long completed, @Nullable Set<String> which) {
        if (callers.size() == 1) {
            return List.of(completed);
        }
        @Nullable Set<String> completedKeys = which != null || completed == union(callers).length ? which : Set.of();
        List<Long> counts = new ArrayList<>(callers.size());
        Set<String> credited = new HashSet<>();
        for (String[] keys : callers) {
            long mine = 0;
            for (String key : keys) {
                if ((completedKeys == null || completedKeys.contains(key)) && credited.add(key)) {
                    mine++;
                }
            }
            counts.add(mine);
        }
        return counts;
    }
}
