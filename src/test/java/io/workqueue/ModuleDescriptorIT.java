package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The module the jar declares (its descriptor is compiled just before packaging, so this runs as an
 * integration test): named {@code io.workqueue}, exporting the API packages and no others, and
 * providing the PostgreSQL backend the API looks up.
 */
class ModuleDescriptorIT {
    @Test
    void theModuleExportsTheApiAndProvidesTheBackend() throws IOException {
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(Path.of("target/classes/module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        assertEquals("io.workqueue", module.name());
        // observation: the observations' names and the tracing handler, apart from io.workqueue
        // because the handler needs Micrometer Tracing, an optional dependency (as notify needs the
        // PostgreSQL driver's listener API).
        assertEquals(Set.of("io.workqueue", "io.workqueue.notify", "io.workqueue.migrations", "io.workqueue.observation"),
                module.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()),
                "the implementation packages are not exported");
        assertEquals(List.of("io.workqueue.postgres.PostgresBackend"), module.provides().stream()
                .filter(p -> p.service().equals(WorkQueueBackend.class.getName()))
                .flatMap(p -> p.providers().stream()).toList());
        assertEquals(Set.of(WorkQueueBackend.class.getName()), module.uses());
    }
}
