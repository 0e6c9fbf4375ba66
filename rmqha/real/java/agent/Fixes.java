/*
 * rmqha agent: the fix rules the agent has. Adding one: a new class extending Fix (named after the finding), and
 * one line in ALL. The kit's Python side lists the same ids (rmqha/real/points.py: FIXES; a test compares them).
 */
package rmqha.agent;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

public final class Fixes {
    static final Fix[] ALL = {
        new FixTruncatedTailResurrects(),
    };

    static final Map<String, Fix> ACTIVE = new LinkedHashMap<>();
    static final Set<String> INSTALLED = new TreeSet<>();

    private Fixes() {
    }

    static Fix byId(String id) {
        for (Fix f : ALL) {
            if (f.finding().equals(id)) {
                return f;
            }
        }
        return null;
    }

    /** Called by the advice at the fix's site. Never throws. */
    public static void run(String id, Object self, Object[] args) {
        Fix f = ACTIVE.get(id);
        if (f == null) {
            return;
        }
        try {
            f.apply(self, args);
        } catch (Throwable t) {
            Events.emit("fix.error", Json.obj("fix", id, "error", String.valueOf(t)));
        }
    }
}
