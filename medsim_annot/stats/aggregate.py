"""Gold labels from a model of the doctors (Dawid–Skene, MACE) through ``crowd-kit``, next to
the majority vote.

Majority stays the default and the paper-compatible verdict (Schulz & Juric 2020). A model
of the annotators weighs each one by their estimated reliability: Dawid–Skene estimates a
confusion matrix per annotator, MACE a competence (the chance the annotator is not
guessing). Both run by EM in ``crowdkit.aggregation``; nothing here re-implements them.

Only decisive ratings enter the models: a don't-know is no evidence about the label. The
functions take the statistics' ratings frame (``pair_id``, ``annotator``, ``value``,
``no_decision``) and work on nominal scales only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.options import StrOptions
from medsim_annot.errors import UsageProblem

Method = Literal["majority", "dawid-skene", "mace"]
METHODS = StrOptions.of(
    Method,
    "aggregate",
    {
        "majority": "the doctors' majority",
        "dawid-skene": "the Dawid-Skene model's label",
        "mace": "the MACE model's label",
    },
)
MODEL_METHODS: tuple[str, ...] = ("dawid-skene", "mace")
#: EM iterations of Dawid–Skene (crowd-kit's default) and of MACE with its random restarts
#: (crowd-kit: 50 iterations, 10 restarts; 3 keep an export of thousands of pairs quick).
N_ITER = 100
MACE_ITER = 50
MACE_RESTARTS = 3
SEED = 0


@dataclass
class ModelGold:
    """What a model of the annotators says.

    ``labels``: one row per pair with at least one decisive rating — ``pair_id``, ``label``
    (scale code) and ``posterior`` (the model's probability of that label).
    ``raters``: one row per annotator — ``annotator`` and ``competence`` (MACE: the chance the
    annotator is not guessing; Dawid–Skene: the mean of the confusion matrix's diagonal,
    i.e. the chance of giving the true label averaged over the classes).
    ``confusion``: Dawid–Skene only — long frame ``annotator``, ``true`` (code), ``given``
    (code), ``probability``.
    """

    method: str
    labels: pd.DataFrame
    raters: pd.DataFrame
    confusion: pd.DataFrame = field(default_factory=pd.DataFrame)


def check_method(method: str, level: str = "nominal") -> str:
    """*method* if it is known and fits the scale's level of measurement.

    >>> check_method("dawid-skene")
    'dawid-skene'
    """
    METHODS.check(method)
    if method != "majority" and level != "nominal":
        raise UsageProblem(
            f"{method} (aggregate) models nominal labels; this scale is {level} "
            "(use majority, or the mean/median columns)"
        )
    return method


def _long(ratings: pd.DataFrame) -> pd.DataFrame:
    decisive = ratings[~ratings[C.NO_DECISION].to_numpy(dtype=bool)]
    decisive = decisive[decisive[C.VALUE].notna()]
    return pd.DataFrame(
        {
            "task": decisive[C.PAIR_ID].astype(str).to_numpy(),
            "worker": decisive[C.ANNOTATOR].astype(str).to_numpy(),
            "label": decisive[C.VALUE].to_numpy(dtype=np.float64).astype(np.int64),
        }
    )


def model_gold(ratings: pd.DataFrame, method: str, *, seed: int = SEED) -> ModelGold:
    """Fit Dawid–Skene or MACE to the decisive ratings of a ratings frame.

    Parameters
    ----------
    ratings : DataFrame
        Ratings frame: ``pair_id``, ``annotator``, ``value`` (scale code; NaN = no
        decision), ``no_decision``. One current rating per pair and annotator.
    method : {"dawid-skene", "mace"}
        ``crowdkit.aggregation.DawidSkene`` or ``crowdkit.aggregation.MACE``.
    seed : int
        MACE's random restarts (Dawid–Skene is deterministic).

    Returns
    -------
    ModelGold

    Notes
    -----
    Dawid–Skene: each annotator *j* has a confusion matrix :math:`\\pi^{(j)}_{kl}` = P(gives
    *l* | true *k*); EM alternates the pairs' posteriors and the matrices. MACE: each
    annotator is competent with probability :math:`\\theta_j` and otherwise guesses from
    their own label distribution :math:`\\xi_j`.

    References
    ----------
    Dawid, A. P. & Skene, A. M. (1979). Maximum likelihood estimation of observer error-rates
    using the EM algorithm. *JRSS C* 28(1), 20–28. https://doi.org/10.2307/2346806

    Hovy, D., Berg-Kirkpatrick, T., Vaswani, A. & Hovy, E. (2013). Learning whom to trust
    with MACE. *NAACL-HLT 2013*, 1120–1130. https://aclanthology.org/N13-1132

    Ustalov, D., Pavlichenko, N. & Tseitlin, B. (2024). Learning from crowds with Crowd-Kit.
    *JOSS* 9(96), 6227. https://doi.org/10.21105/joss.06227

    Examples
    --------
    Two reliable doctors and one who always says "same" (code 1): the model follows the
    reliable two on every pair.

    >>> rows = [(p, a, v) for p, (x, y, z) in enumerate(
    ...     [(1, 1, 1), (0, 0, 1), (1, 1, 1), (0, 0, 1), (1, 0, 1), (0, 0, 1)]
    ...     ) for a, v in zip("ABZ", (x, y, z))]
    >>> r = pd.DataFrame(rows, columns=["pair_id", "annotator", "value"]).assign(
    ...     no_decision=False)
    >>> g = model_gold(r, "dawid-skene")
    >>> g.labels["label"].tolist()
    [1, 0, 1, 0, 1, 0]
    >>> g.raters.sort_values("competence")["annotator"].iloc[0]
    'Z'
    """
    check_method(method)
    if method == "majority":
        raise UsageProblem("model_gold fits a model; majority comes from majority_vote")
    # crowd-kit: ~0.7 s, loaded only when a model is fitted (CLI and server start-up)
    from crowdkit.aggregation import MACE, DawidSkene

    long = _long(ratings)
    empty_labels = pd.DataFrame(
        {
            C.PAIR_ID: pd.Series(dtype=object),
            "label": pd.Series(dtype="int64"),
            "posterior": pd.Series(dtype="float64"),
        }
    )
    if long.empty:
        return ModelGold(
            method,
            empty_labels,
            pd.DataFrame({C.ANNOTATOR: pd.Series(dtype=object), "competence": []}),
        )
    model: Any
    if method == "dawid-skene":
        model = DawidSkene(n_iter=N_ITER)
    else:
        model = MACE(n_restarts=MACE_RESTARTS, n_iter=MACE_ITER, random_state=seed)
    model.fit(long)
    probas = model.probas_
    labels = model.labels_
    post = probas.to_numpy(dtype=np.float64)
    cols = list(probas.columns)
    chosen = np.array([cols.index(v) for v in labels.reindex(probas.index).to_numpy()])
    out = pd.DataFrame(
        {
            C.PAIR_ID: probas.index.astype(str).to_numpy(),
            "label": np.asarray(labels.reindex(probas.index).to_numpy(), dtype=np.int64),
            "posterior": post[np.arange(len(post)), chosen] if len(post) else np.zeros(0),
        }
    )
    out = out.sort_values(C.PAIR_ID, kind="stable").reset_index(drop=True)
    confusion = pd.DataFrame()
    if method == "dawid-skene":
        err = model.errors_  # index (worker, given label), columns true label
        # crowd-kit leaves out the rows of labels a worker never gave: probability 0.
        full = pd.MultiIndex.from_product(
            [sorted(long["worker"].unique()), list(err.columns)], names=err.index.names
        )
        err = err.reindex(full, fill_value=0.0)
        confusion = (
            err.stack()
            .rename("probability")
            .reset_index()
            .set_axis([C.ANNOTATOR, "given", "true", "probability"], axis=1)
        )
        confusion[C.ANNOTATOR] = confusion[C.ANNOTATOR].astype(str)
        confusion = confusion[[C.ANNOTATOR, "true", "given", "probability"]]
        diag = confusion[confusion["true"] == confusion["given"]]
        comp = diag.groupby(C.ANNOTATOR)["probability"].mean()
    else:
        # crowd-kit numbers workers in order of appearance (pd.factorize); spamming_[:, 1]
        # weighs "gives the true label", i.e. the competence of Hovy et al. (2013).
        _, worker_names = pd.factorize(long["worker"])
        comp = pd.Series(np.asarray(model.spamming_)[:, 1], index=worker_names.astype(str))
    raters = (
        comp.rename("competence")
        .rename_axis(C.ANNOTATOR)
        .reset_index()
        .sort_values(C.ANNOTATOR, kind="stable")
        .reset_index(drop=True)
    )
    return ModelGold(method, out, raters, confusion.reset_index(drop=True))
