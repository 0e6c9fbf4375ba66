/*
 * rmqha agent: the kit's own Java agent inside RocketMQ's JVMs (docs/real.md, "Inside the JVM: the agent").
 * Attached with -javaagent:rmqha-agent.jar=CONFIG by the kit's supervisor when a run asks for it; CONFIG is the
 * node's agent config (JSON, written by rmqha/real/spec.py): node, kind (ns | controller | broker), socket,
 * events, maxPauseMs, the catalogue of points (rmqha/real/points.py), the fixes to apply, arms to set at start.
 *
 * Byte Buddy (net.bytebuddy:byte-buddy, beside the agent jar on its Class-Path) inlines the kit's advice
 * (Advices.java) into the named methods as their classes load: only classes of org.apache.rocketmq and DLedger
 * are looked at, no class format change (the methods' bodies only), nothing of RocketMQ copied. A point whose
 * method the class lacks is an event ("missing") and nothing else; a failure of the agent is printed and the
 * JVM goes on as it would without it. The agent's own code runs only at armed points and at fixes.
 */
package rmqha.agent;

import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;

import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.matcher.ElementMatcher;
import net.bytebuddy.utility.JavaModule;

public final class Agent {
    static String node = "?";
    static String version = "?";
    static String agentVersion = "?";
    static long startedMs;
    static long premainMs;

    private Agent() {
    }

    /** One piece of advice to put on one method of a class. */
    static final class Spec {
        final String method;
        final Class<?> advice;
        final String key;
        final Runnable onFound;
        final java.util.function.Consumer<String> onMissing;

        Spec(String method, Class<?> advice, String key, Runnable onFound, java.util.function.Consumer<String> onMissing) {
            this.method = method;
            this.advice = advice;
            this.key = key;
            this.onFound = onFound;
            this.onMissing = onMissing;
        }
    }

    public static void premain(String arg, Instrumentation inst) {
        long t0 = System.nanoTime();
        startedMs = System.currentTimeMillis();
        try {
            start(arg, inst);
        } catch (Throwable t) {
            System.err.println("rmqha-agent: not started (the JVM goes on without it): " + t);
            t.printStackTrace(System.err);
            Events.emit("error", Json.obj("error", "agent not started: " + t));
            return;
        }
        premainMs = (System.nanoTime() - t0) / 1_000_000;
        Events.emit("started", Json.obj("agentVersion", agentVersion, "rocketmq", version, "kind", Failpoints.kind,
            "fixes", new ArrayList<>(Fixes.ACTIVE.keySet()), "points", (long) Failpoints.mine().size(),
            "premainMs", premainMs));
    }

    @SuppressWarnings("unchecked")
    static void start(String arg, Instrumentation inst) throws Exception {
        if (arg == null || arg.isEmpty()) {
            throw new IllegalArgumentException("-javaagent:rmqha-agent.jar=CONFIG: no config given");
        }
        Map<String, Object> cfg = Json.object(new String(Files.readAllBytes(Path.of(arg)), StandardCharsets.UTF_8));
        node = String.valueOf(cfg.get("node"));
        version = String.valueOf(cfg.get("version"));
        agentVersion = String.valueOf(cfg.get("agentVersion"));
        Events.open(String.valueOf(cfg.get("events")), node);
        Failpoints.kind = String.valueOf(cfg.get("kind"));
        Failpoints.maxPauseMs = Failpoints.num(cfg, "maxPauseMs", Failpoints.maxPauseMs);
        Failpoints.load((List<Object>) cfg.getOrDefault("points", new ArrayList<>()));
        if (Boolean.TRUE.equals(cfg.get("compat"))) {
            Compat.install(inst);  // a hybrid release's bridges (Compat.java), before any RocketMQ class loads
        }

        Map<String, List<Spec>> byClass = new LinkedHashMap<>();
        for (Failpoints.Point p : Failpoints.mine()) {
            Class<?> advice = p.at.equals("exit") ? Advices.Exit.class : Advices.Enter.class;
            List<Spec> specs = byClass.computeIfAbsent(p.cls, k -> new ArrayList<>());
            Spec same = null;
            for (Spec s : specs) {
                if (s.advice == advice && s.key.equals(p.site())) {
                    same = s;
                }
            }
            if (same == null) {
                specs.add(new Spec(p.method, advice, p.site(), () -> Failpoints.installed(p),
                    why -> Failpoints.missing(p, why)));
            } else {
                // two points at one site (e.g. an append, and the same append inside a role change): one piece of
                // advice, which hands each hit to both points (Failpoints.hit), so no hit is counted twice
                Spec first = same;
                specs.set(specs.indexOf(same), new Spec(p.method, advice, p.site(), () -> {
                    first.onFound.run();
                    Failpoints.installed(p);
                }, why -> {
                    first.onMissing.accept(why);
                    Failpoints.missing(p, why);
                }));
            }
            if (p.inside != null) {
                String[] cm = p.inside.split("#", 2);
                List<Spec> l = byClass.computeIfAbsent(cm[0], k -> new ArrayList<>());
                boolean have = false;
                for (Spec s : l) {
                    have |= s.advice == Advices.Scope.class && s.key.equals(p.inside);
                }
                if (!have) {
                    l.add(new Spec(cm[1], Advices.Scope.class, p.inside, () -> { }, why -> Failpoints.missing(p,
                        "its scope " + p.inside + ": " + why)));
                }
            }
        }
        for (Object o : (List<Object>) cfg.getOrDefault("fixes", new ArrayList<>())) {
            String id = String.valueOf(o);
            Fix f = Fixes.byId(id);
            if (f == null) {
                Events.emit("fix.unknown", Json.obj("fix", id));
                continue;
            }
            if (!f.kind().equals(Failpoints.kind)) {
                continue;
            }
            Fixes.ACTIVE.put(id, f);
            Class<?> advice = f.at().equals("exit") ? Advices.FixExit.class : Advices.FixEnter.class;
            byClass.computeIfAbsent(f.cls(), k -> new ArrayList<>()).add(new Spec(f.method(), advice, id,
                () -> {
                    synchronized (Fixes.class) {
                        if (Fixes.INSTALLED.add(id)) {
                            Events.emit("fix.installed", Json.obj("fix", id, "cls", f.cls(), "method", f.method(),
                                "what", f.what()));
                        }
                    }
                },
                why -> Events.emit("fix.absent", Json.obj("fix", id, "cls", f.cls(), "method", f.method(), "why",
                    why))));
        }

        AgentBuilder b = new AgentBuilder.Default()
            .disableClassFormatChanges()
            .ignore(not(nameStartsWith("org.apache.rocketmq.").or(nameStartsWith("io.openmessaging.storage.dledger."))))
            .with(new AgentBuilder.Listener.Adapter() {
                @Override
                public void onError(String typeName, ClassLoader classLoader, JavaModule module, boolean loaded,
                                    Throwable throwable) {
                    Events.emit("error", Json.obj("cls", typeName, "error", String.valueOf(throwable)));
                }
            });
        for (Map.Entry<String, List<Spec>> e : byClass.entrySet()) {
            List<Spec> specs = e.getValue();
            b = b.type(named(e.getKey())).transform((builder, td, cl, module, pd) -> visit(builder, td, specs));
        }
        b.installOn(inst);
        Control.start(String.valueOf(cfg.get("socket")));
        for (Object o : (List<Object>) cfg.getOrDefault("arms", new ArrayList<>())) {
            Map<String, Object> ans = Failpoints.arm((Map<String, Object>) o);
            if (!Boolean.TRUE.equals(ans.get("ok"))) {
                Events.emit("error", Json.obj("error", "arm at start: " + ans.get("error")));
            }
        }
    }

    static DynamicType.Builder<?> visit(DynamicType.Builder<?> builder, TypeDescription td, List<Spec> specs) {
        // the scopes first: advice visited earlier wraps what is visited later, so a scope on a method encloses a
        // point on the same method (its exit runs after the point's)
        List<Spec> ordered = new ArrayList<>();
        for (Spec s : specs) {
            if (s.advice == Advices.Scope.class) {
                ordered.add(s);
            }
        }
        for (Spec s : specs) {
            if (s.advice != Advices.Scope.class) {
                ordered.add(s);
            }
        }
        for (Spec s : ordered) {
            try {
                ElementMatcher.Junction<MethodDescription> m = named(s.method).and(not(isAbstract()));
                if (td.getDeclaredMethods().filter(m).isEmpty()) {
                    s.onMissing.accept(td.getName() + " has no method " + s.method);
                    continue;
                }
                builder = builder.visit(Advice.withCustomMapping().bind(Advices.Site.class, s.key).to(s.advice).on(m));
                s.onFound.run();
            } catch (Throwable t) {
                s.onMissing.accept("advice failed: " + t);
            }
        }
        return builder;
    }

    static Map<String, Object> status() {
        Map<String, Object> st = Json.obj("ok", true, "node", node, "kind", Failpoints.kind, "agentVersion",
            agentVersion, "rocketmq", version, "startedMs", startedMs, "premainMs", premainMs,
            "maxPauseMs", Failpoints.maxPauseMs);
        synchronized (Failpoints.class) {
            st.put("installed", new ArrayList<>(Failpoints.INSTALLED));
            st.put("missing", new LinkedHashMap<>(Failpoints.MISSING));
            st.put("arms", (long) Failpoints.ARMS.size());
        }
        synchronized (Fixes.class) {
            st.put("fixes", new ArrayList<>(Fixes.ACTIVE.keySet()));
            st.put("fixesInstalled", new ArrayList<>(Fixes.INSTALLED));
        }
        return st;
    }
}
