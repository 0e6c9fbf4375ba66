/*
 * rmqha agent: the bridges of a hybrid release (docs/real.md, "hybrids"). Maven Central serves RocketMQ 5.3.4 only in
 * part: its store, controller and namesrv jars, not its common and remoting. Run on 5.3.3's common, the 5.3.4 jars
 * call a few members that 5.3.3's common does not have, and the JVM throws NoSuchMethodError where they are called
 * (runtime stats, the timer store's flush, config requests). Each bridge adds one such member to the 5.3.3 class as
 * it loads, implemented here by the kit (nothing of RocketMQ copied), with the meaning the later release gives it on
 * Linux. A bridge is added only where the class lacks the member; each is an event line ("compat.added"), so a run
 * says what it bridged. Attached for the releases whose Version says so (rmqha/real/maven.py: compat).
 *
 * The members (all called by 5.3.4's jars, none present in rocketmq-common-5.3.3):
 *   MixAll.fsyncDirectory(Path)                    fsync a directory (TimerMetrics.persist, after its rename)
 *   MixAll.adjustConfigForPlatform(String)         the config text as is; it only rewrites it on Windows
 *                                                  (ControllerRequestProcessor / namesrv: a config request)
 *   NetworkUtil.validCommonInet6Address(String)    whether the text is an IPv6 address, brackets and a %scope
 *                                                  allowed (DefaultMessageStore.getEarliestMessageTime)
 *   StatisticsManager.shutdown()                   stop its scheduled executor (BrokerStatsManager.shutdown)
 */
package rmqha.agent;

import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutorService;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.description.modifier.Ownership;
import net.bytebuddy.description.modifier.Visibility;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.implementation.MethodDelegation;
import net.bytebuddy.implementation.bind.annotation.Argument;
import net.bytebuddy.implementation.bind.annotation.This;
import net.bytebuddy.utility.JavaModule;
import org.apache.commons.validator.routines.InetAddressValidator;

public final class Compat {
    static final String MIX_ALL = "org.apache.rocketmq.common.MixAll";
    static final String NETWORK_UTIL = "org.apache.rocketmq.common.utils.NetworkUtil";
    static final String STATISTICS_MANAGER = "org.apache.rocketmq.common.statistics.StatisticsManager";

    private Compat() {
    }

    /** Install the bridges: a builder of its own, which may add members (the failpoints' builder may not). */
    static void install(Instrumentation inst) {
        new AgentBuilder.Default()
            .ignore(net.bytebuddy.matcher.ElementMatchers.none())
            .with(new AgentBuilder.Listener.Adapter() {
                @Override
                public void onError(String typeName, ClassLoader classLoader, JavaModule module, boolean loaded,
                                    Throwable throwable) {
                    Events.emit("error", Json.obj("cls", typeName, "error", "compat: " + throwable));
                }
            })
            .type(named(MIX_ALL)).transform((b, td, cl, m, pd) -> mixAll(b, td))
            .type(named(NETWORK_UTIL)).transform((b, td, cl, m, pd) -> networkUtil(b, td))
            .type(named(STATISTICS_MANAGER)).transform((b, td, cl, m, pd) -> statisticsManager(b, td))
            .installOn(inst);
    }

    private static boolean lacks(TypeDescription td, String method, int args) {
        return td.getDeclaredMethods().filter(named(method).and(takesArguments(args))).isEmpty();
    }

    private static void added(TypeDescription td, String member) {
        Events.emit("compat.added", Json.obj("cls", td.getName(), "member", member));
    }

    static DynamicType.Builder<?> mixAll(DynamicType.Builder<?> b, TypeDescription td) {
        if (lacks(td, "fsyncDirectory", 1)) {
            b = b.defineMethod("fsyncDirectory", void.class, Visibility.PUBLIC, Ownership.STATIC)
                .withParameters(Path.class).throwing(IOException.class)
                .intercept(MethodDelegation.to(FsyncDirectory.class));
            added(td, "fsyncDirectory(Path)");
        }
        if (lacks(td, "adjustConfigForPlatform", 1)) {
            b = b.defineMethod("adjustConfigForPlatform", String.class, Visibility.PUBLIC, Ownership.STATIC)
                .withParameters(String.class)
                .intercept(MethodDelegation.to(AdjustConfigForPlatform.class));
            added(td, "adjustConfigForPlatform(String)");
        }
        return b;
    }

    static DynamicType.Builder<?> networkUtil(DynamicType.Builder<?> b, TypeDescription td) {
        if (lacks(td, "validCommonInet6Address", 1)) {
            b = b.defineMethod("validCommonInet6Address", boolean.class, Visibility.PUBLIC, Ownership.STATIC)
                .withParameters(String.class)
                .intercept(MethodDelegation.to(ValidCommonInet6Address.class));
            added(td, "validCommonInet6Address(String)");
        }
        return b;
    }

    static DynamicType.Builder<?> statisticsManager(DynamicType.Builder<?> b, TypeDescription td) {
        if (lacks(td, "shutdown", 0)) {
            b = b.defineMethod("shutdown", void.class, Visibility.PUBLIC)
                .intercept(MethodDelegation.to(StatisticsShutdown.class));
            added(td, "shutdown()");
        }
        return b;
    }

    // -------------------------------------------------------------------------------------- the implementations

    /** fsync a directory, so that a rename or a new file in it survives a crash of the machine. */
    public static final class FsyncDirectory {
        private FsyncDirectory() {
        }

        public static void fsync(@Argument(0) Path dir) throws IOException {
            if (dir == null) {
                return;
            }
            try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
                ch.force(true);
            }
        }
    }

    /** A config text for this platform: only Windows needs its backslashes doubled; the kit runs on Linux. */
    public static final class AdjustConfigForPlatform {
        private AdjustConfigForPlatform() {
        }

        public static String adjust(@Argument(0) String config) {
            if (config != null && System.getProperty("os.name", "").toLowerCase().contains("win")) {
                return config.replace("\\", "\\\\");
            }
            return config;
        }
    }

    /** Whether a text is an IPv6 address as hosts write it: bare, in brackets, or with a %scope. */
    public static final class ValidCommonInet6Address {
        private ValidCommonInet6Address() {
        }

        public static boolean valid(@Argument(0) String text) {
            if (text == null) {
                return false;
            }
            String s = text.trim();
            if (s.startsWith("[") && s.endsWith("]")) {
                s = s.substring(1, s.length() - 1);
            }
            int scope = s.indexOf('%');
            if (scope >= 0) {
                s = s.substring(0, scope);
            }
            return !s.isEmpty() && InetAddressValidator.getInstance().isValidInet6Address(s);
        }
    }

    /** Stop a StatisticsManager's scheduled work: every executor it holds is shut down. */
    public static final class StatisticsShutdown {
        private StatisticsShutdown() {
        }

        public static void shutdown(@This Object self) {
            for (Class<?> c = self.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    if (ExecutorService.class.isAssignableFrom(f.getType())) {
                        try {
                            f.setAccessible(true);
                            Object ex = f.get(self);
                            if (ex != null) {
                                ((ExecutorService) ex).shutdown();
                            }
                        } catch (ReflectiveOperationException | RuntimeException e) {
                            Events.emit("error", Json.obj("error", "compat StatisticsManager.shutdown: " + e));
                        }
                    }
                }
            }
        }
    }
}
