/*
 * rmqha agent: a fix rule. Each rule is the proposed fix of one of the kit's findings (docs/findings/F-*.md, "The
 * fix"), the same change as the kit's Python fix switch (impl/bugs.py), put into the real build at one method:
 * a class of its own named after the finding, and one line in Fixes.ALL.
 */
package rmqha.agent;

public abstract class Fix {
    /** The finding's id, e.g. F-TRUNCATED-TAIL-RESURRECTS. */
    public abstract String finding();

    /** The kit's fix switch that makes the same change in the Python core (impl/bugs.py). */
    public abstract String kitSwitch();

    /** The class whose method the rule changes. */
    public abstract String cls();

    /** The method (every overload of that name). */
    public abstract String method();

    /** "enter" or "exit" (a normal return). */
    public abstract String at();

    /** The kind of node it applies to: broker, controller or ns. */
    public abstract String kind();

    /** What the rule does, one line. */
    public abstract String what();

    /** The rule itself. Any exception it throws is caught and reported (fix.error); RocketMQ's call goes on. */
    public abstract void apply(Object self, Object[] args) throws Exception;
}
