"""A smaller copy of an LMDB: its first records, for quick runs of the same code (CI scale)."""

from __future__ import annotations

import shutil
from pathlib import Path


def record_count(path: str | Path) -> int:
    """The number of records in the LMDB folder ``path``."""
    import lmdb

    with lmdb.open(str(path), readonly=True, lock=False, subdir=True) as env:
        return env.stat()["entries"]


def first_records(source: str | Path, dest: str | Path, records: int) -> Path:
    """Copy the first ``records`` records (in key order, as DALI reads them) of the LMDB folder
    ``source`` into the LMDB folder ``dest``, atomically: ``dest`` appears complete or not at
    all. An existing ``dest`` is replaced. Returns ``dest``."""
    import lmdb

    if records < 1:
        raise ValueError(f"records must be a positive number, not {records}")
    source, dest = Path(source), Path(dest)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env_in = lmdb.open(str(source), readonly=True, lock=False, subdir=True)
    try:
        total = env_in.stat()["entries"]
        if records > total:
            raise ValueError(f"{source} holds {total} records, fewer than the {records} asked for")
        env_out = lmdb.open(str(tmp), map_size=env_in.info()["map_size"], subdir=True, lock=False)
        try:
            with env_in.begin() as txn_in, env_out.begin(write=True) as txn_out:
                for count, (key, value) in enumerate(txn_in.cursor()):
                    if count == records:
                        break
                    txn_out.put(key, value)
            env_out.sync()
        finally:
            env_out.close()
    finally:
        env_in.close()
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest
