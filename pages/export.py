"""Gold export (admin): the same export as ``medsim export gold`` — one row per pair, the
filters in their fixed order, a manifest with counts and SHA-256 — as two downloads; with
the ``hf`` format, the Hugging Face dataset folder (Parquet, card, Croissant) as one ZIP."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import streamlit as st

from data_schemas.errors import InputError, OptionError
from data_schemas.gold import GoldFilters
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import N_, fmt_int, t, tn
from medsim_annot.io import FORMATS
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.gold.export import HfOptions, export_gold
from medsim_annot.services.gold.filters import filter_name
from medsim_annot.services.interop import zip_folder
from medsim_annot.services.people.names import file_slug
from medsim_annot.services.study_handle import Study
from pages import _qa, _ui

#: The label a pair must have to be exported (the page's choices; the CLI's flags).
LABEL_ANY = N_("No requirement")
LABEL_MAJORITY = N_("A majority")
LABEL_MAJORITY_OR_ADJUDICATED = N_("A majority or an adjudicated label")
#: The label sources as the summary names them (the file keeps its words).
SOURCE_NAMES = {
    "unanimous": N_("unanimous"),
    "majority": N_("majority"),
    "tiebreak": N_("tiebreak"),
    "adjudicated": N_("adjudicated"),
    "model": N_("model"),
    "unresolved": N_("unresolved"),
}


def _form(adjudicated: int) -> tuple[bool, str, GoldFilters, HfOptions, bool]:
    """The export form: whether it was submitted, the format, the filters, the Hugging Face
    options and whether to audit against adjudicated labels. *adjudicated*: the pairs an
    adjudicator has decided (then "a majority or an adjudicated label" is the default)."""
    with st.form("export_form"):
        fmt = st.selectbox(
            t("Format"),
            [*FORMATS, "hf"],
            format_func=lambda f: (
                t("hf (Hugging Face dataset folder, as a ZIP)") if f == "hf" else f
            ),
            key="export_format",
        )
        st.caption(
            t("Filters run in this order; the manifest records the pairs before and after each.")
        )
        min_ratings = st.number_input(
            t("Minimum ratings per pair (0 = no minimum)"),
            min_value=0,
            value=1,
            step=1,
            key="export_min_ratings",
            help=t(
                "1 (the default here) leaves out the pairs nobody has rated yet; "
                "`medsim export gold` has no minimum unless given `--min-ratings`."
            ),
        )
        exclude_unclear = st.checkbox(
            t("Exclude pairs flagged unclear"), key="export_exclude_unclear"
        )
        choices = [LABEL_ANY, LABEL_MAJORITY, LABEL_MAJORITY_OR_ADJUDICATED]
        required = st.radio(
            t("Label required"),
            choices,
            format_func=t,
            index=2 if adjudicated else 0,
            horizontal=True,
            key="export_label_required",
            help=tn(
                "A majority of the raters' answers; or that, or an adjudicator's decision "
                "({n} pair decided so far).",
                "A majority of the raters' answers; or that, or an adjudicator's decision "
                "({n} pairs decided so far).",
                adjudicated,
                n=fmt_int(adjudicated),
            ),
        )
        require_majority = required != LABEL_ANY
        exclude_all_different = st.checkbox(
            t("Exclude pairs whose ratings all differ"), key="export_exclude_all_different"
        )
        only_verified = st.checkbox(
            t("Only verified pairs (majority = automatic label)"), key="export_only_verified"
        )
        exclude_rushed = st.checkbox(
            t("Leave out rushed ratings (faster than the study's threshold) first"),
            key="export_exclude_rushed",
        )
        audit_adjudicated = st.checkbox(
            t("Audit the automatic labels against adjudicated labels where there are some"),
            key="export_audit_adjudicated",
            help=t(
                "`verified` / `auto_label_disagrees` then compare with an adjudicator's "
                "decision instead of the majority on decided pairs (recorded in the manifest). "
                "Agreement figures stay computed on the raters' own answers."
            ),
        )
        with st.expander(t("Hugging Face dataset options (format hf)")):
            license_ = st.text_input(
                t("Licence (hub identifier, e.g. cc-by-4.0)"), value="other", key="export_license"
            )
            split = st.checkbox(
                t("Seeded train/test split, stratified by group"), key="export_split"
            )
            seed = st.number_input(t("Split seed"), min_value=0, value=0, step=1, key="export_seed")
            test_size = st.number_input(
                t("Share of each group in test"),
                min_value=0.05,
                max_value=0.95,
                value=0.2,
                step=0.05,
                key="export_test_size",
            )
        go = st.form_submit_button(t("Prepare export"), type="primary")

    filters = GoldFilters(
        min_ratings=int(min_ratings) or None,
        exclude_unclear=exclude_unclear,
        require_majority=require_majority,
        or_adjudicated=required == LABEL_MAJORITY_OR_ADJUDICATED,
        exclude_all_different=exclude_all_different,
        only_verified=only_verified,
        exclude_rushed=exclude_rushed,
    )
    hf_options = HfOptions(
        license=license_.strip() or "other", split=split, seed=int(seed), test_size=float(test_size)
    )
    return go, fmt, filters, hf_options, audit_adjudicated


def _prepare(
    study: Study, fmt: str, filters: GoldFilters, hf_options: HfOptions, audit_adjudicated: bool
) -> None:
    """Write the export and its manifest, and keep them for the downloads."""
    folder_output = fmt == "hf"  # a dataset folder, downloaded as one ZIP
    stem = file_slug(f"gold-{study.name}", fallback="gold")
    name = _qa.download_name(
        f"gold-{study.name}-hf" if folder_output else f"gold-{study.name}",
        "zip" if folder_output else fmt,
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / (stem if folder_output else name)
        try:
            with st.spinner(t("Writing the export and its manifest…")):
                result = export_gold(
                    study,
                    out,
                    fmt,
                    filters=filters,
                    hf=hf_options if folder_output else None,
                    audit_label="adjudicated" if audit_adjudicated else "majority",
                )
        except InputError as exc:
            st.session_state.pop("export_result", None)
            _ui.show_problems(exc, key="export_problems")
        except (UsageProblem, OptionError) as exc:
            st.session_state.pop("export_result", None)
            st.error(_qa.plain_markdown(str(exc)))
        else:
            mpath = result.manifest_path
            st.session_state["export_result"] = {
                "study": study.name,
                "name": name,
                "data": zip_folder(out, stem) if folder_output else out.read_bytes(),
                "manifest_name": mpath.name,
                "manifest": mpath.read_bytes(),
            }


def _sources_text(sources: dict[str, int]) -> str:
    """The label sources of the exported pairs, in a few words ("Labels: 90 majority ·
    3 adjudicated"); sources without pairs are left out."""
    shown = [
        t(
            "{n} {source}",
            n=fmt_int(n),
            source=t(SOURCE_NAMES[name]) if name in SOURCE_NAMES else name,
        )
        for name, n in sources.items()
        if n
    ]
    return "  \n" + t("Labels: {sources}", sources=" · ".join(shown)) if shown else ""


def _downloads(study: str) -> None:
    """The prepared export of *study*: counts, filter steps, the two downloads."""
    res = st.session_state.get("export_result")
    if res and res["study"] == study:
        manifest = json.loads(res["manifest"])
        c = manifest["counts"]
        if manifest["format"] == "hf":
            st.success(
                tn(
                    "{exported} of {n} pair ready as a Hugging Face dataset folder ({files} "
                    "files, listed with their SHA-256 in manifest.json).",
                    "{exported} of {n} pairs ready as a Hugging Face dataset folder ({files} "
                    "files, listed with their SHA-256 in manifest.json).",
                    c["pairs"],
                    exported=fmt_int(c["exported"]),
                    n=fmt_int(c["pairs"]),
                    files=fmt_int(len(manifest["files"])),
                )
                + _sources_text(c.get("label_source", {}))
            )
        else:
            st.success(
                tn(
                    "{exported} of {n} pair ready ({format}, SHA-256 {sha}…).",
                    "{exported} of {n} pairs ready ({format}, SHA-256 {sha}…).",
                    c["pairs"],
                    exported=fmt_int(c["exported"]),
                    n=fmt_int(c["pairs"]),
                    format=manifest["format"],
                    sha=manifest["sha256"][:16],
                )
                + _sources_text(c.get("label_source", {}))
            )
        steps = manifest["filter_steps"]
        if steps:
            st.table(
                [
                    {
                        t("filter"): filter_name(s["filter"]),
                        t("before"): fmt_int(s["before"]),
                        t("after"): fmt_int(s["after"]),
                    }
                    for s in steps
                ]
            )
        a, b = st.columns(2)
        a.download_button(
            t("Download {file}", file=res["name"]),
            res["data"],
            file_name=res["name"],
            key="export_download_file",
            type="primary",
            mime="application/zip" if manifest["format"] == "hf" else None,
        )
        b.download_button(
            t("Download {file}", file=res["manifest_name"]),
            res["manifest"],
            file_name=res["manifest_name"],
            mime="application/json",
            key="export_download_manifest",
        )
        with st.expander(t("Manifest")):
            st.json(manifest)


@_ui.requires("admin", page=True)
def export_ui() -> None:
    st.title(t("Gold export"))
    picked = _qa.pick_study("export_study")
    if picked is None:
        st.stop()
    decided = len(decisions_svc.current_decisions(decisions_svc.decisions_frame(picked)))
    go, fmt, filters, hf_options, audit_adjudicated = _form(decided)
    if go:
        _prepare(picked, fmt, filters, hf_options, audit_adjudicated)
    _downloads(picked.name)


export_ui()
