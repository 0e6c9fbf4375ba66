import com.alipay.sofa.jraft.entity.LogEntry;
import com.alipay.sofa.jraft.entity.PeerId;
import com.alipay.sofa.jraft.entity.codec.LogEntryDecoder;
import com.alipay.sofa.jraft.entity.codec.v2.LogEntryV2CodecFactory;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

/**
 * Prints a stopped JRaft controller's log (controllerStorePath/log, sofa-jraft's RocksDB log storage) as JSON
 * lines, one per entry in index order: {"index", "term", "type", "data" (base64), "peers", "corrupted"}.
 *
 * Read-only: the database is opened with RocksDB.openReadOnly. The layout, from sofa-jraft's RocksDBLogStorage:
 * two column families, "Configuration" (configuration entries, and the key "meta/firstLogIndex" holding the first
 * index kept after a snapshot) and the default one (every entry); a key is the index as 8 big-endian bytes, a value
 * a LogEntry encoded by the LogEntryCodecFactory (the V2 decoder detects V1 too). Entries below firstLogIndex are
 * left out, as the storage would not return them.
 *
 * Usage: java -cp DIR:ROCKETMQ_CLASSPATH JraftDump CONTROLLER_STORE_PATH/log
 * Exit status: 0 done, 2 usage or cannot open the database, 3 an entry does not decode.
 */
public final class JraftDump {
    private static final byte[] FIRST_LOG_IDX_KEY = "meta/firstLogIndex".getBytes(StandardCharsets.UTF_8);

    private JraftDump() {
    }

    private static long readLong(byte[] b) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (b[i] & 0xFFL);
        }
        return v;
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        // Only the JSON lines go to stdout: the libraries' logging (logback prints its status there) goes to stderr.
        PrintStream json = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        if (args.length != 1) {
            System.err.println("usage: JraftDump CONTROLLER_STORE_PATH/log");
            System.exit(2);
        }
        RocksDB.loadLibrary();
        List<ColumnFamilyDescriptor> cfs = new ArrayList<>();
        ColumnFamilyOptions cfOptions = new ColumnFamilyOptions();
        cfs.add(new ColumnFamilyDescriptor("Configuration".getBytes(StandardCharsets.UTF_8), cfOptions));
        cfs.add(new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cfOptions));
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        RocksDB db;
        try {
            db = RocksDB.openReadOnly(new DBOptions(), args[0], cfs, handles);
        } catch (Exception e) {
            System.err.println("cannot open " + args[0] + ": " + e.getMessage());
            System.exit(2);
            return;
        }
        ColumnFamilyHandle conf = handles.get(0);
        ColumnFamilyHandle data = handles.get(1);
        long first = Long.MIN_VALUE;
        byte[] firstBytes = db.get(conf, FIRST_LOG_IDX_KEY);
        if (firstBytes != null && firstBytes.length == 8) {
            first = readLong(firstBytes);
        }
        LogEntryDecoder decoder = LogEntryV2CodecFactory.getInstance().decoder();
        StringBuilder out = new StringBuilder();
        try (RocksIterator it = db.newIterator(data)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                byte[] key = it.key();
                if (key.length != 8) {
                    continue;
                }
                long index = readLong(key);
                if (index < first) {
                    continue;
                }
                LogEntry entry = decoder.decode(it.value());
                if (entry == null) {
                    System.err.println("entry " + index + " does not decode");
                    System.exit(3);
                }
                byte[] payload = new byte[0];
                ByteBuffer buf = entry.getData();
                if (buf != null) {
                    ByteBuffer dup = buf.duplicate();
                    payload = new byte[dup.remaining()];
                    dup.get(payload);
                }
                out.setLength(0);
                out.append("{\"index\":").append(index)
                    .append(",\"term\":").append(entry.getId().getTerm())
                    .append(",\"type\":").append(quote(String.valueOf(entry.getType())))
                    .append(",\"data\":").append(quote(Base64.getEncoder().encodeToString(payload)))
                    .append(",\"peers\":[");
                List<PeerId> peers = entry.getPeers();
                if (peers != null) {
                    for (int i = 0; i < peers.size(); i++) {
                        out.append(i == 0 ? "" : ",").append(quote(peers.get(i).toString()));
                    }
                }
                out.append("],\"corrupted\":").append(entry.hasChecksum() && entry.isCorrupted()).append('}');
                json.println(out);
            }
        }
        for (ColumnFamilyHandle h : handles) {
            h.close();
        }
        db.close();
        json.flush();
    }
}
