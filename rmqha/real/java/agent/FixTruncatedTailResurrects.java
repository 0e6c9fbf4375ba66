/*
 * rmqha agent, fix rule of F-TRUNCATED-TAIL-RESURRECTS (docs/findings/F-TRUNCATED-TAIL-RESURRECTS.md; the kit's
 * switch fix-truncate-clears-file, impl/bugs.py): a truncation of the commit log clears the mapped file past the
 * new write position, so a later recovery scan (CommitLog.recoverAbnormally / recoverNormally, which walk the
 * file up to the first invalid record) cannot read the cut messages back.
 *
 * Where: the normal exit of CommitLog.truncateDirtyFiles(long), the truncation the HA paths make
 * (AutoSwitchHAClient.doTruncate and AutoSwitchHAService.truncateInvalidMsg, through
 * DefaultMessageStore.truncateDirtyFiles). MappedFileQueue.truncateDirtyFiles has by then moved the write,
 * commit and flush positions of the file holding the offset back and deleted the files wholly past it; the rule
 * writes zeros from the offset to the end of that file, through the file's own mapping (the page cache a recovery
 * reads after a kill). Recovery's own truncations (MappedFileQueue.truncateDirtyFiles called from
 * recoverNormally / recoverAbnormally) are not changed. With transientStorePoolEnable the write buffer is not
 * cleared (the kit does not run that mode).
 */
package rmqha.agent;

import java.nio.ByteBuffer;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.logfile.MappedFile;

public final class FixTruncatedTailResurrects extends Fix {
    private static final int CHUNK = 64 * 1024;

    @Override
    public String finding() {
        return "F-TRUNCATED-TAIL-RESURRECTS";
    }

    @Override
    public String kitSwitch() {
        return "fix-truncate-clears-file";
    }

    @Override
    public String cls() {
        return "org.apache.rocketmq.store.CommitLog";
    }

    @Override
    public String method() {
        return "truncateDirtyFiles";
    }

    @Override
    public String at() {
        return "exit";
    }

    @Override
    public String kind() {
        return "broker";
    }

    @Override
    public String what() {
        return "after CommitLog.truncateDirtyFiles(offset), zeros from the offset to the end of the mapped file "
            + "holding it";
    }

    @Override
    public void apply(Object self, Object[] args) {
        CommitLog log = (CommitLog) self;
        long offset = ((Number) args[0]).longValue();
        for (MappedFile f : log.getMappedFileQueue().getMappedFiles()) {
            long from = f.getFileFromOffset();
            int size = f.getFileSize();
            if (offset < from || offset >= from + size) {
                continue;
            }
            int pos = (int) (offset - from);
            ByteBuffer buf = f.getMappedByteBuffer().duplicate();
            byte[] zeros = new byte[CHUNK];
            long nonZero = 0;
            long lastNonZero = -1;
            for (int p = pos; p < size; p++) {
                if (buf.get(p) != 0) {
                    nonZero++;
                    lastNonZero = p;
                }
            }
            for (int p = pos; p < size; p += CHUNK) {
                buf.position(p);
                buf.put(zeros, 0, Math.min(CHUNK, size - p));
            }
            Events.emit("fix", Json.obj("fix", finding(), "kitSwitch", kitSwitch(), "at", "CommitLog.truncateDirtyFiles",
                "offset", offset, "file", f.getFileName(), "fileFrom", from, "clearedFrom", (long) pos,
                "clearedBytes", (long) (size - pos), "nonZeroBytes", nonZero,
                "residueEnd", lastNonZero < 0 ? null : from + lastNonZero + 1));
            return;
        }
        Events.emit("fix", Json.obj("fix", finding(), "kitSwitch", kitSwitch(), "at", "CommitLog.truncateDirtyFiles",
            "offset", offset, "clearedBytes", 0L, "why", "no mapped file holds the offset"));
    }
}
