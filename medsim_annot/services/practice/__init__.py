"""The practice round: practice pairs with feedback before a study's real queue, and the gate
that opens the real queue (docs/practice.md).

One module per job:

* :mod:`.setup` — the practice pairs of a study (from its pairs file or a practice file) and
  the gate's settings (:class:`~.setup.PracticeSettings`: pairs before the gate, threshold);
* :mod:`.gate` — an annotator's practice: the next practice pair, an answer and its feedback
  (reference answer, explanation), the gate, and the admin's actions :func:`~.gate.unlock`
  and :func:`~.gate.send_back_to_practice` (recalibration), each recorded as an event;
* :mod:`.report` — :func:`~.report.practice_report`, the only place practice answers are
  shown (never in gold files, agreement, audits or exports).

Practice pairs and answers live in tables of their own (``practice_pairs``,
``practice_ratings``): nothing that reads the real pairs or ratings can see them.
"""
