package io.workqueue.spring.boot.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.r2dbc.spi.Connection;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The starter's start failures, each from a real {@link SpringApplication} run that fails: what
 * Spring Boot prints is the report of the starter's failure analyzers ("APPLICATION FAILED TO
 * START", a description and an action), found through {@code META-INF/spring.factories}, in place
 * of a stack of bean-creation errors with the cause at the bottom.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartFailureAnalysisIT {
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** An application whose one bean needs a queue, as a controller would. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(KeyController.class)
    static class KeyApplication {}

    static class KeyController {
        KeyController(ReactiveWorkQueue<?> tiles) {}
    }

    /** State Jackson cannot see. */
    static final class Opaque {
        @SuppressWarnings("unused")
        private final String id = "x";
    }

    private static void failsToStart(String... args) {
        SpringApplication application = new SpringApplication(KeyApplication.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        assertThatThrownBy(() -> application.run(args).close()).isInstanceOf(RuntimeException.class);
    }

    /** The analysis report, from its banner on. */
    private static String report(CapturedOutput output) {
        String all = output.getAll();
        int start = all.lastIndexOf("APPLICATION FAILED TO START");
        assertThat(start).as("a failure analysis was printed:%n%s", all).isNotNegative();
        return all.substring(start);
    }

    @Test
    void aSchemaApplyThatCannotConnectSaysWhereItTriedAndWhatToChange(CapturedOutput output) {
        failsToStart("--spring.r2dbc.url=r2dbc:postgresql://app:s3cret@127.0.0.1:1/orders",
                "--workqueue.schema.apply=true", "--workqueue.queues.tiles.key-type=java.lang.String");

        String report = report(output);
        assertThat(report).contains("Description:", "Action:")
                .contains("workqueue.schema.apply is set", "could not connect to the database")
                .contains("Database: r2dbc:postgresql://app:******@127.0.0.1:1/orders")
                .contains("Connection refused")
                .contains("Check spring.r2dbc.url", "set workqueue.schema.apply=false")
                .doesNotContain("s3cret");
        assertThat(output.getAll()).doesNotContain("Application run failed");
    }

    @Test
    void aDatabaseThatDoesNotExistIsAConnectionProblemToo(CapturedOutput output) {
        String url = TestDatabase.url();
        String missing = url.substring(0, url.lastIndexOf('/') + 1) + "no_such_db_" + UUID.randomUUID().toString()
                .substring(0, 8);

        failsToStart("--spring.r2dbc.url=" + missing, "--workqueue.schema.apply=true",
                "--workqueue.queues.tiles.key-type=java.lang.String");

        assertThat(report(output)).contains("could not connect to the database", "3D000", "Check spring.r2dbc.url");
    }

    @Test
    void aSchemaApplyThatRunsOutOfTimeSaysSoAndWhatMayHoldIt(CapturedOutput output) {
        String prefix = TestDatabase.uniquePrefix();
        // Another session creating the same table holds its schema lock: this start has to wait.
        Connection holder = Mono.from(TestDatabase.plain().create()).block(WAIT);
        try {
            Mono.from(holder.beginTransaction()).block(WAIT);
            Flux.from(holder.createStatement("SELECT pg_advisory_xact_lock(hashtext($1::text))")
                            .bind(0, "reactive-workqueue schema " + WorkQueueMigrations.tableName(prefix)).execute())
                    .flatMap(result -> result.getRowsUpdated()).blockLast(WAIT);

            failsToStart("--spring.r2dbc.url=" + TestDatabase.url(), "--workqueue.schema.apply=true",
                    "--workqueue.schema.timeout=1s", "--workqueue.table-prefix=" + prefix,
                    "--workqueue.queues.tiles.key-type=java.lang.String");
        } finally {
            Mono.from(holder.rollbackTransaction()).then(Mono.from(holder.close())).block(WAIT);
        }

        assertThat(report(output)).contains("did not finish within workqueue.schema.timeout (PT1S)")
                .contains("raise workqueue.schema.timeout", "set workqueue.schema.apply=false");
    }

    @Test
    void invalidPropertiesAreNamedAsWrittenWithTheirValueOriginAndWhatIsAllowed(CapturedOutput output) {
        failsToStart("--spring.r2dbc.url=" + TestDatabase.UNREACHABLE_URL,
                "--workqueue.queues.tiles.max-claim-batch=0", "--workqueue.queues.tiles.retention=0s",
                "--workqueue.schema.timeout=-1s");

        String report = report(output);
        assertThat(report).contains("Invalid workqueue properties")
                .contains("Property: workqueue.queues.tiles.max-claim-batch", "Value: \"0\"",
                        "Reason: maxClaimBatch must be at least 1 but was 0")
                .contains("Property: workqueue.queues.tiles.retention", "Value: \"0s\"")
                .contains("Property: workqueue.schema.timeout", "Reason: must be positive but was PT-1S")
                .contains("from property source \"commandLineArgs\"")
                .contains("Action:", "Change each property above");
    }

    @Test
    void aKeyTypeTheJsonCodecCannotStoreNamesTheQueueTheTypeAndTheWaysOut(CapturedOutput output) {
        failsToStart("--spring.r2dbc.url=" + TestDatabase.UNREACHABLE_URL,
                "--workqueue.queues.tiles.key-type=" + Opaque.class.getName());

        String report = report(output);
        assertThat(report).contains("The work queue 'tiles' (workqueue.queues.tiles.key-type=" + Opaque.class.getName()
                        + ")", "Jackson finds no properties to write in " + Opaque.class.getName())
                .contains("Action:", "make it a record", "JacksonModule", "WorkQueueBuilderCustomizer tilesKeyCodec()",
                        "((WorkQueueBuilder<Opaque>) builder).keyCodec(new OpaqueCodec());");
        assertThat(output.getAll()).doesNotContain("Application run failed");
    }
}
