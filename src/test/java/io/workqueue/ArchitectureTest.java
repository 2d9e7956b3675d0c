package io.workqueue;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module boundary, checked on the compiled main classes: the API packages ({@code io.workqueue},
 * {@code .notify}, {@code .migrations}) never depend on the implementation ({@code .postgres},
 * {@code .internal}), only on the leaf {@code .internal.base}; that leaf depends on nothing else of
 * the library; and no two packages depend on each other in a cycle. The API reaches the
 * implementation only through {@link WorkQueueBackend}, found by {@link java.util.ServiceLoader}.
 */
class ArchitectureTest {
    private static JavaClasses main;

    @BeforeAll
    static void importMainClasses() {
        main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.workqueue");
    }

    @Test
    void theApiDependsOnNoImplementation() {
        noClasses().that().resideInAnyPackage("io.workqueue", "io.workqueue.notify", "io.workqueue.migrations")
                .should().dependOnClassesThat().resideInAnyPackage("io.workqueue.postgres..", "io.workqueue.internal")
                .because("the API must not depend on the implementation; it reaches it through WorkQueueBackend")
                .check(main);
    }

    @Test
    void theBaseIsALeaf() {
        noClasses().that().resideInAPackage("io.workqueue.internal.base..")
                .should().dependOnClassesThat().resideInAnyPackage("io.workqueue", "io.workqueue.notify",
                        "io.workqueue.migrations", "io.workqueue.postgres..", "io.workqueue.internal")
                .because("what both the API and the implementation stand on must stand on neither")
                .check(main);
    }

    @Test
    void noPackagesDependOnEachOtherInACycle() {
        slices().assignedFrom(BY_PACKAGE).should().beFreeOfCycles().check(main);
    }

    /** Each package is a slice of its own, the API's top package included. */
    private static final SliceAssignment BY_PACKAGE = new SliceAssignment() {
        @Override
        public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
            return SliceIdentifier.of(javaClass.getPackageName());
        }

        @Override
        public String getDescription() {
            return "every package of io.workqueue";
        }
    };
}
