"""Caffe2 ``TensorProtos`` records, as DALI's ``readers.Caffe2`` reads them from an LMDB.

DALI_extra stores MNIST as one serialized ``caffe2.TensorProtos`` per LMDB value: ``protos[0]``
is the image (``data_type=STRING``, JPEG bytes in ``string_data[0]``) and ``protos[1]`` the label
(``data_type=INT32``, ``dims=[1]``, ``int32_data=[label]``). This module writes and reads that
encoding with a few lines of protobuf wire format, so the suite needs neither Caffe2 nor a
compiled ``.proto`` (field numbers from ``dali/operators/reader/parser/proto/caffe2.proto``).
"""

from __future__ import annotations

from dataclasses import dataclass

# TensorProto field numbers and DataType values (caffe2.proto)
_DIMS, _DATA_TYPE, _INT32_DATA, _STRING_DATA = 1, 2, 4, 6
_TENSOR_PROTOS_PROTOS = 1
INT32, STRING = 2, 4
_VARINT, _LEN = 0, 2


def _varint(value: int) -> bytes:
    if value < 0:  # protobuf encodes negative int32/int64 as 10-byte two's complement
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _key(field, _LEN) + _varint(len(payload)) + payload


def _image_proto(jpeg: bytes) -> bytes:
    return _key(_DATA_TYPE, _VARINT) + _varint(STRING) + _length_delimited(_STRING_DATA, jpeg)


def _label_proto(label: int) -> bytes:
    return (
        _key(_DIMS, _VARINT) + _varint(1)
        + _key(_DATA_TYPE, _VARINT) + _varint(INT32)
        + _length_delimited(_INT32_DATA, _varint(label))  # packed repeated int32
    )


def encode_record(jpeg: bytes, label: int) -> bytes:
    """Serialize one (JPEG, label) pair as a ``caffe2.TensorProtos`` message."""
    if not jpeg.startswith(b"\xff\xd8"):
        raise ValueError("encode_record expects JPEG bytes (they start with FF D8)")
    return _length_delimited(_TENSOR_PROTOS_PROTOS, _image_proto(jpeg)) + _length_delimited(
        _TENSOR_PROTOS_PROTOS, _label_proto(label)
    )


@dataclass(frozen=True)
class Record:
    jpeg: bytes
    label: int


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs of one message: ints for varints, bytes for the rest."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            value, pos = _read_varint(data, pos)
            out.append((field, value))
        elif wire_type == _LEN:
            size, pos = _read_varint(data, pos)
            out.append((field, data[pos : pos + size]))
            pos += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
    return out


def decode_record(value: bytes) -> Record:
    """Parse a value written by :func:`encode_record` (used by tests and data checks)."""
    protos = [v for f, v in _fields(value) if f == _TENSOR_PROTOS_PROTOS]
    if len(protos) < 2 or not all(isinstance(p, bytes) for p in protos):
        raise ValueError("not a TensorProtos record with an image and a label")
    image = dict(_fields(protos[0]))  # type: ignore[arg-type]
    label = dict(_fields(protos[1]))  # type: ignore[arg-type]
    if image.get(_DATA_TYPE) != STRING or label.get(_DATA_TYPE) != INT32:
        raise ValueError("expected an image of data_type STRING and a label of data_type INT32")
    packed = label[_INT32_DATA]
    label_value = _read_varint(packed, 0)[0] if isinstance(packed, bytes) else packed
    if label_value >= 1 << 63:  # a negative int32, written as ten bytes
        label_value -= 1 << 64
    return Record(jpeg=bytes(image[_STRING_DATA]), label=int(label_value))  # type: ignore[arg-type]
