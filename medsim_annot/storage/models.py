"""Tables of the study store (SQLAlchemy 2 declarative). Schema changes go through Alembic
(``migrations/versions``); ``Base.metadata`` is only used by the migration's autogenerate.

Ratings are append-only: a save inserts a row; the *current* rating of an assignment is its
row with the highest id, which is also its highest ``revision`` (the slot's *version*). A
database trigger (see the initial migration) refuses UPDATE and DELETE on ``ratings``.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator):
    """Stored as naive UTC (portable across SQLite and PostgreSQL), returned tz-aware UTC."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=dt.UTC)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Base(DeclarativeBase):
    pass


#: Gap between the serving order keys of two consecutive slots of a new queue (0006).
ORDER_GAP = 1024


def _order_key_default(context) -> int:
    """A slot inserted without a serving order key is served in position order."""
    return int(context.get_current_parameters()["position"]) * ORDER_GAP


class Study(Base):
    __tablename__ = "studies"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    scale_json: Mapped[str] = mapped_column(Text)
    guideline: Mapped[str] = mapped_column(Text, default="")
    config_json: Mapped[str] = mapped_column(Text, default="{}")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: False while ``study create`` is still writing the study in batches: annotators never
    #: see a study that is not ready.
    ready: Mapped[bool] = mapped_column(Boolean, default=True)
    # Whether annotators with a linked SSO identity may sign in by SSO (0005).
    annotator_sso: Mapped[bool] = mapped_column(Boolean, default=False)


class Item(Base):
    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("study_id", "pair_id", name="uq_items_study_pair"),
        Index("ix_items_study_group", "study_id", "audit_group"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    pair_id: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer)
    term_1: Mapped[str] = mapped_column(Text)
    term_2: Mapped[str] = mapped_column(Text)
    auto_label: Mapped[int | None] = mapped_column(Integer, nullable=True)
    dataset: Mapped[str] = mapped_column(String(200), default="")
    difficulty: Mapped[str] = mapped_column(String(20), default="")
    negative_strategy: Mapped[str] = mapped_column(String(40), default="")
    #: The pair's group in a study with a sequential audit (``--target-ci``, 0007): its
    #: values of the group columns joined by " / "; ``None`` in other studies.
    audit_group: Mapped[str | None] = mapped_column(String(400), nullable=True)
    concept_id_1: Mapped[str] = mapped_column(String(100), default="")
    concept_id_2: Mapped[str] = mapped_column(String(100), default="")
    meta_json: Mapped[str] = mapped_column(Text, default="{}")
    #: The known answer of a check pair (0011): a value of the study's scale as ratings
    #: store it; ``None`` for every other pair. Never read by the serving queries.
    check_answer: Mapped[str | None] = mapped_column(String(100), nullable=True)


class Annotator(Base):
    __tablename__ = "annotators"
    __table_args__ = (UniqueConstraint("study_id", "name", name="uq_annotators_study_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    code_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: Bumped when a code is issued again or revoked: sessions opened with an older one end.
    credential_version: Mapped[int] = mapped_column(Integer, default=1)
    # The SSO identity (e-mail or subject id) the admin linked to this annotator (0005).
    sso_identity: Mapped[str | None] = mapped_column(String(320), nullable=True)
    #: Bumped when slots of this annotator are withdrawn or restored (0007): every process's
    #: incremental progress count then recounts the queue's total.
    queue_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: The language of the person's pages (0018): a language code; ``None``: the browser's.
    language: Mapped[str | None] = mapped_column(String(20), nullable=True)


class Assignment(Base):
    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("annotator_id", "position", name="uq_assignments_position"),
        Index("ix_assignments_annotator_item", "annotator_id", "item_id"),
        Index("ix_assignments_annotator_order", "annotator_id", "order_key"),
        Index("ix_assignments_item", "item_id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id"))
    position: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(
        String(20), default="main"
    )  # main|calibration|duplicate|tiebreak|check
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    #: Serving order (0006): ``position * ORDER_GAP`` for the slots a study is created with; a
    #: tiebreak slot gets a new position past the end and a key between two of them, so it is
    #: served soon. Positions are the slot's identity and never change.
    order_key: Mapped[int] = mapped_column(BigInteger, default=_order_key_default)
    #: Set when the slot's group stopped (sequential audit, 0007) before it was rated: it is
    #: no longer served nor counted; the row is kept and stopping off clears it.
    withdrawn_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    #: Active serving (0013): the probability the slot's pair was drawn into the sample of
    #: its group; ``None`` in a study without ``--sampling active``.
    draw_probability: Mapped[float | None] = mapped_column(Float, nullable=True)


class Tiebreak(Base):
    """The one third-rater slot a pair of a 2 + 1 study got (0006); unique per item."""

    __tablename__ = "tiebreaks"
    __table_args__ = (UniqueConstraint("item_id", name="uq_tiebreaks_item"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"))
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id"), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class GroupStop(Base):
    """A group of a study with a sequential audit that stopped being served (0007); one row
    per group (unique), removed again when the admin turns stopping off."""

    __tablename__ = "group_stops"
    __table_args__ = (UniqueConstraint("study_id", "audit_group", name="uq_group_stops_group"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"))
    audit_group: Mapped[str] = mapped_column(String(400))
    stopped_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    detail_json: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")


class Rating(Base):
    __tablename__ = "ratings"
    __table_args__ = (
        Index("ix_ratings_assignment", "assignment_id", "id"),
        Index("ix_ratings_study", "study_id", "id"),
        Index("ix_ratings_annotator_assignment", "annotator_id", "assignment_id"),
        Index("uq_ratings_assignment_revision", "assignment_id", "revision", unique=True),
        # The ratings endpoint's write cap: an annotator's ratings of the last minute (0008).
        Index("ix_ratings_annotator_rated_at", "annotator_id", "rated_at"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id"))
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id"))
    #: The rating's number within its slot (1, 2, ...); unique per slot, so of two saves that
    #: saw the same version only one can store the next (see storage.annotation).
    revision: Mapped[int] = mapped_column(Integer)
    value: Mapped[str] = mapped_column(String(100))
    unclear: Mapped[bool] = mapped_column(Boolean, default=False)
    comment: Mapped[str] = mapped_column(Text, default="")
    rated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: Time on the pair (ms) as the server vouches for it: through the ratings endpoint, the
    #: browser's figure capped by the server's time between serving the slot and saving (0016).
    elapsed_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: The browser's own figure, kept beside it (0016; NULL for older and non-widget rows).
    browser_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    source: Mapped[str] = mapped_column(String(20), default="app")  # app | import
    #: The guideline version the rating was made under (0014; NULL before: version 1).
    guideline_version: Mapped[int | None] = mapped_column(Integer, nullable=True)


class GuidelineVersion(Base):
    """A revision of a study's guideline (0014): version 2, 3, ...; a study without a row is
    on version 1, the guideline it was created with. Append-only, like the ratings."""

    __tablename__ = "guideline_versions"
    __table_args__ = (
        UniqueConstraint("study_id", "version", name="uq_guideline_versions_study_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"))
    version: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    note: Mapped[str] = mapped_column(Text, default="", server_default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    actor: Mapped[str | None] = mapped_column(String(400), nullable=True)


class StudyText(Base):
    """The study's own texts in one language (0018): the guideline and the scale's question,
    option labels and descriptions (``texts_json``, :class:`data_schemas.texts.StudyTexts`).
    Append-only: the texts of a study in a language are its row with the highest id.
    ``guideline_version``: the guideline version the translated guideline was written for."""

    __tablename__ = "study_texts"
    __table_args__ = (Index("ix_study_texts_study_language", "study_id", "language", "id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"))
    language: Mapped[str] = mapped_column(String(20))
    texts_json: Mapped[str] = mapped_column(Text)
    guideline_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    actor: Mapped[str | None] = mapped_column(String(400), nullable=True)


class Event(Base):
    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int | None] = mapped_column(
        ForeignKey("studies.id"), nullable=True, index=True
    )
    annotator_id: Mapped[int | None] = mapped_column(ForeignKey("annotators.id"), nullable=True)
    kind: Mapped[str] = mapped_column(String(60))
    detail_json: Mapped[str] = mapped_column(Text, default="{}")
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Who did it: "admin:NAME", "sso:IDENTITY", "cli:USER" (0005); filled from
    # storage.admins.acting_as when the caller does not set it.
    actor: Mapped[str | None] = mapped_column(String(400), nullable=True)


class Adjudicator(Base):
    """A named person who settles the pairs the raters could not (0010): not blind, so a
    separate table from the annotators, who are. Signs in like an annotator (access code,
    stored hashed, or a linked SSO identity)."""

    __tablename__ = "adjudicators"
    __table_args__ = (UniqueConstraint("study_id", "name", name="uq_adjudicators_study_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    code_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    sso_identity: Mapped[str | None] = mapped_column(String(320), nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    credential_version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: The language of the person's pages (0018): a language code; ``None``: the browser's.
    language: Mapped[str | None] = mapped_column(String(20), nullable=True)


class Adjudication(Base):
    """One decision on a pair (0010). Append-only like ratings (a trigger refuses UPDATE and
    DELETE): the pair's current decision is its highest ``revision``, unique per item, so of
    two adjudicators saving on the same version only one stores the next."""

    __tablename__ = "adjudications"
    __table_args__ = (
        Index("uq_adjudications_item_revision", "item_id", "revision", unique=True),
        Index("ix_adjudications_study", "study_id", "id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"))
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id"))
    adjudicator_id: Mapped[int] = mapped_column(ForeignKey("adjudicators.id"))
    revision: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str] = mapped_column(String(40))
    reason_text: Mapped[str] = mapped_column(Text, default="")
    flag_guideline: Mapped[bool] = mapped_column(Boolean, default=False)
    decided_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: The event that recorded the decision (its id goes into the gold file).
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id"))


class Admin(Base):
    """A named study admin: a scrypt password hash and/or an SSO identity (0005)."""

    __tablename__ = "admins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(400), nullable=True)
    sso_identity: Mapped[str | None] = mapped_column(String(320), unique=True, nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: The language of the person's pages (0018): a language code; ``None``: the browser's.
    language: Mapped[str | None] = mapped_column(String(20), nullable=True)


class SigninFailure(Base):
    """One failed sign-in (0009): every app process counts the same failures, so a lockout
    holds whichever server a client reaches. ``at`` is Unix time in seconds; rows older
    than the throttle's window plus its lockout are deleted as new failures arrive."""

    __tablename__ = "signin_failures"
    __table_args__ = (
        Index("ix_signin_failures_client", "kind", "client", "at"),
        Index("ix_signin_failures_at", "kind", "at"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    client: Mapped[str] = mapped_column(String(100))
    at: Mapped[float] = mapped_column(Float)


class RatingToken(Base):
    """A short-lived bearer token of the ratings endpoint (0008): only its SHA-256 is
    stored, so any server process can check a token and a copy of the store gives none
    away. It is good while the annotator is active, holds ``credential_version`` (a new
    code or a revoke ends it) and ``expires_at`` has not passed; sign-out deletes it."""

    __tablename__ = "rating_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), index=True)
    credential_version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)
    #: The signed-in page session the token was minted for (0016): the tokens one Annotate
    #: page mints over its life share it, and what was served is recorded per session.
    session_key: Mapped[str | None] = mapped_column(String(43), nullable=True)


class Prediction(Base):
    """One version of a model's scores stored with a study (0013): ``name`` (the model, or
    the score column), ``version`` 1, 2, ... per name, where it came from (``source`` file,
    ``score_column``, ``sha256`` of the file) and who added it. The scores themselves are
    :class:`PredictionScore` rows. Never read by the serving queries: predictions never
    reach an annotator."""

    __tablename__ = "predictions"
    __table_args__ = (
        UniqueConstraint("study_id", "name", "version", name="uq_predictions_study_name_version"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(Integer)
    score_column: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(400), default="")
    sha256: Mapped[str] = mapped_column(String(64), default="")
    pairs: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    actor: Mapped[str | None] = mapped_column(String(400), nullable=True)


class PredictionScore(Base):
    """The score of one pair in one version of a study's predictions (0013)."""

    __tablename__ = "prediction_scores"
    __table_args__ = (
        UniqueConstraint("prediction_id", "item_id", name="uq_prediction_scores_item"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    prediction_id: Mapped[int] = mapped_column(ForeignKey("predictions.id"), index=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id"))
    score: Mapped[float] = mapped_column(Float)


class PracticePair(Base):
    """A practice pair of a study (0015): two terms with a reference answer (a value of the
    study's scale, as ratings store it) and an optional explanation shown after the doctor
    answers. A separate table from ``items``: a practice pair is never a real pair, so no
    query of the real queue, the gold file, agreement, audits or exports can reach it."""

    __tablename__ = "practice_pairs"
    __table_args__ = (UniqueConstraint("study_id", "position", name="uq_practice_pairs_position"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    pair_id: Mapped[str] = mapped_column(String(200))
    term_1: Mapped[str] = mapped_column(Text)
    term_2: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(String(100))
    explanation: Mapped[str] = mapped_column(Text, default="")


class PracticeRating(Base):
    """One practice answer (0015), append-only: the *serial*-th answer of the annotator's
    practice *round* (a send-back starts a new round). Unique per (annotator, round, serial),
    so a resent answer is stored once."""

    __tablename__ = "practice_ratings"
    __table_args__ = (
        Index("uq_practice_ratings_serial", "annotator_id", "round", "serial", unique=True),
        Index("ix_practice_ratings_study", "study_id", "id"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"))
    practice_pair_id: Mapped[int] = mapped_column(ForeignKey("practice_pairs.id"))
    round: Mapped[int] = mapped_column(Integer)
    serial: Mapped[int] = mapped_column(Integer)
    value: Mapped[str] = mapped_column(String(100))
    rated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    elapsed_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)


class PracticeStatus(Base):
    """Where an annotator stands with the practice gate (0015); no row: round 0, not yet
    passed. ``state``: ``practising`` (the real queue is closed), ``passed`` (the gate was
    met) or ``unlocked`` (an admin opened the real queue by name). A send-back sets
    ``practising`` and starts the next ``round``. Every change is also an event."""

    __tablename__ = "practice_status"
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("studies.id"), index=True)
    round: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(20))
    changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class ServedSlot(Base):
    """A slot the ratings endpoint served to a session (0016): first time served, and the
    token that fetched it. The endpoint takes a rating only for a slot served to its
    session within :data:`~data_schemas.widget.KEPT_TTL_S`."""

    __tablename__ = "served_slots"
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id"), primary_key=True)
    session_key: Mapped[str] = mapped_column(String(43), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_id: Mapped[int] = mapped_column(Integer)
    served_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)


class EndpointQuota(Base):
    """The ratings endpoint's quota of one annotator (0017): the start of the current rate
    window (Unix seconds), the requests and the rating writes counted in it, and the last
    grant. Reserved with one ``UPDATE`` per request (:mod:`medsim_annot.storage.quota`), so
    every process shares one count and two requests cannot both spend the same room."""

    __tablename__ = "endpoint_quota"
    annotator_id: Mapped[int] = mapped_column(
        ForeignKey("annotators.id", ondelete="CASCADE"), primary_key=True
    )
    window_start: Mapped[float] = mapped_column(Float)
    requests: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    writes: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    granted: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
