"""Kafka's on-disk log format, read: the record batches of a segment file (magic v2) and their records.

A segment (`<base offset>.log`) is a sequence of record batches, each as Kafka writes it on the wire and on disk
(https://kafka.apache.org/documentation/#recordbatch; org.apache.kafka.common.record.DefaultRecordBatch and
DefaultRecord, clients 0.11 to 4.x):

    baseOffset: int64, batchLength: int32 (the bytes after this field), partitionLeaderEpoch: int32, magic: int8 (2),
    crc: uint32 (CRC-32C of everything from attributes to the batch's end), attributes: int16 (bits 0-2 the
    compression codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; bit 3 timestamp type; bit 4 transactional; bit 5
    control; bit 6 delete horizon), lastOffsetDelta: int32, baseTimestamp: int64, maxTimestamp: int64,
    producerId: int64, producerEpoch: int16, baseSequence: int32, records count: int32, records

and each record (DefaultRecord.writeTo), in the batch's records, compressed as one block by its codec:

    length: varint, attributes: int8, timestampDelta: varlong, offsetDelta: varint, keyLength: varint, key,
    valueLength: varint, value, headers count: varint, headers (keyLength: varint, key, valueLength: varint, value)

Varints are zig-zag encoded (ByteUtils.readVarint / readVarlong); a length of -1 is null. A record's sequence is the
batch's baseSequence plus its offsetDelta, wrapping at Integer.MAX_VALUE (DefaultRecordBatch.incrementSequence); -1
where the batch has none (RecordBatch.NO_SEQUENCE). A control record's key is version: int16, type: int16 (0 ABORT,
1 COMMIT; ControlRecordType), its value version: int16, coordinatorEpoch: int32 (EndTransactionMarker).

Decoded here: no compression and gzip (stdlib); the workloads' producers set no compression.type (librdkafka's and
the Java client's default is none) and brokers keep the producer's (compression.type=producer). A batch of another
codec, or of magic 0/1, is returned with its header fields and `records` None (`undecoded` names why). A truncated
tail (a batch whose length runs past the file's end: a crash mid-append, which recovery truncates) ends the read.
"""
from __future__ import annotations

import gzip
import hashlib
import struct
from dataclasses import dataclass, field

import numpy as np

HEADER = struct.Struct(">qiibIhiqqqhii")         # baseOffset .. records count: 61 bytes
HEADER_SIZE = HEADER.size
CRC_START = 21                                   # the CRC covers attributes (byte 21 of the batch) to the end
LOG_OVERHEAD = 12                                # baseOffset + batchLength
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TRANSACTIONAL, CONTROL = 0x10, 0x20
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
_LEN = struct.Struct(">i")


@dataclass
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)

    def digest(self) -> str:
        """16 hex digits of BLAKE2b over key, value and headers, each length-prefixed (null: -1)."""
        parts = (self.key, self.value, *(x for k, v in self.headers for x in (k.encode(), v)))
        framed = b"".join(_LEN.pack(-1 if p is None else len(p)) + (p or b"") for p in parts)
        return hashlib.blake2b(framed, digest_size=8).hexdigest()


@dataclass
class Batch:
    base_offset: int
    length: int                   # batchLength
    leader_epoch: int             # partitionLeaderEpoch
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int
    position: int                 # where the batch starts in its file
    crc_ok: bool = True
    records: list[Record] | None = None
    undecoded: str | None = None  # why `records` is None

    @property
    def codec(self) -> str:
        return CODECS.get(self.attributes & 0x07, f"codec {self.attributes & 0x07}")

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    def sequence(self, offset_delta: int) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + offset_delta) % (INT32_MAX + 1)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (or varlong) at pos: (value, the position after it)."""
    b = buf[pos]
    if b < 0x80:                                      # one byte: most lengths and deltas of a small record
        return (b >> 1) ^ -(b & 1), pos + 1
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def write_varint(n: int) -> bytes:
    """The zig-zag varint of n (ByteUtils.writeVarlong), for building batches in tests and injections."""
    raw = (n << 1) ^ (n >> 63)
    out = bytearray()
    while raw & ~0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    return bytes(buf[pos:pos + n]), pos + n


def parse_records(data: bytes, count: int) -> list[Record]:
    """`count` records from a batch's (decompressed) records block."""
    out, pos = [], 0
    for _ in range(count):
        length, pos = read_varint(data, pos)
        end = pos + length
        ts_delta, p = read_varint(data, pos + 1)        # attributes: an unused byte
        offset_delta, p = read_varint(data, p)
        key, p = _bytes(data, p)
        value, p = _bytes(data, p)
        n_headers, p = read_varint(data, p)
        headers = []
        for _ in range(n_headers):
            k, p = _bytes(data, p)
            v, p = _bytes(data, p)
            headers.append(((k or b"").decode(errors="replace"), v))
        if p != end:
            raise ValueError(f"record at delta {offset_delta}: length {length}, fields end {p - end:+d} off")
        out.append(Record(offset_delta, ts_delta, key, value, headers))
        pos = end
    return out


def _decompress(codec: int, block: bytes) -> bytes | None:
    if codec == 0:
        return block
    if codec == 1:
        return gzip.decompress(block)
    return None


def read_batches(data: bytes, verify_crc: bool = True) -> list[Batch]:
    """Every batch of a segment's bytes, in file order, with its records decoded where the codec allows."""
    batches, pos, n = [], 0, len(data)
    while pos + LOG_OVERHEAD + 5 <= n:
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + LOG_OVERHEAD + length
        magic = data[pos + 16]
        if length <= 0 or end > n:
            break                                     # a torn tail
        if magic != 2 or length + LOG_OVERHEAD < HEADER_SIZE:
            batches.append(Batch(base, length, -1, magic, 0, 0, 0, -1, -1, -1, -1, -1, 0, pos,
                                 undecoded=f"magic {magic} (a message set before 0.11)"))
            pos = end
            continue
        fields = HEADER.unpack_from(data, pos)
        b = Batch(*fields, position=pos)
        block = _decompress(b.attributes & 0x07, data[pos + HEADER_SIZE:end])
        if block is None:
            b.undecoded = f"{b.codec} compression"
        else:
            try:
                b.records = parse_records(block, b.count)
            except (ValueError, IndexError, OSError, EOFError) as e:
                b.undecoded = f"records unreadable: {e}"
        batches.append(b)
        pos = end
    if verify_crc:
        v2 = [b for b in batches if b.magic == 2]
        sums = crc32c_many([data[b.position + CRC_START:b.position + LOG_OVERHEAD + b.length] for b in v2])
        for b, crc in zip(v2, sums):
            b.crc_ok = crc == b.crc
    return batches


def rewrite_crc(segment: bytearray, position: int) -> int:
    """Set the CRC of the batch at `position` of a segment's bytes to what its contents give (after an edit of
    its records that keeps their lengths); the new CRC."""
    length = struct.unpack_from(">i", segment, position + 8)[0]
    crc = crc32c(bytes(segment[position + CRC_START:position + LOG_OVERHEAD + length]))
    struct.pack_into(">I", segment, position + 17, crc)
    return crc


def control_type(record: Record) -> str | None:
    """ABORT or COMMIT for a control record's key (ControlRecordType.parse), None if it is not one."""
    if record.key is None or len(record.key) < 4:
        return None
    return CONTROL_TYPES.get(struct.unpack_from(">h", record.key, 2)[0], "UNKNOWN")


# ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): java.util.zip.CRC32C, Kafka's Crc32C ------------------
def _table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> 1) ^ np.uint32(0x82F63B78), t >> 1).astype(np.uint32)
    return t


_CRC_TABLE = _table()
_CRC_LIST = [int(x) for x in _CRC_TABLE]


def crc32c(data: bytes) -> int:
    """CRC-32C of one buffer (a byte at a time: for single batches)."""
    crc, table = 0xFFFFFFFF, _CRC_LIST
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_many(buffers: list[bytes], group: int = 512) -> list[int]:
    """CRC-32C of many buffers at once: one numpy step per byte position across a group of buffers of similar
    length (a segment's batches are many and short: steps are about the segment's length over the group size)."""
    out = [0] * len(buffers)
    order = sorted(range(len(buffers)), key=lambda i: len(buffers[i]))
    for start in range(0, len(order), group):
        ids = order[start:start + group]
        for i, crc in zip(ids, _crc_group([buffers[i] for i in ids])):
            out[i] = crc
    return out


def _crc_group(buffers: list[bytes]) -> list[int]:
    lengths = np.array([len(b) for b in buffers])
    width = int(lengths.max()) if len(buffers) else 0
    grid = np.zeros((len(buffers), width), dtype=np.uint8)
    for i, b in enumerate(buffers):
        grid[i, :len(b)] = np.frombuffer(b, dtype=np.uint8)
    crc = np.full(len(buffers), 0xFFFFFFFF, dtype=np.uint32)
    low = int(lengths.min()) if len(buffers) else 0
    for j in range(width):
        step = _CRC_TABLE[(crc ^ grid[:, j]) & 0xFF] ^ (crc >> 8)
        crc = step if j < low else np.where(lengths > j, step, crc)
    return [int(x) for x in crc ^ np.uint32(0xFFFFFFFF)]
