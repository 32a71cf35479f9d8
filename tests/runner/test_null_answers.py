"""Forms send null for every optional field left empty: such an answer is accepted as if
those fields were absent, on every backend; a null where a value is required is refused
and changes nothing."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from baton.errors import InvalidResponseError
from baton.server.catalog import load_app
from tests.harness import Harness, MakeHarness, outputs
from tests.runner.test_guarantees import snapshot
from tests.server.conftest import EXAMPLES

EMPTY_FORM: dict[str, JsonValue] = {
    "approved": True,
    "comment": None,
    "category": None,
    "adjusted_amount": None,
    "reimbursement": None,
}


async def paused_expense(make_harness: MakeHarness) -> Harness:
    app = load_app(EXAMPLES / "expense_approval")
    h = await make_harness(app.root_agent)
    await h.start("120.50 taxi to the airport")
    return h


async def test_nulls_for_optional_fields_read_as_absent(make_harness: MakeHarness) -> None:
    h = await paused_expense(make_harness)
    done = await h.answer(("review_0", EMPTY_FORM))
    assert outputs(done)[-1] == ("pay", "paid 120.50 for 'taxi to the airport' via payroll (other)")
    rows = await h.service.store.list_interrupts(
        "app", "u", session_id=h.key.session_id, status=None
    )
    # What is stored is the answer without the nulls the schema does not allow.
    assert [r.answer for r in rows] == [{"approved": True, "adjusted_amount": None}]


async def test_a_null_inside_a_nested_object_reads_as_absent(make_harness: MakeHarness) -> None:
    h = await paused_expense(make_harness)
    answer: dict[str, JsonValue] = {
        "approved": True,
        "reimbursement": {"method": None, "reference": "R-7"},
    }
    done = await h.answer(("review_0", answer))
    assert outputs(done)[-1][1] == "paid 120.50 for 'taxi to the airport' via payroll (other)"


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ({**EMPTY_FORM, "approved": None}, "approved: None is not of type 'boolean'"),
        ({"comment": None}, "'approved' is a required property"),
        ({**EMPTY_FORM, "adjusted_amount": -1}, "adjusted_amount: -1 is less than the minimum"),
        ({**EMPTY_FORM, "category": "nope"}, "category: 'nope' is not one of"),
    ],
)
async def test_a_refused_answer_changes_nothing(
    make_harness: MakeHarness, answer: dict[str, JsonValue], named: str
) -> None:
    h = await paused_expense(make_harness)
    before = await snapshot(h.service, h.key)
    with pytest.raises(InvalidResponseError) as caught:
        await h.answer(("review_0", answer))
    assert named in str(caught.value)
    assert await snapshot(h.service, h.key) == before
