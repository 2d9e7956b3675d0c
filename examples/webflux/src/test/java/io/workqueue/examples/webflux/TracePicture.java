package io.workqueue.examples.webflux;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.workqueue.observation.WorkQueueObservations;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Not a test: the program behind {@code docs/images/trace-one-item.png}, run by
 * {@code benchmarks/trace-picture.sh}. It starts the tile service as an application would run it,
 * with Spring Boot's OpenTelemetry tracing sampling everything and exporting to memory, and with
 * {@code store-trace-contexts} on; posts one tile; waits until the worker has rendered and completed
 * it; and draws that tile's spans on one time line as an HTML page, which the script screenshots.
 *
 * <p>The spans are picked from what was exported, not made up: the request's server span and its
 * enqueue, the group write whose link names that enqueue, the claim that handed the tile out, the
 * handler's run whose link names the enqueue (the stored trace context), and the completion that
 * named the tile's key. The server is {@code WORKQUEUE_R2DBC_URL} (a fresh database is best: the
 * tile queue's table must hold nothing else to claim).
 */
public final class TracePicture {
    private static final AttributeKey<String> KEY = AttributeKey.stringKey(WorkQueueObservations.KEY);
    private static final AttributeKey<String> HTTP_URL = AttributeKey.stringKey("http.url");
    private static final int WARM_UP = 30;
    private static final AttributeKey<String> CLAIMED = AttributeKey.stringKey(WorkQueueObservations.CLAIMED);

    private TracePicture() {}

    /** Where spans go: the memory of this process, read back once the tile is done. */
    @Configuration(proxyBeanMethods = false)
    static class InMemoryExport {
        @Bean
        InMemorySpanExporter inMemorySpanExporter() {
            return InMemorySpanExporter.create();
        }
    }

    /** One picked span, with its row's caption. */
    private record Row(String caption, SpanData span) {}

    public static void main(String[] args) throws Exception {
        Path html = Path.of(args.length > 0 ? args[0] : "target/trace-one-item.html").toAbsolutePath();
        SpringApplication application = new SpringApplication(TileServiceApplication.class, InMemoryExport.class);
        ConfigurableApplicationContext context = application.run(
                "--server.port=0",
                "--management.tracing.sampling.probability=1.0",
                "--workqueue.queues.tiles.store-trace-contexts=true",
                "--workqueue.console.enabled=false",
                "--tiles.failure-rate=0");
        int status = 1;
        try {
            int port = context.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
            InMemorySpanExporter exporter = context.getBean(InMemorySpanExporter.class);
            SdkTracerProvider tracer = context.getBean(SdkTracerProvider.class);
            // A cold JVM would draw the first request's class loading and JIT, not the queue: warm up
            // with other tiles, wait until they are rendered, and forget their spans.
            for (int i = 0; i < WARM_UP; i++) {
                post(port, "/tiles/warm-up/" + i + "/0");
            }
            awaitHandled(exporter, tracer, WARM_UP, 60);
            Thread.sleep(500);
            tracer.forceFlush().join(5, TimeUnit.SECONDS);
            exporter.reset();
            String path = "/tiles/roads/12/7";
            post(port, path);
            List<Row> rows = awaitRows(exporter, tracer, path, 30);
            Files.createDirectories(html.getParent());
            Files.writeString(html, page(rows, "POST " + path));
            System.out.println("wrote " + html);
            status = 0;
        } finally {
            context.close();
            System.exit(status);
        }
    }

    private static void post(int port, String path) throws java.io.IOException, InterruptedException {
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 202) {
            throw new IllegalStateException("POST " + path + " answered " + response.statusCode() + ": " + response.body());
        }
    }

    /** Waits until {@code count} handler spans have ended. */
    private static void awaitHandled(InMemorySpanExporter exporter, SdkTracerProvider tracer, int count, int seconds)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            tracer.forceFlush().join(5, TimeUnit.SECONDS);
            if (exporter.getFinishedSpanItems().stream().filter(s -> s.getName().startsWith("handle ")).count() >= count) {
                return;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the warm-up tiles were not all handled within " + seconds + " s");
    }

    /**
     * Polls the exported spans until the tile's handler span and the completion after it are there.
     * The batch processor exports on a timer, so each look flushes it first.
     */
    private static List<Row> awaitRows(InMemorySpanExporter exporter, SdkTracerProvider tracer, String path,
            int seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        String missing = "";
        while (System.nanoTime() < deadline) {
            tracer.forceFlush().join(5, TimeUnit.SECONDS);
            List<SpanData> spans = exporter.getFinishedSpanItems();
            try {
                return pick(spans, path);
            } catch (IllegalStateException notYet) {
                missing = notYet.getMessage();
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("after " + seconds + " s: " + missing + "; spans: "
                + exporter.getFinishedSpanItems().stream().map(SpanData::getName).toList());
    }

    private static List<Row> pick(List<SpanData> spans, String path) {
        SpanData http = first(spans, s -> s.getName().startsWith("http post")
                && path.equals(s.getAttributes().get(HTTP_URL)), "the request's server span");
        SpanData enqueue = first(spans, s -> s.getName().startsWith("enqueue ")
                && s.getTraceId().equals(http.getTraceId()), "the request's enqueue span");
        SpanData write = first(spans, s -> s.getName().startsWith("write ") && linksTo(s, enqueue),
                "the write linked to the enqueue");
        SpanData handle = first(spans, s -> s.getName().startsWith("handle ") && linksTo(s, enqueue),
                "the handler span linked to the enqueue");
        String key = handle.getAttributes().get(KEY);
        // The claim that handed the tile out: the last one to hand out anything before the handler began.
        SpanData claim = spans.stream()
                .filter(s -> s.getName().startsWith("claim ") && !"0".equals(s.getAttributes().get(CLAIMED))
                        && s.getEndEpochNanos() <= handle.getStartEpochNanos())
                .max(Comparator.comparingLong(SpanData::getEndEpochNanos))
                .orElseThrow(() -> new IllegalStateException("no claim handing out the tile yet"));
        SpanData complete = first(spans, s -> s.getName().startsWith("complete ") && key != null
                && key.equals(s.getAttributes().get(KEY)) && s.getStartEpochNanos() >= handle.getStartEpochNanos(),
                "the completion naming " + key);
        List<Row> rows = new ArrayList<>(List.of(
                new Row("the request (Spring WebFlux's server span)", http),
                new Row("enqueueKeys, inside the request", enqueue),
                new Row("the group-committed write it rode", write),
                new Row("the worker's claim that handed it out", claim),
                new Row("the handler's run", handle),
                new Row("the completion", complete)));
        rows.sort(Comparator.comparingLong(r -> r.span().getStartEpochNanos()));
        return rows;
    }

    private static SpanData first(List<SpanData> spans, java.util.function.Predicate<SpanData> test, String what) {
        return spans.stream().filter(test).min(Comparator.comparingLong(SpanData::getStartEpochNanos))
                .orElseThrow(() -> new IllegalStateException("no " + what + " yet"));
    }

    private static boolean linksTo(SpanData span, SpanData target) {
        for (LinkData link : span.getLinks()) {
            if (link.getSpanContext().getSpanId().equals(target.getSpanId())
                    && link.getSpanContext().getTraceId().equals(target.getTraceId())) {
                return true;
            }
        }
        return false;
    }

    // The page: one row per span on a shared time axis, a colour per trace, links drawn as arrows.

    private static final int WIDTH = 1400;
    private static final int LABEL = 430;
    private static final int RIGHT = 150;
    private static final int TOP = 128;
    private static final int ROW = 84;
    private static final String[] COLOURS = {"#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#4a5568"};

    private static String page(List<Row> rows, String request) {
        long t0 = rows.stream().mapToLong(r -> r.span().getStartEpochNanos()).min().orElseThrow();
        long t1 = rows.stream().mapToLong(r -> r.span().getEndEpochNanos()).max().orElseThrow();
        double plot = WIDTH - LABEL - RIGHT;
        double scale = plot / Math.max(1, t1 - t0);
        Map<String, Integer> traces = new LinkedHashMap<>();
        for (Row row : rows) {
            traces.putIfAbsent(row.span().getTraceId(), traces.size());
        }
        int height = TOP + rows.size() * ROW + 60;
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'>%n", WIDTH, height));
        svg.append("<defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7'"
                + " orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='#1a202c'/></marker></defs>\n");
        svg.append(String.format(Locale.ROOT, "<text x='20' y='34' class='title'>One tile, from its HTTP request to its"
                + " handler: %s, spans of a real run</text>%n", esc(request)));
        svg.append(String.format(Locale.ROOT, "<text x='20' y='58' class='sub'>examples/webflux (Spring Boot 4, the"
                + " starter, store-trace-contexts: true), Micrometer Tracing with OpenTelemetry exporting to memory;"
                + " %s, after %d warm-up tiles.</text>%n",
                Instant.ofEpochMilli(t0 / 1_000_000).truncatedTo(ChronoUnit.SECONDS), WARM_UP));
        svg.append("<text x='20' y='76' class='sub'>One row per span, on one time line. Colour = trace. Dashed arrow ="
                + " span link: the write and the handler's run each start a trace of their own and link to the"
                + " request's enqueue.</text>\n");
        // Axis: a tick every "nice" step of milliseconds.
        double totalMs = (t1 - t0) / 1e6;
        double step = niceStep(totalMs / 8);
        for (double ms = 0; ms <= totalMs + 1e-9; ms += step) {
            double x = LABEL + ms * 1e6 * scale;
            svg.append(String.format(Locale.ROOT, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' class='grid'/>"
                    + "<text x='%.1f' y='%d' class='tick'>%s ms</text>%n", x, TOP - 14, x, height - 40, x, TOP - 20,
                    trim(ms)));
        }
        Map<String, double[]> bars = new LinkedHashMap<>();
        for (int i = 0; i < rows.size(); i++) {
            SpanData span = rows.get(i).span();
            double y = TOP + i * ROW;
            double x = LABEL + (span.getStartEpochNanos() - t0) * scale;
            double w = Math.max(3, (span.getEndEpochNanos() - span.getStartEpochNanos()) * scale);
            int trace = traces.get(span.getTraceId());
            String colour = COLOURS[trace % COLOURS.length];
            bars.put(span.getSpanId(), new double[] {x, y + 14, w});
            boolean child = span.getParentSpanContext().isValid();
            svg.append(String.format(Locale.ROOT, "<text x='%d' y='%.1f' class='name'>%s%s</text>%n",
                    child ? 40 : 20, y + 24, child ? "└ " : "", esc(span.getName())));
            svg.append(String.format(Locale.ROOT, "<text x='%d' y='%.1f' class='caption'>%s · trace %d</text>%n",
                    child ? 56 : 20, y + 44, esc(rows.get(i).caption()), trace + 1));
            svg.append(String.format(Locale.ROOT, "<rect x='%.1f' y='%.1f' width='%.1f' height='20' rx='3' fill='%s'/>%n",
                    x, y + 4, w, colour));
            svg.append(String.format(Locale.ROOT, "<text x='%.1f' y='%.1f' class='dur'>%s ms</text>%n", x + w + 6, y + 19,
                    trim((span.getEndEpochNanos() - span.getStartEpochNanos()) / 1e6)));
            List<String> lines = tags(span);
            // Monospace at 11px: about 6.7px a character; shift left rather than run off the page.
            int longest = lines.stream().mapToInt(String::length).max().orElse(0);
            double tx = Math.max(LABEL, Math.min(x, WIDTH - 12 - longest * 6.7));
            for (int line = 0; line < lines.size(); line++) {
                svg.append(String.format(Locale.ROOT, "<text x='%.1f' y='%.1f' class='tags'>%s</text>%n", tx,
                        y + 40 + 14 * line, esc(lines.get(line))));
            }
        }
        // Links: from the linked-to span (the enqueue) to the span that names it.
        for (Row row : rows) {
            double[] to = bars.get(row.span().getSpanId());
            for (LinkData link : row.span().getLinks()) {
                double[] from = bars.get(link.getSpanContext().getSpanId());
                if (from == null) {
                    continue;
                }
                double x1 = from[0] + from[2] / 2;
                double y1 = from[1] + 10;
                double x2 = to[0];
                double y2 = to[1] - 8;
                svg.append(String.format(Locale.ROOT, "<path d='M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f' class='link'"
                        + " marker-end='url(#arrow)'/>%n", x1, y1, x1, (y1 + y2) / 2, x2 - 30, y2 - 10, x2, y2));
                svg.append(String.format(Locale.ROOT, "<text x='%.1f' y='%.1f' class='linklabel'>link</text>%n",
                        x2 - 34, y2 - 6));
            }
        }
        svg.append("</svg>\n");
        return "<!doctype html><html><head><meta charset='utf-8'><style>\n"
                + "body{margin:0;background:#fff;font-family:'DejaVu Sans',Arial,sans-serif}\n"
                + ".title{font-size:21px;font-weight:bold;fill:#1a202c}.sub{font-size:13px;fill:#4a5568}\n"
                + ".name{font-size:15px;font-weight:bold;fill:#1a202c;font-family:'DejaVu Sans Mono',monospace}\n"
                + ".caption{font-size:12px;fill:#4a5568}.dur{font-size:13px;fill:#1a202c}\n"
                + ".tags{font-size:11px;fill:#4a5568;font-family:'DejaVu Sans Mono',monospace}\n"
                + ".tick{font-size:11px;fill:#718096;text-anchor:middle}.grid{stroke:#e2e8f0;stroke-width:1}\n"
                + ".link{fill:none;stroke:#1a202c;stroke-width:1.6;stroke-dasharray:5 4}\n"
                + ".linklabel{font-size:11px;font-style:italic;fill:#1a202c}\n"
                + "</style></head><body>\n" + svg + "</body></html>\n";
    }

    /**
     * The span's tags worth a reader's eye, in two lines: the low-cardinality ones (a timer's tags),
     * then the key, the count claimed and the links.
     */
    private static List<String> tags(SpanData span) {
        List<String> low = new ArrayList<>();
        List<String> high = new ArrayList<>();
        span.getAttributes().forEach((key, value) -> {
            String name = key.getKey();
            if (name.equals(WorkQueueObservations.QUEUE) || name.equals(WorkQueueObservations.OUTCOME)
                    || name.equals(WorkQueueObservations.ENQUEUE_MODE) || name.equals("status") || name.equals("method")) {
                low.add(name + "=" + value);
            } else if (name.equals(WorkQueueObservations.KEY) || name.equals(WorkQueueObservations.CLAIMED)
                    || name.equals(WorkQueueObservations.CALLERS) || name.equals("http.url")) {
                high.add(name + "=" + value);
            }
        });
        low.sort(null);
        high.sort(null);
        if (!span.getLinks().isEmpty()) {
            high.add("links: " + span.getLinks().size());
        }
        return List.of(String.join("  ", low), String.join("  ", high));
    }

    private static double niceStep(double raw) {
        double magnitude = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-3))));
        for (double m : new double[] {1, 2, 5, 10}) {
            if (m * magnitude >= raw) {
                return m * magnitude;
            }
        }
        return 10 * magnitude;
    }

    private static String trim(double ms) {
        return ms >= 10 ? String.format(Locale.ROOT, "%.0f", ms) : String.format(Locale.ROOT, "%.1f", ms);
    }

    private static String esc(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;");
    }
}
