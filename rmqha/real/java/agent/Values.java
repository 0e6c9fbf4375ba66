/*
 * rmqha agent: reading a hit's arguments. A path names a value: "self" or "argN", then ".name" steps, each read
 * by a getter (getName(), isName(), name()) or else a field (private ones too, up the class hierarchy). A step that
 * finds nothing gives null (MISSING in a condition: the condition is false). Summaries keep each value short.
 */
package rmqha.agent;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

public final class Values {
    /** The value a path could not reach. */
    public static final Object MISSING = new Object();

    private Values() {
    }

    public static Object resolve(String path, Object self, Object[] args) {
        String[] steps = path.split("\\.");
        Object v;
        String head = steps[0];
        if (head.equals("self")) {
            v = self;
        } else if (head.startsWith("arg")) {
            int n;
            try {
                n = Integer.parseInt(head.substring(3));
            } catch (NumberFormatException e) {
                return MISSING;
            }
            if (args == null || n < 0 || n >= args.length) {
                return MISSING;
            }
            v = args[n];
        } else {
            return MISSING;
        }
        for (int k = 1; k < steps.length; k++) {
            if (v == null) {
                return MISSING;
            }
            v = step(v, steps[k]);
            if (v == MISSING) {
                return MISSING;
            }
        }
        return v;
    }

    private static Object step(Object v, String name) {
        String cap = name.isEmpty() ? name : Character.toUpperCase(name.charAt(0)) + name.substring(1);
        for (String m : new String[] {"get" + cap, "is" + cap, name}) {
            Method meth = findMethod(v.getClass(), m);
            if (meth != null) {
                try {
                    return meth.invoke(v);
                } catch (ReflectiveOperationException | RuntimeException e) {
                    return MISSING;
                }
            }
        }
        for (Class<?> c = v.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(v);
            } catch (NoSuchFieldException e) {
                // up the hierarchy
            } catch (ReflectiveOperationException | RuntimeException e) {
                return MISSING;
            }
        }
        return MISSING;
    }

    private static Method findMethod(Class<?> cls, String name) {
        try {
            Method m = cls.getMethod(name);
            if (m.getReturnType() != void.class) {
                m.setAccessible(true);
                return m;
            }
        } catch (NoSuchMethodException | RuntimeException e) {
            // not public: look at the declared ones
        }
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                Method m = c.getDeclaredMethod(name);
                if (m.getReturnType() != void.class) {
                    m.setAccessible(true);
                    return m;
                }
            } catch (NoSuchMethodException e) {
                // up
            } catch (RuntimeException e) {
                return null;
            }
        }
        return null;
    }

    /** A short JSON-able summary of a value. */
    public static Object summary(Object v) {
        return summary(v, 0);
    }

    private static Object summary(Object v, int depth) {
        if (v == null || v instanceof Boolean || v instanceof Long || v instanceof Integer || v instanceof Short
            || v instanceof Byte) {
            return v;
        }
        if (v == MISSING) {
            return "<missing>";
        }
        if (v instanceof Number) {
            return v.toString();
        }
        if (v instanceof CharSequence) {
            return cut(v.toString(), 160);
        }
        if (v instanceof Enum) {
            return ((Enum<?>) v).name();
        }
        if (v instanceof Collection) {
            Collection<?> c = (Collection<?>) v;
            if (depth > 0) {
                return c.getClass().getSimpleName() + "(" + c.size() + ")";
            }
            List<Object> out = new ArrayList<>();
            int k = 0;
            for (Object o : c) {
                if (k++ >= 8) {
                    out.add("... " + c.size() + " in all");
                    break;
                }
                out.add(summary(o, depth + 1));
            }
            return out;
        }
        if (v instanceof Map) {
            return "Map(" + ((Map<?, ?>) v).size() + ")";
        }
        if (v instanceof byte[]) {
            return "byte[" + ((byte[]) v).length + "]";
        }
        if (v.getClass().isArray()) {
            return v.getClass().getComponentType().getSimpleName() + "[]";
        }
        String name = v.getClass().getSimpleName();
        try {
            if (v.getClass().getMethod("toString").getDeclaringClass() != Object.class) {
                return cut(name + " " + v, 200);
            }
        } catch (NoSuchMethodException | RuntimeException e) {
            // fall through
        } catch (Throwable e) {
            return name;
        }
        return name;
    }

    private static String cut(String s, int n) {
        return s.length() <= n ? s : s.substring(0, n) + "...";
    }

    /** A condition: the value at the path compared with a text: numbers as numbers, else as strings. */
    public static boolean holds(Object v, String op, String want) {
        if (v == MISSING) {
            return false;
        }
        String have = v == null ? "null" : (v instanceof Enum ? ((Enum<?>) v).name() : String.valueOf(v));
        if (op.equals("~")) {
            return have.contains(want);
        }
        Double a = num(v == null ? null : have);
        Double b = num(want);
        int cmp;
        if (a != null && b != null) {
            cmp = Double.compare(a, b);
        } else {
            if (!op.equals("=") && !op.equals("!=")) {
                return false;
            }
            cmp = have.equals(want) ? 0 : 1;
        }
        switch (op) {
            case "=": return cmp == 0;
            case "!=": return cmp != 0;
            case "<": return cmp < 0;
            case "<=": return cmp <= 0;
            case ">": return cmp > 0;
            case ">=": return cmp >= 0;
            default: return false;
        }
    }

    private static Double num(String s) {
        if (s == null) {
            return null;
        }
        try {
            return Double.valueOf(s);
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
