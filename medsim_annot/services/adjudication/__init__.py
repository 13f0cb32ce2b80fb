"""Adjudication: a named person settles the pairs the raters could not.

One module per job:

* :mod:`.decisions` — :func:`~.decisions.decide` (and from a file), the decision history and
  the current decision per pair; append-only and versioned;
* :mod:`.board` — :func:`~.board.board`, the queue of pairs that need a decision and
  everything an adjudicator sees of one, and the dashboard's adjudication figures.

The adjudicators' accounts (codes, sign-in, SSO links) are in
:mod:`medsim_annot.services.people.adjudicators`.
"""
