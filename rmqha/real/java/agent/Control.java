/*
 * rmqha agent: the control socket. A Unix socket at the path the node's config names (in the run's folder: a path
 * reaches the JVM in its network namespace, as supervisor.sock does). One JSON request per line, one JSON answer
 * per line, then the connection closes: {"op": "arm", ...}, {"op": "disarm", "id"}, {"op": "release", "id"},
 * {"op": "list"}, {"op": "status"}, {"op": "points"}. One daemon thread; each request is bounded (64 KiB, 10 s).
 */
package rmqha.agent;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

final class Control implements Runnable {
    private static final int MAX_REQUEST = 64 * 1024;
    private final ServerSocketChannel server;

    private Control(ServerSocketChannel server) {
        this.server = server;
    }

    static void start(String path) throws IOException {
        Path p = Path.of(path);
        Files.deleteIfExists(p);
        ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        s.bind(UnixDomainSocketAddress.of(p));
        Thread t = new Thread(new Control(s), "rmqha-agent-control");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void run() {
        while (true) {
            try (SocketChannel c = server.accept()) {
                serve(c);
            } catch (Throwable e) {
                if (!server.isOpen()) {
                    return;
                }
                System.err.println("rmqha-agent: control: " + e);
            }
        }
    }

    private static void serve(SocketChannel c) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(MAX_REQUEST);
        long end = System.currentTimeMillis() + 10_000;
        int nl = -1;
        while (nl < 0 && buf.hasRemaining() && System.currentTimeMillis() < end) {
            int n = c.read(buf);
            if (n < 0) {
                break;
            }
            for (int k = 0; k < buf.position(); k++) {
                if (buf.get(k) == '\n') {
                    nl = k;
                    break;
                }
            }
        }
        String line = new String(buf.array(), 0, nl < 0 ? buf.position() : nl, StandardCharsets.UTF_8);
        Map<String, Object> ans;
        try {
            ans = handle(Json.object(line));
        } catch (IllegalArgumentException | ClassCastException e) {
            ans = Failpoints.err("bad request: " + e.getMessage());
        }
        ByteBuffer out = ByteBuffer.wrap((Json.write(ans) + "\n").getBytes(StandardCharsets.UTF_8));
        while (out.hasRemaining()) {
            c.write(out);
        }
    }

    static Map<String, Object> handle(Map<String, Object> req) {
        String op = String.valueOf(req.get("op"));
        switch (op) {
            case "arm":
                return Failpoints.arm(req);
            case "disarm":
                return Failpoints.disarm(String.valueOf(req.get("id")));
            case "release":
                return Failpoints.release(String.valueOf(req.get("id")));
            case "list":
                return Failpoints.list();
            case "points":
                return Failpoints.points();
            case "status":
                return Agent.status();
            default:
                return Failpoints.err("unknown op " + op + " (arm, disarm, release, list, points, status)");
        }
    }
}
