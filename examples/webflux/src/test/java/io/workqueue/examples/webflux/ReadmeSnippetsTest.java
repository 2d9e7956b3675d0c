package io.workqueue.examples.webflux;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The top-level README's "Spring Boot" section shows this example's files; this keeps them equal, so
 * the README can only show code that compiles and configuration the integration tests ran with.
 * Maven runs tests from the module's folder, so the README is two folders up.
 */
class ReadmeSnippetsTest {
    private static final Path README = Path.of("../../README.md");

    @Test
    void theReadmeShowsTheCompleteApplicationYml() throws IOException {
        String yml = Files.readString(Path.of("src/main/resources/application.yml"));
        assertThat(readme()).contains("```yaml\n" + yml + "```");
    }

    @Test
    void theReadmeShowsTheHandlerBeanAsCompiled() throws IOException {
        String source = Files.readString(Path.of("src/main/java/io/workqueue/examples/webflux/TileRenderer.java"));
        String bean = source.substring(source.indexOf("@Component"));
        assertThat(readme()).contains("```java\n" + bean + "```");
    }

    @Test
    void theReadmesDependencyIsTheOneThisExampleBuildsWith() throws IOException {
        Pattern starter = Pattern.compile(
                "<groupId>io\\.workqueue</groupId>\\s*<artifactId>reactive-workqueue-spring-boot-starter</artifactId>");
        assertThat(readme()).containsPattern(starter);
        assertThat(Files.readString(Path.of("pom.xml"))).containsPattern(starter);
    }

    private static String readme() throws IOException {
        return Files.readString(README);
    }
}
