package io.workqueue.examples.bench;

import java.util.Arrays;
import java.util.List;

/**
 * One cell of a drain grid: W workers, each with B handlers and claims of B. Written {@code WxB} on
 * the command line ({@code 4x100,16x10}), shown as {@code W=4 B=100} in reports.
 */
record DrainCell(int workers, int batch) {
    /** The cells of a {@code --cells} argument. */
    static List<DrainCell> parseAll(String text) {
        return Arrays.stream(text.split(",")).map(DrainCell::parse).toList();
    }

    static DrainCell parse(String text) {
        String[] parts = text.trim().split("x");
        return new DrainCell(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]));
    }

    /** As the command line writes it. */
    String arg() {
        return workers + "x" + batch;
    }

    @Override
    public String toString() {
        return "W=" + workers + " B=" + batch;
    }
}
