package io.workqueue.spring.boot.console;

import io.workqueue.ItemPage;
import io.workqueue.ItemState;
import io.workqueue.QueueItem;
import io.workqueue.QueueSummary;
import io.workqueue.Stats;
import io.workqueue.WorkQueueAdmin;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.http.CacheControl;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The web console: a page and its assets (script, style, icon), and a JSON API over one
 * {@link WorkQueueAdmin} per table, as WebFlux functional routes under a path. The Spring Boot
 * auto-configuration serves it when this artifact ({@code reactive-workqueue-console}) is on the
 * class path and {@code workqueue.console.enabled=true}; a WebFlux application without the starter
 * can serve {@link #routes()} itself. Reads answer from the database (the queue list from
 * {@link ConsoleStats}); actions answer 403 unless enabled and {@link ConsoleGuard allowed}. Every
 * response carries the console's Content-Security-Policy, {@code nosniff} and {@code no-store}.
 *
 * <p>The API returns keys ({@code storedKey}, {@code key}), queue names and errors verbatim, as
 * JSON strings, whatever they hold: markup, bidirectional controls, zero-width and control
 * characters. A client needs the exact stored key to act on an item, so nothing is escaped or
 * replaced here; whoever renders them must do it with care. The page writes each as text through
 * one function that isolates its direction and shows every hidden character as a marked code point.
 *
 * <p>Read-only unless actions are enabled; even then an action is accepted only as a same-origin
 * JSON POST carrying the console's token ({@link ConsoleGuard}). The console adds no
 * authentication: put it behind the application's own. Immutable and thread-safe once built.
 */
public final class WorkQueueConsole {
    private static final String ASSETS = "io/workqueue/spring/boot/console/";
    /** Spring Security's request attribute holding its {@code Mono<CsrfToken>}, when it filters the request. */
    private static final String SECURITY_CSRF_ATTRIBUTE = "org.springframework.security.web.server.csrf.CsrfToken";
    private static final int DEFAULT_PAGE_SIZE = 50;
    private static final int PURGE_BATCH = 1_000;

    private final String path;
    private final boolean actionsEnabled;
    private final Map<String, WorkQueueAdmin> admins;
    private final Map<String, ConsoleStats> stats;
    private final ConsoleGuard guard;
    private final String page;
    private final byte[] script;
    private final byte[] style;
    private final byte[] icon;

    /**
     * The console under {@code path} over {@code admins}, one per table prefix (the key); reads
     * answer from the database, the queue list's counts at most {@code statsMaxAge} old. Reads its
     * assets from this jar now, so a broken jar fails here rather than at the first request.
     *
     * @param path           where it is served: {@code /} and segments of letters, digits,
     *                       {@code .}, {@code _} and {@code -}, no trailing {@code /}
     * @param actionsEnabled whether retry, remove, purge, pause and resume are accepted
     * @param admins         the admin of each table prefix shown
     * @param statsMaxAge    how old the queue list's counts may be; positive
     */
    public WorkQueueConsole(String path, boolean actionsEnabled, Map<String, WorkQueueAdmin> admins, Duration statsMaxAge) {
        this.path = path;
        this.actionsEnabled = actionsEnabled;
        this.admins = Map.copyOf(admins);
        Map<String, ConsoleStats> byTable = new LinkedHashMap<>();
        admins.forEach((table, admin) -> byTable.put(table, new ConsoleStats(admin, statsMaxAge)));
        this.stats = byTable;
        this.guard = new ConsoleGuard();
        this.page = new String(asset("index.html"), StandardCharsets.UTF_8)
                .replace("{{token}}", guard.token())
                .replace("{{tokenHeader}}", ConsoleGuard.TOKEN_HEADER)
                .replace("{{actions}}", Boolean.toString(actionsEnabled));
        this.script = asset("console.js");
        this.style = asset("console.css");
        this.icon = asset("favicon.svg");
    }

    /** Read once, while the context starts, from the starter's jar. */
    private static byte[] asset(String name) {
        try (InputStream in = WorkQueueConsole.class.getClassLoader().getResourceAsStream(ASSETS + name)) {
            if (in == null) {
                throw new IllegalStateException("the console asset " + ASSETS + name + " is missing from the classpath");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The Content-Security-Policy on every response: nothing but the console's own script, style and
     * icon, and requests only to its own origin.
     */
    public static final String CONTENT_SECURITY_POLICY = ConsoleGuard.CONTENT_SECURITY_POLICY;

    /**
     * The routes: {@code GET path} redirects to {@code path/}, the page, its assets, the API's reads
     * and, when enabled, its actions ({@code POST path/api/...}).
     */
    public RouterFunction<ServerResponse> routes() {
        return RouterFunctions.route()
                .GET(path, request -> ServerResponse.permanentRedirect(request.uriBuilder().path("/").build()).build())
                .GET(path + "/", this::page)
                .GET(path + "/console.js", request -> asset(script, "text/javascript"))
                .GET(path + "/console.css", request -> asset(style, "text/css"))
                .GET(path + "/favicon.svg", request -> asset(icon, "image/svg+xml"))
                .GET(path + "/api/queues", this::queues)
                .GET(path + "/api/items", this::items)
                .GET(path + "/api/item", this::item)
                .POST(path + "/api/retry", request -> act(request, this::retry))
                .POST(path + "/api/remove", request -> act(request, this::remove))
                .POST(path + "/api/purge", request -> act(request, this::purge))
                .POST(path + "/api/pause", request -> act(request, this::pause))
                .POST(path + "/api/resume", request -> act(request, this::resume))
                .build();
    }

    // ---------------------------------------------------------------- the page

    private Mono<ServerResponse> page(ServerRequest request) {
        return securityToken(request)
                .defaultIfEmpty(new String[] {"", ""})
                .flatMap(security -> secured(ServerResponse.ok().contentType(new MediaType(MediaType.TEXT_HTML, StandardCharsets.UTF_8)))
                        .bodyValue(page.replace("{{securityHeader}}", security[0]).replace("{{securityToken}}", security[1])));
    }

    /**
     * Spring Security's CSRF header name and token, when its filter guards this request, so that
     * the page's POSTs pass it too; read reflectively, since Spring Security is not a dependency.
     */
    private static Mono<String[]> securityToken(ServerRequest request) {
        Object attribute = request.exchange().getAttribute(SECURITY_CSRF_ATTRIBUTE);
        if (!(attribute instanceof Mono<?> token)) {
            return Mono.empty();
        }
        return token.flatMap(csrf -> {
            try {
                Method header = csrf.getClass().getMethod("getHeaderName");
                Method value = csrf.getClass().getMethod("getToken");
                return Mono.just(new String[] {String.valueOf(header.invoke(csrf)), String.valueOf(value.invoke(csrf))});
            } catch (ReflectiveOperationException e) {
                return Mono.empty();
            }
        });
    }

    private static Mono<ServerResponse> asset(byte[] body, String type) {
        return secured(ServerResponse.ok().contentType(MediaType.parseMediaType(type + ";charset=UTF-8"))).bodyValue(body);
    }

    private static ServerResponse.BodyBuilder secured(ServerResponse.BodyBuilder response) {
        return response.header("Content-Security-Policy", ConsoleGuard.CONTENT_SECURITY_POLICY)
                .header("X-Content-Type-Options", "nosniff")
                .header("Referrer-Policy", "no-referrer")
                .header("X-Frame-Options", "DENY")
                .cacheControl(CacheControl.noStore());
    }

    private static Mono<ServerResponse> json(Object body) {
        return secured(ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)).bodyValue(body);
    }

    private static Mono<ServerResponse> problem(HttpStatus status, String message) {
        return secured(ServerResponse.status(status).contentType(MediaType.APPLICATION_JSON))
                .bodyValue(Map.of("error", message));
    }

    // ---------------------------------------------------------------- reads

    private Mono<ServerResponse> queues(ServerRequest request) {
        return Flux.fromIterable(stats.entrySet())
                .concatMap(table -> table.getValue().current().flatMapMany(snapshot -> Flux.fromIterable(snapshot.queues())
                        .map(queue -> queueView(table.getKey(), queue, snapshot.age()))))
                .collectList()
                .flatMap(queues -> json(Map.of("actionsEnabled", actionsEnabled, "queues", queues)));
    }

    private static Map<String, Object> queueView(String table, QueueSummary queue, Duration statsAge) {
        Stats s = queue.stats();
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("table", table);
        view.put("queue", queue.name());
        view.put("depth", s.pending());
        view.put("ready", s.ready());
        view.put("leased", s.leased());
        view.put("stalled", s.stalled());
        view.put("completed", s.completed());
        // The count stops at Stats.COMPLETED_COUNT_LIMIT: the page shows "10,000+" then.
        view.put("completedCapped", s.completedCapped());
        view.put("oldestReadyAgeMillis", s.oldestReadyAge().toMillis());
        view.put("statsAgeMillis", statsAge.toMillis());
        view.put("maxAttempts", queue.maxAttempts());
        view.put("registered", queue.registered());
        // Paused by an operator: its ready items wait by design (the page says so beside the age).
        view.put("pausedAt", s.pausedAt().map(Object::toString).orElse(null));
        return view;
    }

    private Mono<ServerResponse> items(ServerRequest request) {
        return withQueue(request, (admin, queue) -> {
            ItemState state;
            try {
                state = ItemState.valueOf(request.queryParam("state").orElse("ready").toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                return problem(HttpStatus.BAD_REQUEST, "state must be one of ready, delayed, leased, stalled, completed");
            }
            int limit;
            try {
                limit = request.queryParam("limit").map(Integer::parseInt).orElse(DEFAULT_PAGE_SIZE);
            } catch (NumberFormatException e) {
                return problem(HttpStatus.BAD_REQUEST, "limit must be a number");
            }
            return admin.items(queue, state, request.queryParam("after").filter(a -> !a.isEmpty()).orElse(null), limit)
                    .flatMap(page -> json(pageView(page)))
                    .onErrorResume(IllegalArgumentException.class, e -> problem(HttpStatus.BAD_REQUEST, e.getMessage()));
        });
    }

    private static Map<String, Object> pageView(ItemPage page) {
        List<Map<String, Object>> items = new ArrayList<>(page.items().size());
        for (QueueItem item : page.items()) {
            items.add(itemView(item));
        }
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("items", items);
        view.put("next", page.next());
        return view;
    }

    private static Map<String, Object> itemView(QueueItem item) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("storedKey", item.storedKey());
        view.put("key", String.valueOf(item.key()));
        view.put("keyDecodingError", item.keyDecodingError());
        view.put("states", item.states().stream().map(s -> s.name().toLowerCase(Locale.ROOT)).toList());
        view.put("priority", item.priority());
        view.put("attempts", item.attempts());
        view.put("lastError", item.lastError());
        view.put("ageMillis", item.age().toMillis());
        view.put("availableInMillis", item.availableIn().toMillis());
        view.put("leaseRemainingMillis", item.leaseRemaining() == null ? null : item.leaseRemaining().toMillis());
        view.put("completedAgoMillis", item.completedAgo() == null ? null : item.completedAgo().toMillis());
        view.put("requeueRequested", item.requeueRequested());
        view.put("leaseLapsed", item.leaseLapsed());
        return view;
    }

    private Mono<ServerResponse> item(ServerRequest request) {
        return withQueue(request, (admin, queue) -> {
            Optional<String> key = request.queryParam("key");
            if (key.isEmpty()) {
                return problem(HttpStatus.BAD_REQUEST, "key is required");
            }
            return admin.item(queue, key.get())
                    .flatMap(item -> json(itemView(item)))
                    .switchIfEmpty(Mono.defer(() -> problem(HttpStatus.NOT_FOUND, "no such item")));
        });
    }

    /** Runs {@code read} with the admin of the request's table and its queue, or answers why not. */
    private Mono<ServerResponse> withQueue(ServerRequest request, QueueRead read) {
        String table = request.queryParam("table").orElse("");
        WorkQueueAdmin admin = admins.get(table);
        if (admin == null) {
            return problem(HttpStatus.NOT_FOUND, "no table of that prefix is shown here");
        }
        Optional<String> queue = request.queryParam("queue");
        if (queue.isEmpty() || queue.get().isEmpty()) {
            return problem(HttpStatus.BAD_REQUEST, "queue is required");
        }
        return read.apply(admin, queue.get());
    }

    private interface QueueRead {
        Mono<ServerResponse> apply(WorkQueueAdmin admin, String queue);
    }

    // ---------------------------------------------------------------- actions

    /** The JSON body of an action: the table, the queue and, for retry and remove, the stored keys. */
    record Action(@Nullable String table, @Nullable String queue, @Nullable List<String> keys) {}

    private Mono<ServerResponse> act(ServerRequest request, Function<Action, Mono<ServerResponse>> action) {
        if (!actionsEnabled) {
            return problem(HttpStatus.FORBIDDEN, "actions are disabled (workqueue.console.actions-enabled)");
        }
        String refusal = guard.refusal(request);
        if (refusal != null) {
            return problem(HttpStatus.FORBIDDEN, refusal);
        }
        return request.bodyToMono(Action.class)
                .flatMap(body -> {
                    if (body.queue() == null || body.queue().isEmpty() || admins.get(body.table() == null ? "" : body.table()) == null) {
                        return problem(HttpStatus.BAD_REQUEST, "table and queue are required");
                    }
                    return action.apply(body);
                })
                .switchIfEmpty(Mono.defer(() -> problem(HttpStatus.BAD_REQUEST, "a JSON body is required")))
                .onErrorResume(IllegalArgumentException.class, e -> problem(HttpStatus.BAD_REQUEST, e.getMessage()));
    }

    private WorkQueueAdmin adminOf(Action action) {
        return admins.get(action.table() == null ? "" : action.table());
    }

    private Mono<ServerResponse> retry(Action action) {
        return adminOf(action).retry(action.queue(), action.keys() == null ? List.of() : action.keys())
                .doOnNext(changed -> stats.get(tableOf(action)).invalidate())
                .flatMap(changed -> json(Map.of("changed", changed)));
    }

    private Mono<ServerResponse> remove(Action action) {
        return adminOf(action).remove(action.queue(), action.keys() == null ? List.of() : action.keys())
                .doOnNext(changed -> stats.get(tableOf(action)).invalidate())
                .flatMap(changed -> json(Map.of("changed", changed)));
    }

    private Mono<ServerResponse> purge(Action action) {
        return adminOf(action).purgeCompleted(action.queue(), PURGE_BATCH)
                .doOnNext(deleted -> stats.get(tableOf(action)).invalidate())
                .flatMap(deleted -> json(Map.of("deleted", deleted, "batch", PURGE_BATCH)));
    }

    private Mono<ServerResponse> pause(Action action) {
        return adminOf(action).pause(action.queue())
                .doOnNext(pausedAt -> stats.get(tableOf(action)).invalidate())
                .flatMap(pausedAt -> json(Map.of("pausedAt", pausedAt.toString())));
    }

    private Mono<ServerResponse> resume(Action action) {
        return adminOf(action).resume(action.queue())
                .doOnNext(resumed -> stats.get(tableOf(action)).invalidate())
                .flatMap(resumed -> json(Map.of("resumed", resumed)));
    }

    private static String tableOf(Action action) {
        return action.table() == null ? "" : action.table();
    }
}
