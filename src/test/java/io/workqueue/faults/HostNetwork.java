package io.workqueue.faults;

import io.workqueue.testing.Skips;
import static org.junit.jupiter.api.Assertions.fail;

import io.workqueue.testing.Poll;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A database host and worker hosts on one Ethernet segment, made for one test from the kernel's own
 * pieces: the database is a PostgreSQL cluster of its own ({@code pg_createcluster}, port
 * {@value #PORT}) in the machine's network namespace, listening on a bridge's address
 * ({@value #DATABASE_ADDRESS}); each worker host is a network namespace ({@code ip netns}) joined to
 * the bridge by a veth pair, with its own address and its own TCP settings. A process started in a
 * host's namespace ({@link #command}) reaches the database only over that link.
 *
 * <p>{@link #cut} takes the bridge's end of one host's link down. Nothing is told: the host's
 * frames and the database's frames to it are dropped without an error on either side, as when a
 * switch port or a cable fails, so every TCP connection across it goes half-open. The host keeps its
 * address and routes, and the other hosts are untouched. {@link #restore} brings the link back.
 *
 * <p>Needs root, {@code ip} and Debian's postgresql-common. Without them the scenario is skipped
 * with a message, unless {@value #REQUIRED_VARIABLE} is {@code true} (CI), which turns the skip into
 * a failure. Everything is removed on {@link #close()}, and before being made, so a run cut short
 * by an earlier one is cleaned up first. Not thread-safe.
 */
final class HostNetwork implements AutoCloseable {
    static final String REQUIRED_VARIABLE = "WORKQUEUE_NETNS_REQUIRED";
    static final int PORT = 5438;
    static final String DATABASE_ADDRESS = "10.213.0.1";
    private static final String SUBNET = "10.213.0.0/24";
    private static final String BRIDGE = "wqbr0";
    private static final String CLUSTER = "wqnet";
    private static final Logger log = LoggerFactory.getLogger(HostNetwork.class);

    /**
     * Kernel TCP settings of every worker host: an idle connection whose peer has vanished is
     * probed after 5 s of silence, every 1 s, and given up after 3 unanswered probes. Linux's
     * defaults (2 hours, 75 s, 9) would leave a dead pooled connection looking healthy for over two
     * hours. Keepalive applies only to sockets that ask for it: the driver's {@code tcpKeepAlive}.
     */
    static final List<String> HOST_SYSCTLS = List.of(
            "net.ipv4.tcp_keepalive_time=5", "net.ipv4.tcp_keepalive_intvl=1", "net.ipv4.tcp_keepalive_probes=3");

    /**
     * The database's side of the same: PostgreSQL sets these on every client socket, so the
     * backend of a host that vanished is found dead and ends after about 8 s of silence, and one
     * whose answer goes unacknowledged after 10 s ({@code tcp_user_timeout}), releasing its slot.
     */
    static final List<String> SERVER_SETTINGS = List.of(
            "tcp_keepalives_idle = 5", "tcp_keepalives_interval = 1", "tcp_keepalives_count = 3",
            "tcp_user_timeout = 10000");

    private final String version;
    private final int hosts;

    private HostNetwork(String version, int hosts) {
        this.version = version;
        this.hosts = hosts;
    }

    /** Makes the bridge, {@code hosts} worker hosts and the database cluster, and starts it. */
    static HostNetwork create(int hosts) {
        String why = null;
        if (!"true".equalsIgnoreCase(System.getenv(REQUIRED_VARIABLE))) {
            // It makes a bridge, network namespaces and a cluster on this machine: only when asked.
            Skips.abort("the worker-host scenario makes a bridge, network namespaces and a PostgreSQL cluster on"
                    + " this machine; set " + REQUIRED_VARIABLE + "=true to run it (CI does)");
        }
        if (!"root".equals(System.getProperty("user.name"))) {
            why = "the worker-host scenario needs root for network namespaces (running as "
                    + System.getProperty("user.name") + ")";
        } else if (!Files.isDirectory(Path.of("/etc/postgresql"))) {
            why = "the worker-host scenario needs Debian's postgresql-common (/etc/postgresql is missing)";
        } else if (!Files.isExecutable(Path.of("/usr/sbin/ip")) && !Files.isExecutable(Path.of("/sbin/ip"))
                && !Files.isExecutable(Path.of("/usr/bin/ip"))) {
            why = "the worker-host scenario needs iproute2's ip";
        }
        if (why != null) {
            if ("true".equalsIgnoreCase(System.getenv(REQUIRED_VARIABLE))) {
                fail(REQUIRED_VARIABLE + "=true but " + why);
            }
            Skips.abort(why);
        }
        String version;
        try (var versions = Files.list(Path.of("/etc/postgresql"))) {
            version = versions.map(p -> p.getFileName().toString()).sorted().findFirst().orElseThrow();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        HostNetwork network = new HostNetwork(version, hosts);
        network.remove();
        try {
            network.make();
        } catch (RuntimeException | AssertionError e) {
            network.remove();
            if (!"true".equalsIgnoreCase(System.getenv(REQUIRED_VARIABLE))) {
                // A container without the capabilities for namespaces, say.
                Skips.abort("the worker-host scenario could not build its network here: " + e.getMessage());
            }
            throw e;
        }
        return network;
    }

    private void make() {
        run("ip", "link", "add", BRIDGE, "type", "bridge");
        run("ip", "addr", "add", DATABASE_ADDRESS + "/24", "dev", BRIDGE);
        run("ip", "link", "set", BRIDGE, "up");
        for (int host = 1; host <= hosts; host++) {
            String namespace = namespace(host);
            run("ip", "netns", "add", namespace);
            run("ip", "link", "add", link(host), "type", "veth", "peer", "name", "eth0", "netns", namespace);
            run("ip", "link", "set", link(host), "master", BRIDGE);
            run("ip", "link", "set", link(host), "up");
            run("ip", "-n", namespace, "addr", "add", address(host) + "/24", "dev", "eth0");
            run("ip", "-n", namespace, "link", "set", "eth0", "up");
            run("ip", "-n", namespace, "link", "set", "lo", "up");
            List<String> sysctl = new ArrayList<>(List.of("ip", "netns", "exec", namespace, "sysctl", "-q", "-w"));
            sysctl.addAll(HOST_SYSCTLS);
            run(sysctl.toArray(String[]::new));
        }

        run("pg_createcluster", version, CLUSTER, "-p", String.valueOf(PORT), "--", "--auth=trust");
        Path config = Path.of("/etc/postgresql", version, CLUSTER);
        List<String> settings = new ArrayList<>(List.of("listen_addresses = 'localhost," + DATABASE_ADDRESS + "'"));
        settings.addAll(SERVER_SETTINGS);
        append(config.resolve("postgresql.conf"), String.join("\n", settings) + "\n");
        append(config.resolve("pg_hba.conf"), "host all all " + SUBNET + " trust\n");
        run("pg_ctlcluster", "--skip-systemctl-redirect", version, CLUSTER, "start");
        for (int host = 1; host <= hosts; host++) {
            int h = host;
            Poll.until(Duration.ofSeconds(30), "host " + host + " reaches the database over its link",
                    () -> reaches(h));
        }
        log.info("worker hosts {} on bridge {} ({}), database {} {} at {}:{}",
                hosts, BRIDGE, SUBNET, version, CLUSTER, DATABASE_ADDRESS, PORT);
    }

    /**
     * The URL a process on a worker host uses: the database's bridge address, TCP keepalive on
     * (the kernel's keepalive settings then apply to its sockets), and connection attempts bounded
     * (Netty's default would let one wait 30 s on a cut link).
     */
    String hostUrl() {
        return "r2dbc:postgresql://postgres@" + DATABASE_ADDRESS + ":" + PORT
                + "/postgres?tcpKeepAlive=true&connectTimeout=PT2S";
    }

    /** The database as the machine itself reaches it, over loopback, whatever happens to the links. */
    FaultServer local() {
        return FaultServer.at("r2dbc:postgresql://postgres@127.0.0.1:" + PORT + "/postgres");
    }

    /** Host {@code host}'s address (1-based). */
    static String address(int host) {
        return "10.213.0." + (10 + host);
    }

    /** {@code command}, to be run inside host {@code host}'s network namespace. */
    List<String> command(int host, List<String> command) {
        List<String> line = new ArrayList<>(List.of("ip", "netns", "exec", namespace(host)));
        line.addAll(command);
        return line;
    }

    /** Takes host {@code host}'s link down at the bridge: its traffic is dropped, silently, both ways. */
    void cut(int host) {
        run("ip", "link", "set", link(host), "down");
        log.info("cut host {}'s link ({} down)", host, link(host));
    }

    /** Brings host {@code host}'s link back. */
    void restore(int host) {
        run("ip", "link", "set", link(host), "up");
        log.info("restored host {}'s link ({} up)", host, link(host));
    }

    @Override
    public void close() {
        remove();
    }

    /** Whether a TCP connection from host {@code host} to the database's port succeeds, within a second. */
    private boolean reaches(int host) {
        try {
            run("ip", "netns", "exec", namespace(host), "timeout", "1", "bash", "-c",
                    "exec 3<>/dev/tcp/" + DATABASE_ADDRESS + "/" + PORT);
            return true;
        } catch (AssertionError e) {
            return false;
        }
    }

    private void remove() {
        if (Files.isDirectory(Path.of("/etc/postgresql", version, CLUSTER))) {
            run("pg_dropcluster", "--stop", version, CLUSTER);
        }
        for (int host = 1; host <= hosts; host++) {
            // Deleting one end of a veth pair deletes both, at once; deleting a namespace would
            // delete its end only when the kernel gets round to it.
            if (Files.isDirectory(Path.of("/sys/class/net", link(host)))) {
                run("ip", "link", "delete", link(host));
            }
            if (Files.exists(Path.of("/run/netns", namespace(host)))) {
                run("ip", "netns", "delete", namespace(host));
            }
        }
        if (Files.isDirectory(Path.of("/sys/class/net", BRIDGE))) {
            run("ip", "link", "delete", BRIDGE);
        }
    }

    private static String namespace(int host) {
        return "wqhost" + host;
    }

    /** The bridge's end of host {@code host}'s veth pair. */
    private static String link(int host) {
        return "wqveth" + host;
    }

    private static void append(Path file, String text) {
        try {
            Files.writeString(file, text, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String run(String... command) {
        List<String> line = List.of(command);
        try {
            Process process = new ProcessBuilder(line).redirectErrorStream(true).start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail(String.join(" ", line) + " did not finish within 120 s");
            }
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (process.exitValue() != 0) {
                fail(String.join(" ", line) + " exited " + process.exitValue() + ": " + output.trim());
            }
            return output;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
