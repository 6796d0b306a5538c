"""The segment parser (history/record_batch.py) on bytes built here field by field from Kafka's record-batch format
(https://kafka.apache.org/documentation/#recordbatch; DefaultRecordBatch.writeHeader and DefaultRecord.writeTo), and
on a segment a real Kafka 4.4.0 broker wrote (tests/data/segments/, how it was made: its README)."""
from __future__ import annotations

import gzip
import re
import struct
from pathlib import Path

import pytest

from kafka_chaos.history import record_batch as rb
from kafka_chaos.history.replicas import ReplicaFiles, ReplicaState, epoch_checkpoint, offset_checkpoint, replica_tables

SEGMENTS = Path(__file__).parent.parent / "data" / "segments"


def varint(n: int) -> bytes:
    """Zig-zag varint, as ByteUtils.writeVarint: written here, not taken from the module under test."""
    z, out = (n << 1) ^ (n >> 63), bytearray()
    while z >= 0x80:
        out.append(z & 0x7F | 0x80)
        z >>= 7
    return bytes(out + bytes([z]))


def nullable(b: bytes | None) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def record(delta: int, key: bytes | None, value: bytes | None, headers=(), ts_delta: int = 0) -> bytes:
    body = bytes([0]) + varint(ts_delta) + varint(delta) + nullable(key) + nullable(value) + varint(len(headers))
    for k, v in headers:
        body += nullable(k.encode()) + nullable(v)
    return varint(len(body)) + body


def batch(base: int, values: list[bytes | None], epoch=3, pid=1000, pe=0, seq=0, attributes=0,
          keys=None, compress=None) -> bytes:
    """One v2 batch: CRC-32C over attributes..end, computed by zlib-free reference code below."""
    recs = b"".join(record(i, (keys or [None] * len(values))[i], v) for i, v in enumerate(values))
    if compress:
        recs = compress(recs)
    after_crc = struct.pack(">hiqqqhii", attributes, len(values) - 1, 1700000000000, 1700000000000, pid, pe, seq,
                            len(values)) + recs
    crc = reference_crc32c(after_crc)
    tail = struct.pack(">ibI", epoch, 2, crc) + after_crc
    return struct.pack(">qi", base, len(tail)) + tail


def reference_crc32c(data: bytes) -> int:
    """Bitwise CRC-32C (Castagnoli, reflected 0x82F63B78), the slow textbook way."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_crc32c_matches_the_check_value_and_the_bitwise_reference():
    assert rb.crc32c(b"123456789") == 0xE3069283          # RFC 3720's CRC-32C check value
    bufs = [bytes(range(n % 256)) * (n // 50 + 1) for n in range(0, 700, 37)]
    assert rb.crc32c_many(bufs) == [reference_crc32c(b) for b in bufs]


def test_a_batch_s_header_fields_and_records_are_read_as_written():
    seg = batch(0, [b"p0-1", b"p0-2", None], keys=[b"k", None, b""], epoch=7, pid=4242, pe=2, seq=10) + \
        batch(3, [b"p0-4"], epoch=8, pid=4242, pe=2, seq=13)
    first, second = rb.read_batches(seg)
    assert (first.base_offset, first.leader_epoch, first.magic, first.producer_id, first.producer_epoch,
            first.base_sequence, first.count, first.last_offset) == (0, 7, 2, 4242, 2, 10, 3, 2)
    assert first.crc_ok and second.crc_ok and first.codec == "none" and not first.is_control
    assert [(r.key, r.value) for r in first.records] == [(b"k", b"p0-1"), (None, b"p0-2"), (b"", None)]
    assert [first.sequence(r.offset_delta) for r in first.records] == [10, 11, 12]
    assert (second.base_offset, second.position, second.leader_epoch) == (3, len(seg) - len(batch(3, [b"p0-4"])), 8)


def test_the_sequence_wraps_at_integer_max_and_none_stays_none():
    b = rb.read_batches(batch(0, [b"a", b"b"], seq=2**31 - 1))[0]
    assert [b.sequence(0), b.sequence(1)] == [2**31 - 1, 0]          # DefaultRecordBatch.incrementSequence
    assert rb.read_batches(batch(0, [b"a"], pid=-1, pe=-1, seq=-1))[0].sequence(0) == -1


def test_a_flipped_value_byte_fails_the_crc_and_rewrite_crc_makes_it_consistent_again():
    seg = bytearray(batch(0, [b"value-0001"]))
    at = bytes(seg).index(b"value-0001")
    seg[at + 9] ^= 0x01
    b = rb.read_batches(bytes(seg))[0]
    assert not b.crc_ok and b.records[0].value == b"value-0000"
    rb.rewrite_crc(seg, 0)
    assert rb.read_batches(bytes(seg))[0].crc_ok


def test_control_and_transactional_flags_and_the_marker_type():
    key = struct.pack(">hh", 0, 1)                                 # version 0, COMMIT
    value = struct.pack(">hi", 0, 5)                               # version 0, coordinator epoch 5
    seg = batch(0, [b"t-1"], attributes=rb.TRANSACTIONAL) + \
        batch(1, [value], keys=[key], attributes=rb.TRANSACTIONAL | rb.CONTROL)
    data, marker = rb.read_batches(seg)
    assert data.is_transactional and not data.is_control
    assert marker.is_control and rb.control_type(marker.records[0]) == "COMMIT"


def test_gzip_is_decoded_other_codecs_are_named_not_guessed():
    seg = batch(0, [b"g-1", b"g-2"], attributes=1, compress=gzip.compress) + \
        batch(2, [b"z-1"], attributes=4, compress=lambda b: b"\x28\xb5\x2f\xfd" + b)
    gz, zstd = rb.read_batches(seg)
    assert [r.value for r in gz.records] == [b"g-1", b"g-2"]
    assert zstd.records is None and zstd.undecoded == "zstd compression"


def test_a_torn_tail_ends_the_read_and_counts_its_bytes():
    whole = batch(0, [b"a"]) + batch(1, [b"b"])
    seg = whole + batch(2, [b"c"])[:20]
    assert [b.base_offset for b in rb.read_batches(seg)] == [0, 1]
    (_, logs) = replica_tables([(ReplicaFiles(1, 0, {"00000000000000000000.log": seg}), ReplicaState(True, True, 2))],
                               "chaos", 1)
    assert logs.column("torn_bytes").to_pylist() == [20] and logs.column("log_end_offset").to_pylist() == [2]


def test_checkpoint_files_are_read_as_kafka_writes_them():
    assert offset_checkpoint("0\n3\nchaos 0 120\nchaos 2 7\nother 0 9\n", "chaos") == {0: 120, 2: 7}
    assert epoch_checkpoint("0\n2\n0 0\n4 57\n") == [(0, 0), (4, 57)]
    assert epoch_checkpoint(None) is None and offset_checkpoint(None, "chaos") == {}


def test_replica_tables_row_per_record_with_its_batch_fields():
    seg = batch(0, [b"v0", b"v1"], epoch=2, pid=9, pe=1, seq=4)
    files = ReplicaFiles(2, 1, {"00000000000000000000.log": seg, "leader-epoch-checkpoint": b"0\n1\n2 0\n"},
                         replication_checkpoint="0\n1\nchaos 1 2\n")
    recs, logs = replica_tables([(files, ReplicaState(False, True, 2))], "chaos", 5)
    assert recs.select(["broker", "partition", "offset", "leader_epoch", "producer_id", "producer_epoch",
                        "sequence", "value"]).to_pylist() == [
        {"broker": 2, "partition": 1, "offset": 0, "leader_epoch": 2, "producer_id": 9, "producer_epoch": 1,
         "sequence": 4, "value": "v0"},
        {"broker": 2, "partition": 1, "offset": 1, "leader_epoch": 2, "producer_id": 9, "producer_epoch": 1,
         "sequence": 5, "value": "v1"}]
    row = logs.to_pylist()[0]
    assert (row["checkpoint_hw"], row["epochs"], row["epoch_start_offsets"], row["records"]) == (2, [2], [0], 2)


def test_a_segment_a_real_broker_wrote():
    seg = SEGMENTS / "00000000000000000000.log"
    if not seg.exists():
        pytest.fail(f"{seg} is missing: see {SEGMENTS / 'README.md'}")
    expect = [line.split("\t") for line in (SEGMENTS / "expected.tsv").read_text().splitlines()[1:]]
    batches = rb.read_batches(seg.read_bytes())
    assert batches and all(b.crc_ok and b.magic == 2 for b in batches)
    got = [[str(b.base_offset + r.offset_delta), str(b.producer_id), str(b.sequence(r.offset_delta)),
            str(b.is_control).lower(), (rb.control_type(r) if b.is_control else r.value.decode())]
           for b in batches for r in b.records]
    assert got == expect                          # DumpLogSegments' own reading (capture.py)
    dumped = re.findall(r"^baseOffset: (\d+) .*partitionLeaderEpoch: (\d+) .* crc: (\d+) isvalid: true$",
                        (SEGMENTS / "dump.txt").read_text(), re.M)
    assert [(str(b.base_offset), str(b.leader_epoch), str(b.crc)) for b in batches] == dumped
    assert sum(b.is_control for b in batches) == 2 and all(b.is_transactional for b in batches if b.is_control)
