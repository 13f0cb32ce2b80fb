"""File contracts of medsim-annot: pairs, ratings, the EHR-Rel wide file, and scales.

This package imports nothing else of the project (and never streamlit); see README.md here.
"""

from . import columns
from ._validate import has_control_chars
from .ehr_rel import EhrRelFile, is_ehr_rel, read_ehr_rel, split_ehr_rel
from .errors import InputError, Problem
from .pairs import validate_pairs
from .ratings import to_ratings_frame, validate_ratings
from .scales import (
    BINARY,
    BUILT_IN,
    RELATEDNESS_0_3,
    SIMILARITY_0_6,
    Scale,
    ScaleOption,
    load_scale,
)

__all__ = [
    "BINARY",
    "BUILT_IN",
    "RELATEDNESS_0_3",
    "SIMILARITY_0_6",
    "EhrRelFile",
    "InputError",
    "Problem",
    "Scale",
    "ScaleOption",
    "columns",
    "has_control_chars",
    "is_ehr_rel",
    "load_scale",
    "read_ehr_rel",
    "split_ehr_rel",
    "to_ratings_frame",
    "validate_pairs",
    "validate_ratings",
]
