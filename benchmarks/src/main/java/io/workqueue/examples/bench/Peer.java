package io.workqueue.examples.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Scenario 6, the peer: Graphile Worker's batched drain on the same server, run by
 * {@code benchmarks/peers/graphile-worker/run.sh} (Node; installs graphile-worker from the npm
 * registry into a scratch folder). Returns its JSON report, or a map with {@code skipped} and the
 * reason when it cannot run here.
 */
final class Peer {
    private Peer() {}

    @SuppressWarnings("unchecked")
    static Map<String, Object> graphileWorker(Path repo, Db db, int n) {
        Path script = repo.resolve("benchmarks/peers/graphile-worker/run.sh");
        ProcessBuilder builder = new ProcessBuilder("bash", script.toString(), String.valueOf(n))
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().put("PGHOST", db.host);
        builder.environment().put("PGPORT", String.valueOf(db.port));
        builder.environment().put("PGUSER", db.user);
        try {
            Process process = builder.start();
            String out = new String(process.getInputStream().readAllBytes()).trim();
            if (!process.waitFor(30, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                return skipped("the peer did not finish within 30 minutes");
            }
            if (process.exitValue() != 0) {
                return skipped("the peer script exited with " + process.exitValue()
                        + (process.exitValue() == 3 ? " (Graphile Worker could not be installed or run here)" : ""));
            }
            String last = out.substring(out.lastIndexOf('\n') + 1);
            return new ObjectMapper().readValue(last, LinkedHashMap.class);
        } catch (IOException e) {
            return skipped("cannot run the peer script: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return skipped("interrupted");
        }
    }

    static Map<String, Object> skipped(String reason) {
        System.out.println("  peer graphile-worker SKIPPED: " + reason);
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("peer", "graphile-worker");
        map.put("skipped", true);
        map.put("reason", reason);
        return map;
    }
}
