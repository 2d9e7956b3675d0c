package io.workqueue.spring.boot.autoconfigure;

import java.time.Instant;
import java.util.Objects;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.JacksonModule;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.ValueDeserializer;
import tools.jackson.databind.ValueSerializer;
import tools.jackson.databind.module.SimpleModule;

/**
 * A record key holding a type only the application's Jackson knows ({@link Money}, taught by
 * {@link #moneyModule()}), a nullable component, a camel-case name and an {@code Instant}: each is
 * something an application's JSON settings would write differently if they reached stored keys.
 */
record OrderKey(Money total, String note, int lineCount, Instant placedAt) {

    /** No property Jackson can see: written as {@code "EUR 12.50"} by the module alone. */
    static final class Money {
        private final String currency;
        private final long cents;

        Money(String currency, long cents) {
            this.currency = currency;
            this.cents = cents;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Money m && m.currency.equals(currency) && m.cents == cents;
        }

        @Override
        public int hashCode() {
            return Objects.hash(currency, cents);
        }

        @Override
        public String toString() {
            return currency + " " + cents / 100 + "." + String.format("%02d", cents % 100);
        }

        static Money parse(String text) {
            String[] parts = text.split(" ");
            return new Money(parts[0], Math.round(Double.parseDouble(parts[1]) * 100));
        }
    }

    /** What an application registers as a bean to teach Jackson {@link Money}. */
    static JacksonModule moneyModule() {
        return new SimpleModule("money")
                .addSerializer(Money.class, new ValueSerializer<>() {
                    @Override
                    public void serialize(Money value, JsonGenerator gen, SerializationContext ctxt) {
                        gen.writeString(value.toString());
                    }
                })
                .addDeserializer(Money.class, new ValueDeserializer<>() {
                    @Override
                    public Money deserialize(JsonParser p, DeserializationContext ctxt) {
                        return Money.parse(p.getString());
                    }
                });
    }
}
