/*
 * rmqha agent: the failpoints at run time. The points come from the kit's catalogue (rmqha/real/points.py, handed
 * over in the node's agent config); each sits at the entry or the normal exit of one RocketMQ method, optionally only
 * while the same thread is inside another method ("inside": a sub-step of it). Nothing happens at a point until it
 * is armed: an arm names the point, an action and a trigger.
 *
 * Actions: crash (the hit's event line is written, then Runtime.halt(HALT_STATUS): no shutdown hook, no flush, as
 * kill -9), delay (sleep ms), pause (block the thread until released or disarmed, at most the arm's ms bounded by
 * the harness's maxPauseMs), throw (an exception of the named class, constructed with a message).
 * Trigger: the arm fires from its nth matching hit on, count times (0: every time from then on); a hit matches
 * when every condition of "when" holds on the hit's arguments (Values.resolve: "argN.name", "self.name").
 * Every matching hit of an armed point is an event line ("hit", with "fired"), and so are "armed", "done" (a delay,
 * a pause or a throw carried out), "released", "disarmed".
 */
package rmqha.agent;

import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

public final class Failpoints {
    public static final int HALT_STATUS = 86;
    static final int MAX_HIT_LINES = 2000; // per arm: a point on a periodic call must not flood the events file

    static final class Point {
        final String name;
        final String kind;
        final String cls;
        final String method;
        final String at; // "enter" | "exit"
        final String inside; // "Class#method" or null
        final Map<String, String> args; // alias -> path

        Point(String name, String kind, String cls, String method, String at, String inside,
              Map<String, String> args) {
            this.name = name;
            this.kind = kind;
            this.cls = cls;
            this.method = method;
            this.at = at;
            this.inside = inside;
            this.args = args;
        }

        String site() {
            return cls + "#" + method + "#" + at;
        }
    }

    static final class Cond {
        final String path;
        final String op;
        final String value;
        final String text;

        Cond(String path, String op, String value, String text) {
            this.path = path;
            this.op = op;
            this.value = value;
            this.text = text;
        }
    }

    static final class Arm {
        final String id;
        final Point point;
        final String action;
        final long ms;
        final int nth;
        final int count;
        final String exception;
        final List<Cond> when;
        int hits;
        int fired;
        int lines;
        int releaseGen;
        int waiting;
        boolean disarmed;

        Arm(String id, Point point, String action, long ms, int nth, int count, String exception, List<Cond> when) {
            this.id = id;
            this.point = point;
            this.action = action;
            this.ms = ms;
            this.nth = nth;
            this.count = count;
            this.exception = exception;
            this.when = when;
        }

        synchronized Map<String, Object> describe() {
            List<Object> w = new ArrayList<>();
            for (Cond c : when) {
                w.add(c.text);
            }
            return Json.obj("id", id, "point", point.name, "action", action, "ms", ms, "nth", (long) nth,
                "count", (long) count, "exception", exception, "when", w, "hits", (long) hits, "fired", (long) fired,
                "waiting", (long) waiting,
                "state", count > 0 && fired >= count ? (waiting > 0 ? "paused" : "spent") : "armed");
        }
    }

    static final Map<String, Point> POINTS = new LinkedHashMap<>();
    static final Map<String, List<Point>> BY_SITE = new HashMap<>();
    static final Map<String, Arm> ARMS = new LinkedHashMap<>();
    static final Set<String> INSTALLED = new TreeSet<>();
    static final Map<String, String> MISSING = new LinkedHashMap<>();
    static volatile boolean anyArmed;
    static long maxPauseMs = 120_000;
    static String kind = "?";
    private static final ThreadLocal<Map<String, int[]>> SCOPES = ThreadLocal.withInitial(HashMap::new);

    private Failpoints() {
    }

    // ------------------------------------------------------------------ the catalogue

    @SuppressWarnings("unchecked")
    static void load(List<Object> catalogue) {
        for (Object o : catalogue) {
            Map<String, Object> m = (Map<String, Object>) o;
            Map<String, String> args = new LinkedHashMap<>();
            Object a = m.get("args");
            if (a instanceof Map) {
                for (Map.Entry<String, Object> e : ((Map<String, Object>) a).entrySet()) {
                    args.put(e.getKey(), String.valueOf(e.getValue()));
                }
            }
            Point p = new Point((String) m.get("name"), (String) m.get("kind"), (String) m.get("cls"),
                (String) m.get("method"), (String) m.getOrDefault("at", "enter"), (String) m.get("inside"), args);
            POINTS.put(p.name, p);
        }
    }

    /** The points a node of this kind carries. */
    static List<Point> mine() {
        List<Point> out = new ArrayList<>();
        for (Point p : POINTS.values()) {
            if (p.kind.equals(kind)) {
                out.add(p);
            }
        }
        return out;
    }

    static synchronized void installed(Point p) {
        INSTALLED.add(p.name);
        List<Point> l = BY_SITE.computeIfAbsent(p.site(), k -> new ArrayList<>());
        if (!l.contains(p)) {
            l.add(p);
        }
    }

    static synchronized void missing(Point p, String why) {
        if (MISSING.put(p.name, why) == null) {
            Events.emit("missing", Json.obj("point", p.name, "cls", p.cls, "method", p.method, "why", why));
        }
    }

    // ------------------------------------------------------------------ scopes ("inside")

    public static void enterScope(String scope) {
        SCOPES.get().computeIfAbsent(scope, k -> new int[1])[0]++;
    }

    public static void exitScope(String scope) {
        int[] d = SCOPES.get().get(scope);
        if (d != null && d[0] > 0) {
            d[0]--;
        }
    }

    private static boolean inside(String scope) {
        int[] d = SCOPES.get().get(scope);
        return d != null && d[0] > 0;
    }

    // ------------------------------------------------------------------ hits

    /** Called by the advice at a site. Throws only what a "throw" arm asks for. */
    public static void hit(String site, Object self, Object[] args) throws Throwable {
        if (!anyArmed) {
            return;
        }
        List<Point> ps;
        synchronized (Failpoints.class) {
            List<Point> l = BY_SITE.get(site);
            ps = l == null ? null : new ArrayList<>(l);
        }
        if (ps == null) {
            return;
        }
        for (Point p : ps) {
            if (p.inside != null && !inside(p.inside)) {
                continue;
            }
            List<Arm> arms = new ArrayList<>();
            synchronized (Failpoints.class) {
                for (Arm a : ARMS.values()) {
                    if (a.point == p) {
                        arms.add(a);
                    }
                }
            }
            for (Arm a : arms) {
                try {
                    fireMaybe(a, p, self, args);
                } catch (Throwable t) {
                    if (t instanceof ThrowAction) {
                        throw t.getCause();
                    }
                    Events.emit("error", Json.obj("id", a.id, "point", p.name, "error", String.valueOf(t)));
                }
            }
        }
    }

    /** Carries the exception a "throw" arm throws out of the error handling above. */
    static final class ThrowAction extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ThrowAction(Throwable cause) {
            super(cause);
        }
    }

    private static void fireMaybe(Arm a, Point p, Object self, Object[] args) throws InterruptedException {
        for (Cond c : a.when) {
            if (!Values.holds(Values.resolve(c.path, self, args), c.op, c.value)) {
                return;
            }
        }
        boolean fire;
        int n;
        boolean log;
        synchronized (a) {
            if (a.disarmed) {
                return;
            }
            a.hits++;
            n = a.hits;
            fire = n >= a.nth && (a.count == 0 || a.fired < a.count);
            if (fire) {
                a.fired++;
            }
            log = fire || a.lines < MAX_HIT_LINES;
            a.lines++;
        }
        if (log) {
            Map<String, Object> named = new LinkedHashMap<>();
            for (Map.Entry<String, String> e : p.args.entrySet()) {
                named.put(e.getKey(), Values.summary(Values.resolve(e.getValue(), self, args)));
            }
            List<Object> raw = new ArrayList<>();
            if (args != null) {
                for (Object o : args) {
                    raw.add(Values.summary(o));
                }
            }
            Events.emit("hit", Json.obj("id", a.id, "point", p.name, "action", a.action, "n", (long) n,
                "fired", fire, "args", named, "argv", raw, "thread", Thread.currentThread().getName()));
        }
        if (!fire) {
            return;
        }
        switch (a.action) {
            case "crash":
                System.err.println("rmqha-agent: crash at " + p.name + " (" + a.id + "): Runtime.halt(" + HALT_STATUS
                    + ")");
                System.err.flush();
                Runtime.getRuntime().halt(HALT_STATUS);
                break;
            case "delay": {
                long t0 = System.currentTimeMillis();
                try {
                    Thread.sleep(a.ms);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                Events.emit("done", Json.obj("id", a.id, "point", p.name, "action", "delay", "n", (long) n,
                    "waitedMs", System.currentTimeMillis() - t0));
                break;
            }
            case "pause": {
                long t0 = System.currentTimeMillis();
                long bound = Math.min(a.ms > 0 ? a.ms : maxPauseMs, maxPauseMs);
                boolean timedOut;
                synchronized (a) {
                    int gen = a.releaseGen;
                    a.waiting++;
                    long end = t0 + bound;
                    try {
                        while (a.releaseGen == gen && !a.disarmed && System.currentTimeMillis() < end) {
                            a.wait(Math.max(1, end - System.currentTimeMillis()));
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        a.waiting--;
                    }
                    timedOut = a.releaseGen == gen && !a.disarmed;
                }
                Events.emit("done", Json.obj("id", a.id, "point", p.name, "action", "pause", "n", (long) n,
                    "waitedMs", System.currentTimeMillis() - t0, "timedOut", timedOut));
                break;
            }
            case "throw": {
                Throwable t = exception(a.exception, self, "rmqha agent: " + p.name + " (" + a.id + ")");
                Events.emit("done", Json.obj("id", a.id, "point", p.name, "action", "throw", "n", (long) n,
                    "exception", t.getClass().getName()));
                throw new ThrowAction(t);
            }
            default:
                break;
        }
    }

    static Throwable exception(String name, Object self, String msg) {
        List<ClassLoader> loaders = new ArrayList<>();
        if (self != null && self.getClass().getClassLoader() != null) {
            loaders.add(self.getClass().getClassLoader());
        }
        loaders.add(ClassLoader.getSystemClassLoader());
        for (ClassLoader cl : loaders) {
            try {
                Class<?> c = Class.forName(name, true, cl);
                if (!Throwable.class.isAssignableFrom(c)) {
                    break;
                }
                try {
                    Constructor<?> k = c.getConstructor(String.class);
                    return (Throwable) k.newInstance(msg);
                } catch (NoSuchMethodException e) {
                    return (Throwable) c.getConstructor().newInstance();
                }
            } catch (ReflectiveOperationException | LinkageError e) {
                // next loader
            }
        }
        return new RuntimeException(msg + " (" + name + " could not be made)");
    }

    // ------------------------------------------------------------------ control

    static Map<String, Object> err(String msg) {
        return Json.obj("ok", false, "error", msg);
    }

    static long num(Map<String, Object> req, String key, long dflt) {
        Object v = req.get(key);
        if (v == null) {
            return dflt;
        }
        if (v instanceof Number) {
            return ((Number) v).longValue();
        }
        return Long.parseLong(String.valueOf(v));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> arm(Map<String, Object> req) {
        String id = String.valueOf(req.getOrDefault("id", ""));
        String pname = String.valueOf(req.get("point"));
        Point p = POINTS.get(pname);
        if (id.isEmpty()) {
            return err("an arm needs an id");
        }
        if (p == null) {
            return err("no point " + pname);
        }
        if (!p.kind.equals(kind)) {
            return err("point " + pname + " is a " + p.kind + " point; this node is a " + kind);
        }
        String action = String.valueOf(req.get("action"));
        if (!List.of("crash", "delay", "pause", "throw").contains(action)) {
            return err("action " + action + ": one of crash, delay, pause, throw");
        }
        long ms = num(req, "ms", 0);
        int nth = (int) num(req, "nth", 1);
        int count = (int) num(req, "count", 1);
        if (action.equals("delay") && ms <= 0) {
            return err("a delay needs ms > 0");
        }
        if (nth < 1 || count < 0 || ms < 0) {
            return err("nth >= 1, count >= 0, ms >= 0");
        }
        List<Cond> when = new ArrayList<>();
        Object w = req.get("when");
        if (w instanceof List) {
            for (Object o : (List<Object>) w) {
                Map<String, Object> c = (Map<String, Object>) o;
                when.add(new Cond(String.valueOf(c.get("path")), String.valueOf(c.get("op")),
                    String.valueOf(c.get("value")), String.valueOf(c.getOrDefault("text", c.get("path")))));
            }
        }
        String exc = String.valueOf(req.getOrDefault("exception", "java.lang.RuntimeException"));
        Arm a = new Arm(id, p, action, ms, nth, count, exc, when);
        Arm old;
        synchronized (Failpoints.class) {
            old = ARMS.put(id, a);
            anyArmed = true;
        }
        if (old != null) {
            drop(old);
        }
        Map<String, Object> d = a.describe();
        d.put("installed", INSTALLED.contains(p.name));
        if (MISSING.containsKey(p.name)) {
            d.put("missing", MISSING.get(p.name));
        }
        Events.emit("armed", d);
        return Json.obj("ok", true, "arm", d);
    }

    private static void drop(Arm a) {
        synchronized (a) {
            a.disarmed = true;
            a.notifyAll();
        }
    }

    static Map<String, Object> disarm(String id) {
        Arm a;
        synchronized (Failpoints.class) {
            a = ARMS.remove(id);
            anyArmed = !ARMS.isEmpty();
        }
        if (a == null) {
            return err("no arm " + id);
        }
        drop(a);
        Map<String, Object> d = a.describe();
        Events.emit("disarmed", d);
        return Json.obj("ok", true, "arm", d);
    }

    static Map<String, Object> release(String id) {
        Arm a;
        synchronized (Failpoints.class) {
            a = ARMS.get(id);
        }
        if (a == null) {
            return err("no arm " + id);
        }
        int waiting;
        synchronized (a) {
            waiting = a.waiting;
            a.releaseGen++;
            a.notifyAll();
        }
        Events.emit("released", Json.obj("id", id, "point", a.point.name, "waiting", (long) waiting));
        return Json.obj("ok", true, "released", (long) waiting);
    }

    static Map<String, Object> list() {
        List<Object> out = new ArrayList<>();
        synchronized (Failpoints.class) {
            for (Arm a : ARMS.values()) {
                out.add(a.describe());
            }
        }
        return Json.obj("ok", true, "arms", out);
    }

    static synchronized Map<String, Object> points() {
        List<Object> out = new ArrayList<>();
        for (Point p : mine()) {
            out.add(Json.obj("point", p.name, "installed", INSTALLED.contains(p.name), "missing", MISSING.get(p.name)));
        }
        return Json.obj("ok", true, "points", out);
    }
}
