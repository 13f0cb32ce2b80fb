"""What reaches the server log when the store fails: the reason, never a statement's
parameters (they are doctors' comments, ratings and terms)."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from medsim_annot.errors import StoreUnavailable
from medsim_annot.storage import get_engine, with_retry

COMMENT = "=HYPERLINK(patient Müller, bed 7: query sepsis)"


def test_failed_statements_keep_their_parameters_out_of_logs_and_errors(backend_url, caplog):
    engine = get_engine(backend_url)
    caplog.set_level(logging.DEBUG)

    def save():
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO no_such_table (comment) VALUES (:c)"), {"c": COMMENT})

    with pytest.raises(StoreUnavailable) as exc:
        with_retry(save, budget_s=0.1)
    chain = [exc.value, exc.value.__cause__]
    assert isinstance(exc.value.__cause__, sa.exc.DBAPIError)
    text = " | ".join(str(e) for e in chain)
    assert "no_such_table" in text  # the reason is there
    assert "Müller" not in text and "HYPERLINK" not in text
    logged = " | ".join(r.getMessage() for r in caplog.records)
    assert "store unavailable" in logged
    assert "Müller" not in logged and "HYPERLINK" not in logged
