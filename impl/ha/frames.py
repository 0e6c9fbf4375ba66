"""AutoSwitchHA wire frames, byte for byte (``AutoSwitchHAClient`` / ``AutoSwitchHAConnection``: the handshake,
transfer and report headers they read and write). All integers are big-endian.

Slave -> master:
    HANDSHAKE  16 B  state=1:i32  isSyncFromLastFile:i16  isAsyncLearner:i16  slaveBrokerId:i64
    TRANSFER   12 B  state=2:i32  maxOffset:i64                      (an ack, or a keep-alive)

Master -> slave:
    HANDSHAKE  20 B + 12*N  state=1:i32 bodySize:i32 offset:i64 epoch:i32 | N x (epoch:i32 startOffset:i64)
    TRANSFER   36 B + body  state=2:i32 bodySize:i32 offset:i64 epoch:i32 epochStartOffset:i64
                            confirmOffset:i64 | commit-log bytes

Decoding is incremental: bytes are fed as they arrive and whole frames come out. A frame that cannot be
valid raises ``FrameError`` with a one-line reason; the connection that received it is closed, as
RocketMQ's reader does when ``processReadResult`` fails.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..codes import HAConnectionState
from ..wire import WireError

_S_HANDSHAKE = struct.Struct(">ihhq")
_S_TRANSFER = struct.Struct(">iq")
_M_HANDSHAKE = struct.Struct(">iiqi")
_M_TRANSFER = struct.Struct(">iiqiqq")
_ENTRY = struct.Struct(">iq")

SLAVE_HANDSHAKE_SIZE = _S_HANDSHAKE.size  # AutoSwitchHAClient.HANDSHAKE_HEADER_SIZE = 16
SLAVE_TRANSFER_SIZE = _S_TRANSFER.size  # AutoSwitchHAClient.TRANSFER_HEADER_SIZE = 12
SLAVE_MIN_HEADER_SIZE = min(SLAVE_HANDSHAKE_SIZE, SLAVE_TRANSFER_SIZE)
MASTER_HANDSHAKE_SIZE = _M_HANDSHAKE.size  # AutoSwitchHAConnection.HANDSHAKE_HEADER_SIZE = 20
MASTER_TRANSFER_SIZE = _M_TRANSFER.size  # AutoSwitchHAConnection.TRANSFER_HEADER_SIZE = 36
EPOCH_ENTRY_SIZE = _ENTRY.size  # 12
MAX_HANDSHAKE_ENTRIES = 1000  # the master's handshake buffer holds 1000 entries
MAX_BODY = 4 * 1024 * 1024  # AutoSwitchHAClient.READ_MAX_BUFFER_SIZE

HANDSHAKE = int(HAConnectionState.HANDSHAKE)
TRANSFER = int(HAConnectionState.TRANSFER)


class FrameError(WireError):
    """Bytes that are not a valid frame (one line: what is wrong). A ``WireError``: the decoders' typed error."""


@dataclass(frozen=True)
class SlaveHandshake:
    sync_from_last_file: bool
    async_learner: bool
    slave_broker_id: int


@dataclass(frozen=True)
class SlaveTransfer:
    max_offset: int


@dataclass(frozen=True)
class MasterHandshake:
    max_offset: int
    last_epoch: int
    entries: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class MasterTransfer:
    offset: int
    epoch: int
    epoch_start_offset: int
    confirm_offset: int
    body: bytes


SlaveFrame = SlaveHandshake | SlaveTransfer
MasterFrame = MasterHandshake | MasterTransfer

# ------------------------------------------------------------------------------------------- encode


def encode_slave_handshake(f: SlaveHandshake) -> bytes:
    return _S_HANDSHAKE.pack(HANDSHAKE, 1 if f.sync_from_last_file else 0, 1 if f.async_learner else 0,
                             f.slave_broker_id)


def encode_slave_transfer(f: SlaveTransfer) -> bytes:
    return _S_TRANSFER.pack(TRANSFER, f.max_offset)


def encode_master_handshake(f: MasterHandshake) -> bytes:
    if len(f.entries) > MAX_HANDSHAKE_ENTRIES:
        raise FrameError(f"handshake carries {len(f.entries)} epoch entries, at most {MAX_HANDSHAKE_ENTRIES} fit")
    body = b"".join(_ENTRY.pack(e, s) for e, s in f.entries)
    return _M_HANDSHAKE.pack(HANDSHAKE, len(body), f.max_offset, f.last_epoch) + body


def encode_master_transfer_header(offset: int, epoch: int, epoch_start: int, confirm: int, body_size: int) -> bytes:
    return _M_TRANSFER.pack(TRANSFER, body_size, offset, epoch, epoch_start, confirm)


def encode_master_transfer(f: MasterTransfer) -> bytes:
    return encode_master_transfer_header(f.offset, f.epoch, f.epoch_start_offset, f.confirm_offset,
                                         len(f.body)) + f.body


# ------------------------------------------------------------------------------------------- decode


class SlaveFrameDecoder:
    """The master's reader of slave frames (``AutoSwitchHAConnection.HAServerReader``)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[SlaveFrame]:
        self.buf += data
        out: list[SlaveFrame] = []
        while len(self.buf) >= SLAVE_MIN_HEADER_SIZE:
            (state,) = struct.unpack_from(">i", self.buf, 0)
            if state == HANDSHAKE:
                if len(self.buf) < SLAVE_HANDSHAKE_SIZE:
                    break
                _, sync_last, learner, slave_id = _S_HANDSHAKE.unpack_from(self.buf, 0)
                if sync_last not in (0, 1) or learner not in (0, 1):
                    raise FrameError(f"slave handshake has flags {sync_last}/{learner}, expected 0 or 1")
                if slave_id < 1:
                    raise FrameError(f"slave handshake names broker id {slave_id}, expected >= 1")
                out.append(SlaveHandshake(sync_last == 1, learner == 1, slave_id))
                del self.buf[:SLAVE_HANDSHAKE_SIZE]
            elif state == TRANSFER:
                _, max_offset = _S_TRANSFER.unpack_from(self.buf, 0)
                if max_offset < -1:
                    raise FrameError(f"slave ack reports offset {max_offset}, expected >= -1")
                out.append(SlaveTransfer(max_offset))
                del self.buf[:SLAVE_TRANSFER_SIZE]
            else:
                raise FrameError(f"slave frame has state {state}, expected HANDSHAKE(1) or TRANSFER(2)")
        return out


class MasterFrameDecoder:
    """The slave's reader of master frames (``AutoSwitchHAClient.HAClientReader``)."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def pending_transfer_end(self) -> int | None:
        """The end offset a TRANSFER frame announces when its header is in but its body is not yet whole."""
        if len(self.buf) < MASTER_TRANSFER_SIZE:
            return None
        state, body_size, offset, _ = _M_HANDSHAKE.unpack_from(self.buf, 0)
        if state != TRANSFER or len(self.buf) >= MASTER_TRANSFER_SIZE + body_size:
            return None
        end: int = offset + body_size
        return end

    def feed(self, data: bytes) -> list[MasterFrame]:
        self.buf += data
        out: list[MasterFrame] = []
        while len(self.buf) >= MASTER_HANDSHAKE_SIZE:
            state, body_size, offset, epoch = _M_HANDSHAKE.unpack_from(self.buf, 0)
            if body_size < 0 or body_size > MAX_BODY:
                raise FrameError(f"master frame announces a body of {body_size} bytes")
            if state == HANDSHAKE:
                if body_size % EPOCH_ENTRY_SIZE or body_size // EPOCH_ENTRY_SIZE > MAX_HANDSHAKE_ENTRIES:
                    raise FrameError(f"master handshake body of {body_size} bytes is not a list of epoch entries")
                if len(self.buf) < MASTER_HANDSHAKE_SIZE + body_size:
                    break
                entries = tuple(_ENTRY.unpack_from(self.buf, MASTER_HANDSHAKE_SIZE + i * EPOCH_ENTRY_SIZE)
                                for i in range(body_size // EPOCH_ENTRY_SIZE))
                out.append(MasterHandshake(offset, epoch, entries))
                del self.buf[:MASTER_HANDSHAKE_SIZE + body_size]
            elif state == TRANSFER:
                if len(self.buf) < MASTER_TRANSFER_SIZE + body_size:
                    break
                _, _, _, _, epoch_start, confirm = _M_TRANSFER.unpack_from(self.buf, 0)
                body = bytes(self.buf[MASTER_TRANSFER_SIZE:MASTER_TRANSFER_SIZE + body_size])
                out.append(MasterTransfer(offset, epoch, epoch_start, confirm, body))
                del self.buf[:MASTER_TRANSFER_SIZE + body_size]
            else:
                raise FrameError(f"master frame has state {state}, expected HANDSHAKE(1) or TRANSFER(2)")
        return out
