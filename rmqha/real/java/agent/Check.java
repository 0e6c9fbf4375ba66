/*
 * rmqha agent: which points and fixes a RocketMQ version has, from its jars, without starting anything.
 *   java -cp rmqha-agent.jar:byte-buddy.jar:ROCKETMQ_CLASSPATH rmqha.agent.Check CATALOGUE.json
 * Byte Buddy's TypePool reads each class file from the classpath (no class is loaded, none initialised) and the
 * method is looked up by name among the class's own methods, as the agent's transformer does. One JSON line per
 * point ({"point", "cls", "method", "found", "why"?}) and per fix ({"fix", ...}).
 */
package rmqha.agent;

import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.pool.TypePool;

public final class Check {
    private Check() {
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] argv) throws Exception {
        if (argv.length != 1) {
            System.err.println("usage: rmqha.agent.Check CATALOGUE.json");
            System.exit(2);
        }
        List<Object> points = (List<Object>) Json.parse(new String(Files.readAllBytes(Path.of(argv[0])),
            StandardCharsets.UTF_8));
        TypePool pool = TypePool.Default.of(ClassFileLocator.ForClassLoader.ofSystemLoader());
        StringBuilder out = new StringBuilder();
        for (Object o : points) {
            Map<String, Object> p = (Map<String, Object>) o;
            String cls = (String) p.get("cls");
            String method = (String) p.get("method");
            Map<String, Object> line = Json.obj("point", p.get("name"), "cls", cls, "method", method);
            look(pool, cls, method, line);
            String inside = (String) p.get("inside");
            if (inside != null && Boolean.TRUE.equals(line.get("found"))) {
                String[] cm = inside.split("#", 2);
                Map<String, Object> in = Json.obj();
                look(pool, cm[0], cm[1], in);
                if (!Boolean.TRUE.equals(in.get("found"))) {
                    line.put("found", false);
                    line.put("why", "its scope " + inside + ": " + in.get("why"));
                }
            }
            out.append(Json.write(line)).append('\n');
        }
        for (Fix f : Fixes.ALL) {
            Map<String, Object> line = Json.obj("fix", f.finding(), "kitSwitch", f.kitSwitch(), "kind", f.kind(),
                "cls", f.cls(), "method", f.method(), "at", f.at(), "what", f.what());
            look(pool, f.cls(), f.method(), line);
            out.append(Json.write(line)).append('\n');
        }
        System.out.print(out);
        System.out.flush();
    }

    private static void look(TypePool pool, String cls, String method, Map<String, Object> line) {
        TypePool.Resolution r = pool.describe(cls);
        if (!r.isResolved()) {
            line.put("found", false);
            line.put("why", "no class " + cls + " in this version's jars");
            return;
        }
        TypeDescription td = r.resolve();
        boolean found = !td.getDeclaredMethods().filter(named(method).and(not(isAbstract()))).isEmpty();
        line.put("found", found);
        if (!found) {
            line.put("why", cls + " has no method " + method);
        }
    }
}
