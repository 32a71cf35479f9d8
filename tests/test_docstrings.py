from __future__ import annotations

from baton.docstrings import Docstring, parse_docstring


def test_google_style_args_with_types_and_continuation_lines() -> None:
    doc = """Get the weather.

    Looks it up in the forecast service.

    Args:
        city: The city,
            spelled in English.
        days (int): How many days.
        *extra: Ignored.

    Returns:
        dict: the forecast.

    Raises:
        LookupError: unknown city.
    """

    assert parse_docstring(doc) == Docstring(
        description="Get the weather.\n\nLooks it up in the forecast service.",
        params={
            "city": "The city, spelled in English.",
            "days": "How many days.",
            "extra": "Ignored.",
        },
    )


def test_numpy_style_parameters() -> None:
    doc = """Get the weather.

    Parameters
    ----------
    city : str
        The city,
        spelled in English.
    days : int, optional
        How many days.

    Returns
    -------
    dict
        The forecast.
    """

    assert parse_docstring(doc) == Docstring(
        description="Get the weather.",
        params={"city": "The city, spelled in English.", "days": "How many days."},
    )


def test_a_docstring_without_sections_is_all_description() -> None:
    assert parse_docstring("Say hello.\n\nTo anyone.") == Docstring("Say hello.\n\nTo anyone.")


def test_no_docstring() -> None:
    assert parse_docstring(None) == Docstring()


def test_a_colon_inside_a_sentence_is_not_a_section() -> None:
    doc = """Book a room.

    Note: rooms are held for ten minutes.

    Args:
        room: The room number.
    """

    assert parse_docstring(doc) == Docstring(
        description="Book a room.\n\nNote: rooms are held for ten minutes.",
        params={"room": "The room number."},
    )
