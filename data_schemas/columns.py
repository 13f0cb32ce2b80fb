"""Column names of every contract, defined once."""

PAIR_ID = "pair_id"
TERM_1 = "term_1"
TERM_2 = "term_2"
AUTO_LABEL = "auto_label"
DATASET = "dataset"
DIFFICULTY = "difficulty"
NEGATIVE_STRATEGY = "negative_strategy"
CONCEPT_ID_1 = "concept_id_1"
CONCEPT_ID_2 = "concept_id_2"
#: Optional pairs column: the known answer of a check pair (a value of the study's scale);
#: empty for every other pair.
CHECK_ANSWER = "check_answer"
#: Optional pairs column (or the column of a practice file): the reference answer of a
#: practice pair, served before the real queue with feedback; empty for every other pair.
PRACTICE_ANSWER = "practice_answer"
#: Optional: why the reference answer is right, shown to the doctor after a practice answer.
EXPLANATION = "explanation"

PAIR_REQUIRED = (TERM_1, TERM_2)
PAIR_OPTIONAL = (
    PAIR_ID,
    AUTO_LABEL,
    DATASET,
    DIFFICULTY,
    NEGATIVE_STRATEGY,
    CONCEPT_ID_1,
    CONCEPT_ID_2,
)
GROUP_COLUMNS = (DATASET, DIFFICULTY, NEGATIVE_STRATEGY)
DIFFICULTIES = ("easy", "hard")
NEGATIVE_STRATEGIES = ("random", "levenshtein")

ANNOTATOR = "annotator"
RATING = "rating"
RATED_AT = "rated_at"
COMMENT = "comment"
UNCLEAR = "unclear"
#: Milliseconds the pair was on screen before the answer (empty when not measured).
ELAPSED_MS = "elapsed_ms"
RATING_REQUIRED = (PAIR_ID, ANNOTATOR, RATING)

# The ratings *frame* handed to the statistics (docs/architecture.md): one row per current
# rating.
VALUE = "value"
NO_DECISION = "no_decision"

# EHR-Rel wide file.
EHR_ID_1 = "snomed_id_1"
EHR_LABEL_1 = "snomed_label_1"
EHR_ID_2 = "snomed_id_2"
EHR_LABEL_2 = "snomed_label_2"
EHR_CUI_1 = "CUI_1"
EHR_CUI_2 = "CUI_2"
EHR_RATER_PREFIX = "rater_"
EHR_REQUIRED = (EHR_ID_1, EHR_LABEL_1, EHR_ID_2, EHR_LABEL_2)
