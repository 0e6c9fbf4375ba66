/*
 * rmqha agent: the node's event lines. Each event is one JSON line appended to the run's events file (shared by
 * every JVM of the run: O_APPEND, one write per line, so lines from several JVMs never interleave inside a line),
 * written before the action it announces: a crash's line is in the file (the kernel's) before Runtime.halt.
 * Every line: "t" (wall time, ms since the epoch), "node", "ev", then the event's own fields.
 */
package rmqha.agent;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

public final class Events {
    private static FileOutputStream out;
    private static String node = "?";

    private Events() {
    }

    static synchronized void open(String path, String nodeName) throws IOException {
        node = nodeName;
        out = new FileOutputStream(path, true);
    }

    /** Write one event now (synchronously); never throws. Returns the line. */
    public static synchronized Map<String, Object> emit(String ev, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("t", System.currentTimeMillis());
        m.put("node", node);
        m.put("ev", ev);
        if (fields != null) {
            m.putAll(fields);
        }
        String line = Json.write(m) + "\n";
        if (out != null) {
            try {
                out.write(line.getBytes(StandardCharsets.UTF_8));
                out.flush();
            } catch (IOException e) {
                System.err.println("rmqha-agent: cannot write an event: " + e);
            }
        } else {
            System.err.print("rmqha-agent: " + line);
        }
        return m;
    }
}
