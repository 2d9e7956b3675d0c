package io.workqueue.examples.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** A result table, printed as Markdown on the console and in the README. */
final class Table {
    final String title;
    final List<String> headers;
    final List<List<String>> rows = new ArrayList<>();
    final List<String> notes = new ArrayList<>();

    Table(String title, String... headers) {
        this.title = title;
        this.headers = Arrays.asList(headers);
    }

    Table row(Object... cells) {
        List<String> row = new ArrayList<>();
        for (Object cell : cells) {
            row.add(String.valueOf(cell));
        }
        rows.add(row);
        return this;
    }

    Table note(String note) {
        notes.add(note);
        return this;
    }

    String markdown() {
        StringBuilder out = new StringBuilder();
        out.append("| ").append(String.join(" | ", headers)).append(" |\n");
        out.append("|").append("---|".repeat(headers.size())).append('\n');
        for (List<String> row : rows) {
            out.append("| ").append(String.join(" | ", row)).append(" |\n");
        }
        for (String note : notes) {
            out.append('\n').append(note).append('\n');
        }
        return out.toString();
    }

    void print() {
        System.out.println();
        System.out.println("### " + title);
        System.out.println();
        System.out.print(markdown());
        System.out.println();
    }

    static String rate(double itemsPerSecond) {
        if (Double.isNaN(itemsPerSecond)) {
            return "—";
        }
        return itemsPerSecond >= 10_000
                ? String.format(Locale.ROOT, "%.1fk", itemsPerSecond / 1000)
                : String.format(Locale.ROOT, "%.2fk", itemsPerSecond / 1000);
    }

    static String ratio(double ratio) {
        return Double.isNaN(ratio) || Double.isInfinite(ratio) ? "—" : String.format(Locale.ROOT, "%.2f×", ratio);
    }

    static String ms(double millis) {
        return String.format(Locale.ROOT, "%.2f", millis);
    }
}
