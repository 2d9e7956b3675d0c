package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.workqueue.ReactiveWorkQueue;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The service keeps answering on one HTTP/1.1 keep-alive connection when a request arrives before
 * the previous one has finished: here a console read that waits for the database, pipelined with a
 * refusal answered at once, then one more request. Reactor Netty 1.3.5 to 1.3.7 buffer the second
 * request and never read from the connection again after answering it (reactor/reactor-netty
 * #4347, #4361), so the third goes unanswered; browsers and HTTP clients that reuse connections
 * meet the same race without pipelining, as requests that hang now and then. This fails on Spring
 * Boot 4.0.7's Reactor Netty (1.3.6) and passes on the versions the project's BOM pins (1.3.8).
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT, properties = {
        "workqueue.queues.tiles.name=tiles-keepalive-${random.uuid}",
        "workqueue.queues.tiles.worker.enabled=false",
        "workqueue.console.enabled=true"})
@DirtiesContext
class KeepAliveIT {
    /** Far beyond any answer here; a connection that stopped reading never answers at all. */
    static final int READ_TIMEOUT_MILLIS = 10_000;
    static final int ROUNDS = 10;

    @LocalServerPort
    int port;

    @Autowired
    ReactiveWorkQueue<TileKey> tiles;

    @Test
    void aRequestAfterAPipelinedPairIsAnswered() throws IOException {
        String items = "/workqueue/api/items?table=webflux_demo&queue=" + tiles.name();
        for (int round = 0; round < ROUNDS; round++) {
            try (Socket socket = new Socket("127.0.0.1", port)) {
                socket.setSoTimeout(READ_TIMEOUT_MILLIS);
                OutputStream out = socket.getOutputStream();
                InputStream in = socket.getInputStream();
                out.write((get(items + "&state=ready") + get(items + "&state=bogus")).getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(readStatus(in)).isEqualTo(200);
                assertThat(readStatus(in)).isEqualTo(400);
                out.write(get(items + "&state=delayed").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                try {
                    assertThat(readStatus(in)).isEqualTo(200);
                } catch (SocketTimeoutException e) {
                    fail("round " + (round + 1) + " of " + ROUNDS + ": the request after the pipelined pair went unanswered for "
                            + READ_TIMEOUT_MILLIS + " ms on its kept-alive connection");
                }
            }
        }
    }

    private String get(String path) {
        return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n\r\n";
    }

    /** Reads one whole response (its body by Content-Length or chunked) and returns its status. */
    private static int readStatus(InputStream in) throws IOException {
        String head = readHead(in);
        int status = Integer.parseInt(head.substring(head.indexOf(' ') + 1, head.indexOf(' ') + 4));
        String lower = head.toLowerCase(Locale.ROOT);
        int length = lower.indexOf("\r\ncontent-length:");
        if (length >= 0) {
            int end = lower.indexOf("\r\n", length + 2);
            in.readNBytes(Integer.parseInt(lower.substring(length + "\r\ncontent-length:".length(), end).trim()));
        } else if (lower.contains("\r\ntransfer-encoding: chunked")) {
            int size;
            do {
                size = Integer.parseInt(readLine(in).trim(), 16);
                in.readNBytes(size);
                readLine(in);
            } while (size > 0);
        }
        return status;
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        String line;
        do {
            line = readLine(in);
            head.append(line).append("\r\n");
        } while (!line.isEmpty());
        return head.toString();
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("the server closed the connection");
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }
}
