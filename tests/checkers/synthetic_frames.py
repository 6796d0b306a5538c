"""Clean synthetic histories as in-memory frames, cached: hypothesis asks for the same few many times."""
import atexit
import shutil
import tempfile
from functools import lru_cache

from kafka_chaos.history.reader import read_table
from kafka_chaos.history.schema import READS_SCHEMA, SENDS_SCHEMA
from kafka_chaos.history.synthetic import write_synthetic_run


@lru_cache(maxsize=1)
def _root() -> str:
    root = tempfile.mkdtemp(prefix="kafka-chaos-synthetic-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)    # the frames are read into memory once written
    return root


@lru_cache(maxsize=32)
def _cached(sends: int, seed: int, consumers: int):
    run = write_synthetic_run(f"{_root()}/s{sends}-{seed}-{consumers}", sends=sends, seed=seed, consumers=consumers)
    return (read_table(run / "history/sends.parquet", SENDS_SCHEMA),
            read_table(run / "history/reads.parquet", READS_SCHEMA))


def clean_history(sends: int, seed: int, consumers: int = 1):
    s, r = _cached(sends, seed, consumers)
    return s.copy(), r.copy()
