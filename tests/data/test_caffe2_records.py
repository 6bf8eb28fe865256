from __future__ import annotations

import pytest

from helpers.data.caffe2_records import Record
from helpers.data.caffe2_records import decode_record
from helpers.data.caffe2_records import encode_record

JPEG = b"\xff\xd8\xff\xe0" + bytes(range(200)) + b"\xff\xd9"


@pytest.mark.parametrize("label", [0, 1, 9, 127, 128, 300, 2**31 - 1, -1])
def test_record_round_trip(label: int) -> None:
    assert decode_record(encode_record(JPEG, label)) == Record(JPEG, label)


def test_encoding_matches_the_caffe2_wire_format() -> None:
    # TensorProtos{protos: [TensorProto{data_type: STRING, string_data: [jpeg]},
    #                       TensorProto{dims: [1], data_type: INT32, int32_data: [7]}]}
    jpeg = b"\xff\xd8ab"
    image = b"\x10\x04" + b"\x32\x04" + jpeg  # data_type=4 (field 2), string_data (field 6)
    label = b"\x08\x01" + b"\x10\x02" + b"\x22\x01\x07"  # dims=1, data_type=2, packed int32_data
    expected = b"\x0a" + bytes([len(image)]) + image + b"\x0a" + bytes([len(label)]) + label
    assert encode_record(jpeg, 7) == expected


def test_rejects_bytes_that_are_not_jpeg() -> None:
    with pytest.raises(ValueError, match="JPEG"):
        encode_record(b"\x89PNG....", 1)


def test_rejects_values_that_are_not_records() -> None:
    with pytest.raises(ValueError):
        decode_record(b"\x0a\x02\x10\x04")
