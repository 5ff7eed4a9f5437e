import pytest

from fabricprobe.errors import UsageError
from fabricprobe.sizes import format_size, parse_size, size_list, size_range


@pytest.mark.parametrize(
    "text,value",
    [("8", 8), ("0", 0), ("4K", 4096), ("4k", 4096), ("4KiB", 4096), ("1M", 1 << 20), ("2G", 2 << 30), ("16B", 16)],
)
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "x", "8x", "-8", "1.5M", "4T", "K"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_range_like_nccl_tests():
    assert size_range("8", "4M", "2") == [1 << k for k in range(3, 23)]
    assert size_range("8", "100", "4") == [8, 32]
    assert size_range("0", "4", "2") == [0, 1, 2, 4]
    assert size_range("1K", "4K", None, "1K") == [1024, 2048, 3072, 4096]


@pytest.mark.parametrize(
    "args",
    [
        ("4M", "8", None, None),
        ("8", "4M", "1", None),
        ("8", "4M", "x", None),
        ("8", "4M", "2", "8"),
        ("8", "16", None, "0"),
    ],
)
def test_range_rejects(args):
    with pytest.raises(UsageError):
        size_range(*args)


def test_list_sorted_unique():
    assert size_list("1K,8,8,1M") == [8, 1024, 1 << 20]
    with pytest.raises(UsageError):
        size_list(" , ")


def test_format():
    assert [format_size(n) for n in (8, 1024, 1536, 1 << 20, 3 << 30)] == ["8 B", "1 KiB", "1.5 KiB", "1 MiB", "3 GiB"]
