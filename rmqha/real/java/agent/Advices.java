/*
 * rmqha agent: the advice Byte Buddy inlines into RocketMQ's methods. Each piece only calls into the agent's own
 * classes with the site's key (bound per method by Advice.withCustomMapping) and Object-typed arguments, so the
 * agent's classes never load a RocketMQ class before RocketMQ does. An exception escapes only when a "throw" arm
 * asks for it (Failpoints.hit).
 */
package rmqha.agent;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import net.bytebuddy.asm.Advice;

public final class Advices {
    private Advices() {
    }

    /** The site's key: "Class#method#at" for a point, the scope's name, or the fix's id. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.PARAMETER)
    public @interface Site {
    }

    /** A point at a method's entry. */
    public static final class Enter {
        private Enter() {
        }

        @Advice.OnMethodEnter
        static void enter(@Site String site, @Advice.This(optional = true) Object self,
                          @Advice.AllArguments Object[] args) throws Throwable {
            Failpoints.hit(site, self, args);
        }
    }

    /** A point at a method's normal exit. */
    public static final class Exit {
        private Exit() {
        }

        @Advice.OnMethodExit
        static void exit(@Site String site, @Advice.This(optional = true) Object self,
                         @Advice.AllArguments Object[] args) throws Throwable {
            Failpoints.hit(site, self, args);
        }
    }

    /** The method a point's "inside" names: the thread is inside it from entry to exit, thrown or not. */
    public static final class Scope {
        private Scope() {
        }

        @Advice.OnMethodEnter
        static void enter(@Site String scope) {
            Failpoints.enterScope(scope);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class)
        static void exit(@Site String scope) {
            Failpoints.exitScope(scope);
        }
    }

    /** A fix rule at a method's normal exit. */
    public static final class FixExit {
        private FixExit() {
        }

        @Advice.OnMethodExit
        static void exit(@Site String fix, @Advice.This(optional = true) Object self,
                         @Advice.AllArguments Object[] args) {
            Fixes.run(fix, self, args);
        }
    }

    /** A fix rule at a method's entry. */
    public static final class FixEnter {
        private FixEnter() {
        }

        @Advice.OnMethodEnter
        static void enter(@Site String fix, @Advice.This(optional = true) Object self,
                          @Advice.AllArguments Object[] args) {
            Fixes.run(fix, self, args);
        }
    }
}
