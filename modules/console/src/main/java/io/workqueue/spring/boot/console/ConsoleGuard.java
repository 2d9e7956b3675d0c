package io.workqueue.spring.boot.console;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;

/**
 * Decides whether a request may change anything, and sets the headers that keep the console's page
 * inert whatever data it shows.
 *
 * <p>An action must be a POST (the routes accept nothing else), of {@code application/json} (a
 * cross-site form cannot send that without a CORS preflight, which the console never grants), from
 * the console's own origin ({@code Origin}, else {@code Sec-Fetch-Site}, when the client sends
 * them; browsers do), carrying the console's token in the {@value #TOKEN_HEADER} header. The token
 * is random per application start and only ever written into the console's page, which another
 * origin cannot read. Thread-safe.
 */
final class ConsoleGuard {
    /** The request header that carries the console's token. */
    static final String TOKEN_HEADER = "X-Workqueue-Console-Token";

    /**
     * The page may load its own script, style and JSON and nothing else: no inline script, no
     * other origin, no plugin, no frame around it, no form posted anywhere. A key or an error that
     * smuggled markup into the page would find nothing it could run.
     */
    static final String CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self';"
            + " img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private final String token;
    private final byte[] tokenBytes;

    ConsoleGuard() {
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        this.token = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        this.tokenBytes = token.getBytes(StandardCharsets.US_ASCII);
    }

    /** The token, for the page. */
    String token() {
        return token;
    }

    /** Why {@code request} may not act, or {@code null} when it may. */
    @Nullable String refusal(ServerRequest request) {
        HttpHeaders headers = request.headers().asHttpHeaders();
        String origin = headers.getOrigin();
        if (origin != null && !origin.equals(originOf(request.uri()))) {
            return "cross-origin request refused (Origin " + origin + ")";
        }
        String fetchSite = headers.getFirst("Sec-Fetch-Site");
        if (origin == null && fetchSite != null && !fetchSite.equals("same-origin")) {
            return "cross-site request refused (Sec-Fetch-Site " + fetchSite + ")";
        }
        MediaType type = headers.getContentType();
        if (type == null || !MediaType.APPLICATION_JSON.isCompatibleWith(type)) {
            return "an action is a JSON POST";
        }
        String presented = headers.getFirst(TOKEN_HEADER);
        if (presented == null || !MessageDigest.isEqual(tokenBytes, presented.getBytes(StandardCharsets.US_ASCII))) {
            return "missing or wrong console token (header " + TOKEN_HEADER + "); reload the console";
        }
        return null;
    }

    /** {@code scheme://host[:port]} of {@code uri}, as browsers write an {@code Origin}. */
    static String originOf(URI uri) {
        String scheme = uri.getScheme() == null ? "http" : uri.getScheme().toLowerCase(Locale.ROOT);
        int port = uri.getPort();
        boolean defaultPort = port == -1 || (scheme.equals("http") && port == 80) || (scheme.equals("https") && port == 443);
        return scheme + "://" + uri.getHost() + (defaultPort ? "" : ":" + port);
    }
}
