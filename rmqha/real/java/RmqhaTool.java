/*
 * rmqha real-cluster tool: the Java side of `rmqha real ...` (Java package rmqha.tool, one source file).
 *
 * Drives a real Apache RocketMQ 5 cluster only through RocketMQ's own client/admin APIs (DefaultMQProducer,
 * DefaultMQPullConsumer, DefaultMQAdminExt) and prints JSON Lines on stdout: one object per line, flushed per line,
 * "k" = kind, "t" = System.currentTimeMillis(). Diagnostics go to stderr; System.out is redirected to stderr so the
 * RocketMQ libraries can never write into the JSON stream. Client logs: rocketmq_client.log under --log-dir
 * (default: RocketMQ's ${user.home}/logs/rocketmqlogs).
 *
 *   javac -d OUT -cp "$(cat cp.txt)" RmqhaTool.java
 *   java -cp "OUT:$(cat cp.txt)" rmqha.tool.RmqhaTool CMD [options]
 *
 * Common options: --namesrv ADDR  --controllers ADDR[;ADDR...]  --cluster NAME  --set BROKER_NAME  --topic T
 *   --deadline-ms N (>= 1e12: absolute epoch ms; else a duration from tool start; default 600000)
 *   --client-ip IP  --log-dir DIR  --no-stdin-watch (manual use: do not stop on stdin EOF)
 * Loops stop on SIGTERM/SIGINT, on stdin EOF (not for the one-shot admin and observe --once), and at the deadline;
 * then they print {"k":"end","reason":"signal|stdin-eof|deadline|count|once|done",...} and exit 0.
 * Bad arguments: one line on stderr, exit 2. Failure to start a client: {"k":"fatal","error":..}, exit 1.
 *
 * produce --topic T [--group G] [--interval-ms 100] [--size 64] [--key-prefix k] [--count N (0 = until stopped)]
 *         [--timeout-ms 3000] [--route-refresh-ms 30000 (client pollNameServerInterval; RocketMQ's default)]
 *   retries off, latency fault off, one sync send at a time, queue = writeQueues[(seq-1) % n] via a selector.
 *   {"k":"start","cmd","clientVersion","jvmUptimeMs","deadline","clientStartMs"}
 *   {"k":"send","key","seq"} then {"k":"send-result","key","seq","status":SEND_OK|FLUSH_DISK_TIMEOUT|
 *     FLUSH_SLAVE_TIMEOUT|SLAVE_NOT_AVAILABLE,"broker","addr","queue","queueOffset","msgId","offsetMsgId",
 *     "commitLogOffset","storeHost","rtMs"}  or  {"k":"send-result","key","seq","status":"error","error",
 *     "code"?,"cause"?,"addr"?,"rtMs"}      ("addr": the master address the client's route table gave the send)
 *   {"k":"end","reason","sent","statusCounts":{"SEND_OK":n,"error":m,..}}
 * consume --topic T [--group G] [--interval-ms 200] [--batch 32] [--timeout-ms 3000] [--commit]
 *   pulls every queue from offset 0 upward (DefaultMQPullConsumer.pull(mq,"*",offset,batch)); the route and the
 *   queue list are refreshed from the name server every round. Follows the broker's nextBeginOffset on
 *   OFFSET_ILLEGAL / NO_MATCHED_MSG (so after a truncation re-used offsets are read again).
 *   {"k":"seen","key","queue","queueOffset","commitLogOffset","broker","storeHost","bornTimestamp",
 *     "storeTimestamp","msgId","bodySize"}
 *   {"k":"pull-error","broker","queue","offset","error","code"?,"cause"?,"suppressed"?} (<= 1/s per queue if same)
 *   {"k":"pull-status","broker","queue","offset","status","nextBeginOffset","minOffset","maxOffset"} (on change)
 *   {"k":"route-error","topic","error",..}   {"k":"commit","broker","queue","offset","ok"} (only with --commit)
 *   {"k":"end","reason","seenCount","offsets":{"broker:queue":nextOffset}}
 * observe [--controllers C1;C2 --set S] [--brokers B1,B2,...] [--interval-ms 1000] [--call-timeout-ms 1500] [--once]
 *   every round all calls run in parallel; each is cut off at the call timeout (round 1: >= 3000 ms). A line's "t" is
 *   when it was written; "at" holds, per call that answered, when its answer came ("meta", "set"; "stats", "ha",
 *   "epochs"), which is when that part was seen to be true.
 *   {"k":"ctl","addr","round","ok","error"?,"meta":GetMetaDataResponseHeader,"set":ReplicasInfo of S (answered by
 *     the controller leader) + "syncStateSet":[ids] + "brokers":[{"brokerId","address","alive","inSync"}]}
 *   {"k":"brk","addr","round","ok","error"?,"stats":{runtime stats table},"ha":HARuntimeInfo,
 *     + EpochEntryCache fields (brokerId, brokerName, clusterName, maxOffset), "epochs":[{"epoch","startOffset",
 *     "endOffset"}]}      (ok = all three calls answered; the parts that did answer are still printed)
 * admin update-topic (--addr B[,B..] | --cluster C --namesrv N) --topic T --queues N
 * admin elect-master --controllers .. --cluster C --set S --broker-id ID
 * admin clean-broker-data --controllers .. --set S (--cluster C | --clean-living) [--broker-ids 1;2]
 * admin controller-config --controllers ..
 *   each prints one {"k":"admin","op","ok","result"|"error","code"?,"errors"?:{controller: error}}; the controller
 *   calls try each --controllers address in turn (RocketMQ's client forwards to the leader it reports).
 *
 * RocketMQ objects are turned into JSON generically with fastjson2 (getter names = RocketMQ's field names, e.g.
 * HARuntimeInfo.isMaster() -> "master", GetMetaDataResponseHeader.isLeader() -> "leader").
 * Compiles warning-free against 5.3.3 and 5.5.x: every method used has the same signature in both, so there is no
 * reflection; fastjson2 (not fastjson 1.x, which 5.5.1 no longer ships) is the one JSON library on both classpaths.
 */
package rmqha.tool;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import com.alibaba.fastjson2.JSONWriter;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.Pair;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.body.BrokerMemberGroup;
import org.apache.rocketmq.remoting.protocol.body.BrokerReplicasInfo;
import org.apache.rocketmq.remoting.protocol.body.EpochEntryCache;
import org.apache.rocketmq.remoting.protocol.body.HARuntimeInfo;
import org.apache.rocketmq.remoting.protocol.body.KVTable;
import org.apache.rocketmq.remoting.protocol.header.controller.ElectMasterResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.controller.GetMetaDataResponseHeader;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.apache.rocketmq.tools.command.CommandUtil;

public final class RmqhaTool {

    // ------------------------------------------------------------------ process-wide state

    /** The real stdout; only JSON Lines go here. */
    private static PrintStream out;
    private static volatile boolean stopping;
    private static volatile String stopReason;
    private static volatile boolean sigterm;
    /** Absolute wall-clock deadline (ms). */
    private static long deadline;
    private static final CountDownLatch DONE = new CountDownLatch(1);

    private RmqhaTool() {
    }

    /** Thrown for bad command-line arguments (exit code 2). */
    static final class BadArgs extends Exception {
        private static final long serialVersionUID = 1L;

        BadArgs(String msg) {
            super(msg);
        }
    }

    public static void main(String[] argv) {
        out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false,
            StandardCharsets.UTF_8);
        System.setOut(System.err); // keep library chatter off the JSON stream
        Args a;
        try {
            a = Args.parse(argv);
            a.validate();
        } catch (BadArgs e) {
            System.err.println("rmqha-tool: bad arguments: " + e.getMessage());
            System.err.flush();
            Runtime.getRuntime().halt(2);
            return;
        }
        // RocketMQ's logging picks the first rmq.*.logback.xml on the classpath, which is the broker's (noisy,
        // status output, broker log files); use the client's own configuration unless the caller chose one.
        if (System.getProperty("rmq.logback.configurationFile") == null) {
            System.setProperty("rmq.logback.configurationFile", "rmq.client.logback.xml");
        }
        if (a.get("log-dir") != null) {
            System.setProperty("rocketmq.log.root", a.get("log-dir")); // rocketmq_client.log goes there
        }
        // one-shot commands (admin, observe --once) ignore stdin: a parent that gives them no stdin must not abort them
        boolean oneShot = a.cmd.equals("admin") || (a.cmd.equals("observe") && a.flag("once"));
        installStopHooks(oneShot || a.flag("no-stdin-watch"));
        int rc = 0;
        try {
            switch (a.cmd) {
                case "produce":
                    Produce.run(a);
                    break;
                case "consume":
                    Consume.run(a);
                    break;
                case "observe":
                    Observe.run(a);
                    break;
                case "admin":
                    Admin.run(a);
                    break;
                default:
                    throw new IllegalStateException("unreachable");
            }
        } catch (Throwable e) {
            System.err.println("rmqha-tool: fatal: " + e);
            e.printStackTrace(System.err);
            JSONObject o = line("fatal");
            o.put("error", err(e));
            emit(o);
            rc = 1;
        }
        out.flush();
        System.err.flush();
        DONE.countDown();
        if (sigterm) {
            // the shutdown hook flushes and halts(0); do not call exit() from inside a shutdown
            return;
        }
        // RocketMQ client threads are not all daemons: leave explicitly (client shutdown already done).
        Runtime.getRuntime().halt(rc);
    }

    private static void installStopHooks(boolean noStdinWatch) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            sigterm = true;
            requestStop("signal");
            try {
                DONE.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
            synchronized (RmqhaTool.class) {
                out.flush();
            }
            System.err.flush();
            Runtime.getRuntime().halt(0);
        }, "rmqha-stop"));
        if (!noStdinWatch) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[256];
                try {
                    InputStream in = System.in;
                    while (in.read(buf) >= 0) {
                        // input is ignored; only EOF matters
                    }
                } catch (Exception ignored) {
                    // treat a broken stdin as EOF
                }
                requestStop("stdin-eof");
            }, "rmqha-stdin");
            t.setDaemon(true);
            t.start();
        }
    }

    static void requestStop(String reason) {
        if (!stopping) {
            stopReason = reason;
            stopping = true;
        }
    }

    /** True when the command loop must end (stop requested or deadline passed). */
    static boolean shouldStop() {
        if (stopping) {
            return true;
        }
        if (System.currentTimeMillis() >= deadline) {
            requestStop("deadline");
            return true;
        }
        return false;
    }

    /** Sleeps up to ms, waking early on stop/deadline. Returns false if the loop must stop. */
    static boolean sleepMs(long ms) {
        long end = System.currentTimeMillis() + Math.max(0, ms);
        while (true) {
            if (shouldStop()) {
                return false;
            }
            long now = System.currentTimeMillis();
            if (now >= end) {
                return true;
            }
            try {
                Thread.sleep(Math.min(50, Math.min(end - now, Math.max(1, deadline - now))));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                requestStop("interrupted");
                return false;
            }
        }
    }

    static long remainingMs() {
        return deadline - System.currentTimeMillis();
    }

    // ------------------------------------------------------------------ JSON output

    static JSONObject line(String k) {
        JSONObject o = new JSONObject();
        o.put("k", k);
        o.put("t", System.currentTimeMillis());
        return o;
    }

    static synchronized void emit(JSONObject o) {
        out.println(JSON.toJSONString(o, JSONWriter.Feature.WriteNulls));
        out.flush();
    }

    /**
     * Generic bean -> JSON with fastjson2 (bean getter names, i.e. RocketMQ's own field names). fastjson2 is what
     * RocketMQ 5.5's RemotingSerializable uses and is on the 5.3.3 classpath too; fastjson 1.x is absent in 5.5.1.
     */
    static Object toJson(Object bean) {
        // serialize + parse rather than JSON.toJSON: fastjson2 2.0.43 (5.3.3) drops null fields in toJSON even with
        // WriteNulls, 2.0.6x keeps them; this form keeps them (e.g. "masterAddress":null) on both
        return bean == null ? null : JSON.parse(JSON.toJSONString(bean, JSONWriter.Feature.WriteNulls));
    }

    static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int i = s.indexOf('\n');
        String r = i >= 0 ? s.substring(0, i) : s;
        return r.trim();
    }

    static Throwable unwrap(Throwable e) {
        while ((e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    static String err(Throwable e) {
        e = unwrap(e);
        return e.getClass().getSimpleName() + ": " + firstLine(e.getMessage());
    }

    /** Adds "error", "code" (response code, if any) and "cause" (innermost cause) to o. */
    static void putError(JSONObject o, Throwable e) {
        e = unwrap(e);
        o.put("error", err(e));
        if (e instanceof MQBrokerException) {
            o.put("code", ((MQBrokerException) e).getResponseCode());
        } else if (e instanceof MQClientException && ((MQClientException) e).getResponseCode() != -1) {
            o.put("code", ((MQClientException) e).getResponseCode());
        }
        Throwable c = e.getCause();
        Throwable last = null;
        int guard = 0;
        while (c != null && c != last && guard++ < 10) {
            last = c;
            c = c.getCause();
        }
        if (last != null) {
            o.put("cause", err(last));
        }
    }

    static String hostPort(SocketAddress sa) {
        if (sa instanceof InetSocketAddress) {
            InetSocketAddress i = (InetSocketAddress) sa;
            String h = i.getAddress() != null ? i.getAddress().getHostAddress() : i.getHostString();
            return h + ":" + i.getPort();
        }
        return sa == null ? null : sa.toString();
    }

    // ------------------------------------------------------------------ arguments

    static final class Args {
        String cmd;
        String op; // admin sub-operation
        final Map<String, String> opts = new LinkedHashMap<>();
        final Set<String> flags = new HashSet<>();

        private static final Set<String> FLAGS = new HashSet<>(Arrays.asList(
            "once", "commit", "no-stdin-watch", "clean-living"));
        private static final Set<String> COMMON = new HashSet<>(Arrays.asList(
            "namesrv", "controllers", "cluster", "set", "topic", "deadline-ms", "client-ip", "no-stdin-watch",
            "log-dir"));
        private static final Map<String, Set<String>> PER_CMD = new HashMap<>();

        static {
            PER_CMD.put("produce", new HashSet<>(Arrays.asList("group", "interval-ms", "size", "key-prefix", "count",
                "timeout-ms", "route-refresh-ms")));
            PER_CMD.put("consume", new HashSet<>(Arrays.asList("group", "interval-ms", "commit", "batch",
                "timeout-ms")));
            PER_CMD.put("observe", new HashSet<>(Arrays.asList("brokers", "interval-ms", "once", "call-timeout-ms")));
            PER_CMD.put("admin", new HashSet<>(Arrays.asList("addr", "queues", "broker-id", "broker-ids",
                "clean-living", "timeout-ms")));
        }

        static Args parse(String[] argv) throws BadArgs {
            Args a = new Args();
            List<String> pos = new ArrayList<>();
            for (int i = 0; i < argv.length; i++) {
                String s = argv[i];
                if (s.startsWith("--")) {
                    String name = s.substring(2);
                    String val = null;
                    int eq = name.indexOf('=');
                    if (eq >= 0) {
                        val = name.substring(eq + 1);
                        name = name.substring(0, eq);
                    }
                    if (FLAGS.contains(name)) {
                        if (val != null) {
                            throw new BadArgs("--" + name + " takes no value");
                        }
                        a.flags.add(name);
                        continue;
                    }
                    if (val == null) {
                        if (i + 1 >= argv.length) {
                            throw new BadArgs("--" + name + " needs a value");
                        }
                        val = argv[++i];
                    }
                    a.opts.put(name, val);
                } else {
                    pos.add(s);
                }
            }
            if (pos.isEmpty()) {
                throw new BadArgs("missing command (produce|consume|observe|admin)");
            }
            a.cmd = pos.get(0);
            if (!PER_CMD.containsKey(a.cmd)) {
                throw new BadArgs("unknown command " + a.cmd);
            }
            if (a.cmd.equals("admin")) {
                if (pos.size() != 2) {
                    throw new BadArgs("admin needs one operation: update-topic|elect-master|clean-broker-data|controller-config");
                }
                a.op = pos.get(1);
            } else if (pos.size() != 1) {
                throw new BadArgs("unexpected argument " + pos.get(1));
            }
            Set<String> allowed = new HashSet<>(COMMON);
            allowed.addAll(PER_CMD.get(a.cmd));
            for (String k : a.opts.keySet()) {
                if (!allowed.contains(k)) {
                    throw new BadArgs("unknown option --" + k + " for " + a.cmd);
                }
            }
            for (String k : a.flags) {
                if (!allowed.contains(k)) {
                    throw new BadArgs("unknown option --" + k + " for " + a.cmd);
                }
            }
            return a;
        }

        void validate() throws BadArgs {
            // --deadline-ms: values >= 1e12 are an absolute epoch-ms deadline, smaller values a duration from now.
            long d = lng("deadline-ms", 600_000L);
            long now = System.currentTimeMillis();
            deadline = d >= 1_000_000_000_000L ? d : now + Math.max(0, d);
            switch (cmd) {
                case "produce":
                    need("topic");
                    lng("interval-ms", 0);
                    lng("size", 0);
                    lng("count", 0);
                    lng("timeout-ms", 0);
                    lng("route-refresh-ms", 0);
                    break;
                case "consume":
                    need("topic");
                    lng("interval-ms", 0);
                    lng("batch", 0);
                    lng("timeout-ms", 0);
                    break;
                case "observe":
                    if (get("controllers") == null && get("brokers") == null) {
                        throw new BadArgs("observe needs --controllers and/or --brokers");
                    }
                    if (get("controllers") != null) {
                        need("set");
                    }
                    lng("interval-ms", 0);
                    lng("call-timeout-ms", 0);
                    break;
                case "admin":
                    switch (op) {
                        case "update-topic":
                            need("topic");
                            if (get("addr") == null && get("cluster") == null) {
                                throw new BadArgs("update-topic needs --addr BROKER_ADDR (or --cluster C with --namesrv)");
                            }
                            if (get("addr") == null) {
                                need("namesrv");
                            }
                            need("queues");
                            if (lng("queues", 0) < 1) {
                                throw new BadArgs("--queues must be >= 1");
                            }
                            break;
                        case "elect-master":
                            need("controllers");
                            need("cluster");
                            need("set");
                            need("broker-id");
                            lng("broker-id", 0);
                            break;
                        case "clean-broker-data":
                            need("controllers");
                            need("set");
                            if (!flag("clean-living")) {
                                need("cluster");
                            }
                            String ids = get("broker-ids");
                            if (ids != null) {
                                for (String s : ids.split("[;,]")) {
                                    try {
                                        Long.parseLong(s.trim());
                                    } catch (NumberFormatException e) {
                                        throw new BadArgs("--broker-ids must be ids separated by ';' or ','");
                                    }
                                }
                            }
                            break;
                        case "controller-config":
                            need("controllers");
                            break;
                        default:
                            throw new BadArgs("unknown admin operation " + op);
                    }
                    lng("timeout-ms", 0);
                    break;
                default:
                    break;
            }
        }

        String get(String k) {
            return opts.get(k);
        }

        String get(String k, String dflt) {
            String v = opts.get(k);
            return v == null ? dflt : v;
        }

        boolean flag(String k) {
            return flags.contains(k);
        }

        void need(String k) throws BadArgs {
            String v = opts.get(k);
            if (v == null || v.trim().isEmpty()) {
                throw new BadArgs(cmd + (op != null ? " " + op : "") + " needs --" + k);
            }
        }

        long lng(String k, long dflt) throws BadArgs {
            String v = opts.get(k);
            if (v == null) {
                return dflt;
            }
            try {
                long r = Long.parseLong(v.trim());
                if (r < 0) {
                    throw new BadArgs("--" + k + " must not be negative");
                }
                return r;
            } catch (NumberFormatException e) {
                throw new BadArgs("--" + k + " must be an integer, got " + v);
            }
        }

        /** lng without checked exception (after validate() succeeded). */
        long num(String k, long dflt) {
            try {
                return lng(k, dflt);
            } catch (BadArgs e) {
                throw new IllegalStateException(e);
            }
        }

        List<String> controllers() {
            List<String> r = new ArrayList<>();
            String c = get("controllers");
            if (c != null) {
                for (String s : c.split(";")) {
                    if (!s.trim().isEmpty()) {
                        r.add(s.trim());
                    }
                }
            }
            return r;
        }

        /** Applies --namesrv / --client-ip to any RocketMQ client config. */
        void configure(ClientConfig cc) {
            if (get("namesrv") != null) {
                cc.setNamesrvAddr(get("namesrv"));
            } else {
                // No name server given (observe/admin against controllers or brokers only): set a dead address so
                // the client never falls back to its HTTP name-server lookup; admin clients register no topics and
                // so never query it.
                cc.setNamesrvAddr("127.0.0.1:1");
            }
            if (get("client-ip") != null) {
                cc.setClientIP(get("client-ip"));
            }
            cc.setInstanceName("rmqha-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        }
    }

    static JSONObject startLine(String cmd) {
        JSONObject o = line("start");
        o.put("cmd", cmd);
        o.put("clientVersion", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
        o.put("jvmUptimeMs", java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime());
        o.put("deadline", deadline);
        return o;
    }

    static JSONObject endLine() {
        JSONObject o = line("end");
        o.put("reason", stopReason == null ? "done" : stopReason);
        return o;
    }

    /** Runs r in a helper thread and waits at most ms for it (client shutdown must not hang the exit). */
    static void bounded(String name, Runnable r, long ms) {
        Thread t = new Thread(() -> {
            try {
                r.run();
            } catch (Throwable e) {
                System.err.println("rmqha-tool: " + name + ": " + e);
            }
        }, "rmqha-" + name);
        t.setDaemon(true);
        t.start();
        try {
            t.join(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------ produce

    static final class Produce {
        private Produce() {
        }

        @SuppressWarnings("deprecation") // getDefaultMQProducerImpl(): the only route to the client's broker-address table
        static void run(Args a) throws Exception {
            String topic = a.get("topic");
            String group = a.get("group", "rmqha_producer");
            long interval = a.num("interval-ms", 100);
            int size = (int) a.num("size", 64);
            String prefix = a.get("key-prefix", "k");
            long count = a.num("count", 0); // 0 = unbounded (until deadline/stop)
            int timeout = (int) a.num("timeout-ms", 3000);
            long routeRefresh = a.num("route-refresh-ms", 30_000); // RocketMQ's default pollNameServerInterval

            DefaultMQProducer p = new DefaultMQProducer(group);
            a.configure(p);
            p.setRetryTimesWhenSendFailed(0);
            p.setRetryAnotherBrokerWhenNotStoreOK(false);
            p.setSendLatencyFaultEnable(false);
            p.setSendMsgTimeout(timeout);
            p.setPollNameServerInterval((int) Math.max(100, routeRefresh));
            long t0 = System.currentTimeMillis();
            p.start();
            JSONObject st = startLine("produce");
            st.put("clientStartMs", System.currentTimeMillis() - t0);
            emit(st);
            MQClientInstance factory = p.getDefaultMQProducerImpl().getMqClientFactory();
            long sent = 0;
            Map<String, Long> statusCounts = new TreeMap<>();
            try {
                for (long seq = 1; count == 0 || seq <= count; seq++) {
                    if (shouldStop()) {
                        break;
                    }
                    final long s = seq;
                    String key = prefix + seq;
                    Message msg = new Message(topic, "", key, body(key, size));
                    final String[] chosenAddr = new String[1];
                    MessageQueueSelector sel = (mqs, m, arg) -> {
                        // deterministic round-robin over the route's write queues, by sequence number
                        MessageQueue mq = mqs.get((int) ((s - 1) % mqs.size()));
                        chosenAddr[0] = factory.findBrokerAddressInPublish(mq.getBrokerName());
                        return mq;
                    };
                    JSONObject o = line("send");
                    o.put("key", key);
                    o.put("seq", seq);
                    emit(o);
                    sent++;
                    long b = System.currentTimeMillis();
                    JSONObject r = new JSONObject();
                    r.put("k", "send-result");
                    r.put("key", key);
                    try {
                        SendResult res = p.send(msg, sel, seq, timeout);
                        r.put("t", System.currentTimeMillis());
                        r.put("seq", seq);
                        r.put("status", res.getSendStatus().name());
                        MessageQueue mq = res.getMessageQueue();
                        r.put("broker", mq == null ? null : mq.getBrokerName());
                        r.put("addr", chosenAddr[0]);
                        r.put("queue", mq == null ? null : mq.getQueueId());
                        r.put("queueOffset", res.getQueueOffset());
                        r.put("msgId", res.getMsgId());
                        r.put("offsetMsgId", res.getOffsetMsgId());
                        putCommitLogOffset(r, res.getOffsetMsgId());
                    } catch (Throwable e) {
                        if (e instanceof InterruptedException) {
                            Thread.currentThread().interrupt();
                        }
                        r.put("t", System.currentTimeMillis());
                        r.put("seq", seq);
                        r.put("status", "error");
                        putError(r, e);
                        if (chosenAddr[0] != null) {
                            r.put("addr", chosenAddr[0]);
                        }
                    }
                    r.put("rtMs", System.currentTimeMillis() - b);
                    statusCounts.merge(r.getString("status"), 1L, Long::sum);
                    emit(r);
                    if (interval > 0 && !sleepMs(interval)) {
                        break;
                    }
                }
                if (!stopping) {
                    requestStop(count > 0 ? "count" : "done");
                }
            } finally {
                JSONObject e = endLine();
                e.put("sent", sent);
                e.put("statusCounts", statusCounts);
                emit(e);
                bounded("producer-shutdown", p::shutdown, 1000);
            }
        }

        static byte[] body(String key, int size) {
            byte[] k = key.getBytes(StandardCharsets.UTF_8);
            if (k.length >= size) {
                return k;
            }
            byte[] b = new byte[size];
            System.arraycopy(k, 0, b, 0, k.length);
            Arrays.fill(b, k.length, size, (byte) '.');
            return b;
        }

        static void putCommitLogOffset(JSONObject r, String offsetMsgId) {
            if (offsetMsgId == null || offsetMsgId.isEmpty()) {
                return;
            }
            try {
                MessageId id = MessageDecoder.decodeMessageId(offsetMsgId);
                r.put("commitLogOffset", id.getOffset());
                r.put("storeHost", hostPort(id.getAddress()));
            } catch (Exception e) {
                r.put("commitLogOffsetError", err(e));
            }
        }
    }

    // ------------------------------------------------------------------ consume

    @SuppressWarnings("deprecation") // DefaultMQPullConsumer is deprecated but is the API that pulls (queue, offset) directly
    static final class Consume {
        private Consume() {
        }

        static final Comparator<MessageQueue> MQ_ORDER =
            Comparator.comparing(MessageQueue::getBrokerName).thenComparingInt(MessageQueue::getQueueId);

        static final class QState {
            long offset;
            String lastErr;
            long lastErrT;
            int suppressed;
            String lastStatus; // last printed pull-status signature
            long committed = -1;
        }

        static void run(Args a) throws Exception {
            String topic = a.get("topic");
            String group = a.get("group", "rmqha_consumer");
            long interval = a.num("interval-ms", 200);
            int batch = (int) Math.max(1, Math.min(1024, a.num("batch", 32)));
            long timeout = a.num("timeout-ms", 3000);
            boolean commit = a.flag("commit");

            org.apache.rocketmq.client.consumer.DefaultMQPullConsumer c =
                new org.apache.rocketmq.client.consumer.DefaultMQPullConsumer(group);
            a.configure(c);
            c.setConsumerPullTimeoutMillis(timeout);
            long t0 = System.currentTimeMillis();
            c.start();
            JSONObject st = startLine("consume");
            st.put("clientStartMs", System.currentTimeMillis() - t0);
            emit(st);
            MQClientInstance factory = c.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory();
            Map<MessageQueue, QState> qs = new TreeMap<>(MQ_ORDER);
            long seen = 0;
            String lastRouteErr = null;
            long lastRouteErrT = 0;
            try {
                while (!shouldStop()) {
                    long roundStart = System.currentTimeMillis();
                    // refresh queue list (and the client's broker address table) from the name server each round
                    try {
                        factory.updateTopicRouteInfoFromNameServer(topic);
                        Set<MessageQueue> mqs = c.fetchSubscribeMessageQueues(topic);
                        for (MessageQueue mq : mqs) {
                            qs.computeIfAbsent(mq, x -> new QState());
                        }
                        lastRouteErr = null;
                    } catch (Throwable e) {
                        String es = err(e);
                        long now = System.currentTimeMillis();
                        if (!es.equals(lastRouteErr) || now - lastRouteErrT >= 1000) {
                            JSONObject o = line("route-error");
                            o.put("topic", topic);
                            putError(o, e);
                            emit(o);
                            lastRouteErr = es;
                            lastRouteErrT = now;
                        }
                    }
                    for (Map.Entry<MessageQueue, QState> en : qs.entrySet()) {
                        if (shouldStop()) {
                            break;
                        }
                        seen += drain(c, en.getKey(), en.getValue(), batch, timeout);
                        if (commit) {
                            commitOffset(c, en.getKey(), en.getValue());
                        }
                    }
                    if (!sleepMs(interval - (System.currentTimeMillis() - roundStart))) {
                        break;
                    }
                }
            } finally {
                JSONObject e = endLine();
                e.put("seenCount", seen);
                JSONObject offs = new JSONObject();
                for (Map.Entry<MessageQueue, QState> en : qs.entrySet()) {
                    offs.put(en.getKey().getBrokerName() + ":" + en.getKey().getQueueId(), en.getValue().offset);
                }
                e.put("offsets", offs);
                emit(e);
                bounded("consumer-shutdown", c::shutdown, 1000);
            }
        }

        /** Pulls one queue until it has nothing new (bounded per round); returns messages printed. */
        static long drain(org.apache.rocketmq.client.consumer.DefaultMQPullConsumer c, MessageQueue mq, QState q,
            int batch, long timeout) {
            long n = 0;
            for (int i = 0; i < 64 && !shouldStop(); i++) {
                PullResult pr;
                long from = q.offset;
                try {
                    pr = c.pull(mq, "*", from, batch, Math.max(100, Math.min(timeout, remainingMs())));
                } catch (Throwable e) {
                    if (e instanceof InterruptedException) {
                        Thread.currentThread().interrupt();
                        requestStop("interrupted");
                    }
                    pullError(mq, q, from, e);
                    return n;
                }
                q.lastErr = null;
                PullStatus ps = pr.getPullStatus();
                if (ps == PullStatus.FOUND) {
                    List<MessageExt> msgs = pr.getMsgFoundList();
                    if (msgs != null) {
                        for (MessageExt m : msgs) {
                            JSONObject o = line("seen");
                            o.put("key", m.getKeys());
                            o.put("queue", mq.getQueueId());
                            o.put("queueOffset", m.getQueueOffset());
                            o.put("commitLogOffset", m.getCommitLogOffset());
                            o.put("broker", mq.getBrokerName());
                            o.put("storeHost", hostPort(m.getStoreHost()));
                            o.put("bornTimestamp", m.getBornTimestamp());
                            o.put("storeTimestamp", m.getStoreTimestamp());
                            o.put("msgId", m.getMsgId());
                            o.put("bodySize", m.getBody() == null ? 0 : m.getBody().length);
                            emit(o);
                            n++;
                        }
                    }
                    q.lastStatus = null;
                    q.offset = pr.getNextBeginOffset();
                    continue;
                }
                if (ps == PullStatus.NO_NEW_MSG) {
                    q.lastStatus = null;
                    if (pr.getNextBeginOffset() != from) {
                        statusLine(mq, q, pr, from);
                        q.offset = pr.getNextBeginOffset();
                    }
                    return n;
                }
                // NO_MATCHED_MSG / OFFSET_ILLEGAL: report once per change and follow the broker's nextBeginOffset
                // (for an offset beyond a truncated queue this re-reads the re-used offsets; the harness sees both).
                statusLine(mq, q, pr, from);
                if (pr.getNextBeginOffset() == from) {
                    return n;
                }
                q.offset = pr.getNextBeginOffset();
            }
            return n;
        }

        static void statusLine(MessageQueue mq, QState q, PullResult pr, long from) {
            String sig = pr.getPullStatus() + "/" + from + "/" + pr.getNextBeginOffset() + "/" + pr.getMinOffset()
                + "/" + pr.getMaxOffset();
            if (sig.equals(q.lastStatus)) {
                return;
            }
            q.lastStatus = sig;
            JSONObject o = line("pull-status");
            o.put("broker", mq.getBrokerName());
            o.put("queue", mq.getQueueId());
            o.put("offset", from);
            o.put("status", pr.getPullStatus().name());
            o.put("nextBeginOffset", pr.getNextBeginOffset());
            o.put("minOffset", pr.getMinOffset());
            o.put("maxOffset", pr.getMaxOffset());
            emit(o);
        }

        static void pullError(MessageQueue mq, QState q, long from, Throwable e) {
            String es = err(e);
            long now = System.currentTimeMillis();
            if (es.equals(q.lastErr) && now - q.lastErrT < 1000) {
                q.suppressed++;
                return;
            }
            JSONObject o = line("pull-error");
            o.put("broker", mq.getBrokerName());
            o.put("queue", mq.getQueueId());
            o.put("offset", from);
            putError(o, e);
            if (q.suppressed > 0) {
                o.put("suppressed", q.suppressed);
            }
            emit(o);
            q.lastErr = es;
            q.lastErrT = now;
            q.suppressed = 0;
        }

        static void commitOffset(org.apache.rocketmq.client.consumer.DefaultMQPullConsumer c, MessageQueue mq,
            QState q) {
            if (q.offset == q.committed) {
                return;
            }
            JSONObject o = line("commit");
            o.put("broker", mq.getBrokerName());
            o.put("queue", mq.getQueueId());
            o.put("offset", q.offset);
            try {
                c.getOffsetStore().updateConsumeOffsetToBroker(mq, q.offset, false);
                q.committed = q.offset;
                o.put("ok", true);
            } catch (Throwable e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                o.put("ok", false);
                putError(o, e);
            }
            emit(o);
        }
    }

    // ------------------------------------------------------------------ observe

    static final class Observe {
        private Observe() {
        }

        static void run(Args a) throws Exception {
            List<String> ctls = a.controllers();
            String set = a.get("set");
            List<String> brokers = new ArrayList<>();
            if (a.get("brokers") != null) {
                for (String s : a.get("brokers").split("[,;]")) {
                    if (!s.trim().isEmpty()) {
                        brokers.add(s.trim());
                    }
                }
            }
            long interval = a.num("interval-ms", 1000);
            long callTimeout = Math.max(100, a.num("call-timeout-ms", 1500));
            boolean once = a.flag("once");

            // RocketMQ's own timeout for the broker calls; the per-round cut-off below is what bounds a snapshot
            DefaultMQAdminExt admin = new DefaultMQAdminExt(Math.max(callTimeout, 3000));
            a.configure(admin);
            long t0 = System.currentTimeMillis();
            admin.start();
            ExecutorService pool = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "rmqha-observe");
                t.setDaemon(true);
                return t;
            });
            JSONObject st = startLine("observe");
            st.put("clientStartMs", System.currentTimeMillis() - t0);
            emit(st);
            long round = 0;
            try {
                while (!shouldStop()) {
                    round++;
                    long roundStart = System.currentTimeMillis();
                    // the first round also pays for class loading and connection set-up: allow it >= 3 s
                    long callDeadline = roundStart + (round == 1 ? Math.max(callTimeout, 3000) : callTimeout);
                    // fire every call of the round at once, then collect each within the same call deadline
                    List<Future<?>[]> ctlCalls = new ArrayList<>();
                    for (String c : ctls) {
                        Future<?> meta = pool.submit(timed(() -> admin.getControllerMetaData(c)));
                        Future<?> sss = pool.submit(timed(() -> admin.getInSyncStateData(c,
                            Collections.singletonList(set))));
                        ctlCalls.add(new Future<?>[] {meta, sss});
                    }
                    List<Future<?>[]> brkCalls = new ArrayList<>();
                    for (String b : brokers) {
                        Future<?> stats = pool.submit(timed(() -> admin.fetchBrokerRuntimeStats(b)));
                        Future<?> ha = pool.submit(timed(() -> admin.getBrokerHAStatus(b)));
                        Future<?> ep = pool.submit(timed(() -> admin.getBrokerEpochCache(b)));
                        brkCalls.add(new Future<?>[] {stats, ha, ep});
                    }
                    for (int i = 0; i < ctls.size(); i++) {
                        emit(ctlLine(ctls.get(i), set, round, ctlCalls.get(i), callDeadline));
                    }
                    for (int i = 0; i < brokers.size(); i++) {
                        emit(brkLine(brokers.get(i), round, brkCalls.get(i), callDeadline));
                    }
                    if (once) {
                        requestStop("once");
                        break;
                    }
                    if (!sleepMs(interval - (System.currentTimeMillis() - roundStart))) {
                        break;
                    }
                }
            } finally {
                JSONObject e = endLine();
                e.put("rounds", round);
                emit(e);
                pool.shutdownNow();
                bounded("admin-shutdown", admin::shutdown, 1000);
            }
        }

        /** The call, answering {its result, when its answer came (ms)}: a line's "at" says when each part was true,
         * whenever the line itself is written (a round's lines are written in order, after the calls before them). */
        static Callable<Object[]> timed(Callable<?> call) {
            return () -> {
                Object r = call.call();
                return new Object[] {r, System.currentTimeMillis()};
            };
        }

        /** The result of a timed call, its answer time put in at under name. */
        static Object answer(Future<?> f, long until, JSONObject at, String name) throws Exception {
            Object[] r = (Object[]) await(f, until);
            at.put(name, r[1]);
            return r[0];
        }

        /** Waits for f until the absolute time until (ms); throws the call's failure or a TimeoutException. */
        static Object await(Future<?> f, long until) throws Exception {
            long wait = Math.max(1, until - System.currentTimeMillis());
            try {
                return f.get(wait, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                f.cancel(true);
                throw new TimeoutException("no answer within the call timeout");
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof Exception) {
                    throw (Exception) c;
                }
                throw e;
            }
        }

        static JSONObject ctlLine(String addr, String set, long round, Future<?>[] calls, long until) {
            JSONObject o = line("ctl");
            o.put("addr", addr);
            o.put("round", round);
            JSONObject at = new JSONObject();
            o.put("at", at);
            String error = null;
            JSONObject meta = null;
            JSONObject setJ = null;
            try {
                GetMetaDataResponseHeader m = (GetMetaDataResponseHeader) answer(calls[0], until, at, "meta");
                meta = (JSONObject) toJson(m);
            } catch (Throwable e) {
                error = "meta: " + err(e);
            }
            try {
                BrokerReplicasInfo info = (BrokerReplicasInfo) answer(calls[1], until, at, "set");
                BrokerReplicasInfo.ReplicasInfo ri =
                    info == null || info.getReplicasInfoTable() == null ? null : info.getReplicasInfoTable().get(set);
                if (ri != null) {
                    setJ = replicas(ri);
                } else if (error == null) {
                    error = "set: no replicas info for " + set;
                }
            } catch (Throwable e) {
                error = (error == null ? "" : error + "; ") + "set: " + err(e);
            }
            o.put("ok", error == null);
            if (error != null) {
                o.put("error", error);
            }
            o.put("meta", meta);
            o.put("set", setJ);
            return o;
        }

        /** The controller's replicas info, generically, plus the derived syncStateSet ids and broker list. */
        static JSONObject replicas(BrokerReplicasInfo.ReplicasInfo ri) {
            JSONObject j = new JSONObject();
            JSONObject gen = (JSONObject) toJson(ri);
            j.putAll(gen);
            JSONArray sss = new JSONArray();
            Map<Long, JSONObject> all = new TreeMap<>();
            if (ri.getInSyncReplicas() != null) {
                for (BrokerReplicasInfo.ReplicaIdentity id : ri.getInSyncReplicas()) {
                    sss.add(id.getBrokerId());
                    all.put(id.getBrokerId(), identity(id, true));
                }
            }
            if (ri.getNotInSyncReplicas() != null) {
                for (BrokerReplicasInfo.ReplicaIdentity id : ri.getNotInSyncReplicas()) {
                    all.putIfAbsent(id.getBrokerId(), identity(id, false));
                }
            }
            sss.sort(Comparator.comparingLong(x -> ((Number) x).longValue()));
            j.put("syncStateSet", sss);
            JSONArray bl = new JSONArray();
            bl.addAll(all.values());
            j.put("brokers", bl);
            return j;
        }

        static JSONObject identity(BrokerReplicasInfo.ReplicaIdentity id, boolean inSync) {
            JSONObject b = new JSONObject();
            b.put("brokerId", id.getBrokerId());
            b.put("address", id.getBrokerAddress());
            b.put("alive", id.getAlive());
            b.put("inSync", inSync);
            return b;
        }

        static JSONObject brkLine(String addr, long round, Future<?>[] calls, long until) {
            JSONObject o = line("brk");
            o.put("addr", addr);
            o.put("round", round);
            JSONObject at = new JSONObject();
            o.put("at", at);
            List<String> errors = new ArrayList<>();
            Object stats = null;
            Object ha = null;
            JSONObject epochs = null;
            try {
                KVTable kv = (KVTable) answer(calls[0], until, at, "stats");
                stats = kv == null || kv.getTable() == null ? null : new TreeMap<>(kv.getTable());
            } catch (Throwable e) {
                errors.add("stats: " + err(e));
            }
            try {
                HARuntimeInfo h = (HARuntimeInfo) answer(calls[1], until, at, "ha");
                ha = toJson(h);
            } catch (Throwable e) {
                errors.add("ha: " + err(e));
            }
            try {
                EpochEntryCache ec = (EpochEntryCache) answer(calls[2], until, at, "epochs");
                epochs = (JSONObject) toJson(ec);
            } catch (Throwable e) {
                errors.add("epochs: " + err(e));
            }
            o.put("ok", errors.isEmpty());
            if (!errors.isEmpty()) {
                o.put("error", String.join("; ", errors));
            }
            o.put("stats", stats);
            o.put("ha", ha);
            if (epochs != null) {
                // every field of the epoch-cache answer at top level (brokerId, brokerName, clusterName, maxOffset,
                // and masterEpoch/syncStateSet... if a version carries them); the epoch list as "epochs"
                Object list = epochs.remove("epochList");
                for (Map.Entry<String, Object> en : epochs.entrySet()) {
                    if (!o.containsKey(en.getKey())) {
                        o.put(en.getKey(), en.getValue());
                    }
                }
                o.put("epochs", list == null ? new JSONArray() : list);
            } else {
                o.put("epochs", null);
            }
            return o;
        }
    }

    // ------------------------------------------------------------------ admin

    static final class Admin {
        private Admin() {
        }

        interface ControllerCall {
            Object call(String controllerAddr) throws Exception;
        }

        static void run(Args a) throws Exception {
            long timeout = Math.max(100, a.num("timeout-ms", 5000));
            DefaultMQAdminExt admin = new DefaultMQAdminExt(timeout);
            a.configure(admin);
            admin.start();
            JSONObject o = line("admin");
            o.put("op", a.op);
            try {
                Object result;
                switch (a.op) {
                    case "update-topic":
                        result = updateTopic(a, admin);
                        break;
                    case "elect-master":
                        result = onLeader(a, o, c -> {
                            Pair<ElectMasterResponseHeader, BrokerMemberGroup> p = admin.electMaster(c,
                                a.get("cluster"), a.get("set"), a.num("broker-id", 0));
                            JSONObject r = new JSONObject();
                            r.put("header", toJson(p.getObject1()));
                            r.put("memberGroup", toJson(p.getObject2()));
                            return r;
                        });
                        break;
                    case "clean-broker-data":
                        result = onLeader(a, o, c -> {
                            String ids = a.get("broker-ids");
                            ids = ids == null ? null : String.join(";", ids.trim().split("\\s*[;,]\\s*"));
                            admin.cleanControllerBrokerData(c, a.get("cluster"), a.get("set"), ids,
                                a.flag("clean-living"));
                            JSONObject r = new JSONObject();
                            r.put("cluster", a.get("cluster"));
                            r.put("set", a.get("set"));
                            r.put("brokerIds", ids);
                            r.put("cleanLivingBroker", a.flag("clean-living"));
                            return r;
                        });
                        break;
                    case "controller-config":
                        result = controllerConfig(a, admin, o);
                        break;
                    default:
                        throw new IllegalStateException("unreachable");
                }
                if (!o.containsKey("ok")) {
                    o.put("ok", true);
                }
                o.put("result", result);
            } catch (Throwable e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                o.put("ok", false);
                putError(o, e);
            } finally {
                o.put("t", System.currentTimeMillis());
                emit(o);
                bounded("admin-shutdown", admin::shutdown, 1000);
            }
        }

        static Object updateTopic(Args a, DefaultMQAdminExt admin) throws Exception {
            int n = (int) a.num("queues", 0);
            TopicConfig tc = new TopicConfig(a.get("topic"), n, n, PermName.PERM_READ | PermName.PERM_WRITE);
            List<String> addrs = new ArrayList<>();
            if (a.get("addr") != null) {
                for (String s : a.get("addr").split("[,;]")) {
                    if (!s.trim().isEmpty()) {
                        addrs.add(s.trim());
                    }
                }
            } else {
                addrs.addAll(new java.util.TreeSet<>(CommandUtil.fetchMasterAddrByClusterName(admin, a.get("cluster"))));
            }
            for (String addr : addrs) {
                admin.createAndUpdateTopicConfig(addr, tc);
            }
            JSONObject r = new JSONObject();
            r.put("addrs", addrs);
            r.put("topicConfig", toJson(tc));
            return r;
        }

        /** Calls fn on each controller in order until one answers (the client forwards to the controller leader). */
        static Object onLeader(Args a, JSONObject o, ControllerCall fn) throws Exception {
            JSONObject errs = new JSONObject();
            Exception last = null;
            for (String c : a.controllers()) {
                if (shouldStop()) {
                    break;
                }
                try {
                    Object r = fn.call(c);
                    if (r instanceof JSONObject) {
                        ((JSONObject) r).put("controller", c);
                    }
                    if (!errs.isEmpty()) {
                        o.put("errors", errs);
                    }
                    return r;
                } catch (Exception e) {
                    if (e instanceof InterruptedException) {
                        throw e;
                    }
                    errs.put(c, err(e));
                    last = e;
                }
            }
            o.put("errors", errs);
            if (last != null) {
                throw last;
            }
            throw new IllegalStateException("stopped before any controller answered");
        }

        static Object controllerConfig(Args a, DefaultMQAdminExt admin, JSONObject o) throws Exception {
            JSONObject r = new JSONObject();
            JSONObject errs = new JSONObject();
            for (String c : a.controllers()) {
                try {
                    Map<String, Properties> m = admin.getControllerConfig(Collections.singletonList(c));
                    Properties p = m == null ? null : m.get(c);
                    r.put(c, p == null ? null : new TreeMap<>(p));
                } catch (Exception e) {
                    if (e instanceof InterruptedException) {
                        throw e;
                    }
                    errs.put(c, err(e));
                }
            }
            if (!errs.isEmpty()) {
                o.put("ok", false);
                o.put("errors", errs);
                o.put("error", errs.values().iterator().next());
            }
            return r;
        }
    }
}
