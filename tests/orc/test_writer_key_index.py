"""The streaming ACID writer's ``hive.acid.key.index``: the key of each stripe's last row,
checked against the written file read back stripe by stripe (one stripe — never read back by
the writer — and many; Hive 2.3's form without the last stripe's entry)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from acidctl.fs import TableFS
from acidctl.orc import writer
from acidctl.orc.reader import OrcFile

P0 = 1 << 29


def _events(n: int) -> pa.Table:
    rng = np.random.default_rng(n)
    ot = np.repeat(np.arange(1, 4, dtype=np.int64), [n // 3, n // 3, n - 2 * (n // 3)])
    rid = np.concatenate([np.arange(n // 3), np.arange(n // 3), np.arange(n - 2 * (n // 3))]).astype(np.int64)
    return pa.table(
        {
            "operation": pa.array(np.zeros(n, np.int32)),
            "originalTransaction": pa.array(ot),
            "bucket": pa.array(np.full(n, P0, np.int32)),
            "rowId": pa.array(rid),
            "currentTransaction": pa.array(ot),
            "row": pa.StructArray.from_arrays([pa.array(np.arange(n)), pa.array(rng.random(n))], ["id", "x"]),
        }
    )


def _stripe_last_keys(path: str) -> list[str]:
    with OrcFile(TableFS(path.rsplit("/", 1)[0]), path) as f:
        out = []
        for i in range(f.num_stripes()):
            b = f.read_stripe_arrow(i, columns=["originalTransaction", "bucket", "rowId"])
            out.append("%d,%d,%d;" % tuple(b.column(j)[b.num_rows - 1].as_py() for j in range(3)))
        return out


@pytest.mark.parametrize("stripe_size,multi", [(64 << 20, False), (16 << 10, True)])
@pytest.mark.parametrize("hive2", [False, True])
def test_key_index_is_each_stripes_last_key(tmp_path, stripe_size, multi, hive2):
    n = 60_000
    path = str(tmp_path / "d" / "bucket_00000")
    with writer.AcidFileWriter(TableFS(str(tmp_path)), path, stripe_size=stripe_size, hive2=hive2) as w:
        for b in _events(n).to_batches(max_chunksize=7000):
            w.write(b)
        info = w.close()
    lasts = _stripe_last_keys(path)
    assert (len(lasts) > 1) == multi
    assert lasts[-1] == f"3,{P0},{n - 2 * (n // 3) - 1};"
    want = "".join(lasts[:-1] if hive2 else lasts)
    assert info.key_index == want
    with OrcFile(TableFS(str(tmp_path)), path) as f:
        assert f.user_metadata["hive.acid.key.index"].decode() == want
