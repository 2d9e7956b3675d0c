package io.workqueue.spring.boot.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.workqueue.KeyCodec;
import java.time.Instant;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import tools.jackson.databind.json.JsonMapper;

/**
 * The stored form of keys under the starter, where the JSON codec runs on the Jackson Spring Boot
 * manages (3.1 for Boot 4.0) rather than the one the library is built and tested with, and through
 * the application's {@code JsonMapper} with Boot's settings and some of the user's. A few keys of
 * the library's {@code StoredKeyFormatTest}, with the texts it pins: they must be the same here.
 */
class StoredKeyFormatUnderBootTest {

    enum Shade {
        LIGHT,
        DARK {
            @Override
            public String toString() {
                return "dark!";
            }
        }
    }

    record Shaded(Shade shade, Map<Shade, Integer> byShade, UUID id) {}

    record Containers(List<String> list, Set<Integer> set, Map<String, List<Integer>> map, byte[] bytes) {}

    record Area(int width, int height) {
        public int getArea() {
            return width * height;
        }
    }

    static final class Created {
        private final String zeta;
        private final int alpha;

        @JsonCreator
        Created(@JsonProperty("zeta") String zeta, @JsonProperty("alpha") int alpha) {
            this.zeta = zeta;
            this.alpha = alpha;
        }

        public String getZeta() {
            return zeta;
        }

        public int getAlpha() {
            return alpha;
        }

        public String getMiddle() {
            return zeta + alpha;
        }
    }

    static final class Bean {
        public String getURL() {
            return "https://example.com/x";
        }

        public int getXCoord() {
            return 7;
        }

        public boolean isActive() {
            return true;
        }
    }

    record Event(Instant at, LocalDate day, UUID id) {}

    private static <K, V> Map<K, V> inOrder(K k1, V v1, K k2, V v2) {
        Map<K, V> map = new LinkedHashMap<>();
        map.put(k1, v1);
        map.put(k2, v2);
        return map;
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(JacksonAutoConfiguration.class))
            .withPropertyValues("spring.jackson.property-naming-strategy=SNAKE_CASE",
                    "spring.jackson.datatype.enum.write-enums-using-to-string=true");

    @Test
    void keysEncodeToTheTextsTheLibraryPins() {
        runner.run(context -> {
            JsonMapper application = context.getBean(JsonMapper.class);
            UUID id = UUID.fromString("123e4567-e89b-12d3-a456-426614174000");

            assertThat(encode(application, Shaded.class, new Shaded(Shade.DARK, inOrder(Shade.DARK, 2, Shade.LIGHT, 1), id)))
                    .isEqualTo("{\"byShade\":{\"LIGHT\":1,\"DARK\":2},\"id\":\"123e4567-e89b-12d3-a456-426614174000\","
                            + "\"shade\":\"DARK\"}");
            assertThat(encode(application, Containers.class, new Containers(List.of("b", "a"),
                    new LinkedHashSet<>(List.of(10, 2, 1)), inOrder("z", List.of(3, 1), "a", List.of()),
                    new byte[] {0, 1, 2, (byte) 0xff})))
                    .isEqualTo("{\"bytes\":\"AAEC/w==\",\"list\":[\"b\",\"a\"],\"map\":{\"a\":[],\"z\":[3,1]},"
                            + "\"set\":[1,10,2]}");
            assertThat(encode(application, Area.class, new Area(3, 2)))
                    .isEqualTo("{\"height\":2,\"width\":3,\"area\":6}");
            assertThat(encode(application, Created.class, new Created("z", 1)))
                    .isEqualTo("{\"alpha\":1,\"zeta\":\"z\",\"middle\":\"z1\"}");
            assertThat(encode(application, Bean.class, new Bean()))
                    .isEqualTo("{\"active\":true,\"url\":\"https://example.com/x\",\"xcoord\":7}");
            assertThat(encode(application, Event.class, new Event(Instant.parse("2024-01-31T10:15:30.123456789Z"),
                    LocalDate.of(2024, 1, 31), id)))
                    .isEqualTo("{\"at\":\"2024-01-31T10:15:30.123456789Z\",\"day\":\"2024-01-31\","
                            + "\"id\":\"123e4567-e89b-12d3-a456-426614174000\"}");
        });
    }

    private static <K> String encode(JsonMapper application, Class<K> type, K key) {
        String starters = KeyCodec.defaultFor(type, application).encode(key);
        assertThat(starters).as("the library's own codec agrees").isEqualTo(KeyCodec.defaultFor(type).encode(key));
        return starters;
    }
}
