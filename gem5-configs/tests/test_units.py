import pytest
from pimcloud.units import (
    UnitError,
    format_size,
    parse_bandwidth,
    parse_frequency,
    parse_size,
    parse_time_ps,
)


def test_sizes_are_binary_and_exact() -> None:
    assert parse_size("8GiB") == 8 << 30
    assert parse_size("32KiB") == 32768
    assert parse_size("1.5GiB") == 3 << 29
    assert format_size(3 << 30) == "3GiB"
    assert format_size(1536 << 20) == "1536MiB"


def test_times_frequencies_bandwidths() -> None:
    assert parse_time_ps("13.75ns") == 13750
    assert parse_time_ps("1.95us") == 1_950_000
    assert parse_frequency("2.4GHz") == 2_400_000_000
    assert parse_bandwidth("160GB/s") == 160 * 10**9
    assert parse_bandwidth("1GiB/s") == 1 << 30


@pytest.mark.parametrize("text", ["8GB", "8", "eight GiB", "", "1.0000001B"])
def test_bad_sizes_name_the_accepted_units(text: str) -> None:
    with pytest.raises(UnitError, match=r"GiB|whole"):
        parse_size(text)


def test_non_strings_are_rejected() -> None:
    with pytest.raises(UnitError, match="string"):
        parse_time_ps(4)
