package io.workqueue.observation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.r2dbc.spi.Connection;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Trace continuity without a payload, with a real tracer (Micrometer Tracing's OpenTelemetry
 * bridge, exporting to memory): a queue that stores trace contexts keeps the enqueuing request's
 * context with the key, through the group commit and through a transactional enqueue, and the
 * span of the handler that runs the item starts a trace of its own that links to it. Switched
 * off, nothing is stored and nothing links.
 */
class TraceLinksIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final WorkerOptions OPTIONS = WorkerOptions.builder().concurrency(4).lease(Duration.ofMinutes(1))
            .poll(Duration.ofMillis(50)).build();

    private InMemorySpanExporter exporter;
    private SdkTracerProvider provider;
    private ObservationRegistry registry;

    @BeforeEach
    void tracer() {
        exporter = InMemorySpanExporter.create();
        provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
        OtelTracer tracer = new OtelTracer(provider.get("test"), new OtelCurrentTraceContext(), event -> {});
        registry = ObservationRegistry.create();
        // The queue's handler first, as the starter orders it; the default one makes the request's span.
        registry.observationConfig().observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
                new WorkQueueTracingObservationHandler(tracer), new DefaultTracingObservationHandler(tracer)));
    }

    @AfterEach
    void close() {
        provider.close();
    }

    private ReactiveWorkQueue<String> queue(String prefix, String name, boolean store, boolean observed) {
        var builder = ReactiveWorkQueue.builder(TestDatabase.pool(), String.class)
                .config(WorkQueueConfig.builder(name).tablePrefix(prefix).storeTraceContexts(store).build());
        return observed ? builder.observationRegistry(registry).build() : builder.build();
    }

    /** Runs {@code work} as the work of a request: under its observation, in the Reactor context as WebFlux has it. */
    private <T> T inRequest(String request, Function<Observation, Mono<T>> work) {
        Observation observation = Observation.start(request, registry);
        try {
            return work.apply(observation)
                    .contextWrite(context -> context.put(ObservationThreadLocalAccessor.KEY, observation))
                    .block(TIMEOUT);
        } finally {
            observation.stop();
        }
    }

    private SpanData span(String name) {
        return exporter.getFinishedSpanItems().stream().filter(span -> span.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no span " + name + " in " + names()));
    }

    private List<SpanData> spans(String name) {
        return exporter.getFinishedSpanItems().stream().filter(span -> span.getName().equals(name)).toList();
    }

    private List<String> names() {
        return exporter.getFinishedSpanItems().stream().map(SpanData::getName).toList();
    }

    /** The handler spans of {@code n} runs of {@code queue}'s process(), by key. */
    private java.util.Map<String, SpanData> handle(ReactiveWorkQueue<String> queue, int n) {
        queue.process(item -> Mono.empty(), OPTIONS).take(n).blockLast(TIMEOUT);
        return spans("handle " + queue.name()).stream().collect(Collectors.toMap(
                span -> span.getAttributes().asMap().entrySet().stream()
                        .filter(e -> e.getKey().getKey().equals(WorkQueueObservations.KEY))
                        .map(e -> String.valueOf(e.getValue())).findFirst().orElseThrow(),
                span -> span, (a, b) -> b));
    }

    private static Set<String> linkedSpans(SpanData span) {
        return span.getLinks().stream().map(LinkData::getSpanContext).map(c -> c.getTraceId() + "/" + c.getSpanId())
                .collect(Collectors.toSet());
    }

    private static String id(SpanData span) {
        return span.getTraceId() + "/" + span.getSpanId();
    }

    @Test
    void theHandlersSpanLinksToTheEnqueuingRequestThroughTheGroupCommit() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("linked");
        ReactiveWorkQueue<String> queue = queue(prefix, name, true, true);
        // Twenty requests at once: their enqueues ride shared writes.
        Flux.range(0, 20).flatMap(i -> Mono.defer(() -> {
                    Observation request = Observation.start("request " + i, registry);
                    return queue.enqueueKeys("k" + i)
                            .contextWrite(context -> context.put(ObservationThreadLocalAccessor.KEY, request))
                            .doFinally(signal -> request.stop());
                }), 20)
                .blockLast(TIMEOUT);
        java.util.Map<String, SpanData> handled = handle(queue, 20);

        for (int i = 0; i < 20; i++) {
            SpanData request = span("request " + i);
            SpanData enqueue = spans("enqueue " + name).stream()
                    .filter(span -> span.getParentSpanId().equals(request.getSpanId())).findFirst().orElseThrow();
            assertEquals(request.getTraceId(), enqueue.getTraceId(), "the enqueue is part of its request's trace");
            SpanData handler = handled.get("k" + i);
            assertNotEquals(request.getTraceId(), handler.getTraceId(), "the handler's run is a trace of its own");
            assertEquals(Set.of(id(enqueue)), linkedSpans(handler), "linked, not parented, to its enqueue");
        }
        // Each write links to the enqueues of the callers that rode it, and is a trace of its own.
        List<SpanData> writes = spans("write " + name);
        assertTrue(writes.size() < 20, () -> writes.size() + " writes for 20 concurrent enqueues");
        assertEquals(20, writes.stream().mapToInt(write -> write.getLinks().size()).sum());
    }

    @Test
    void theHandlersSpanLinksToTheRequestOfATransactionalEnqueue() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("linked-tx");
        ReactiveWorkQueue<String> queue = queue(prefix, name, true, true);
        inRequest("request", request -> Mono.usingWhen(Mono.from(TestDatabase.pool().create()),
                (Connection connection) -> Mono.from(connection.beginTransaction())
                        .then(queue.enqueue(connection, List.of(Entry.of("t"))))
                        .then(Mono.from(connection.commitTransaction())),
                Connection::close));

        SpanData enqueue = span("enqueue " + name);
        assertEquals(span("request").getSpanId(), enqueue.getParentSpanId());
        assertEquals(Set.of(id(enqueue)), linkedSpans(handle(queue, 1).get("t")));
    }

    @Test
    void aKeyEnqueuedByManyRequestsLinksToTheMostRecentOnesUntilItCompletesThenStartsOver() {
        String prefix = TestDatabase.createTable();
        String name = TestDatabase.uniqueName("merged");
        ReactiveWorkQueue<String> queue = queue(prefix, name, true, true);
        int requests = WorkQueueConfig.MAX_TRACE_CONTEXTS + 2;
        for (int i = 0; i < requests; i++) {
            inRequest("request " + i, request -> queue.enqueueKeys("shared"));
        }
        // An enqueue outside any request is a trace of its own, its enqueue span: stored too.
        queue.enqueueKeys("shared").block(TIMEOUT);
        List<SpanData> roots = spans("enqueue " + name).stream().filter(span -> !span.getParentSpanContext().isValid())
                .toList();
        assertEquals(1, roots.size());
        Item<String> claimed = queue.claim(1, Duration.ofMinutes(1)).block(TIMEOUT).get(0);
        assertEquals(WorkQueueConfig.MAX_TRACE_CONTEXTS, claimed.traceContexts().size(), "the most recent, bounded");
        Set<String> recent = IntStream.range(3, requests).mapToObj(i -> span("request " + i).getTraceId())
                .collect(Collectors.toCollection(java.util.HashSet::new));
        recent.add(roots.get(0).getTraceId());
        assertEquals(recent, claimed.traceContexts().stream().map(context -> context.split("-")[1])
                .collect(Collectors.toSet()));
        queue.release(Duration.ZERO, null, "shared").block(TIMEOUT);
        assertEquals(WorkQueueConfig.MAX_TRACE_CONTEXTS, linkedSpans(handle(queue, 1).get("shared")).size(),
                "a retry links to them all");

        // Completed, then enqueued again by another request: the item starts over.
        exporter.reset();
        inRequest("again", request -> queue.enqueueKeys("shared"));
        SpanData again = span("enqueue " + name);
        assertEquals(Set.of(id(again)), linkedSpans(handle(queue, 1).get("shared")));
    }

    @Test
    void switchedOffNothingIsStoredAndNothingLinks() {
        String prefix = TestDatabase.createTable();
        String table = WorkQueueMigrations.tableName(prefix);
        String notStored = TestDatabase.uniqueName("not-stored");
        ReactiveWorkQueue<String> observedOnly = queue(prefix, notStored, false, true);
        inRequest("request", request -> observedOnly.enqueueKeys("a"));
        assertEquals(0, TestDatabase.queryLong("SELECT count(*) FROM " + table + " WHERE queue_name = $1"
                + " AND trace_contexts IS NOT NULL", notStored));
        SpanData handler = handle(observedOnly, 1).get("a");
        assertTrue(handler.getLinks().isEmpty());
        assertEquals(1, spans("enqueue " + notStored).size(), "observed all the same");

        // No registry: no observation, and nothing to store even when storing is on.
        exporter.reset();
        String unobserved = TestDatabase.uniqueName("unobserved");
        ReactiveWorkQueue<String> plain = queue(prefix, unobserved, true, false);
        inRequest("request", request -> plain.enqueueKeys("b"));
        assertEquals(0, TestDatabase.queryLong("SELECT count(*) FROM " + table + " WHERE queue_name = $1"
                + " AND trace_contexts IS NOT NULL", unobserved));
        plain.process(item -> Mono.empty(), OPTIONS).take(1).blockLast(TIMEOUT);
        assertEquals(List.of("request"), names(), "the request's span alone");
    }
}
