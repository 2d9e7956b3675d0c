package io.workqueue.examples.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** What the results came from, captured automatically. */
final class Machine {
    private Machine() {}

    static Map<String, Object> describe(Db db, Path repo) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("date_utc", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        m.put("cpu", cpuModel());
        m.put("nproc", Runtime.getRuntime().availableProcessors());
        m.put("memory", memTotal());
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        m.put("postgresql", db.queryString("SELECT version()"));
        m.put("postgresql_settings", db.queryString("SELECT string_agg(name || '=' || current_setting(name), ', ' ORDER BY name)"
                + " FROM pg_settings WHERE name IN ('shared_buffers', 'max_connections', 'synchronous_commit', 'fsync',"
                + " 'wal_level', 'max_wal_size', 'work_mem', 'autovacuum')"));
        m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        m.put("jvm_args", String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments()));
        m.put("pgbench", Pgbench.version());
        m.put("node", command("node", "-v"));
        m.put("git_commit", command("git", "-C", repo.toString(), "rev-parse", "--short", "HEAD"));
        // Build output that happens to be tracked (target/) does not count as a change to the sources.
        m.put("git_dirty", !command("git", "-C", repo.toString(), "status", "--porcelain", "--untracked-files=no", "--",
                ".", ":(exclude)target", ":(exclude)**/target/**").isEmpty());
        m.put("load_average_start", loadAverage());
        return m;
    }

    static String loadAverage() {
        try {
            String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return parts[0] + " " + parts[1] + " " + parts[2];
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String cpuModel() {
        try {
            return Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                    .filter(line -> line.startsWith("model name"))
                    .map(line -> line.substring(line.indexOf(':') + 1).trim())
                    .findFirst().orElse("unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String memTotal() {
        try {
            return Files.readAllLines(Path.of("/proc/meminfo")).stream()
                    .filter(line -> line.startsWith("MemTotal"))
                    .map(line -> {
                        long kb = Long.parseLong(line.replaceAll("\\D+", ""));
                        return String.format(java.util.Locale.ROOT, "%.1f GiB", kb / 1048576.0);
                    })
                    .findFirst().orElse("unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    static String command(String... command) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(process.getInputStream().readAllBytes()).trim();
            process.waitFor(10, TimeUnit.SECONDS);
            return process.exitValue() == 0 ? out : "";
        } catch (IOException | InterruptedException | IllegalThreadStateException e) {
            return "";
        }
    }
}
