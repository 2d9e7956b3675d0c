package io.workqueue;

import java.lang.annotation.Annotation;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.AnnotationIntrospector;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.ValueSerializer;
import tools.jackson.databind.cfg.MapperConfig;
import tools.jackson.databind.introspect.AnnotatedMember;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.ser.BeanPropertyWriter;
import tools.jackson.databind.ser.PropertyWriter;
import tools.jackson.databind.ser.bean.BeanSerializerBase;
import tools.jackson.databind.ser.impl.UnknownSerializer;
import tools.jackson.databind.ser.impl.UnsupportedTypeSerializer;
import tools.jackson.databind.util.BeanUtil;

/**
 * Whether Jackson can write a key type at all, decided from the type alone, without a key: run by
 * {@link WorkQueueBuilder#build()} for the library's JSON codec, so that a key type the codec cannot
 * store fails the build (and an application's start) instead of the first enqueue.
 *
 * <p>It asks the mapper for the serializer of the key type and of every type reachable from it
 * through properties, container elements, map values and optional values, and refuses a type
 * Jackson has no serializer for (a class with no properties it can see: no getters, no public
 * fields, no {@code @JsonValue}) or declares unsupported, and a class annotated with Jackson 2's
 * databind annotations, which Jackson 3 ignores. It does not judge what only the runtime
 * value decides: a property typed {@code Object}, an interface or an abstract class, or a
 * polymorphic one (type ids), whose actual classes are unknown until a key arrives. Map keys are
 * not judged either: Jackson writes any map key it has no serializer for with {@code toString()}.
 */
final class KeyTypeProbe {
    /** The package of Jackson 2's databind, whose annotations Jackson 3 does not read. */
    private static final String JACKSON_2_DATABIND = "com.fasterxml.jackson.databind.";

    private final SerializationContext serializers;
    private final Class<?> keyType;
    private final Set<JavaType> seen = new HashSet<>();

    private KeyTypeProbe(JsonMapper mapper, Class<?> keyType) {
        this.serializers = mapper._serializationContext();
        this.keyType = keyType;
    }

    /**
     * Returns if {@code mapper} can write keys of {@code keyType}.
     *
     * @throws UnsupportedKeyTypeException naming the type that cannot be written and how it was
     *                                     reached from {@code keyType}
     */
    static void check(JsonMapper mapper, Class<?> keyType) {
        KeyTypeProbe probe = new KeyTypeProbe(mapper, keyType);
        try {
            probe.visit(mapper.constructType(keyType), null);
        } catch (UnsupportedKeyTypeException e) {
            throw e;
        } catch (JacksonException e) {
            // A definition Jackson refuses outright (conflicting property names, a bad annotation).
            throw new UnsupportedKeyTypeException(keyType,
                    "Jackson cannot write " + keyType.getName() + ": " + e.getOriginalMessage(), e);
        }
    }

    /** Checks {@code type}, reached through {@code path} (null for the key type itself). */
    private void visit(JavaType type, @Nullable String path) {
        if (!seen.add(type) || type.isPrimitive() || decidedAtRuntime(type)) {
            return;
        }
        JavaType content = type.getContentType();
        if (content != null) {
            String part = type.isMapLikeType() ? "value" : type.isReferenceType() ? "content" : "element";
            visit(content, path == null ? part : path + " > " + part);
            return;
        }
        ValueSerializer<Object> serializer = serializers.findValueSerializer(type);
        if (serializer instanceof UnsupportedTypeSerializer) {
            // Jackson's own words say what is missing (a module, usually).
            String why = BeanUtil.checkUnsupportedType(serializers.getConfig(), type);
            throw refused("Jackson cannot write", type, path, why != null ? why : "it does not support the type");
        }
        if (serializer instanceof UnknownSerializer || serializer instanceof BeanSerializerBase) {
            refuseJackson2Annotations(type, path);
        }
        if (serializer instanceof UnknownSerializer || (serializer instanceof BeanSerializerBase
                && !serializer.properties().hasNext() && !type.isRecordType()
                && serializers.introspectBeanDescription(type).findAnyGetter() == null)) {
            throw refused("Jackson finds no properties to write in", type, path,
                    "it has no public getters or fields, no @JsonValue and no serializer");
        }
        if (serializer instanceof BeanSerializerBase) {
            for (Iterator<PropertyWriter> it = serializer.properties(); it.hasNext(); ) {
                if (it.next() instanceof BeanPropertyWriter property && !writtenItsOwnWay(property)) {
                    String name = type.getRawClass().getSimpleName() + "." + property.getName();
                    visit(property.getType(), path == null ? name : path + " > " + name);
                }
            }
        }
    }

    /**
     * Whether a property is written by a serializer or converter its annotations name, or with
     * type ids: then its declared type says nothing about what is written.
     */
    private boolean writtenItsOwnWay(BeanPropertyWriter property) {
        AnnotationIntrospector annotations = serializers.getAnnotationIntrospector();
        MapperConfig<?> config = serializers.getConfig();
        AnnotatedMember member = property.getMember();
        return property.getTypeSerializer() != null
                || member == null
                || annotations.findSerializer(config, member) != null
                || annotations.findContentSerializer(config, member) != null
                || annotations.findSerializationConverter(config, member) != null
                || annotations.findSerializationContentConverter(config, member) != null;
    }

    /**
     * Refuses a class carrying Jackson 2's databind annotations ({@code @JsonSerialize},
     * {@code @JsonNaming}, ...): Jackson 3 does not read them, so the key would be written
     * differently from what its author asked for, and from the text it was stored with when the
     * codec ran on Jackson 2: a silent change of every such key's identity. (Jackson 2's
     * {@code com.fasterxml.jackson.annotation} annotations are Jackson 3's too, and fine.)
     */
    private void refuseJackson2Annotations(JavaType type, @Nullable String path) {
        Class<?> raw = type.getRawClass();
        List<AnnotatedElement> elements = new ArrayList<>();
        elements.add(raw);
        elements.addAll(List.of(raw.getDeclaredFields()));
        elements.addAll(List.of(raw.getDeclaredMethods()));
        elements.addAll(List.of(raw.getDeclaredConstructors()));
        for (Constructor<?> constructor : raw.getDeclaredConstructors()) {
            for (Annotation[] parameter : constructor.getParameterAnnotations()) {
                for (Annotation annotation : parameter) {
                    refuseIfJackson2(annotation, type, path);
                }
            }
        }
        for (AnnotatedElement element : elements) {
            for (Annotation annotation : element.getAnnotations()) {
                refuseIfJackson2(annotation, type, path);
            }
        }
    }

    private void refuseIfJackson2(Annotation annotation, JavaType type, @Nullable String path) {
        String name = annotation.annotationType().getName();
        if (name.startsWith(JACKSON_2_DATABIND)) {
            throw refused("Jackson 3 does not read the Jackson 2 annotation @" + name + " on", type, path,
                    "the key would not be written as it says; use its Jackson 3 twin, @tools.jackson.databind"
                            + name.substring(JACKSON_2_DATABIND.length() - 1));
        }
    }

    /** Types whose serializer the runtime class of a value decides: nothing to judge beforehand. */
    private boolean decidedAtRuntime(JavaType type) {
        if (type.isContainerType()) {
            return false;
        }
        return type.isJavaLangObject() || type.isInterface() || type.isAbstract()
                || serializers.findTypeSerializer(type) != null;
    }

    /** For example: Jackson finds no properties to write in a.B (reached through Key.b): it has ... */
    private UnsupportedKeyTypeException refused(String what, JavaType type, @Nullable String path, String why) {
        String where = path == null ? "" : " (reached through " + path + ")";
        return new UnsupportedKeyTypeException(keyType, what + " " + type.getRawClass().getName() + where + ": " + why,
                null);
    }
}
