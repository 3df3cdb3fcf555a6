"""How one vector is stored in Redis: a format byte, a digest of its origin, then the numbers.

    float32:  b"\\x01" + digest (8 bytes) + d little-endian float32
    float16:  b"\\x02" + digest (8 bytes) + d little-endian float16
    int8:     b"\\x03" + digest (8 bytes) + scale (little-endian float32) + d int8 codes,
              x[j] = scale * code[j], scale = max|x| / 127, code = round(x / scale)
              (within half a step of x while the scale is a normal float32, i.e. for
              max|x| >= 127 * 2**-126 ~ 1.5e-36; smaller vectors round on float32's subnormal grid)

The digest (BLAKE2b-64) names what the vector was made from, so a save whose text did not change
does not embed it again. Values written before this format (``4 * d`` bytes of bare float32, no
digest) are still read when the dimensions are known: for any ``d`` the four layouts have
different lengths.

Search is exact over the vectors as stored; how far that is from float32 is measured in
docs/primitives/embeddings.md ("Storage precision").
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = [
    "DTYPES", "DIGEST_BYTES", "digest", "encode_vector", "decode_vector", "encode_stored", "decode_stored_vector",
    "stored_dimensions", "stored_digest",
]

_FLOAT32_LE = np.dtype("<f4")
#: Storage dtype name -> format byte.
DTYPES = {"float32": 1, "float16": 2, "int8": 3}
DIGEST_BYTES = 8
_HEADER = 1 + DIGEST_BYTES
_INT8_MAX = 127


def digest(kind: bytes, payload: bytes) -> bytes:
    """BLAKE2b-64 of ``kind`` (``b"t:"`` text, ``b"v:"`` assigned vector) + ``payload``."""
    return hashlib.blake2b(kind + payload, digest_size=DIGEST_BYTES).digest()


def encode_vector(vector: np.ndarray) -> bytes:
    """A vector as bare little-endian float32 bytes (4 bytes per dimension)."""
    return np.ascontiguousarray(vector, dtype=_FLOAT32_LE).tobytes()


def decode_vector(raw: bytes) -> np.ndarray:
    """Inverse of :func:`encode_vector` (a float32 array in native byte order)."""
    return np.frombuffer(raw, dtype=_FLOAT32_LE).astype(np.float32)


def encode_stored(vector: np.ndarray, dtype: str, origin: bytes) -> bytes:
    """The stored value of ``vector`` in ``dtype`` (a :data:`DTYPES` name), made from ``origin`` (a digest)."""
    header = bytes([DTYPES[dtype]]) + origin
    vector = np.asarray(vector, dtype=np.float32)
    if dtype == "float32":
        return header + vector.astype("<f4").tobytes()
    if dtype == "float16":
        return header + vector.astype("<f2").tobytes()
    largest = float(np.abs(vector).max(initial=0.0))
    scale = np.float32(largest / _INT8_MAX)
    codes = np.rint(vector / scale) if scale > 0 else np.zeros_like(vector)
    encoded: bytes = header + scale.astype("<f4").tobytes() + np.clip(codes, -_INT8_MAX, _INT8_MAX).astype(np.int8).tobytes()
    return encoded


def stored_dimensions(raw: bytes) -> int | None:
    """The dimensions of a value in the current format, from its format byte and length; else None."""
    size = len(raw) - _HEADER
    code = raw[0] if size > 0 else 0
    if code == 1 and size % 4 == 0:
        return size // 4
    if code == 2 and size % 2 == 0:
        return size // 2
    if code == 3 and size > 4:
        return size - 4
    return None


def stored_digest(raw: bytes) -> bytes | None:
    """The digest a value in the current format leads with (None for any other value)."""
    return raw[1:_HEADER] if stored_dimensions(raw) is not None else None


def _layout(raw: bytes, dimensions: int) -> int | None:
    """The format byte of a stored value of ``dimensions`` (0: bare float32); None: not such a value."""
    if len(raw) == 4 * dimensions:
        return 0
    return raw[0] if stored_dimensions(raw) == dimensions else None


def _body(layout: int, dimensions: int) -> np.dtype:
    """The numbers after the header, as a numpy record: ``v`` the vector (``s`` its int8 scale)."""
    if layout == 3:
        return np.dtype([("s", "<f4"), ("v", "i1", (dimensions,))])
    return np.dtype([("v", "<f2" if layout == 2 else "<f4", (dimensions,))])


def decode_rows(raws: list[bytes], dimensions: int) -> tuple[np.ndarray, list[int]]:
    """The float32 vectors of the values in ``raws`` that hold ``dimensions`` numbers, and their indexes.

    Values of one layout are decoded together (one ``frombuffer`` per layout).
    """
    groups: dict[int, list[int]] = {}
    for index, raw in enumerate(raws):
        layout = _layout(raw, dimensions)
        if layout is not None:
            groups.setdefault(layout, []).append(index)
    kept = sorted(i for members in groups.values() for i in members)
    rows = np.empty((len(raws), dimensions), dtype=np.float32)
    for layout, members in groups.items():
        skip = 0 if layout == 0 else _HEADER
        records = np.frombuffer(b"".join(raws[i][skip:] for i in members), dtype=_body(layout, dimensions))
        rows[members] = records["v"] * records["s"][:, None] if layout == 3 else records["v"]
    return rows[kept], kept


def decode_stored_vector(raw: bytes, dimensions: int | None = None) -> tuple[np.ndarray, bytes | None] | None:
    """(float32 vector, digest or None) of one stored value; None when it is not a vector of ``dimensions``.

    A bare float32 value (the earlier format) is recognised only when ``dimensions`` is given.
    """
    width = dimensions if dimensions is not None else stored_dimensions(raw)
    if width is None:
        return None
    rows, kept = decode_rows([raw], width)
    if not kept:
        return None
    return rows[0], (None if len(raw) == 4 * width else raw[1:_HEADER])
