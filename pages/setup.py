"""Study setup (admin): create a study from a pairs file with a sampling and assignment
design, and manage annotators and their access codes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from data_schemas import columns as C
from data_schemas.errors import InputError, OptionError
from data_schemas.scales import BUILT_IN, Scale, load_scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, fmt_int, t, tn
from medsim_annot.io import READ_FORMATS, formats_text, suffixes
from medsim_annot.seeds import new_seed
from medsim_annot.services import stored_predictions as P
from medsim_annot.services import studies as S
from medsim_annot.services.design import DesignOptions, create_designed_study, prepare_study
from medsim_annot.services.people import adjudicators as adj_svc
from medsim_annot.services.people import annotators as A
from medsim_annot.services.people import names as names_svc
from medsim_annot.services.people import sso as sso_svc
from medsim_annot.services.practice.setup import split_pairs
from medsim_annot.services.quality import QualitySettings, load_checks, with_check_answers
from medsim_annot.services.study_handle import Study, open_study
from pages import _languages, _ui
from pages.components.preload import preload_chart_code

PAIR_SUFFIXES = suffixes(READ_FORMATS)
NEW_CODES = "setup_new_codes"
SELECT_STUDY = "setup_select_study"  # a study just created, selected at the next run


@st.cache_data(max_entries=4, show_spinner=False)
def _load_pairs(path: str, mtime: float, size: int) -> pd.DataFrame:
    # Cached per file version; a file with problems raises (and is not cached).
    return S.load_pairs(path)


@st.cache_data(max_entries=4, show_spinner=False)
def _load_uploaded_pairs(name: str, data: bytes) -> pd.DataFrame:
    # Cached per content; the temporary copy (base name only) is deleted once read.
    with _ui.upload_copy(name, data) as path:
        return S.load_pairs(path)


def _load_uploaded_table(name: str, data: bytes) -> pd.DataFrame:
    with _ui.upload_copy(name, data) as path:
        return load_checks(path)


#: Column names of the tables this page shows (data keep theirs; only the header is shown
#: in the person's language).
SHOWN_COLUMNS = {
    "study": N_("study"),
    "scale": N_("scale"),
    "items": N_("items"),
    "annotators": N_("annotators"),
    "assigned": N_("assigned"),
    "rated": N_("rated"),
    "annotator": N_("annotator"),
    "adjudicator": N_("adjudicator"),
    "active": N_("active"),
    "has_code": N_("has_code"),
    "done": N_("done"),
    "total": N_("total"),
    "slots": N_("slots"),
    "calibration": N_("calibration"),
    "duplicates": N_("duplicates"),
    "checks": N_("checks"),
    "sso_identity": N_("sso_identity"),
    "pairs": N_("pairs"),
    "positives_available": N_("positives_available"),
    "positives_taken": N_("positives_taken"),
    "negatives_available": N_("negatives_available"),
    "negatives_taken": N_("negatives_taken"),
    "actor": N_("actor"),
    "name": N_("name"),
    "version": N_("version"),
    "created_at": N_("created_at"),
    "source": N_("source"),
    "score_column": N_("score_column"),
}


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """*frame* with the headers this page knows in the person's language (display only)."""
    return frame.rename(
        columns={c: t(SHOWN_COLUMNS[c]) for c in frame.columns if c in SHOWN_COLUMNS}
    )


def _local_pair_files() -> list[Path]:
    root = Path("data")
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in PAIR_SUFFIXES and p.is_file())[
        :200
    ]


def _show_problems(exc: InputError) -> None:
    _ui.show_problems(
        exc,
        note=t("nothing was created. Fix the file and upload it again."),
        key="setup_problems",
    )


def _study_list(studies: list[S.StudyListing]) -> None:
    """The existing studies, every column readable at the page's width: narrow count
    columns and the creation time as "created (UTC)" to the minute (the store keeps UTC)."""
    frame = pd.DataFrame([s.to_dict() for s in studies])
    frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True, format="ISO8601")
    st.dataframe(
        frame,
        hide_index=True,
        key="setup_studies",
        column_config={  # the headers in the person's language
            "study": st.column_config.TextColumn(t("study"), width="medium"),
            "scale": st.column_config.TextColumn(t("scale")),
            "items": st.column_config.NumberColumn(t("items"), width=70),
            "annotators": st.column_config.NumberColumn(t("annotators"), width=95),
            "assigned": st.column_config.NumberColumn(t("assigned"), width=85),
            "rated": st.column_config.NumberColumn(t("rated"), width=70),
            "created_at": st.column_config.DatetimeColumn(
                t("created (UTC)"), format="YYYY-MM-DD HH:mm", width="medium"
            ),
        },
    )


def _existing_studies() -> list[S.StudyListing]:
    studies = S.list_studies(engine=_ui.engine())
    with st.expander(t("Existing studies ({n})", n=fmt_int(len(studies))), expanded=bool(studies)):
        if studies:
            _study_list(studies)
        else:
            st.caption(t("No studies yet."))
    return studies


def _pairs_file() -> tuple[pd.DataFrame | None, str | None]:
    """The pairs file, uploaded or chosen under data/: its valid pairs (``None`` until there
    is one without problems) and the file name shown and recorded with the study."""
    source = st.radio(
        t("Pairs file"),
        [N_("Upload"), N_("Choose a file in data/")],
        format_func=t,
        horizontal=True,
        key="setup_source",
    )
    pairs_path: Path | None = None
    pairs_name: str | None = None
    pairs = None
    if source == "Upload":
        up = st.file_uploader(
            t("Pairs file ({formats})", formats=formats_text(READ_FORMATS)),
            key="setup_upload",
            type=[s.lstrip(".") for s in PAIR_SUFFIXES],
        )
        if up is not None:
            pairs_name = _ui.upload_base_name(up.name)
            try:
                with st.spinner(t("Checking the pairs file…")):
                    pairs = _load_uploaded_pairs(up.name, up.getvalue())
            except InputError as exc:
                _show_problems(exc.with_file(pairs_name))
            else:
                _valid_pairs(pairs_name, len(pairs))
    else:
        files = _local_pair_files()
        choice = st.selectbox(
            t("File"),
            [str(p) for p in files],
            key="setup_file",
            index=None,
            placeholder=t("no pairs files under data/") if not files else t("choose…"),
        )
        pairs_path = Path(choice) if choice else None

    if pairs_path is not None and not pairs_path.is_file():
        st.error(_ui.plain_markdown(t("{file} does not exist (any more).", file=str(pairs_path))))
        pairs_path = None
    if pairs_path is not None:
        pairs_name = pairs_path.name
        try:
            stat = pairs_path.stat()
            with st.spinner(t("Checking the pairs file…")):
                pairs = _load_pairs(str(pairs_path), stat.st_mtime, stat.st_size)
        except InputError as exc:
            _show_problems(exc.with_file(pairs_path.name))
        else:
            _valid_pairs(pairs_path.name, len(pairs))
    return pairs, pairs_name


def _valid_pairs(file: str, n: int) -> None:
    # The file name is typed by people: the whole line is shown as plain text.
    st.success(
        _ui.plain_markdown(
            tn("{file}: {n} valid pair.", "{file}: {n} valid pairs.", n, file=file, n=fmt_int(n))
        )
    )


CUSTOM_SCALE = N_("Custom scale file (YAML/JSON)")


def _scale() -> tuple[Scale | None, str | None]:
    """The scale (built in or a file) and the guideline shown to annotators."""
    scale_names = list(BUILT_IN)
    scale_choice = st.selectbox(
        t("Scale"),
        [*scale_names, CUSTOM_SCALE],
        format_func=lambda c: t(c) if c == CUSTOM_SCALE else c,
        key="setup_scale",
    )
    scale = None
    if scale_choice in BUILT_IN:
        scale = load_scale(scale_choice)
    else:
        up_scale = st.file_uploader(
            t("Scale file"), type=["yaml", "yml", "json"], key="setup_scale_file"
        )
        if up_scale is not None:
            try:
                with _ui.upload_copy(up_scale.name, up_scale.getvalue()) as scale_path:
                    scale = load_scale(scale_path)
            except InputError as exc:
                _show_problems(exc.with_file(up_scale.name))
    guideline: str | None = None
    if scale is not None:
        st.caption(
            " · ".join(f"`{o.key}` {o.label}" for o in scale.options)
            + (" · " + t("`u` unclear meaning") if scale.unclear_flag else "")
        )
        guide_key = f"setup_guideline_{scale.name}"
        guideline = st.text_area(
            t("Guideline shown to annotators (markdown)"),
            value=scale.guideline,
            height=220,
            key=guide_key,
        )
        with st.expander(t("Preview the guideline")):
            st.markdown(guideline)
    return scale, guideline


def _group_candidates(pairs: pd.DataFrame | None) -> list[str]:
    return [
        c
        for c in (pairs.columns if pairs is not None else C.GROUP_COLUMNS)
        if c not in (C.PAIR_ID, C.TERM_1, C.TERM_2, C.AUTO_LABEL, C.CONCEPT_ID_1, C.CONCEPT_ID_2)
    ]


def _sampling(pairs: pd.DataFrame | None) -> dict:
    """Sampling: all pairs or a stratified sample per group, and the seed."""
    st.subheader(t("Sampling"))
    sampling = st.radio(
        t("Pairs to rate"),
        [N_("All pairs"), N_("Stratified sample per group")],
        format_func=t,
        horizontal=True,
        key="setup_sampling",
    )
    sample = None
    group_by = list(C.GROUP_COLUMNS)
    allow_fewer = False
    if sampling != "All pairs":
        c1, c2 = st.columns(2)
        p = c1.number_input(t("Positives per group (auto_label 1)"), 0, 100000, 30, key="setup_pos")
        n = c2.number_input(t("Negatives per group (auto_label 0)"), 0, 100000, 30, key="setup_neg")
        candidates = _group_candidates(pairs)
        default = [c for c in C.GROUP_COLUMNS if c in candidates]
        group_by = st.multiselect(
            t("Group columns"),
            candidates,
            default=default,
            key="setup_group_by",
            placeholder=t("Choose group columns"),
        )
        allow_fewer = st.checkbox(
            t("If a group has too few pairs, take all it has (with a warning)"),
            key="setup_allow_fewer",
        )
        sample = (int(p), int(n))
    return {"sample_per_group": sample, "group_by": group_by, "allow_fewer": allow_fewer}


def _seed() -> dict:
    if "setup_seed" not in st.session_state:
        st.session_state["setup_seed"] = new_seed()
    seed = st.number_input(
        t("Seed (stored with the study; the same seed gives the same sample, design and order)"),
        0,
        2**31 - 1,
        key="setup_seed",
    )
    return {"seed": int(seed)}


def _assignment(scale: Scale | None) -> dict:
    """Who rates what: everyone, k of n (balanced), calibration, duplicates, 2 + 1."""
    st.subheader(t("Assignment design"))
    design = st.radio(
        t("Who rates what"),
        [
            N_("Every annotator rates every pair"),
            N_("Each pair rated by k of the n annotators (balanced)"),
        ],
        format_func=t,
        key="setup_design",
    )
    per_item = None
    if design.startswith("Each"):
        per_item = int(st.number_input(t("k (annotators per pair)"), 1, 100, 3, key="setup_k"))
    tiebreak = False
    tolerance = 0.0
    if per_item == 2:
        tiebreak = st.checkbox(
            t("2 + 1: a third annotator rates a pair only when the first two disagree"),
            key="setup_tiebreak",
            help=t(
                "Needs at least three annotators. With a calibration set, agreement is "
                "reported on the calibration pairs."
            ),
        )
        if tiebreak and scale is not None and scale.numeric:
            tolerance = float(
                st.number_input(
                    t("Tolerance: codes that differ by at most this much agree"),
                    0.0,
                    100.0,
                    0.0,
                    0.5,
                    key="setup_tiebreak_tolerance",
                )
            )
    return {"per_item": per_item, "tiebreak": tiebreak, "tiebreak_tolerance": tolerance}


def _calibration() -> dict:
    """A calibration set every annotator rates, and the share of each queue shown again."""
    st.subheader(t("Calibration and repeats"))
    c1, c2 = st.columns(2)
    calibration = int(
        c1.number_input(
            t("Calibration set: pairs every annotator rates"),
            0,
            100000,
            0,
            key="setup_calibration",
        )
    )
    duplicates = float(
        c2.slider(
            t("Share of each queue shown again (swapped, later)"),
            0.0,
            0.5,
            0.0,
            0.01,
            key="setup_duplicates",
        )
    )
    return {"calibration": calibration, "duplicates": duplicates}


def _sequential_audit(pairs: pd.DataFrame | None, sampled: bool, group_by: list[str]) -> dict:
    """Stopping a group once its accuracy interval is tight (and the audit's group columns
    when there is no sample)."""
    st.subheader(t("Sequential audit"))
    sequential = st.checkbox(
        t("Stop serving a group once its accuracy estimate is tight (needs automatic labels)"),
        key="setup_sequential",
    )
    target_ci = None
    min_pos = min_neg = 10
    if sequential:
        c1, c2, c3 = st.columns(3)
        target_ci = float(
            c1.number_input(
                t("Target half-width of the 95% interval"),
                0.01,
                0.49,
                0.05,
                0.01,
                key="setup_target_ci",
            )
        )
        min_pos = int(c2.number_input(t("Minimum positives"), 0, 100000, 10, key="setup_min_pos"))
        min_neg = int(c3.number_input(t("Minimum negatives"), 0, 100000, 10, key="setup_min_neg"))
        if not sampled:
            seq_candidates = _group_candidates(pairs)
            group_by = st.multiselect(
                t("Group columns of the audit"),
                seq_candidates,
                default=[c for c in C.GROUP_COLUMNS if c in seq_candidates],
                key="setup_seq_group_by",
                placeholder=t("Choose group columns"),
            )
        else:
            st.caption(t("Groups: the group columns of the sample above."))
    return {
        "group_by": group_by,
        "target_ci": target_ci,
        "min_positives": min_pos,
        "min_negatives": min_neg,
    }


def _rater_checks(pairs: pd.DataFrame | None) -> tuple[pd.DataFrame | None, dict, QualitySettings]:
    """Check pairs (a column or a checks file), their rate, and the quality thresholds: the
    pairs with their check answers, the design option and the study's quality settings."""
    st.subheader(t("Rater checks"))
    st.caption(
        t(
            "Check pairs have a known answer (e.g. two SNOMED CT synonyms of one concept are "
            "'same'): a check_answer column in the pairs file, or a checks file below. They "
            "are served among the other pairs, and look exactly like them to the annotators."
        )
    )
    checks_up = st.file_uploader(
        t("Checks file (pair_id, check_answer)"), type=["csv", "tsv", "jsonl", "parquet"],
        key="setup_checks",
    )  # fmt: skip
    if checks_up is not None and pairs is not None:
        try:
            pairs = with_check_answers(
                pairs,
                _load_uploaded_table(checks_up.name, checks_up.getvalue()),
                _ui.upload_base_name(checks_up.name),
            )
        except InputError as exc:
            _show_problems(exc)
    c1, c2, c3 = st.columns(3)
    use_rate = c1.checkbox(t("Serve check pairs at a set rate"), key="setup_check_use_rate")
    check_rate = (
        float(c1.slider(t("Share of each queue"), 0.01, 0.5, 0.05, 0.01, key="setup_check_rate"))
        if use_rate
        else None
    )
    min_accuracy = float(
        c2.slider(
            t("Warn below this accuracy on check pairs (0 = never)"),
            0.0,
            1.0,
            0.0,
            0.05,
            key="setup_check_min_accuracy",
        )
    )
    rushed_ms = int(
        c3.number_input(
            t("An answer faster than this many ms is rushed"),
            0,
            60000,
            1500,
            100,
            key="setup_rushed_ms",
        )
    )
    quality = QualitySettings(rushed_ms=rushed_ms, check_min_accuracy=min_accuracy or None)
    return pairs, {"check_rate": check_rate}, quality


def _new_study() -> None:
    """The New study form: pairs file, scale, sampling, design, audit, checks, annotators;
    the preview of the design and the Create button."""
    st.header(t("New study"))
    name = st.text_input(
        t("Study name"), key="setup_name", placeholder=t("e.g. ward-7 synonyms 2026")
    )
    pairs, pairs_name = _pairs_file()
    scale, guideline = _scale()
    sampling = _sampling(pairs)
    assignment = _assignment(scale)
    # Seed, calibration and repeats, sequential audit and rater checks: folded away, with
    # defaults that suit a first study.
    with st.expander(
        t("Advanced options: seed, calibration and repeats, sequential audit, rater checks"),
        key="setup_advanced",
    ):
        seed = _seed()
        calibration = _calibration()
        audit = _sequential_audit(
            pairs, sampling["sample_per_group"] is not None, sampling["group_by"]
        )
        pairs, checks, quality = _rater_checks(pairs)

    st.subheader(t("Annotators"))
    names_text = st.text_area(
        t("One name per line (pseudonyms are fine)"),
        key="setup_annotators",
        placeholder=t("For example:\ndr_ahmed\ndr_baker"),
    )
    names = [x.strip() for x in names_text.splitlines() if x.strip()]

    options = DesignOptions(**{**sampling, **seed, **assignment, **calibration, **audit, **checks})
    missing = [
        what
        for what, there in (
            (t("a study name"), bool(name.strip())),
            (t("a pairs file without problems"), pairs is not None),
            (t("a scale"), scale is not None),
            (t("at least one annotator name"), bool(names)),
        )
        if not there
    ]
    ready = not missing
    if pairs is not None and names:
        try:
            # Practice pairs (rows with a practice_answer) are not planned into any queue.
            real, practice = (
                split_pairs(pairs, scale, pairs_name) if scale is not None else (pairs, [])
            )
            prep = prepare_study(real, names, options, file=pairs_name)
        except InputError as exc:
            _show_problems(exc)
            ready = False
        except (UsageProblem, OptionError) as exc:
            st.error(_ui.plain_markdown(str(exc)))
            ready = False
        else:
            st.caption(
                tn(
                    "{n} pair; seed {seed}.",
                    "{n} pairs; seed {seed}.",
                    len(prep.pairs),
                    n=fmt_int(len(prep.pairs)),
                    seed=options.seed,
                )
                + (
                    " "
                    + tn(
                        "{n} practice pair, served first with its reference answer (see the "
                        "practice round in the docs).",
                        "{n} practice pairs, served first with their reference answers (see "
                        "the practice round in the docs).",
                        len(practice),
                        n=fmt_int(len(practice)),
                    )
                    if practice
                    else ""
                )
            )
            if prep.counts is not None:
                st.dataframe(shown(prep.counts), hide_index=True, key="setup_counts")
            for w in prep.warnings:  # they quote group values from the file: plain text
                st.warning(_ui.plain_markdown(w))
            st.dataframe(shown(prep.queue_sizes()), hide_index=True, key="setup_queue_sizes")

    # Translators: {items} is a list of the missing things, joined by commas.
    blocked = t("Still needed: {items}.", items=", ".join(missing)) if missing else None
    if not missing and not ready:
        blocked = t("Fix the problems above to create the study.")
    clicked = st.button(
        t("Create study"), type="primary", disabled=not ready, key="setup_create", help=blocked
    )
    if blocked:  # said beside the button, not only in its tooltip
        st.caption(blocked)
    if clicked and scale is not None:
        try:
            created = create_designed_study(
                name,
                pairs,
                scale,
                names,
                options,
                guideline=guideline,
                file=pairs_name,
                extra_config={"quality": quality.to_config()},
                engine=_ui.engine(),
            )
        except InputError as exc:
            _show_problems(exc)
        except (UsageProblem, OptionError) as exc:
            st.error(_ui.plain_markdown(str(exc)))
        else:
            _ui.show_codes_once(
                NEW_CODES,
                "create",
                created.study,
                created.annotators,
                t("Study created: {study}.", study=created.study),
            )
            st.session_state[SELECT_STUDY] = created.study  # the manage section shows it
            st.rerun()

    _ui.codes_shown_once(NEW_CODES, "create", "setup_created")


RESULT = "setup_manage_result"
MANAGE_BUTTONS = (
    "setup_add",
    "setup_rename",
    "setup_issue",
    "setup_revoke",
    "setup_sso_link",
    "setup_adj_add",
    "setup_adj_code",
    "setup_adj_revoke",
    "setup_pred_add",
)


def _done(message: str) -> None:
    """What the last manage button did, shown as a success at the next run."""
    st.session_state[RESULT] = ("success", message)


def _failed(message: str) -> None:
    """Why the last manage button did nothing, shown as an error at the next run."""
    st.session_state[RESULT] = ("error", message)


def _tab_add(study: Study) -> None:
    new_name = st.text_input(t("New annotator"), key="setup_add_name")
    if st.button(t("Add annotator"), key="setup_add"):
        try:
            out = A.add_annotator(study, new_name)
            st.session_state.pop(RESULT, None)
            facts = A.added_queue_facts(study, out.name)
            added = t("Added {name}.", name=out.name)
            if facts:
                added += " " + t("Their {queue}.", queue=A.describe_added_queue(facts))
            _ui.show_codes_once(NEW_CODES, "manage", study.name, [out.to_dict()], added)
        except UsageProblem as exc:
            _failed(str(exc))


def _tab_rename(study: Study, people: list[str]) -> None:
    old = st.selectbox(
        t("Annotator"), people, key="setup_rename_old", placeholder=t("No annotators yet")
    )
    new = st.text_input(t("New name"), key="setup_rename_new")
    if st.button(t("Rename"), key="setup_rename") and old:
        try:
            A.rename_annotator(study, old, new)
            _done(t("Renamed {old} to {new}.", old=old, new=new.strip()))
        except UsageProblem as exc:
            _failed(str(exc))


def _tab_issue_code(study: Study, people: list[str]) -> None:
    who = st.selectbox(
        t("Annotator"), people, key="setup_code_who", placeholder=t("No annotators yet")
    )
    if st.button(t("Issue a new code (the old one stops working)"), key="setup_issue") and who:
        code = A.issue_code(study, who)
        st.session_state.pop(RESULT, None)
        _ui.show_codes_once(
            NEW_CODES,
            "manage",
            study.name,
            [{"name": who, "access_code": code}],
            t("New access code for {name} (the old one no longer works).", name=who),
        )


def _tab_revoke(study: Study, people: list[str]) -> None:
    who_r = st.selectbox(
        t("Annotator"), people, key="setup_revoke_who", placeholder=t("No annotators yet")
    )
    if st.button(t("Revoke access (ratings are kept)"), key="setup_revoke") and who_r:
        A.revoke_code(study, who_r)
        _done(t("Revoked the access code of {name}.", name=who_r))


def _tab_sso(study: Study, people: list[str]) -> None:
    st.caption(
        t(
            "Annotators linked to their identity in your organisation's sign-in may use "
            "*Sign in with SSO* when this study allows it; access codes keep working."
        )
    )
    sso_key = f"setup_sso_enabled:{study.name}"

    @_ui.requires("admin")
    def _switch_sso() -> None:
        allow = bool(st.session_state[sso_key])
        sso_svc.set_annotator_sso(study, allow)
        _done(
            t("SSO sign-in enabled for the annotators of {study}.", study=study.name)
            if allow
            else t("SSO sign-in disabled for the annotators of {study}.", study=study.name)
        )

    st.toggle(
        t("Annotators of this study may sign in by SSO"),
        value=sso_svc.annotator_sso_enabled(study),
        key=sso_key,
        on_change=_switch_sso,
    )
    links = sso_svc.sso_links(study)
    st.dataframe(
        pd.DataFrame(
            {t("annotator"): list(links), t("SSO identity"): [v or "" for v in links.values()]}
        ),
        hide_index=True,
        key="setup_sso_table",
    )
    who_s = st.selectbox(
        t("Annotator"), people, key="setup_sso_who", placeholder=t("No annotators yet")
    )
    ident = st.text_input(
        t("SSO identity (e-mail address or subject id; empty removes the link)"),
        key="setup_sso_identity",
    )
    if st.button(t("Link"), key="setup_sso_link") and who_s:
        try:
            A.link_annotator_sso(study, who_s, ident)
            _done(
                t(
                    "Linked {name} to {identity}.",
                    name=who_s,
                    identity=names_svc.normalise_identity(ident),
                )
                if ident.strip()
                else t("Removed the SSO link of {name}.", name=who_s)
            )
        except UsageProblem as exc:
            _failed(str(exc))


def _tab_adjudicators(study: Study) -> None:
    st.caption(
        t(
            "Adjudicators settle the pairs the raters could not. They are not blind: they see "
            "every rater's answer, comments, times, the automatic label and the model's label. "
            "They sign in with their own access code, or by SSO once linked."
        )
    )
    judges = adj_svc.adjudicators(study)
    st.dataframe(shown(judges), hide_index=True, key="setup_adj_table")
    adj_name = st.text_input(t("Person to make an adjudicator"), key="setup_adj_name")
    adj_sso = st.text_input(t("SSO identity (optional)"), key="setup_adj_sso")
    if st.button(t("Make adjudicator"), key="setup_adj_add"):
        try:
            out = adj_svc.add_adjudicator(study, adj_name, sso_identity=adj_sso)
            st.session_state.pop(RESULT, None)
            _ui.show_codes_once(
                NEW_CODES,
                "manage",
                study.name,
                [out.to_dict()],
                t("{name} is now an adjudicator.", name=out.name),
            )
        except UsageProblem as exc:
            _failed(str(exc))
    who_a = st.selectbox(
        t("Adjudicator"),
        judges["adjudicator"].tolist(),
        key="setup_adj_who",
        placeholder=t("No adjudicators yet"),
    )
    if st.button(t("Issue a new adjudicator code"), key="setup_adj_code") and who_a:
        code = adj_svc.issue_adjudicator_code(study, who_a)
        st.session_state.pop(RESULT, None)
        _ui.show_codes_once(
            NEW_CODES,
            "manage",
            study.name,
            [{"name": who_a, "access_code": code}],
            t("New adjudicator code for {name}.", name=who_a),
        )
    if st.button(t("Revoke the adjudicator role (decisions are kept)"), key="setup_adj_revoke"):
        if who_a:
            adj_svc.revoke_adjudicator(study, who_a)
            _done(t("Revoked adjudicator {name}.", name=who_a))


def _tab_predictions(study: Study) -> None:
    st.caption(
        t(
            "A model's score per pair (pair_id and a score column, as `medsim score` writes): "
            "stored with the study and versioned, it narrows the audit's intervals. Annotators "
            "never see it; adjudicators only if you allow it below."
        )
    )
    versions = P.prediction_versions(study)
    if versions:
        st.dataframe(
            shown(pd.DataFrame([v.to_dict() for v in versions])),
            hide_index=True,
            key="setup_pred_table",
        )
    up = st.file_uploader(
        t("Scores file"), type=["csv", "tsv", "jsonl", "parquet"], key="setup_pred_file"
    )
    c1, c2 = st.columns(2)
    column = c1.text_input(t("Score column (when the file has several)"), key="setup_pred_column")
    label = c2.text_input(t("Name (default: the score column)"), key="setup_pred_name")
    if st.button(t("Store predictions"), key="setup_pred_add", disabled=up is None) and up:
        try:
            with _ui.upload_copy(up.name, up.getvalue()) as path:
                row = P.add_predictions(
                    study,
                    path,
                    score_column=column.strip() or None,
                    name=label.strip() or None,
                    source_name=_ui.upload_base_name(up.name),
                )
        except InputError as exc:
            _failed(t("{problems} Nothing was stored.", problems=exc.summary(3)))
        except UsageProblem as exc:
            _failed(str(exc))
        else:
            _done(
                tn(
                    "Stored predictions {name} version {version} ({n} pair).",
                    "Stored predictions {name} version {version} ({n} pairs).",
                    row.pairs,
                    name=row.name,
                    version=row.version,
                    n=fmt_int(row.pairs),
                )
            )
    show = st.checkbox(
        t("Adjudicators see the model's score"),
        value=P.adjudicators_see_predictions(study),
        key="setup_pred_adjudicators",
    )
    if show != P.adjudicators_see_predictions(study):
        P.set_show_to_adjudicators(study, show)


def _manage(studies: list[S.StudyListing]) -> None:
    """Annotators and access codes of one study: add, rename, issue, revoke, SSO, adjudicators."""
    st.header(t("Annotators and access codes"))
    if not studies:
        st.caption(t("Create a study first."))
        st.stop()
    eng = _ui.engine()
    names = [s.study for s in S.list_studies(engine=eng)]
    if (new := st.session_state.pop(SELECT_STUDY, None)) in names:
        st.session_state["setup_manage_study"] = new  # the study just created
    name = st.selectbox(t("Study"), names, key="setup_manage_study")
    study = open_study(name, engine=eng)
    st.dataframe(shown(A.annotators(study)), hide_index=True, key="setup_annotator_table")
    people = A.annotators(study)["annotator"].tolist()
    tab_add, tab_rename, tab_code, tab_revoke, tab_sso, tab_adj, tab_pred = st.tabs(
        [
            t("Add"),
            t("Rename"),
            t("Issue code"),
            t("Revoke"),
            t("Single sign-on"),
            t("Adjudicators"),
            t("Predictions"),
        ]
    )
    with tab_add:
        _tab_add(study)
    with tab_rename:
        _tab_rename(study, people)
    with tab_code:
        _tab_issue_code(study, people)
    with tab_revoke:
        _tab_revoke(study, people)
    with tab_sso:
        _tab_sso(study, people)
    with tab_adj:
        _tab_adjudicators(study)
    with tab_pred:
        _tab_predictions(study)
    if any(st.session_state.get(k) for k in MANAGE_BUTTONS) and (
        RESULT in st.session_state or NEW_CODES in st.session_state
    ):
        st.rerun()  # show the updated table with the message
    if result := st.session_state.get(RESULT):
        kind, msg = result
        (st.error if kind == "error" else st.success)(_ui.plain_markdown(msg))
    _ui.codes_shown_once(NEW_CODES, "manage", "setup_issued")
    _languages.setup_section(study)  # each person's language, the study's texts per language


@_ui.requires("admin", page=True)
def setup_ui() -> None:
    st.title(t("Study setup"))
    preload_chart_code()  # the Dashboard's chart code, loaded while this browser is idle
    studies = _existing_studies()
    _new_study()
    _manage(studies)


setup_ui()
